"""Per-case trajectory facts, slice membership and quantile values (docs/agents-and-tools.md)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from oloproof.analysis.facts import case_facts, quantile_value, slice_group, trajectory_facts
from oloproof.recording.trajectory import AgentStep, AgentTrajectory


def call(tool: str, agent: str | None = None, **arguments: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "tool_name": tool, "arguments": arguments, "agent": agent}


def msg(agent: str | None = None) -> dict[str, Any]:
    return {"kind": "message", "agent": agent}


def traj(*specs: dict[str, Any], truncated: bool = False) -> AgentTrajectory:
    return AgentTrajectory(
        steps=tuple(AgentStep(index=i, **s) for i, s in enumerate(specs, 1)),
        truncated=truncated,
    )


def facts_of(*specs: dict[str, Any], truncated: bool = False) -> dict[str, Any]:
    return trajectory_facts(traj(*specs, truncated=truncated))


def n_steps(n: int, truncated: bool = False) -> dict[str, Any]:
    return facts_of(*[msg() for _ in range(n)], truncated=truncated)


def n_calls(n: int, truncated: bool = False) -> dict[str, Any]:
    return facts_of(*[call("t", i=i) for i in range(n)], truncated=truncated)


# --- trajectory_facts -------------------------------------------------------------------------


def test_facts_of_a_single_agent_trace() -> None:
    f = facts_of(msg(), call("search", q="a"), {"kind": "tool_result", "tool_name": "search"},
                 call("lookup", id=1), call("search", q="a"))
    assert f == {
        "steps": 5, "tool_calls": 3, "truncated": False, "first_tool": "search",
        "repeated": True, "route": None, "named": False,
    }
    assert json.loads(json.dumps(f)) == f


def test_facts_without_calls_or_repeats() -> None:
    f = facts_of(msg(), call("a", q=1), call("a", q=2), truncated=True)
    assert f["repeated"] is False
    assert f["truncated"] is True
    assert facts_of(msg())["first_tool"] is None
    assert facts_of()["steps"] == 0


def test_facts_of_a_multi_agent_trace() -> None:
    f = facts_of(msg("triage"), {"kind": "handoff", "agent": "triage", "to_agent": "billing"},
                 call("lookup_order", agent="billing"))
    assert f["route"] == ["triage", "billing"]
    assert f["named"] is True


# --- slices: metadata -------------------------------------------------------------------------


def test_metadata_slice() -> None:
    meta = {"surface": "chat", "tier": 2, "flags": {"b": 1, "a": True}, "none": None}
    assert slice_group("metadata.surface", None, meta) == "chat"
    assert slice_group("metadata.tier", None, meta) == "2"
    assert slice_group("metadata.flags", None, meta) == '{"a":true,"b":1}'
    assert slice_group("metadata.none", None, meta) == "null"
    assert slice_group("metadata.absent", None, meta) is None
    truncated = n_steps(3, truncated=True)
    assert slice_group("metadata.surface", truncated, meta) == "chat"


# --- slices: first_tool -----------------------------------------------------------------------


def test_first_tool_slice() -> None:
    assert slice_group("first_tool", facts_of(msg(), call("search"), call("a")), {}) == "search"
    assert slice_group("first_tool", facts_of(msg()), {}) == "none"
    assert slice_group("first_tool", None, {}) is None


def test_first_tool_slice_on_truncated_trace() -> None:
    settled = facts_of(msg(), call("search"), truncated=True)
    assert slice_group("first_tool", settled, {}) == "search"
    unsettled = facts_of(msg(), msg(), truncated=True)
    assert slice_group("first_tool", unsettled, {}) is None


# --- slices: repeated_action ------------------------------------------------------------------


def test_repeated_action_slice() -> None:
    repeated = facts_of(call("s", q=1), call("x"), call("s", q=1))
    assert slice_group("repeated_action", repeated, {}) == "true"
    assert slice_group("repeated_action", facts_of(call("s", q=1), call("s", q=2)), {}) == "false"
    assert slice_group("repeated_action", facts_of(msg()), {}) == "false"
    assert slice_group("repeated_action", None, {}) is None


def test_repeated_action_slice_on_truncated_trace() -> None:
    repeated = facts_of(call("s", q=1), call("s", q=1), truncated=True)
    assert slice_group("repeated_action", repeated, {}) == "true"
    not_yet = facts_of(call("s", q=1), truncated=True)
    assert slice_group("repeated_action", not_yet, {}) is None


# --- slices: trajectory_length and tool_calls -------------------------------------------------


@pytest.mark.parametrize(
    ("steps", "group"),
    [(0, "le_4"), (1, "le_4"), (4, "le_4"), (5, "le_8"), (8, "le_8"), (9, "gt_8"), (12, "gt_8")],
)
def test_trajectory_length_buckets(steps: int, group: str) -> None:
    assert slice_group("trajectory_length:4,8", n_steps(steps), {}) == group


def test_trajectory_length_on_truncated_trace() -> None:
    spec = "trajectory_length:4,8"
    assert slice_group(spec, n_steps(3, truncated=True), {}) is None
    assert slice_group(spec, n_steps(6, truncated=True), {}) is None
    # recorded 8 steps and stopped: the true count is above 8
    assert slice_group(spec, n_steps(8, truncated=True), {}) == "gt_8"
    assert slice_group(spec, n_steps(10, truncated=True), {}) == "gt_8"
    assert slice_group(spec, None, {}) is None


@pytest.mark.parametrize(
    ("calls", "group"), [(0, "le_1"), (1, "le_1"), (2, "le_3"), (3, "le_3"), (4, "gt_3")]
)
def test_tool_calls_buckets(calls: int, group: str) -> None:
    assert slice_group("tool_calls:1,3", n_calls(calls), {}) == group


def test_tool_calls_on_truncated_trace() -> None:
    spec = "tool_calls:1,3"
    assert slice_group(spec, n_calls(0, truncated=True), {}) is None
    # the truncated part may hold no further call: 3 recorded calls do not settle gt_3
    assert slice_group(spec, n_calls(3, truncated=True), {}) is None
    assert slice_group(spec, n_calls(4, truncated=True), {}) == "gt_3"
    assert slice_group(spec, None, {}) is None


# --- slices: route ----------------------------------------------------------------------------


def test_route_slice() -> None:
    named = facts_of(msg("triage"), {"kind": "handoff", "agent": "triage", "to_agent": "billing"})
    assert slice_group("route", named, {}) == "triage>billing"
    assert slice_group("route", facts_of(msg()), {}) is None
    assert slice_group("route", None, {}) is None


def test_truncated_trace_never_joins_a_route_group() -> None:
    named = facts_of(msg("triage"), msg("billing"), msg("tech"), truncated=True)
    assert slice_group("route", named, {}) is None


def test_unknown_slice_is_an_error() -> None:
    with pytest.raises(ValueError):
        slice_group("colour", n_steps(1), {})
    with pytest.raises(ValueError):
        slice_group("first_tool:3", n_steps(1), {})
    with pytest.raises(ValueError):
        slice_group("trajectory_length:8,4", n_steps(1), {})


# --- quantile values --------------------------------------------------------------------------


def test_quantile_values() -> None:
    f = facts_of(msg(), call("a"), call("b"))
    assert quantile_value("agent_steps", f, 12.0) == 3.0
    assert quantile_value("agent_tool_calls", f, 12.0) == 2.0
    assert quantile_value("latency_ms", f, 12.5) == 12.5
    assert quantile_value("latency_ms", None, None) is None


def test_quantile_values_missing_without_facts_or_on_truncated_trace() -> None:
    truncated = facts_of(msg(), call("a"), truncated=True)
    assert quantile_value("agent_steps", truncated, 5.0) is None
    assert quantile_value("agent_tool_calls", truncated, 5.0) is None
    assert quantile_value("agent_steps", None, 5.0) is None
    assert quantile_value("latency_ms", truncated, 5.0) == 5.0
    with pytest.raises(ValueError):
        quantile_value("joules", truncated, 5.0)


def test_tokens_and_cost_come_from_usage_whatever_the_trajectory() -> None:
    # A truncated trace still says what its model calls cost; a case without usage/v1 has no
    # value, and one that recorded only some fields has only those.
    truncated = case_facts(traj(msg(), call("a"), truncated=True),
                           {"input_tokens": 90, "cost": 0.5})
    assert quantile_value("tokens", truncated, None) == 90.0
    assert quantile_value("cost", truncated, None) == 0.5
    assert quantile_value("agent_steps", truncated, None) is None
    only_usage = case_facts(None, {"output_tokens": 7})
    assert only_usage == {"usage": {"output_tokens": 7}}
    assert quantile_value("tokens", only_usage, None) == 7.0
    assert quantile_value("cost", only_usage, None) is None
    assert quantile_value("agent_steps", only_usage, None) is None
    assert slice_group("first_tool", only_usage, {}) is None  # no trajectory: no group
    assert quantile_value("tokens", facts_of(msg()), None) is None
    assert case_facts(None, None) is None
