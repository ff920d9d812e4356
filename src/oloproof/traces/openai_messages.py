"""Chat-completions conversations (docs/traces.md#openai-chat-completions--steps):
`from_openai_messages`.

Reads the messages a system sends to and gets back from the chat-completions API, as plain
dicts or as the `openai` package's objects (anything with `model_dump`). The mapping is in
docs/traces.md; in short: assistant `tool_calls` → `tool_call` steps, `role: tool` replies →
`tool_result` steps matched by `tool_call_id`, other messages → `message` steps, the last
assistant message (when it calls nothing) → `final`. Streamed chunks
(`chat.completion.chunk`, each `choices[0].delta` a fragment) are joined first into the
assistant message they make up: content concatenated, `tool_calls` fragments joined by
`index` (the id and name from the first fragment, the arguments text concatenated).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from oloproof.recording.trajectory import AgentTrajectory
from oloproof.traces.reading import (
    Call,
    TraceReading,
    TraceUsage,
    TrajectoryBuilder,
    maybe_json,
    warn_if_skipped,
)

_MESSAGE_ROLES = ("system", "developer", "user", "assistant")


def as_mapping(item: Any) -> Mapping[str, Any] | None:
    """A message as a mapping: a dict as it is, a pydantic object through `model_dump`."""
    if isinstance(item, Mapping):
        return item
    dump = getattr(item, "model_dump", None)
    if callable(dump):
        value = dump(exclude_none=True)
        if isinstance(value, Mapping):
            return value
    return None


def read_openai_messages(messages: Iterable[Any], *,
                         usage: TraceUsage | None = None) -> TraceReading:
    """Read a chat-completions conversation into a trajectory, with what it skipped.

    Args:
        messages: the conversation in order (dicts or `openai` message objects).
        usage: tokens and cost, if the caller has them (the messages do not carry usage).

    Returns:
        A TraceReading: `.trajectory` (no step names an agent: a conversation is one agent's),
        `.skipped` (messages of a role this adapter has no rule for), `.notes`.
    """
    builder = TrajectoryBuilder("openai_messages")
    by_function: dict[str, list[Call]] = {}  # legacy `function_call` replies match by name
    for position, item in enumerate(_joined(messages, builder)):
        message = as_mapping(item)
        if message is None:
            builder.skipped[f"message:{type(item).__name__}"] += 1
            continue
        role = message.get("role")
        if role == "tool":
            call = builder.known_call(message.get("tool_call_id"))
            if call is None or call.answered:
                builder.skipped["tool_message_without_call"] += 1
                continue
            builder.result(call, maybe_json(message.get("content")))
        elif role == "function":
            pending = [c for c in by_function.get(str(message.get("name")), []) if not c.answered]
            if not pending:
                builder.skipped["function_message_without_call"] += 1
                continue
            builder.result(pending[0], maybe_json(message.get("content")))
        elif role in _MESSAGE_ROLES:
            content = message.get("content")
            calls = message.get("tool_calls") or []
            if content not in (None, "", []) or (role == "assistant" and not calls
                                                 and not message.get("function_call")):
                builder.message(str(role), content, name=message.get("name"))
            if role == "assistant":
                for tool_call in calls:
                    _call(builder, tool_call, position)
                legacy = message.get("function_call")
                if isinstance(legacy, Mapping):
                    name = str(legacy.get("name") or "")
                    call = builder.call(name, legacy.get("arguments"))
                    by_function.setdefault(name, []).append(call)
        else:
            builder.skipped[f"message:role={role}"] += 1
    return builder.finish(usage=usage)


CHUNK = "chat.completion.chunk"


def _joined(messages: Iterable[Any], builder: TrajectoryBuilder) -> list[Any]:
    """The messages, with each streamed response's chunks joined into one assistant message
    (consecutive chunks of one response share its `id`)."""
    out: list[Any] = []
    current: tuple[Any, dict[str, Any], dict[int, dict[str, Any]]] | None = None
    for item in messages:
        chunk = as_mapping(item)
        if chunk is None or chunk.get("object") != CHUNK:
            out.append(item)
            current = None
            continue
        choices = chunk.get("choices") or []
        delta = as_mapping(choices[0].get("delta")) if choices and isinstance(
            choices[0], Mapping) else None
        if delta is None:
            builder.ignored["chunk without delta"] += 1  # e.g. the closing usage chunk
            continue
        if current is None or current[0] != chunk.get("id"):
            joined: dict[str, Any] = {"role": "assistant", "content": None}
            current = (chunk.get("id"), joined, {})
            out.append(joined)
        _, joined, calls = current
        if delta.get("content"):
            joined["content"] = (joined["content"] or "") + str(delta["content"])
        for fragment in delta.get("tool_calls") or []:
            part = as_mapping(fragment) or {}
            index = int(part.get("index") or 0)
            function = as_mapping(part.get("function")) or {}
            call = calls.setdefault(index, {"id": None, "type": "function",
                                            "function": {"name": None, "arguments": ""}})
            call["id"] = call["id"] or part.get("id")
            call["function"]["name"] = call["function"]["name"] or function.get("name")
            call["function"]["arguments"] += str(function.get("arguments") or "")
            joined["tool_calls"] = [calls[i] for i in sorted(calls)]
    return out


def _call(builder: TrajectoryBuilder, tool_call: Any, position: int) -> None:
    entry = as_mapping(tool_call)
    function = as_mapping(entry.get("function")) if entry is not None else None
    if entry is None or function is None or not function.get("name"):
        kind = entry.get("type", "?") if entry is not None else type(tool_call).__name__
        builder.skipped[f"tool_call:{kind}"] += 1
        return
    builder.call(str(function["name"]), function.get("arguments"), call_id=entry.get("id"))


def from_openai_messages(messages: Iterable[Any]) -> AgentTrajectory:
    """The `AgentTrajectory` of a chat-completions conversation
    (docs/traces.md#openai-chat-completions--steps).

    Warns (`TraceWarning`) if a message could not be read; `read_openai_messages` returns the
    same trajectory with what was skipped and marked.
    """
    reading = read_openai_messages(messages)
    warn_if_skipped(reading, "from_openai_messages")
    return reading.trajectory
