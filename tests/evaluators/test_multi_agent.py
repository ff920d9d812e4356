"""Multi-agent evaluators and routes (docs/agents-and-tools.md#teams-of-agents), judged through
`judge_case`."""

from __future__ import annotations

from typing import Any

import pytest

from oloproof.evaluators.base import Evaluator, judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.multi_agent import handoffs_of
from oloproof.evaluators.registry import REGISTRY
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentStep, AgentTrajectory
from oloproof.suite.case import Case

PERMISSIONS = {"triage": [], "billing": ["lookup_order", "issue_refund"], "tech": ["search_kb"]}


def make_case(expected: dict[str, Any] | None = None) -> Case:
    return Case(
        id="c1", line=1, input={"q": "x"}, expected=expected or {}, initial_state=None,
        state_ref=None, metadata={}, cluster=None, digest="sha256:0", exec_digest="sha256:0",
    )


def msg(agent: str | None) -> dict[str, Any]:
    return {"kind": "message", "agent": agent}


def hand(agent: str, to: str) -> dict[str, Any]:
    return {"kind": "handoff", "agent": agent, "to_agent": to}


def call(agent: str | None, tool: str) -> dict[str, Any]:
    return {"kind": "tool_call", "agent": agent, "tool_name": tool, "arguments": {}}


def steps(*specs: dict[str, Any]) -> tuple[AgentStep, ...]:
    return tuple(AgentStep(index=i, **s) for i, s in enumerate(specs, 1))


def traj(*specs: dict[str, Any], truncated: bool = False) -> AgentTrajectory:
    return AgentTrajectory(steps=steps(*specs), truncated=truncated)


def build(type_name: str, **fields: Any) -> Evaluator:
    cls = REGISTRY.evaluator_type(type_name)
    return cls(cls.Config(type=type_name, **fields))


def judge(
    evaluator: Evaluator, trajectory: AgentTrajectory, expected: dict[str, Any] | None = None
) -> Judgment:
    evidence = Evidence(
        case=make_case(expected),
        output={"answer": "x"},
        artifacts={TRAJECTORY_KIND: trajectory.model_dump(mode="json")},
    )
    return judge_case(evaluator, evidence)


# --- handoffs_of (routes themselves: tests/recording/test_trajectory_facts.py) --------------------


def test_handoffs_count_the_changes_of_controlling_agent() -> None:
    assert handoffs_of(["triage", "billing"]) == 1
    assert handoffs_of(["triage", "billing", "tech", "billing"]) == 3
    assert handoffs_of(["triage"]) == 0
    assert handoffs_of([]) == 0


# --- agent_route -------------------------------------------------------------------------------


ROUTE = {"route": ["triage", "billing", "person"]}
ESCALATED = (msg("triage"), hand("triage", "billing"), call("billing", "lookup_order"),
             hand("billing", "person"))


def test_route_pass_and_fail_show_where_routes_part() -> None:
    ev = build("agent_route")
    assert ev.criterion == "agent_route"
    assert judge(ev, traj(*ESCALATED), ROUTE).verdict == "passed"
    j = judge(ev, traj(msg("triage"), hand("triage", "tech"), msg("tech")), ROUTE)
    assert j.verdict == "failed"
    assert j.details == {
        "expected_route": ["triage", "billing", "person"],
        "recorded_route": ["triage", "tech"],
        "diverges_at": 1,
    }
    assert j.reason is not None and "tech" not in j.reason and "triage" not in j.reason


def test_route_shorter_than_expected_fails_on_a_complete_trace() -> None:
    ev = build("agent_route")
    j = judge(ev, traj(msg("triage"), hand("triage", "billing")), ROUTE)
    assert j.verdict == "failed"
    assert j.details is not None and j.details["diverges_at"] == 2


def test_route_excludes_cases_without_expected_route_and_judges_empty() -> None:
    ev = build("agent_route")
    j = judge(ev, traj(*ESCALATED), {"tools": []})
    assert (j.verdict, j.reason) == ("excluded", "no_declared_route")
    assert judge(ev, traj(*ESCALATED), {"route": []}).verdict == "failed"


