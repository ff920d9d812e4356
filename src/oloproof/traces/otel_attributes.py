"""The two span vocabularies an OpenTelemetry trace is read in, and the messages they carry
(docs/traces.md#opentelemetry-genai-spans--steps): what one span is, read from that span alone.

- the GenAI semantic conventions: `gen_ai.operation.name` = `invoke_agent` (an agent, named by
  `gen_ai.agent.name`) or `invoke_workflow` (an agent too: the conventions' standalone release
  v0.1.0 folded the workflow span into the invoke-agent span and named it by
  `gen_ai.agent.name`; the older releases' `gen_ai.workflow.name` is read beside it),
  `execute_tool` (`gen_ai.tool.name`, `gen_ai.tool.call.id`,
  `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), `chat` / `text_completion` /
  `generate_content` (a model call: `gen_ai.input.messages`, `gen_ai.output.messages`, on the
  span or on its `gen_ai.client.inference.operation.details` event; `gen_ai.usage.*`);
- OpenInference: `openinference.span.kind` = AGENT (`agent.name`), TOOL (`tool.name`,
  `tool.id`, `input.value`, `output.value`), LLM (`llm.input_messages.*`,
  `llm.output_messages.*`, `llm.token_count.*`, `llm.cost.total`), CHAIN (a container).

`span_role` says what a span is for the trajectory, `span_messages` decodes its input or output
messages (GenAI JSON parts, or OpenInference's flattened lists) as `Message`s. Neither looks at
another span: the tree is `otel_tree`'s, the walk `otel`'s.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from oloproof.traces.reading import TrajectoryBuilder
from oloproof.traces.spans import Span

# GenAI semantic conventions
OPERATION = "gen_ai.operation.name"
AGENT_NAME = "gen_ai.agent.name"
WORKFLOW_NAME = "gen_ai.workflow.name"  # (before v0.1.0; now gen_ai.agent.name)
AGENT_OPERATIONS = frozenset({"invoke_agent", "invoke_workflow"})
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
    "embeddings", "retrieval", "create_agent", "plan", "create_memory",
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


@dataclass
class Message:
    """A message of either vocabulary: its text, the calls it makes, the results it carries."""

    role: str
    content: Any = None
    calls: list[tuple[str | None, str, Any]] = field(default_factory=list)
    results: list[tuple[str | None, Any]] = field(default_factory=list)


# --- what a span is --------------------------------------------------------------------------


AGENT, TOOL, MODEL, HANDOFF, CONTAINER = "agent", "tool", "model", "handoff", "container"


def span_role(span: Span, builder: TrajectoryBuilder) -> str | None:
    """What the span is for the trajectory; counts it as ignored/skipped when it is nothing."""
    attributes = span.attributes
    operation = attributes.get(OPERATION)
    if operation is not None:
        if operation in AGENT_OPERATIONS:
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


def genai_messages(value: Any, builder: TrajectoryBuilder, what: str) -> list[Message]:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            builder.skipped[f"{what} not JSON"] += 1
            return []
    if not isinstance(value, list):
        builder.skipped[f"{what} not a list"] += 1
        return []
    messages: list[Message] = []
    for entry in value:
        if not isinstance(entry, dict):  # parsed JSON: objects are dicts
            builder.skipped[f"{what} entry"] += 1
            continue
        message = Message(str(entry.get("role") or "assistant"))
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


def _openinference_messages(attributes: Mapping[str, Any], prefix: str) -> list[Message]:
    messages: list[Message] = []
    for entry in _unflatten(attributes, prefix):
        message = Message(str(entry.get("message.role") or "assistant"))
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


def genai_value(span: Span, key: str) -> Any:
    """The GenAI messages attribute `key`, on the span or on its operation-details event."""
    value = span.attributes.get(key)
    if value is None:
        for event in span.events:
            if event.name == DETAILS_EVENT and key in event.attributes:
                return event.attributes[key]
    return value


def span_messages(span: Span, builder: TrajectoryBuilder, which: str) -> list[Message]:
    """The span's `which` ("input" or "output") messages, in whichever vocabulary it holds."""
    key = INPUT_MESSAGES if which == "input" else OUTPUT_MESSAGES
    value = genai_value(span, key)
    if value is not None:
        return genai_messages(value, builder, key)
    prefix = OI_INPUT_MESSAGES if which == "input" else OI_OUTPUT_MESSAGES
    return _openinference_messages(span.attributes, prefix)


def continuation(text: str, previous: str) -> str | None:
    """When `text` is the JSON list `previous` with messages appended (a model call shown
    the history of the one before it), the appended messages as a JSON list; else None."""
    end = len(previous) - 1
    if (len(text) > end + 1 and previous.endswith("]") and text[end] == ","
            and text.startswith(previous[:end])):
        return "[" + text[end + 1:]
    return None
