"""Per-case facts read from a trajectory, and what slices and quantile metrics take from them.

`trajectory_facts` is computed once per executed case and stored with the execution (it is
JSON). `slice_group` places a case in a group of a declared slice
(docs/concepts.md#slices-are-exploratory-and-never-gate) and `quantile_value` gives its number for a
quantile metric (docs/agents-and-tools.md#quantiles-over-trajectories).

On a truncated trace every count is a lower bound (the agent was stopped, so the true number of
steps is larger than the recorded one; the true number of tool calls is at least the recorded
one). A truncated case joins a trajectory-derived slice only when the recorded part already
settles its group, never a route group, and gives no quantile value (a quantile of a lower bound
is not a quantile).

A case that recorded `usage/v1` (docs/traces.md#tokens-and-cost) has its tokens and cost under the
key `usage`; the trajectory's keys are there only when it recorded a trajectory (`has_trajectory`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, TypeGuard

from oloproof.recording.trajectory import AgentTrajectory
from oloproof.recording.usage import usage_tokens
from oloproof.traces import EMPTY_TRAJECTORY

QUANTILE_SOURCES = ("agent_steps", "agent_tool_calls", "latency_ms", "tokens", "cost")
METADATA_PREFIX = "metadata."


def trajectory_facts(trajectory: AgentTrajectory) -> dict[str, Any]:
    """The facts slices and quantile metrics need, as a JSON-able dict.

    Keys: `steps` (number of steps), `tool_calls` (number of `tool_call` steps), `truncated`,
    `first_tool` (tool of the first call, or None), `repeated` (some identical call — same tool
    and arguments — occurs twice or more anywhere), `route` (list of agents, or None when no
    step names an agent) and `named` (whether the steps name their agents).
    """
    facts = trajectory.step_facts()
    names, route = facts.names, facts.route
    return {
        "steps": len(trajectory.steps),
        "tool_calls": len(names),
        "truncated": trajectory.truncated,
        "first_tool": names[0] if names else None,
        "repeated": facts.repeated,
        "route": None if route is None else list(route),
        "named": route is not None,
    }


def case_facts(trajectory: AgentTrajectory | None, usage: dict[str, Any] | None,
               unread: int = 0, *, empty_trace: bool = False,
               reader: str | None = None) -> dict[str, Any] | None:
    """The stored facts of an executed case: its trajectory's facts, its `usage/v1` payload
    (under `usage`) and, for a trajectory read from a trace, how many of the trace's items
    the reader did not understand (`unread`, when not 0) and which adapter read it (`reader`,
    named by the run's warning); None when it recorded none.

    A trajectory read from a trace that gave no step (`empty_trace`) has no trajectory facts,
    only `empty_trajectory`: it joins no trajectory slice and gives no step count, as no
    trajectory criterion judges it (`oloproof.traces.gave_no_step`)."""
    if empty_trace:
        facts: dict[str, Any] | None = {EMPTY_TRAJECTORY: True}
    else:
        facts = trajectory_facts(trajectory) if trajectory is not None else None
    if usage is not None:
        facts = {**(facts or {}), "usage": dict(usage)}
    if unread and facts is not None:
        facts["unread"] = unread
        if reader:
            facts["reader"] = reader
    return facts


def empty_trace(facts: dict[str, Any] | None) -> bool:
    """Whether these facts are those of a trace that gave no step (see `case_facts`)."""
    return facts is not None and EMPTY_TRAJECTORY in facts


def has_trajectory(facts: dict[str, Any] | None) -> TypeGuard[dict[str, Any]]:
    """Whether these facts hold a trajectory's (a case may have recorded only usage)."""
    return facts is not None and "steps" in facts


# How a slice reads a case: (whether from its trajectory's facts, else from its metadata; the
# group it reads, or None). A trajectory reader is only given facts that hold a trajectory.
_SliceReader = tuple[bool, Callable[[dict[str, Any]], str | None]]


def slice_group(spec: str, facts: dict[str, Any] | None, metadata: dict[str, Any]) -> str | None:
    """The group a case joins for the declared slice `spec`, or None when it joins none.

    `metadata.<key>`: the value (non-strings as compact JSON; the key is taken whole, dots
    included, and an absent key joins no group). Trajectory slices (`first_tool`,
    `repeated_action`, `trajectory_length:a,b,...`, `tool_calls:a,b,...`, `route`): None when
    the case has no trajectory (`facts` None), and on a truncated trace unless the recorded part
    settles the group.
    """
    return slice_groups([spec])(facts, metadata)[0]


def slice_groups(
    specs: Sequence[str],
) -> Callable[[dict[str, Any] | None, dict[str, Any]], list[str | None]]:
    """The group a case joins in each of these slices (`slice_group`), the specs read once and
    whether the case has a trajectory asked once per case (a run places every case)."""
    readers = [_slice_reader(spec) for spec in specs]

    def groups(facts: dict[str, Any] | None, metadata: dict[str, Any]) -> list[str | None]:
        trajectory = facts if has_trajectory(facts) else None
        return [read(metadata) if not of_trajectory else
                None if trajectory is None else read(trajectory)
                for of_trajectory, read in readers]

    return groups


def _slice_reader(spec: str) -> _SliceReader:
    if spec.startswith(METADATA_PREFIX):
        return False, partial(_metadata_group, spec[len(METADATA_PREFIX):])
    kind, _, bounds_text = spec.partition(":")
    if kind in ("trajectory_length", "tool_calls"):
        bounds = _bounds(spec, bounds_text)
        if kind == "trajectory_length":
            # Truncation stopped the agent: the true step count exceeds the recorded one.
            return True, partial(_count_group, "steps", bounds, True)
        return True, partial(_count_group, "tool_calls", bounds, False)
    if bounds_text:
        raise ValueError(f"unknown slice {spec!r}")
    by_facts = {"first_tool": _first_tool_group, "repeated_action": _repeated_group,
                "route": _route_group}.get(kind)
    if by_facts is None:
        raise ValueError(f"unknown slice {spec!r}")
    return True, by_facts


def quantile_value(
    source: str, facts: dict[str, Any] | None, latency_ms: float | None
) -> float | None:
    """A case's number for a quantile metric, or None (missing).

    `agent_steps` and `agent_tool_calls` are missing without a trajectory or on a truncated
    trace; `latency_ms` is the system call's wall time; `tokens` (input plus output, as far
    as recorded) and `cost` come from `usage/v1`, missing when the case recorded none.
    """
    if source == "latency_ms":
        return None if latency_ms is None else float(latency_ms)
    if source in ("tokens", "cost"):
        usage = facts.get("usage") if facts is not None else None
        if usage is None:
            return None
        if source == "cost":
            return None if usage.get("cost") is None else float(usage["cost"])
        tokens = usage_tokens(usage)
        return None if tokens is None else float(tokens)
    if source not in ("agent_steps", "agent_tool_calls"):
        raise ValueError(f"unknown quantile source {source!r}; one of {QUANTILE_SOURCES}")
    if not has_trajectory(facts) or facts["truncated"]:
        return None
    return float(facts["steps" if source == "agent_steps" else "tool_calls"])


def _metadata_group(key: str, metadata: dict[str, Any]) -> str | None:
    if key not in metadata:
        return None
    value = metadata[key]
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _count_group(count: str, bounds: list[int], strictly_more: bool,
                 facts: dict[str, Any]) -> str | None:
    return _bucket(facts[count], bounds, facts["truncated"], strictly_more=strictly_more)


def _first_tool_group(facts: dict[str, Any]) -> str | None:
    tool = facts["first_tool"]
    if tool is not None:
        return str(tool)
    return None if facts["truncated"] else "none"


def _repeated_group(facts: dict[str, Any]) -> str | None:
    if facts["repeated"]:
        return "true"
    return None if facts["truncated"] else "false"


def _route_group(facts: dict[str, Any]) -> str | None:
    route = facts["route"]
    if route is None or facts["truncated"]:
        return None
    return ">".join(route)


def _bounds(spec: str, text: str) -> list[int]:
    try:
        bounds = [int(b) for b in text.split(",")]
    except ValueError:
        raise ValueError(f"slice {spec!r}: bounds must be integers like 4,8") from None
    if not bounds or bounds != sorted(set(bounds)):
        raise ValueError(f"slice {spec!r}: bounds must be strictly ascending")
    return bounds


def _bucket(count: int, bounds: list[int], truncated: bool, *, strictly_more: bool) -> str | None:
    """`le_<b>` for the first bound b with count <= b, else `gt_<last>`.

    On a truncated trace only the top bucket can be settled: when the true count (greater than
    `count` if `strictly_more`, else at least `count`) is certainly past the last bound.
    """
    last = bounds[-1]
    if truncated:
        settled = count >= last if strictly_more else count > last
        return f"gt_{last}" if settled else None
    for bound in bounds:
        if count <= bound:
            return f"le_{bound}"
    return f"gt_{last}"
