"""OpenTelemetry spans → trajectories (docs/traces.md#opentelemetry-genai-spans--steps): `from_otel`
and `read_otel_traces`.

Two vocabularies are read, span by span:

- the GenAI semantic conventions: `gen_ai.operation.name` = `invoke_agent` (an agent, named by
  `gen_ai.agent.name`), `execute_tool` (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
  `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), `chat` / `text_completion` /
  `generate_content` (a model call: `gen_ai.input.messages`, `gen_ai.output.messages`, on the
  span or on its `gen_ai.client.inference.operation.details` event; `gen_ai.usage.*`);
- OpenInference: `openinference.span.kind` = AGENT (`agent.name`), TOOL (`tool.name`,
  `tool.id`, `input.value`, `output.value`), LLM (`llm.input_messages.*`,
  `llm.output_messages.*`, `llm.token_count.*`, `llm.cost.total`), CHAIN (a container).

The span tree is walked parent before child, siblings by start time then span id. A span
gives its steps on entering (a tool's call, a model call's new input) and on leaving (a tool's
result, a model's output), so a call always comes before its result and a tool that runs an
agent holds that agent's steps between the two. The rules, with the reasons, are in
docs/traces.md.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from os import PathLike
from pathlib import Path
from typing import Any

from oloproof.digest import canonical_json
from oloproof.errors import TraceError
from oloproof.recording.trajectory import AgentTrajectory, TerminalStatus
from oloproof.traces.reading import (
    Call,
    TraceReading,
    TraceUsage,
    TrajectoryBuilder,
    maybe_json,
    parse_arguments,
    warn_if_skipped,
)
from oloproof.traces.spans import Span, spans_from

# GenAI semantic conventions
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_RESULT = "gen_ai.tool.call.result"
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
DETAILS_EVENT = "gen_ai.client.inference.operation.details"
INPUT_TOKENS = ("gen_ai.usage.input_tokens", "gen_ai.usage.prompt_tokens")
OUTPUT_TOKENS = ("gen_ai.usage.output_tokens", "gen_ai.usage.completion_tokens")
ERROR_TYPE = "error.type"
MODEL_OPERATIONS = frozenset({"chat", "text_completion", "generate_content"})
NOT_STEP_OPERATIONS = frozenset({
    "embeddings", "retrieval", "create_agent", "invoke_workflow", "plan", "create_memory",
    "create_memory_store", "delete_memory", "delete_memory_store", "search_memory",
    "update_memory", "upsert_memory",
})

# OpenInference semantic conventions
OI_KIND = "openinference.span.kind"
OI_AGENT_NAME = "agent.name"
OI_TOOL_NAME = "tool.name"
OI_TOOL_ID = "tool.id"
OI_INPUT = "input.value"
OI_OUTPUT = "output.value"
OI_OUTPUT_MIME = "output.mime_type"
OI_INPUT_MESSAGES = "llm.input_messages."
OI_OUTPUT_MESSAGES = "llm.output_messages."
OI_PROMPT_TOKENS = "llm.token_count.prompt"
OI_COMPLETION_TOKENS = "llm.token_count.completion"
OI_COST = "llm.cost.total"
OI_NOT_STEPS = frozenset({"CHAIN", "RETRIEVER", "EMBEDDING", "RERANKER", "GUARDRAIL",
                          "EVALUATOR", "PROMPT"})
HANDOFF_SPAN_PREFIX = "handoff to "  # openinference-instrumentation-openai-agents
# The Agents SDK's error on an agent span its turn limit stopped.
_MAX_TURNS = re.compile(r"Max turns exceeded\b\D*(\d+)")

_MESSAGE_ROLES = ("user", "system", "developer")


@dataclass
class _Message:
    """A message of either vocabulary: its text, the calls it makes, the results it carries."""

    role: str
    content: Any = None
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    results: list[tuple[str | None, Any]] = field(default_factory=list)


# --- what a span is --------------------------------------------------------------------------


AGENT, TOOL, MODEL, HANDOFF, CONTAINER = "agent", "tool", "model", "handoff", "container"


def _role(span: Span, builder: TrajectoryBuilder) -> str | None:
    """What the span is for the trajectory; counts it as ignored/skipped when it is nothing."""
    attributes = span.attributes
    operation = attributes.get(OPERATION)
    if operation is not None:
        if operation == "invoke_agent":
            return AGENT
        if operation == "execute_tool":
            if attributes.get(TOOL_NAME):
                return TOOL
            builder.skipped["execute_tool span without gen_ai.tool.name"] += 1
            return CONTAINER
        if operation in MODEL_OPERATIONS:
            return MODEL
        if operation in NOT_STEP_OPERATIONS:
            builder.ignored[f"span:{operation}"] += 1
            return CONTAINER
        builder.skipped[f"span:gen_ai.operation.name={operation}"] += 1
        return CONTAINER
    kind = attributes.get(OI_KIND)
    if kind is not None:
        kind = str(kind).upper()
        if kind == "AGENT":
            return AGENT
        if kind == "LLM":
            return MODEL
        if kind == "TOOL":
            if attributes.get(OI_TOOL_NAME):
                return TOOL
            target = attributes.get(OI_OUTPUT)
            if isinstance(target, str) and span.name == HANDOFF_SPAN_PREFIX + target:
                return HANDOFF
            builder.skipped["TOOL span without tool.name"] += 1
            return CONTAINER
        if kind in OI_NOT_STEPS:
            builder.ignored[f"span:{kind}"] += 1
            return CONTAINER
        builder.skipped[f"span:openinference.span.kind={kind}"] += 1
        return CONTAINER
    builder.ignored["span:other"] += 1  # not a GenAI span at all (HTTP, database, ...)
    return CONTAINER


# --- messages ------------------------------------------------------------------------------


def _genai_messages(value: Any, builder: TrajectoryBuilder, what: str) -> list[_Message]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            builder.skipped[f"{what} not JSON"] += 1
            return []
    if not isinstance(value, list):
        builder.skipped[f"{what} not a list"] += 1
        return []
    messages: list[_Message] = []
    for entry in value:
        if not isinstance(entry, dict):  # parsed JSON: objects are dicts
            builder.skipped[f"{what} entry"] += 1
            continue
        message = _Message(str(entry.get("role") or "assistant"))
        texts: list[str] = []
        for part in entry.get("parts") or ():
            kind = part.get("type") if isinstance(part, dict) else None
            if kind == "text":
                texts.append(str(part.get("content", "")))
            elif kind == "tool_call":
                message.calls.append((part.get("id"), str(part.get("name") or ""),
                                      part.get("arguments")))
            elif kind == "tool_call_response":
                value_ = part.get("response", part.get("result"))
                message.results.append((part.get("id"), value_))
            else:
                builder.ignored[f"message part:{kind}"] += 1
        if texts:
            message.content = "".join(texts)
        messages.append(message)
    return messages


def _unflatten(attributes: Mapping[str, Any], prefix: str) -> list[dict[str, Any]]:
    """OpenInference's flattened lists (`llm.output_messages.0.message.role`) as dicts."""
    root: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix):
            _put(root, key[len(prefix):].split("."), value)
    return [_listify(root[i]) for i in sorted(root)]


