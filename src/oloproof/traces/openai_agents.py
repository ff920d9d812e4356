"""OpenAI Agents SDK runs (docs/traces.md#openai-agents-sdk-run-items--steps): `from_openai_agents`.

Reads a run result's `new_items` (or the `run_data` of the exception a run raised). The SDK
is imported only here and only when this adapter is used, so nothing else needs it. Every
step names the agent whose turn produced the item (`item.agent.name`); a `HandoffOutputItem`
is the `handoff` step (its `source_agent` → `target_agent`), and the `HandoffCallItem` it
answers makes no step of its own. `MaxTurnsExceeded` makes the trajectory truncated with the
run's `max_turns` as `step_limit`; another exception makes it a `failure`, and a run that
ended with its answer a `success`. Instructions (system and developer messages of the input)
are no steps, as in every format.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from oloproof.errors import TraceError
from oloproof.recording.trajectory import AgentTrajectory, TerminalStatus
from oloproof.traces.openai_messages import as_mapping
from oloproof.traces.reading import (
    TraceReading,
    TraceUsage,
    TrajectoryBuilder,
    jsonable,
    maybe_json,
    warn_if_skipped,
)

_MAX_TURNS = re.compile(r"Max turns \((\d+)\) exceeded")
# Items that are understood but are not steps of the trajectory.
_NOT_STEPS = {"reasoning_item": "reasoning", "mcp_list_tools_item": "mcp_list_tools",
              "compaction_item": "compaction"}


def read_openai_agents(result: Any) -> TraceReading:
    """Read an Agents SDK run into a trajectory, with what it skipped.

    Args:
        result: what `Runner.run` / `Runner.run_sync` returned (or a streamed result once it
            is complete), or the `AgentsException` a run raised (its `run_data` is read;
            `MaxTurnsExceeded` makes the trajectory truncated).

    Returns:
        A TraceReading; `.usage` is the run's token usage (`context_wrapper.usage`).

    Raises:
        TraceError: `result` is neither a run result nor an exception with run data.
    """
    from agents.exceptions import AgentsException, MaxTurnsExceeded

    terminal: TerminalStatus | None = None  # derived by the builder: success with an answer
    truncated, step_limit = False, None
    items: Any
    run_input: Any
    context: Any
    if isinstance(result, AgentsException):
        data = result.run_data
        if data is None:
            raise TraceError(f"{type(result).__name__} carries no run_data: nothing was recorded")
        items, run_input, context = data.new_items, data.input, data.context_wrapper
        if isinstance(result, MaxTurnsExceeded):
            truncated = True
            found = _MAX_TURNS.search(str(result))
            step_limit = int(found.group(1)) if found else None
        else:
            terminal = "failure"
    elif hasattr(result, "new_items"):
        items, run_input = result.new_items, result.input
        context = getattr(result, "context_wrapper", None)
        if getattr(result, "interruptions", None) or getattr(result, "is_complete", True) is False:
            # Paused for a tool approval, or a streamed run not finished: it has not ended.
            terminal = "unknown"
    else:
        raise TraceError(
            f"from_openai_agents takes a run result or the exception a run raised, "
            f"not {type(result).__name__}"
        )
    builder = TrajectoryBuilder("openai_agents")
    first_agent = _agent_name(items[0]) if items else None
    _input(builder, run_input, first_agent)
    for item in items:
        _item(builder, item)
    return builder.finish(terminal_status=terminal, truncated=truncated, step_limit=step_limit,
                          usage=_usage(context))


def _agent_name(item: Any) -> str | None:
    agent = getattr(item, "agent", None)
    name = getattr(agent, "name", None)
    return str(name) if name else None


def _input(builder: TrajectoryBuilder, run_input: Any, agent: str | None) -> None:
    if isinstance(run_input, str):
        builder.message("user", run_input, agent=agent)
        return
    for entry in run_input or []:
        item = as_mapping(entry)
        role = item.get("role") if item is not None else None
        if item is not None and role in ("user", "system", "developer") and (
            item.get("type", "message") == "message"
        ):
            builder.message(str(role), item.get("content"), agent=agent)
        else:
            # Earlier history handed to the run again: not a step of this run.
            kind = item.get("type", "?") if item is not None else type(entry).__name__
            builder.ignored[f"input:{kind}"] += 1


def _item(builder: TrajectoryBuilder, item: Any) -> None:
    kind = getattr(item, "type", None)
    agent = _agent_name(item)
    raw = as_mapping(getattr(item, "raw_item", None)) or {}
    if kind == "message_output_item":
        builder.message("assistant", _message_text(raw), agent=agent)
    elif kind == "tool_call_item":
        raw_type = raw.get("type")
        if raw_type == "function_call":
            builder.call(str(raw.get("name")), raw.get("arguments"), call_id=raw.get("call_id"),
                         agent=agent)
        elif raw_type == "mcp_call":
            call = builder.call(str(raw.get("name")), raw.get("arguments"), agent=agent)
            error = raw.get("error")
            builder.result(call, {"error": error} if error else maybe_json(raw.get("output")))
        else:
            builder.skipped[f"tool_call_item:{raw_type}"] += 1
    elif kind == "tool_call_output_item":
        answered = builder.known_call(raw.get("call_id"))
        if answered is None or answered.answered:
            builder.skipped["tool_output_without_call"] += 1
            return
        output = getattr(item, "output", None)
        builder.result(answered, maybe_json(output) if output is not None else
                       maybe_json(raw.get("output")), agent=agent)
    elif kind == "handoff_call_item":
        # Provisional: the HandoffOutputItem answering it turns it into the hand-off step.
        builder.call(str(raw.get("name")), raw.get("arguments"), call_id=raw.get("call_id"),
                     agent=agent)
    elif kind == "handoff_output_item":
        handoff = builder.known_call(raw.get("call_id"))
        source = getattr(getattr(item, "source_agent", None), "name", None) or agent
        target = getattr(getattr(item, "target_agent", None), "name", None)
        if handoff is None or handoff.answered or not target:
            builder.skipped["handoff_output_without_call"] += 1
            return
        builder.replace(handoff, "handoff", to_agent=str(target),
                        arguments={"tool": handoff.step.tool_name,
                                   **(handoff.step.arguments or {})})
        handoff.step.agent = str(source) if source else None
    elif kind in _NOT_STEPS:
        builder.ignored[_NOT_STEPS[kind]] += 1
    else:
        builder.skipped[f"item:{kind or type(item).__name__}"] += 1


def _message_text(raw: Mapping[str, Any]) -> Any:
    parts = raw.get("content") or []
    texts = [p.get("text") if p.get("type") == "output_text" else p.get("refusal")
             for p in parts if isinstance(p, Mapping)]
    if texts and all(isinstance(t, str) for t in texts):
        return "".join(str(t) for t in texts)
    return jsonable(parts)


def _usage(context: Any) -> TraceUsage | None:
    usage = getattr(context, "usage", None)
    if usage is None or not getattr(usage, "requests", 0):
        return None
    return TraceUsage(int(usage.input_tokens), int(usage.output_tokens))


def from_openai_agents(result: Any) -> AgentTrajectory:
    """The `AgentTrajectory` of an OpenAI Agents SDK run
    (docs/traces.md#openai-agents-sdk-run-items--steps).

    Warns (`TraceWarning`) if an item could not be read; `read_openai_agents` returns the
    same trajectory with what was skipped and marked.
    """
    reading = read_openai_agents(result)
    warn_if_skipped(reading, "from_openai_agents")
    return reading.trajectory



