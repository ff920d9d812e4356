"""LangChain / LangGraph message lists (docs/traces.md#langchain--langgraph-messages--steps):
`from_langchain_messages`.

Reads `langchain_core` message objects (or their `model_dump()` / `messages_to_dict` forms)
without importing LangChain. `AIMessage.tool_calls` → `tool_call` steps, `ToolMessage` →
`tool_result` (with `status: "error"` → a result carrying the error), `AIMessage.name` names
the agent. Hand-offs are read only where a library marks them (docs/traces.md):

- langgraph-supervisor: a ToolMessage whose `response_metadata` holds `__handoff_destination`
  (the agent it transfers to) or `__is_handoff_back` (back to the supervisor);
- langgraph-swarm (and the supervisor without metadata): the handoff tool's own reply — a
  ToolMessage named `transfer_to_<agent>` whose content is `Successfully transferred to <agent>`.

The tool call such a message answers becomes the `handoff` step (not a `tool_call`). Streamed
`AIMessageChunk`s are joined first (tool-call argument fragments concatenated by index).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from oloproof.recording.trajectory import AgentTrajectory
from oloproof.recording.usage import carry_usage
from oloproof.traces.openai_messages import as_mapping
from oloproof.traces.reading import (
    TraceReading,
    TraceUsage,
    TrajectoryBuilder,
    maybe_json,
    warn_if_skipped,
)

HANDOFF_DESTINATION = "__handoff_destination"
HANDOFF_BACK = "__is_handoff_back"
_TRANSFERRED = re.compile(r"^Successfully transferred (back )?to (.+)$")
_WHITESPACE = re.compile(r"\s+")
_ROLES = {"human": "user", "system": "system", "ai": "assistant", "chat": None}


def _tool_name_for(agent: str) -> str:
    # How both libraries name a handoff tool: `transfer_to_<agent>`, whitespace to `_`, lower.
    return _WHITESPACE.sub("_", agent.strip()).lower()


def _messages(messages: Iterable[Any], builder: TrajectoryBuilder) -> list[dict[str, Any]]:
    """Message mappings, `messages_to_dict` unwrapped, streamed chunks joined."""
    out: list[dict[str, Any]] = []
    for item in messages:
        message = as_mapping(item)
        if message is None:
            builder.skipped[f"message:{type(item).__name__}"] += 1
            continue
        message = dict(message)
        if set(message) == {"type", "data"} and isinstance(message["data"], Mapping):
            message = {**message["data"], "type": message["type"]}
        kind = message.get("type")
        if kind == "AIMessageChunk":
            last = out[-1] if out else None
            if (last is not None and last.get("type") == "AIMessageChunk"
                    and last.get("id") == message.get("id")):
                out[-1] = _join_chunks(last, message)
                continue
        out.append(message)
    return out


def _join_chunks(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    joined = dict(a)
    if isinstance(a.get("content"), str) and isinstance(b.get("content"), str):
        joined["content"] = a["content"] + b["content"]
    pieces: dict[int, dict[str, Any]] = {}
    for chunk in list(a.get("tool_call_chunks") or []) + list(b.get("tool_call_chunks") or []):
        at = pieces.setdefault(int(chunk.get("index") or 0), {"name": None, "id": None,
                                                              "args": ""})
        at["name"] = at["name"] or chunk.get("name")
        at["id"] = at["id"] or chunk.get("id")
        at["args"] += chunk.get("args") or ""
    joined["tool_call_chunks"] = [{"index": i, **p} for i, p in sorted(pieces.items())]
    joined["usage_metadata"] = b.get("usage_metadata") or a.get("usage_metadata")
    return joined


def _handoff_target(message: Mapping[str, Any]) -> str | None:
    """The agent a ToolMessage hands control to, when a library marks it as a hand-off."""
    metadata = message.get("response_metadata") or {}
    if isinstance(metadata, Mapping) and isinstance(metadata.get(HANDOFF_DESTINATION), str):
        return str(metadata[HANDOFF_DESTINATION])
    found = _TRANSFERRED.match(str(message.get("content") or ""))
    if found is None:
        return None
    agent = found.group(2)
    if found.group(1):  # handed back: only with the supervisor's flag
        back = isinstance(metadata, Mapping) and metadata.get(HANDOFF_BACK) is True
        return agent if back else None
    return agent if message.get("name") == f"transfer_to_{_tool_name_for(agent)}" else None


def read_langchain_messages(messages: Iterable[Any]) -> TraceReading:
    """Read a LangChain/LangGraph message list into a trajectory, with what it skipped.

    Args:
        messages: `langchain_core` messages in order (e.g. a graph state's `messages`).

    Returns:
        A TraceReading; `.usage` sums the AI messages' `usage_metadata` where present.
    """
    builder = TrajectoryBuilder("langchain_messages")
    input_tokens = output_tokens = 0
    with_usage = False
    for message in _messages(messages, builder):
        kind = message.get("type")
        if kind in ("ai", "AIMessageChunk"):
            usage = message.get("usage_metadata")
            if isinstance(usage, Mapping):
                with_usage = True
                input_tokens += int(usage.get("input_tokens") or 0)
                output_tokens += int(usage.get("output_tokens") or 0)
            _ai(builder, message, chunk=kind == "AIMessageChunk")
        elif kind == "tool":
            _tool(builder, message)
        elif kind in _ROLES:
            role = _ROLES[kind] or str(message.get("role") or "user")
            builder.message(role, message.get("content"), name=message.get("name"))
        else:
            builder.skipped[f"message:type={kind}"] += 1
    usage = TraceUsage(input_tokens, output_tokens) if with_usage else None
    return builder.finish(usage=usage)


def _ai(builder: TrajectoryBuilder, message: Mapping[str, Any], *, chunk: bool) -> None:
    agent = message.get("name") or None
    content = message.get("content")
    if chunk:
        calls = [{"name": c.get("name"), "args": c.get("args"), "id": c.get("id")}
                 for c in message.get("tool_call_chunks") or []]
    else:
        calls = list(message.get("tool_calls") or [])
        # LangChain keeps calls whose arguments were not JSON apart, with the raw text.
        calls += list(message.get("invalid_tool_calls") or [])
    if content not in (None, "", []) or not calls:
        builder.message("assistant", content, agent=agent)
    for call in calls:
        if not call.get("name"):
            builder.skipped["tool_call_without_name"] += 1
            continue
        builder.call(str(call["name"]), call.get("args"), call_id=call.get("id"), agent=agent)


def _tool(builder: TrajectoryBuilder, message: Mapping[str, Any]) -> None:
    call = builder.known_call(message.get("tool_call_id"))
    if call is None or call.answered:
        builder.skipped["tool_message_without_call"] += 1
        return
    target = _handoff_target(message)
    if target is not None:
        builder.replace(call, "handoff", to_agent=target,
                        arguments={"tool": call.step.tool_name, "content": message.get("content")})
        return
    builder.result(call, tool_result(message))


def tool_result(message: Mapping[str, Any]) -> Any:
    """A ToolMessage's result as a `tool_result` step holds it: its content (JSON text parsed),
    under `error` when the message's status says the tool failed."""
    content = maybe_json(message.get("content"))
    return {"error": content} if message.get("status") == "error" else content


def tool_message(value: Any) -> Mapping[str, Any] | None:
    """The ToolMessage `value` is, serialised (as an instrumentation records a tool's output:
    `messages_to_dict`'s `{"type": "tool", "data": {...}}`, LangChain's `{"lc": 1, "type":
    "constructor", ..., "kwargs": {...}}`, or a `model_dump()`), when it names the call it
    answers (`tool_call_id`); else None."""
    if isinstance(value, str):
        value = maybe_json(value)
    if not isinstance(value, Mapping):
        return None
    if value.get("lc") == 1 and isinstance(value.get("kwargs"), Mapping):
        ids = value.get("id")
        if not (isinstance(ids, list) and ids and ids[-1] == "ToolMessage"):
            return None
        message: Mapping[str, Any] = value["kwargs"]
    elif set(value) == {"type", "data"} and isinstance(value["data"], Mapping):
        if value["type"] != "tool":
            return None
        message = value["data"]
    elif value.get("type") == "tool":
        message = value
    else:
        return None
    call_id = message.get("tool_call_id")
    return message if isinstance(call_id, str) and call_id else None


def from_langchain_messages(messages: Iterable[Any]) -> AgentTrajectory:
    """The `AgentTrajectory` of a LangChain/LangGraph message list
    (docs/traces.md#langchain--langgraph-messages--steps).

    Warns (`TraceWarning`) if a message could not be read; `read_langchain_messages` returns
    the same trajectory with what was skipped and marked. The AI messages' `usage_metadata`
    (input and output tokens, summed) travels with the trajectory: recorded in a case
    (`current_case().agent_trajectory(...)`), it is the case's `usage/v1`.
    """
    reading = read_langchain_messages(messages)
    warn_if_skipped(reading, "from_langchain_messages")
    # The AI messages' usage_metadata travels with it: recorded with the trajectory, it is the
    # case's usage/v1 (docs/traces.md#tokens-and-cost).
    return carry_usage(reading.trajectory,
                       reading.usage.payload() if reading.usage is not None else None)