def test_route_on_truncated_trace() -> None:
    ev = build("agent_route")
    prefix = traj(msg("triage"), hand("triage", "billing"), truncated=True)
    j = judge(ev, prefix, ROUTE)
    assert (j.verdict, j.reason) == ("missing", "truncated")
    departed = traj(msg("triage"), hand("triage", "tech"), truncated=True)
    assert judge(ev, departed, ROUTE).verdict == "failed"
    bouncing = traj(msg("triage"), hand("triage", "billing"), hand("billing", "tech"),
                    hand("tech", "billing"), truncated=True)
    assert judge(ev, bouncing, {"route": ["triage", "billing", "tech"]}).verdict == "failed"
    assert judge(ev, traj(*ESCALATED, truncated=True), ROUTE).verdict == "missing"


# --- agent_tool_permissions -------------------------------------------------------------------


def test_permissions_pass() -> None:
    ev = build("agent_tool_permissions", permissions=PERMISSIONS)
    t = traj(msg("triage"), hand("triage", "billing"), call("billing", "lookup_order"),
             call("billing", "issue_refund"))
    j = judge(ev, t)
    assert j.verdict == "passed"


def test_permissions_fail_lists_each_violation() -> None:
    ev = build("agent_tool_permissions", permissions=PERMISSIONS)
    t = traj(msg("triage"), call("triage", "lookup_order"), hand("triage", "tech"),
             call("tech", "issue_refund"), call("tech", "search_kb"))
    j = judge(ev, t)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["violations"] == [
        {"step": 2, "agent": "triage", "tool": "lookup_order"},
        {"step": 4, "agent": "tech", "tool": "issue_refund"},
    ]


def test_permission_map_is_closed() -> None:
    ev = build("agent_tool_permissions", permissions=PERMISSIONS)
    t = traj(msg("triage"), hand("triage", "sales"), call("sales", "search_kb"))
    j = judge(ev, t)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["violations"] == [{"step": 3, "agent": "sales", "tool": "search_kb"}]


def test_permissions_on_truncated_trace() -> None:
    ev = build("agent_tool_permissions", permissions=PERMISSIONS)
    clean = traj(msg("triage"), hand("triage", "billing"), call("billing", "lookup_order"),
                 truncated=True)
    j = judge(ev, clean)
    assert (j.verdict, j.reason) == ("missing", "truncated")
    dirty = traj(msg("triage"), hand("triage", "tech"), call("tech", "issue_refund"),
                 truncated=True)
    assert judge(ev, dirty).verdict == "failed"


# --- agent_max_handoffs -----------------------------------------------------------------------


def test_max_handoffs_pass_and_fail() -> None:
    ev = build("agent_max_handoffs", max_handoffs=2)
    assert ev.criterion == "agent_handoffs_le_2"
    j = judge(ev, traj(*ESCALATED))
    assert j.verdict == "passed"
    assert j.details is not None and j.details["handoffs"] == 2
    three = traj(msg("triage"), hand("triage", "billing"), hand("billing", "tech"),
                 hand("tech", "billing"))
    assert judge(ev, three).verdict == "failed"


def test_max_handoffs_on_truncated_trace() -> None:
    ev = build("agent_max_handoffs", max_handoffs=2)
    exceeded = traj(msg("triage"), hand("triage", "billing"), hand("billing", "tech"),
                    hand("tech", "billing"), truncated=True)
    assert judge(ev, exceeded).verdict == "failed"
    within = traj(msg("triage"), hand("triage", "billing"), truncated=True)
    j = judge(ev, within)
    assert (j.verdict, j.reason) == ("missing", "truncated")


# --- unnamed trajectories ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_name", "fields", "expected"),
    [
        ("agent_route", {}, ROUTE),
        ("agent_tool_permissions", {"permissions": PERMISSIONS}, None),
        ("agent_max_handoffs", {"max_handoffs": 2}, None),
    ],
)
def test_unnamed_trajectory_is_missing_for_every_criterion(
    type_name: str, fields: dict[str, Any], expected: dict[str, Any] | None
) -> None:
    cls = REGISTRY.evaluator_type(type_name)
    assert cls.reads == frozenset({TRAJECTORY_KIND})
    assert cls.__doc__ is not None and "Args:" in cls.__doc__
    t = traj(msg(None), call(None, "issue_refund"))
    j = judge(build(type_name, **fields), t, expected)
    assert (j.verdict, j.reason) == ("missing", "agents_not_named")