def _put(root: dict[int, dict[str, Any]], tokens: list[str], value: Any) -> None:
    if not tokens or not tokens[0].isdigit():
        return
    node = root.setdefault(int(tokens[0]), {})
    name: list[str] = []
    for i, token in enumerate(tokens[1:], 1):
        if token.isdigit():
            child = node.setdefault(".".join(name), {})
            if isinstance(child, dict):
                _put(child, tokens[i:], value)
            return
        name.append(token)
    node[".".join(name)] = value


def _listify(node: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in node.items():
        if isinstance(value, dict) and value and all(isinstance(k, int) for k in value):
            out[key] = [_listify(value[i]) for i in sorted(value)]
        else:
            out[key] = value
    return out


def _openinference_messages(attributes: Mapping[str, Any], prefix: str) -> list[_Message]:
    messages: list[_Message] = []
    for entry in _unflatten(attributes, prefix):
        message = _Message(str(entry.get("message.role") or "assistant"))
        content = entry.get("message.content")
        if content is None and entry.get("message.contents"):
            texts = [c.get("message_content.text") for c in entry["message.contents"]
                     if c.get("message_content.type") == "text"]
            content = "".join(str(t) for t in texts if t is not None) or None
        for call in entry.get("message.tool_calls") or []:
            message.calls.append((call.get("tool_call.id"),
                                  str(call.get("tool_call.function.name") or ""),
                                  call.get("tool_call.function.arguments")))
        if message.role == "tool":
            message.results.append((entry.get("message.tool_call_id"), content))
        else:
            message.content = content
        messages.append(message)
    return messages


def _genai_value(span: Span, key: str) -> Any:
    """The GenAI messages attribute `key`, on the span or on its operation-details event."""
    value = span.attributes.get(key)
    if value is None:
        for event in span.events:
            if event.name == DETAILS_EVENT and key in event.attributes:
                return event.attributes[key]
    return value


def _messages(span: Span, builder: TrajectoryBuilder, which: str) -> list[_Message]:
    key = INPUT_MESSAGES if which == "input" else OUTPUT_MESSAGES
    value = _genai_value(span, key)
    if value is not None:
        return _genai_messages(value, builder, key)
    prefix = OI_INPUT_MESSAGES if which == "input" else OI_OUTPUT_MESSAGES
    return _openinference_messages(span.attributes, prefix)


def _continuation(text: str, previous: str) -> str | None:
    """When `text` is the JSON list `previous` with messages appended (a model call shown
    the history of the one before it), the appended messages as a JSON list; else None."""
    end = len(previous) - 1
    if (len(text) > end + 1 and previous.endswith("]") and text[end] == ","
            and text.startswith(previous[:end])):
        return "[" + text[end + 1:]
    return None


# --- the walk ------------------------------------------------------------------------------


class _Walk:
    """One trace's spans turned into steps, in tree order."""

    def __init__(self, spans: list[Span], trace_id: str, file: str | Path | None = None) -> None:
        self.spans = spans
        self.trace_id = trace_id
        self.file = file  # named by the errors of a tree that is not one
        self.builder = TrajectoryBuilder("otel")
        self.said: Counter[tuple[str, int, str]] = Counter()  # user/system messages in steps
        self.by_tool_span: set[int] = set()  # calls a tool span has claimed
        self.model_calls: dict[str | None, list[Call]] = defaultdict(list)  # by model's parent
        self.assistant_messages = 0
        # Per agent: the last model call's input text and what it had seen, so the next
        # call's history is read only where it is new (see `_model_input`).
        self.last_input: dict[str | None, tuple[str, Counter[tuple[str, int, str]]]] = {}
        # The agent of the last model call, if its output was not recorded, and the number of
        # steps when it ended.
        self.unrecorded_answer: tuple[str | None, int] | None = None

    def run(self) -> TraceReading:
        builder = self.builder
        by_id = {s.span_id: s for s in self.spans}
        if len(by_id) != len(self.spans):
            raise _twice(self.spans, self.trace_id, self.file)
        roles: dict[str, str | None] = {}
        children: dict[str, list[Span]] = defaultdict(list)
        roots: list[Span] = []
        models: list[Span] = []
        agents: list[Span] = []
        plain = 0  # spans of no GenAI or OpenInference kind (HTTP, database, ...)
        for span in self.spans:
            attributes = span.attributes
            role: str | None
            if OPERATION not in attributes and OI_KIND not in attributes:
                role = roles[span.span_id] = CONTAINER
                plain += 1
            else:
                role = roles[span.span_id] = _role(span, builder)  # counted here, once
            if role == MODEL:
                models.append(span)
            elif role == AGENT:
                agents.append(span)
            if span.parent_id is not None and span.parent_id in by_id:
                if span.parent_id == span.span_id:
                    raise TraceError("this span names itself as its parent; a span's parent is "
                                     "another span of its trace, or none", file=self.file,
                                     trace=self.trace_id, span=_named(span))
                children[span.parent_id].append(span)
            else:
                roots.append(span)
        if plain:
            builder.ignored["span:other"] += plain
        order = lambda s: (s.start, s.span_id)  # noqa: E731
        roots.sort(key=order)
        unwalked: dict[str, int] = {}  # per parent: its children left out of the walk
        for parent, kids in children.items():
            # A span that is no step and has no child gives nothing: it is not walked (most
            # spans of a service — its queries and requests — are such leaves).
            kept = [k for k in kids if roles[k.span_id] != CONTAINER or k.span_id in children]
            kept.sort(key=order)
            children[parent] = kept
            if len(kept) < len(kids):
                unwalked[parent] = len(kids) - len(kept)
        reached = 0  # spans below a root: all of them, unless parents form a cycle
        # An explicit stack: a trace may nest deeper than Python's recursion allows.
        stack: list[tuple[bool, Span, str | None, Any]] = [
            (True, root, None, None) for root in reversed(roots)
        ]
        while stack:
            entering, span, agent, state = stack.pop()
            if entering:
                reached += 1 + unwalked.get(span.span_id, 0)
                role = roles[span.span_id]
                agent = self._agent(span, role, agent)
                state = self._enter(span, role, agent)
                stack.append((False, span, agent, (role, state)))
                below = children.get(span.span_id)
                if below:
                    stack.extend((True, child, agent, None) for child in reversed(below))
            else:
                role, inner = state
                self._leave(span, role, agent, inner)
        if reached < len(self.spans):
            raise _cycle(self.spans, by_id, roots, self.trace_id, self.file)
        first = roots[0] if roots else None
        # The run failed when its root or one of its agents ended in error (a tool's error is
        # a result the agent was shown, not the run's end); otherwise the builder derives it.
        # An agent stopped by the Agents SDK's turn limit was cut short, not failed: what was
        # recorded is a lower bound, as `read_openai_agents` reads the same run.
        limits = [n for n in map(_max_turns, agents) if n is not None]
        step_limit = limits[0] if limits else None
        failed = step_limit is None and (
            (first is not None and first.status == "ERROR")
            or any(a.status == "ERROR" for a in agents))
        unanswered = self.unrecorded_answer
        if unanswered is not None and not failed and unanswered[1] == builder.step_count():
            # The trace's last model call answered (nothing was called after it), but its
            # text was not captured: the answer is a step all the same, its content empty.
            step = builder.add("final", agent=unanswered[0])
            step.notes.append(("content_not_recorded", ""))
        terminal: TerminalStatus | None = "failure" if failed else None
        return builder.finish(terminal_status=terminal, truncated=step_limit is not None,
                              step_limit=step_limit, usage=_usage(models, agents, by_id),
                              trace_id=self.trace_id)

    @staticmethod
    def _agent(span: Span, role: str | None, inherited: str | None) -> str | None:
        name = span.attributes.get(AGENT_NAME)
        if name is None and role == AGENT:
            name = span.attributes.get(OI_AGENT_NAME)
        return str(name) if name else inherited

    def _enter(self, span: Span, role: str | None, agent: str | None) -> Any:
        if role == AGENT:
            self._input(_messages(span, self.builder, "input"), agent)
            return self.assistant_messages
        if role == MODEL:
            self._model_input(span, agent)
        elif role == TOOL:
            return self._tool_call(span, agent)
        elif role == HANDOFF:
            self._handoff(span, agent)
        return None

    def _leave(self, span: Span, role: str | None, agent: str | None, inner: Any) -> None:
        if role == AGENT and inner == self.assistant_messages:
            # The agent's own output restates its model calls' output: read only without them.
            self._output(_messages(span, self.builder, "output"), agent, span)
        elif role == MODEL:
            output = _messages(span, self.builder, "output")
            self._output(output, agent, span)
            # A model call whose output was not captured (content capture off) may be the
            # agent's answer: it is, if no step follows it (see `run`).
            self.unrecorded_answer = (None if output or not span.end
                                      else (agent, self.builder.step_count()))
        elif role == TOOL and inner is not None:
            self._tool_result(span, inner, agent)

    # messages in and out

    def _model_input(self, span: Span, agent: str | None) -> None:
        """A model call's input. Each call is shown the whole conversation again; when its
        text continues the previous call's, only the appended messages are parsed and read
        on from what the previous call had seen (the same steps, without reading the history
        once per call)."""
        value = _genai_value(span, INPUT_MESSAGES)
        if not isinstance(value, str):
            self._input(_messages(span, self.builder, "input"), agent)
            return
        text = value.strip()
        last = self.last_input.get(agent)
        if last is not None:
            if text == last[0]:
                return
            appended = _continuation(text, last[0])
            if appended is not None:
                seen = self._input(_genai_messages(appended, self.builder, INPUT_MESSAGES),
                                   agent, Counter(last[1]))
                self.last_input[agent] = (text, seen)
                return
        seen = self._input(_genai_messages(text, self.builder, INPUT_MESSAGES), agent)
        self.last_input[agent] = (text, seen)

    def _input(self, messages: list[_Message], agent: str | None,
               seen: Counter[tuple[str, int, str]] | None = None,
               ) -> Counter[tuple[str, int, str]]:
        seen = Counter() if seen is None else seen
        for message in messages:
            for call_id, result in message.results:
                # A result the model is shown, for a call no tool span answered.
                call = self.builder.known_call(call_id)
                if call is not None and not call.answered:
                    self.builder.result(call, maybe_json(result))
            content = message.content
            if message.role in _MESSAGE_ROLES and content is not None:
                key = ((message.role, 0, content) if isinstance(content, str)
                       else (message.role, 1, canonical_json(content)))
                seen[key] += 1
                # Each model call sees the whole history again: only what is new is a step.
                if seen[key] > self.said[key]:
                    self.said[key] += 1
                    self.builder.message(message.role, content, agent=agent)
        return seen

    def _output(self, messages: list[_Message], agent: str | None, span: Span) -> None:
        for message in messages:
            if message.content is not None:
                self.builder.message("assistant", message.content, agent=agent)
                self.assistant_messages += 1
            for call_id, name, arguments in message.calls:
                if self.builder.known_call(call_id) is not None:
                    continue
                call = self.builder.call(name, arguments, call_id=call_id, agent=agent)
                self.model_calls[span.parent_id].append(call)

    # tools and hand-offs

    def _tool_call(self, span: Span, agent: str | None) -> Call:
        attributes = span.attributes
        genai = OPERATION in attributes
        name = str(attributes.get(TOOL_NAME if genai else OI_TOOL_NAME))
        call_id = attributes.get(TOOL_CALL_ID if genai else OI_TOOL_ID)
        raw = attributes.get(TOOL_ARGUMENTS) if genai else attributes.get(OI_INPUT)
        call = self.builder.known_call(str(call_id)) if call_id else None
        if call is None:
            call = self._match(name, raw, agent)
        if call is None:
            call = self.builder.call(name, raw, call_id=str(call_id) if call_id else None,
                                     agent=agent)
        else:
            self.builder.fill_arguments(call, raw)
        self.by_tool_span.add(id(call))
        return call

    def _match(self, name: str, raw: Any, agent: str | None) -> Call | None:
        """The model's call a tool span without a known call id carries out: the first open
        one of that tool, from that agent, with the same arguments (when both have them)."""
        arguments, _ = parse_arguments(raw)
        wanted = canonical_json(arguments) if arguments is not None else None
        for call in self.builder.open_calls():
            step = call.step
            if id(call) in self.by_tool_span or step.tool_name != name or step.agent != agent:
                continue
            if wanted is None or step.arguments is None or canonical_json(step.arguments) == wanted:
                return call
        return None

    def _tool_result(self, span: Span, call: Call, agent: str | None) -> None:
        if call.answered:
            return
        if not span.end:
            return  # the tool had not finished when the span was exported: no result
        attributes = span.attributes
        genai = OPERATION in attributes
        value = attributes.get(TOOL_RESULT) if genai else attributes.get(OI_OUTPUT)
        if value is not None and not genai and attributes.get(OI_OUTPUT_MIME) == "text/plain":
            result: Any = value
        else:
            result = maybe_json(value)
        if span.status == "ERROR":
            self.builder.result(call, _error(span, result), agent=agent)
        else:
            self.builder.result(call, result, agent=agent, recorded=value is not None)

    def _handoff(self, span: Span, agent: str | None) -> None:
        target = str(span.attributes[OI_OUTPUT])
        source = span.attributes.get(OI_INPUT)
        step = self.builder.add("handoff", agent=agent or (str(source) if source else None),
                                to_agent=target)
        # The model's call that asked for the hand-off is this hand-off, not a tool call.
        open_calls = [c for c in self.model_calls.get(span.parent_id, [])
                      if not c.answered and id(c) not in self.by_tool_span]
        named = [c for c in open_calls if c.step.tool_name == "transfer_to_" + target]
        chosen = open_calls if len(open_calls) == 1 else named
        if len(chosen) == 1:
            step.arguments = {"tool": chosen[0].step.tool_name}
            self.builder.remove(chosen[0])


# --- a tree that is not one ------------------------------------------------------------------


def _named(span: Span) -> str:
    return f"span {span.span_id}" + (f" ({span.name!r})" if span.name else "")


def _twice(spans: list[Span], trace_id: str, file: str | Path | None) -> TraceError:
    """Two spans of one trace with one id: which is whose parent cannot be told."""
    seen: dict[str, Span] = {}
    for span in spans:
        first = seen.setdefault(span.span_id, span)
        if first is not span:
            break
    return TraceError(
        "two spans of this trace have this id" + (f" ({first.name!r} and {span.name!r})"
                                                   if first.name or span.name else "")
        + "; every span of a trace has an id of its own (a span exported twice, or ids made by "
        "hand?)", file=file, trace=trace_id, span=f"span {span.span_id}")


def _cycle(spans: list[Span], by_id: Mapping[str, Span], roots: list[Span],
           trace_id: str, file: str | Path | None) -> TraceError:
    """Spans no root reaches: their parents, followed up, go round in a cycle."""
    below = set()
    stack = [r.span_id for r in roots]
    kids: dict[str, list[str]] = defaultdict(list)
    for span in spans:
        if span.parent_id is not None:
            kids[span.parent_id].append(span.span_id)
    while stack:
        current = stack.pop()
        if current not in below:
            below.add(current)
            stack.extend(kids.get(current, ()))
    start = next(s for s in spans if s.span_id not in below)
    path: list[str] = []
    on_path: set[str] = set()
    current_id = start.span_id
    while current_id not in on_path:  # every span here has a parent in the trace
        on_path.add(current_id)
        path.append(current_id)
        current_id = by_id[current_id].parent_id  # type: ignore[assignment]
    ring = path[path.index(current_id):]
    shown = " → ".join(_named(by_id[i]) for i in ring[:6]) + (" → …" if len(ring) > 6 else "")
    return TraceError(
        f"the parents of {len(ring)} spans form a cycle ({shown} → back to the first): no "
        f"span of it descends from a root, so {len(spans) - len(below)} span(s) of this trace "
        "could not be placed; the spans of a trace form a tree (a span whose parent is not in "
        "the trace is a root)", file=file, trace=trace_id, span=_named(by_id[ring[0]]))


def _max_turns(span: Span) -> int | None:
    """The turn limit an agent span's error reports, when the Agents SDK stopped the agent
    there (`Max turns exceeded: {'max_turns': 10}`, as its instrumentors record it)."""
    if span.status != "ERROR" or not span.status_message:
        return None
    found = _MAX_TURNS.match(span.status_message)
    return int(found.group(1)) if found else None


def _error(span: Span, output: Any) -> dict[str, Any]:
    """A failed tool's result: the error's message (status, exception event or error.type)."""
    message = span.status_message
    kind = span.attributes.get(ERROR_TYPE)
    for event in span.events:
        if event.name == "exception":
            message = message or event.attributes.get("exception.message")
            kind = kind or event.attributes.get("exception.type")
    body: dict[str, Any] = {"error": message or kind or "error"}
    if kind:
        body["error_type"] = kind
    if output is not None:
        body["output"] = output
    return body


def _usage(models: list[Span], agents: list[Span],
           by_id: Mapping[str, Span]) -> TraceUsage | None:
    """Tokens and cost summed over model calls; agent spans only when no model call has any
    (agent spans may repeat their model calls' totals: summing both would count twice)."""
    def total(candidates: Iterable[Span]) -> TraceUsage | None:
        inputs = outputs = None
        cost = None
        for span in candidates:
            a = span.attributes
            i = next((a[k] for k in (*INPUT_TOKENS, OI_PROMPT_TOKENS) if k in a), None)
            o = next((a[k] for k in (*OUTPUT_TOKENS, OI_COMPLETION_TOKENS) if k in a), None)
            if i is not None:
                inputs = (inputs or 0) + int(i)
            if o is not None:
                outputs = (outputs or 0) + int(o)
            if OI_COST in a:
                cost = (cost or 0.0) + float(a[OI_COST])
        if inputs is None and outputs is None and cost is None:
            return None
        return TraceUsage(inputs, outputs, cost)

    found = total(models)
    if found is not None:
        return found
    among = {s.span_id: s for s in agents}
    return total(s for s in agents if not _has_ancestor_in(s, among, by_id))


def _has_ancestor_in(span: Span, among: Mapping[str, Span], by_id: Mapping[str, Span]) -> bool:
    parent = span.parent_id
    seen: set[str] = set()
    while parent is not None and parent not in seen:
        if parent in among:
            return True
        seen.add(parent)
        parent = by_id[parent].parent_id if parent in by_id else None
    return False


# --- entry points --------------------------------------------------------------------------


def group_by_trace(spans: list[Span]) -> dict[str, list[Span]]:
    """Spans by trace id, traces in the order of their first span's start time."""
    groups: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        groups[span.trace_id].append(span)
    return dict(sorted(groups.items(), key=lambda kv: (min(s.start for s in kv[1]), kv[0])))


def read_trace(spans: list[Span], trace_id: str, *,
               file: str | Path | None = None) -> TraceReading:
    """One trace's spans (already grouped) read into a trajectory.

    Raises:
        TraceError: the spans do not form a tree — two with one id, one that is its own
            parent, parents in a cycle — naming the trace and the span (and `file`, if given).
    """
    return _Walk(spans, trace_id, file).run()


Spans = Iterable[Any] | Mapping[str, Any] | str | PathLike[str]


def _spans(spans: Spans) -> list[Span]:
    if isinstance(spans, str | PathLike):
        # A path: the OTLP/JSON (or JSON Lines) file it names, read as read_otlp_file reads it
        # (iterated as text, its characters would each be "not a span").
        from oloproof.traces.otlp_json import read_otlp_spans

        return read_otlp_spans(Path(spans), lean=True)
    return spans_from(spans)


def read_otel_traces(spans: Spans) -> list[TraceReading]:
    """Read spans of any number of traces: one TraceReading per trace.

    Args:
        spans: `opentelemetry.sdk.trace.ReadableSpan` objects (e.g.
            `InMemorySpanExporter().get_finished_spans()`), OTLP/JSON span objects, a whole
            OTLP/JSON document (`{"resourceSpans": [...]}`, hex or base64 ids), or the path of
            an OTLP/JSON or JSON Lines file (as `read_otlp_file` reads it).

    Returns:
        Readings in the order the traces started.
    """
    file = spans if isinstance(spans, str | PathLike) else None
    return [read_trace(group, trace_id, file=None if file is None else Path(file))
            for trace_id, group in group_by_trace(_spans(spans)).items()]


def read_otel(spans: Spans) -> TraceReading:
    """Read the spans of one trace into a trajectory, with what was skipped and marked.

    Raises:
        TraceError: the spans belong to several traces (use `read_otel_traces`), or none.
    """
    readings = read_otel_traces(spans)
    if len(readings) != 1:
        ids = ", ".join(r.trace_id or "?" for r in readings[:5])
        raise TraceError(
            f"from_otel reads one trace; these spans hold {len(readings)}"
            + (f" ({ids}{', ...' if len(readings) > 5 else ''})" if readings else "")
            + ("; use read_otlp_file for one reading per trace of a file"
               if isinstance(spans, str | PathLike) else
               "; use read_otel_traces for one trajectory per trace"),
            file=Path(spans) if isinstance(spans, str | PathLike) else None,
        )
    return readings[0]


def from_otel(spans: Spans) -> AgentTrajectory:
    """The `AgentTrajectory` of one trace's OpenTelemetry spans
    (docs/traces.md#opentelemetry-genai-spans--steps).

    Warns (`TraceWarning`) if a span could not be read; `read_otel` returns the same
    trajectory with what was skipped, ignored and marked, and the trace's usage.
    """
    reading = read_otel(spans)
    warn_if_skipped(reading, "from_otel")
    return reading.trajectory
