"""OpenTelemetry spans → trajectories (docs/traces.md#opentelemetry-genai-spans--steps): the walk
of one trace's span tree into steps, and the entry points `from_otel`, `read_otel`,
`read_otel_traces` and `read_trace`.

What each span is, in the GenAI or the OpenInference vocabulary, and the messages it carries
are read by `otel_attributes`; the tree's checks, grouping by trace and usage are `otel_tree`'s.

The span tree is walked parent before child, siblings by start time then span id. A span
gives its steps on entering (a tool's call, a model call's new input) and on leaving (a tool's
result, a model's output), so a call always comes before its result and a tool that runs an
agent holds that agent's steps between the two. The rules, with the reasons, are in
docs/traces.md.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from oloproof.digest import canonical_json
from oloproof.errors import TraceError
from oloproof.recording.trajectory import AgentTrajectory, TerminalStatus
from oloproof.traces.langchain_messages import tool_message, tool_result
from oloproof.traces.otel_attributes import (
    AGENT,
    AGENT_NAME,
    CONTAINER,
    HANDOFF,
    INPUT_MESSAGES,
    MODEL,
    OI_AGENT_NAME,
    OI_INPUT,
    OI_KIND,
    OI_OUTPUT,
    OI_OUTPUT_MIME,
    OI_TOOL_ID,
    OI_TOOL_NAME,
    OPERATION,
    TOOL,
    TOOL_ARGUMENTS,
    TOOL_CALL_ID,
    TOOL_NAME,
    TOOL_RESULT,
    WORKFLOW_NAME,
    Message,
    continuation,
    genai_messages,
    genai_value,
    span_messages,
    span_role,
)
from oloproof.traces.otel_tree import (
    cycle_error,
    duplicate_id_error,
    group_by_trace,
    max_turns,
    span_label,
    tool_error,
    trace_usage,
)
from oloproof.traces.reading import (
    Call,
    TraceReading,
    TrajectoryBuilder,
    maybe_json,
    parse_arguments,
    warn_if_skipped,
)
from oloproof.traces.spans import Span, spans_from

__all__ = ["from_otel", "read_otel", "read_otel_traces", "read_trace"]

# The messages a model call is shown that are steps of their own (the rest are its history).
_MESSAGE_ROLES = ("user", "system", "developer")


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
            raise duplicate_id_error(self.spans, self.trace_id, self.file)
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
                role = roles[span.span_id] = span_role(span, builder)  # counted here, once
            if role == MODEL:
                models.append(span)
            elif role == AGENT:
                agents.append(span)
            if span.parent_id is not None and span.parent_id in by_id:
                if span.parent_id == span.span_id:
                    raise TraceError("this span names itself as its parent; a span's parent is "
                                     "another span of its trace, or none", file=self.file,
                                     trace=self.trace_id, span=span_label(span))
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
            raise cycle_error(self.spans, by_id, roots, self.trace_id, self.file)
        first = roots[0] if roots else None
        # The run failed when its root or one of its agents ended in error (a tool's error is
        # a result the agent was shown, not the run's end); otherwise the builder derives it.
        # An agent stopped by the Agents SDK's turn limit was cut short, not failed: what was
        # recorded is a lower bound, as `read_openai_agents` reads the same run.
        limits = [n for n in map(max_turns, agents) if n is not None]
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
                              step_limit=step_limit, usage=trace_usage(models, agents, by_id),
                              trace_id=self.trace_id)

    @staticmethod
    def _agent(span: Span, role: str | None, inherited: str | None) -> str | None:
        name = span.attributes.get(AGENT_NAME)
        if name is None and role == AGENT:
            name = span.attributes.get(WORKFLOW_NAME) or span.attributes.get(OI_AGENT_NAME)
        return str(name) if name else inherited

    def _enter(self, span: Span, role: str | None, agent: str | None) -> Any:
        if role == AGENT:
            self._input(span_messages(span, self.builder, "input"), agent)
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
            self._output(span_messages(span, self.builder, "output"), agent, span)
        elif role == MODEL:
            output = span_messages(span, self.builder, "output")
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
        value = genai_value(span, INPUT_MESSAGES)
        if not isinstance(value, str):
            self._input(span_messages(span, self.builder, "input"), agent)
            return
        text = value.strip()
        last = self.last_input.get(agent)
        if last is not None:
            if text == last[0]:
                return
            appended = continuation(text, last[0])
            if appended is not None:
                seen = self._input(genai_messages(appended, self.builder, INPUT_MESSAGES),
                                   agent, Counter(last[1]))
                self.last_input[agent] = (text, seen)
                return
        seen = self._input(genai_messages(text, self.builder, INPUT_MESSAGES), agent)
        self.last_input[agent] = (text, seen)

    def _input(self, messages: list[Message], agent: str | None,
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

    def _output(self, messages: list[Message], agent: str | None, span: Span) -> None:
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

    def _tool_call(self, span: Span, agent: str | None) -> Call | None:
        """The call a tool span carries out: the model's call it names (by its call id, or
        the id of the ToolMessage it returned, as LangChain's tools do), else the model's
        open call of that tool with the same parsed arguments, each claimed once (the Agents
        SDK's tool spans name no call), else a call of its own. A span that names no call and
        whose arguments are not a JSON object cannot be placed — it may be a model's call
        seen again, its arguments flattened (OpenInference records a one-argument tool's
        input as the bare value) — so it is skipped and reported, never made a second
        call."""
        attributes = span.attributes
        genai = OPERATION in attributes
        name = str(attributes.get(TOOL_NAME if genai else OI_TOOL_NAME))
        call_id = attributes.get(TOOL_CALL_ID if genai else OI_TOOL_ID)
        raw = attributes.get(TOOL_ARGUMENTS) if genai else attributes.get(OI_INPUT)
        if not call_id and not genai:
            returned = tool_message(attributes.get(OI_OUTPUT))
            if returned is not None:
                call_id = returned["tool_call_id"]
        call = self.builder.known_call(str(call_id)) if call_id else None
        if call is None and not call_id:
            arguments, _ = parse_arguments(raw)
            if arguments is not None and "_raw" in arguments and len(arguments) == 1:
                self.builder.skipped["tool span naming no call, its arguments not JSON"] += 1
                return None
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
        returned = None if genai else tool_message(value)
        if returned is not None:  # a LangChain tool's ToolMessage: its content is the result
            self.builder.result(call, tool_result(returned), agent=agent)
            return
        if value is not None and not genai and attributes.get(OI_OUTPUT_MIME) == "text/plain":
            result: Any = value
        else:
            result = maybe_json(value)
        if span.status == "ERROR":
            self.builder.result(call, tool_error(span, result), agent=agent)
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


# --- entry points --------------------------------------------------------------------------


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
