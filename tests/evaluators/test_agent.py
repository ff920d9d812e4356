"""Agent evaluators (docs/agents-and-tools.md#the-agent-evaluators), judged through `judge_case`,
truncation column included."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from oloproof.evaluators import agent  # registers the types
from oloproof.evaluators.base import Evaluator, judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.registry import REGISTRY
from oloproof.recording.trajectory import (
    TRAJECTORY_KIND,
    AgentConstraintCheck,
    AgentStep,
    AgentTrajectory,
)
from oloproof.suite.case import Case


def make_case(expected: dict[str, Any] | None = None, source_id: str | None = None) -> Case:
    return Case(
        id="c1", line=1, input={"q": "x"}, expected=expected or {}, initial_state=None,
        state_ref=None, metadata={}, cluster=None, digest="sha256:0", exec_digest="sha256:0",
        source_id=source_id,
    )


def call(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"kind": "tool_call", "tool_name": tool, "arguments": arguments}


def result(tool: str) -> dict[str, Any]:
    return {"kind": "tool_result", "tool_name": tool, "result": {"ok": True}}


def message() -> dict[str, Any]:
    return {"kind": "message", "arguments": {"text": "hi"}}


def traj(
    *steps: dict[str, Any],
    truncated: bool = False,
    constraints: tuple[AgentConstraintCheck, ...] = (),
) -> AgentTrajectory:
    return AgentTrajectory(
        steps=tuple(AgentStep(index=i, **s) for i, s in enumerate(steps, 1)),
        terminal_status="unknown" if truncated else "success",
        truncated=truncated,
        step_limit=len(steps) if truncated else None,
        constraints=constraints,
    )


def build(type_name: str, **fields: Any) -> Evaluator:
    cls = REGISTRY.evaluator_type(type_name)
    return cls(cls.Config(type=type_name, **fields))


def judge(
    evaluator: Evaluator,
    trajectory: AgentTrajectory | None,
    expected: dict[str, Any] | None = None,
) -> Judgment:
    artifacts = {} if trajectory is None else {TRAJECTORY_KIND: trajectory.model_dump(mode="json")}
    evidence = Evidence(case=make_case(expected), output={"answer": "x"}, artifacts=artifacts)
    return judge_case(evaluator, evidence)


AGENT_TYPES = (
    "agent_tool_called", "agent_no_tool_loop", "agent_tool_sequence",
    "agent_no_undeclared_tool", "agent_constraints_satisfied", "agent_max_steps",
)


# --- registration and the shared handling ---------------------------------------------------


@pytest.mark.parametrize("type_name", AGENT_TYPES)
def test_registered_reading_the_trajectory_with_args_documented(type_name: str) -> None:
    cls = REGISTRY.evaluator_type(type_name)
    assert cls.reads == frozenset({TRAJECTORY_KIND})
    assert cls.__doc__ is not None and "Args:" in cls.__doc__


def test_default_criterion_names() -> None:
    assert build("agent_tool_called", tool_name="lookup_order").criterion == (
        "agent_tool_lookup_order_called"
    )
    assert build("agent_no_tool_loop").criterion == "agent_no_tool_loop"
    assert build("agent_tool_sequence").criterion == "agent_tool_sequence"
    assert build("agent_no_undeclared_tool").criterion == "agent_no_undeclared_tool"
    assert build("agent_constraints_satisfied").criterion == "agent_constraints_satisfied"
    assert build("agent_max_steps", max_steps=10).criterion == "agent_steps_le_10"
    assert build("agent_max_steps", max_steps=10, criterion="short").criterion == "short"


def test_unknown_config_fields_are_rejected() -> None:
    with pytest.raises(ValidationError):
        build("agent_no_tool_loop", max_repeat=3)
    with pytest.raises(ValidationError):
        build("agent_no_undeclared_tool", tools=["a"])
    with pytest.raises(ValidationError):
        build("agent_constraints_satisfied", constraints=[])


def test_case_without_trajectory_is_missing() -> None:
    j = judge(build("agent_max_steps", max_steps=3), None)
    assert (j.verdict, j.reason) == ("missing", "no_trajectory")


def test_errored_case_is_missing_and_metamorphic_copy_excluded() -> None:
    evaluator = build("agent_no_tool_loop")
    errored = Evidence(case=make_case(), output=None, errored="boom")
    assert judge_case(evaluator, errored).reason == "case_errored"
    copy = Evidence(
        case=make_case(source_id="c0"), output={},
        artifacts={TRAJECTORY_KIND: traj().model_dump(mode="json")},
    )
    assert judge_case(evaluator, copy).verdict == "excluded"


# --- agent_tool_called ------------------------------------------------------------------------


def test_tool_called_pass_and_fail() -> None:
    ev = build("agent_tool_called", tool_name="lookup_order")
    j = judge(ev, traj(call("lookup_order", id=1), result("lookup_order")))
    assert j.verdict == "passed"
    assert j.details == {"tool": "lookup_order", "calls": 1, "min_calls": 1, "steps": [1]}
    j = judge(ev, traj(call("search", q="x"), result("search")))
    assert j.verdict == "failed"
    assert j.details is not None and j.details["calls"] == 0


def test_tool_called_min_calls() -> None:
    ev = build("agent_tool_called", tool_name="search", min_calls=2)
    assert judge(ev, traj(call("search", q="a"))).verdict == "failed"
    assert judge(ev, traj(call("search", q="a"), call("search", q="b"))).verdict == "passed"


def test_tool_called_on_truncated_trace() -> None:
    ev = build("agent_tool_called", tool_name="lookup_order", min_calls=2)
    reached = traj(call("lookup_order"), call("lookup_order"), message(), truncated=True)
    assert judge(ev, reached).verdict == "passed"
    short = traj(call("lookup_order"), message(), truncated=True)
    j = judge(ev, short)
    assert (j.verdict, j.reason) == ("missing", "truncated")


# --- agent_no_tool_loop ----------------------------------------------------------------------


def test_no_tool_loop_pass_at_the_limit_with_results_in_between() -> None:
    ev = build("agent_no_tool_loop")  # max_repeats 2
    t = traj(call("search", q="a"), result("search"), call("search", q="a"), result("search"))
    j = judge(ev, t)
    assert j.verdict == "passed"
    assert j.details == {"max_repeats": 2, "longest_run": 2}


def test_no_tool_loop_fails_on_a_run_longer_than_the_limit() -> None:
    ev = build("agent_no_tool_loop")
    t = traj(
        message(),
        call("search", q="a"), result("search"),
        call("search", q="a"), result("search"),
        call("search", q="a"), result("search"),
    )
    j = judge(ev, t)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["repeated_call"] == {
        "tool": "search", "arguments": {"q": "a"}, "run_length": 3, "steps": [2, 4, 6]
    }


def test_no_tool_loop_is_missing_where_only_calls_without_arguments_repeat() -> None:
    # A trace read with content capture off: three lookups whose arguments nobody recorded
    # cannot be told apart, so they are not a loop anyone saw; a run with arguments still is.
    ev = build("agent_no_tool_loop")
    blind = {"kind": "tool_call", "tool_name": "lookup", "arguments": None}
    j = judge(ev, traj(blind, result("lookup"), blind, result("lookup"), blind,
                       result("lookup")))
    assert (j.verdict, j.reason) == ("missing", "arguments_not_recorded")
    j = judge(ev, traj(blind, blind, blind, call("s", q="a"), call("s", q="a"),
                       call("s", q="a")))
    assert j.verdict == "failed"
    assert j.details is not None and j.details["repeated_call"]["tool"] == "s"


@settings(max_examples=200)
@given(st.lists(st.tuples(st.sampled_from("ab"), st.integers(0, 1)), max_size=12),
       st.integers(1, 3))
def test_no_tool_loop_judges_as_the_runs_of_identical_calls_say(
    calls: list[tuple[str, int]], limit: int
) -> None:
    """The longest run, computed from the calls' keys, agrees with splitting the calls into
    runs; a failure lists exactly the runs over the limit."""
    t = traj(*[call(tool, q=q) for tool, q in calls])
    runs = agent.call_runs(t)
    assert agent.longest_run(t) == max((r.length for r in runs), default=0)
    assert sum(r.length for r in runs) == len(calls)
    j = judge(build("agent_no_tool_loop", max_repeats=limit), t)
    over = [r.as_details() for r in runs if r.length > limit]
    if over:
        assert j.verdict == "failed" and j.details is not None
        assert j.details["runs_over_limit"] == over[:10]
    else:
        assert j.verdict == "passed" and j.details == {
            "max_repeats": limit, "longest_run": max((r.length for r in runs), default=0)}


def test_no_tool_loop_needs_identical_calls_in_a_row() -> None:
    ev = build("agent_no_tool_loop")
    other_args = traj(call("search", q="a"), call("search", q="b"), call("search", q="a"))
    assert judge(ev, other_args).verdict == "passed"
    interrupted = traj(
        call("search", q="a"), call("search", q="a"), call("lookup", id=1),
        call("search", q="a"), call("search", q="a"),
    )
    assert judge(ev, interrupted).verdict == "passed"


def test_no_tool_loop_argument_order_does_not_matter() -> None:
    ev = build("agent_no_tool_loop", max_repeats=1)
    t = traj(
        {"kind": "tool_call", "tool_name": "t", "arguments": {"a": 1, "b": 2}},
        {"kind": "tool_call", "tool_name": "t", "arguments": {"b": 2, "a": 1}},
    )
    assert judge(ev, t).verdict == "failed"


def test_no_tool_loop_on_truncated_trace() -> None:
    ev = build("agent_no_tool_loop")
    looping = traj(call("s", q=1), call("s", q=1), call("s", q=1), truncated=True)
    assert judge(ev, looping).verdict == "failed"
    at_limit = traj(call("s", q=1), call("s", q=1), truncated=True)
    j = judge(ev, at_limit)
    assert (j.verdict, j.reason) == ("missing", "truncated")


# --- agent_tool_sequence ---------------------------------------------------------------------


EXPECTED = {"tools": ["lookup_order", "issue_refund"]}


def test_tool_sequence_ordered_pass_and_fail() -> None:
    ev = build("agent_tool_sequence")
    good = traj(call("lookup_order"), result("lookup_order"), call("issue_refund"))
    assert judge(ev, good, EXPECTED).verdict == "passed"
    swapped = traj(call("issue_refund"), call("lookup_order"))
    j = judge(ev, swapped, EXPECTED)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["expected"] == ["lookup_order", "issue_refund"]
    assert j.details["called"] == ["issue_refund", "lookup_order"]
    assert j.details["diverges_at"] == 0
    extra = traj(call("lookup_order"), call("issue_refund"), call("issue_refund"))
    assert judge(ev, extra, EXPECTED).verdict == "failed"
    short = traj(call("lookup_order"))
    assert judge(ev, short, EXPECTED).verdict == "failed"


def test_tool_sequence_unordered() -> None:
    ev = build("agent_tool_sequence", ordered=False)
    swapped = traj(call("issue_refund"), call("lookup_order"))
    assert judge(ev, swapped, EXPECTED).verdict == "passed"
    doubled = traj(call("issue_refund"), call("lookup_order"), call("lookup_order"))
    j = judge(ev, doubled, EXPECTED)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["called_more_than_expected"] == {"lookup_order": 1}


def test_tool_sequence_excludes_cases_without_declared_tools() -> None:
    ev = build("agent_tool_sequence")
    j = judge(ev, traj(call("a")), {"answer": "x"})
    assert (j.verdict, j.reason) == ("excluded", "no_declared_tools")
    # excluded before evidence is looked at: no trajectory is still excluded
    assert judge(ev, None, {}).reason == "no_declared_tools"


def test_tool_sequence_empty_list_expects_no_call() -> None:
    ev = build("agent_tool_sequence")
    assert judge(ev, traj(message()), {"tools": []}).verdict == "passed"
    assert judge(ev, traj(call("search")), {"tools": []}).verdict == "failed"


def test_tool_sequence_ordered_on_truncated_trace() -> None:
    ev = build("agent_tool_sequence")
    prefix = traj(call("lookup_order"), truncated=True)
    j = judge(ev, prefix, EXPECTED)
    assert (j.verdict, j.reason) == ("missing", "truncated")
    complete_so_far = traj(call("lookup_order"), call("issue_refund"), truncated=True)
    assert judge(ev, complete_so_far, EXPECTED).verdict == "missing"
    departs = traj(call("search"), truncated=True)
    j = judge(ev, departs, EXPECTED)
    assert j.verdict == "failed"
    assert j.details is not None and j.details["diverges_at"] == 0
    longer = traj(call("lookup_order"), call("issue_refund"), call("search"), truncated=True)
    assert judge(ev, longer, EXPECTED).verdict == "failed"
    assert judge(ev, traj(message(), truncated=True), {"tools": []}).verdict == "missing"
    assert judge(ev, traj(call("a"), truncated=True), {"tools": []}).verdict == "failed"


def test_tool_sequence_unordered_on_truncated_trace() -> None:
    ev = build("agent_tool_sequence", ordered=False)
    partial = traj(call("issue_refund"), truncated=True)
    j = judge(ev, partial, EXPECTED)
    assert (j.verdict, j.reason) == ("missing", "truncated")
    too_many = traj(call("issue_refund"), call("issue_refund"), truncated=True)
    assert judge(ev, too_many, EXPECTED).verdict == "failed"


# --- agent_no_undeclared_tool ----------------------------------------------------------------


def test_no_undeclared_tool_pass_and_fail() -> None:
    ev = build("agent_no_undeclared_tool")
    good = traj(call("lookup_order"), call("lookup_order"))
    assert judge(ev, good, EXPECTED).verdict == "passed"
    bad = traj(call("lookup_order"), result("lookup_order"), call("delete_customer"))
    j = judge(ev, bad, EXPECTED)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["undeclared"] == [{"step": 3, "tool": "delete_customer"}]


def test_no_undeclared_tool_exclusion_and_empty_list() -> None:
    ev = build("agent_no_undeclared_tool")
    assert judge(ev, traj(call("a")), {}).reason == "no_declared_tools"
    assert judge(ev, traj(message()), {"tools": []}).verdict == "passed"
    assert judge(ev, traj(call("a")), {"tools": []}).verdict == "failed"


def test_no_undeclared_tool_on_truncated_trace() -> None:
    ev = build("agent_no_undeclared_tool")
    clean = traj(call("lookup_order"), truncated=True)
    j = judge(ev, clean, EXPECTED)
    assert (j.verdict, j.reason) == ("missing", "truncated")
    dirty = traj(call("delete_customer"), truncated=True)
    assert judge(ev, dirty, EXPECTED).verdict == "failed"


# --- agent_constraints_satisfied -------------------------------------------------------------


def check(name: str, ok: bool, step: int | None = None) -> AgentConstraintCheck:
    return AgentConstraintCheck(name=name, passed=ok, step_index=step)


def test_constraints_all_recorded_pass_and_fail() -> None:
    ev = build("agent_constraints_satisfied")
    good = traj(message(), constraints=(check("no_deletion", True), check("polite", True)))
    j = judge(ev, good)
    assert j.verdict == "passed"
    assert j.details is not None and j.details["checks"] == {"no_deletion": 1, "polite": 1}
    bad = traj(message(), call("x"), constraints=(check("no_deletion", False, 2),))
    j = judge(ev, bad)
    assert j.verdict == "failed"
    assert j.details is not None
    assert j.details["failed"] == [{"constraint": "no_deletion", "step": 2}]


def test_constraints_named_list_only_judges_those() -> None:
    ev = build("agent_constraints_satisfied", constraints=["no_deletion"])
    t = traj(message(), constraints=(check("no_deletion", True), check("polite", False)))
    assert judge(ev, t).verdict == "passed"
    twice = traj(message(), constraints=(check("no_deletion", True), check("no_deletion", False)))
    assert judge(ev, twice).verdict == "failed"


def test_constraints_named_but_not_recorded_is_missing() -> None:
    ev = build("agent_constraints_satisfied", constraints=["no_deletion", "polite"])
    t = traj(message(), constraints=(check("polite", True),))
    j = judge(ev, t)
    assert (j.verdict, j.reason) == ("missing", "constraint_not_recorded")
    assert j.details is not None and j.details["not_recorded"] == ["no_deletion"]


def test_constraints_failure_is_settled_even_if_another_is_not_recorded() -> None:
    ev = build("agent_constraints_satisfied", constraints=["no_deletion", "polite"])
    t = traj(message(), constraints=(check("polite", False, 1),))
    assert judge(ev, t).verdict == "failed"


def test_no_constraints_recorded_and_no_list_is_missing_not_a_vacuous_pass() -> None:
    j = judge(build("agent_constraints_satisfied"), traj(message()))
    assert (j.verdict, j.reason) == ("missing", "no_constraints_recorded")


def test_constraints_on_truncated_trace_judged_on_what_was_recorded() -> None:
    ev = build("agent_constraints_satisfied", constraints=["no_deletion"])
    ok = traj(message(), truncated=True, constraints=(check("no_deletion", True),))
    assert judge(ev, ok).verdict == "passed"
    bad = traj(message(), truncated=True, constraints=(check("no_deletion", False, 1),))
    assert judge(ev, bad).verdict == "failed"
    absent = traj(message(), truncated=True)
    j = judge(ev, absent)
    assert (j.verdict, j.reason) == ("missing", "constraint_not_recorded")
    assert j.details is not None and j.details["truncated"] is True


# --- agent_max_steps -------------------------------------------------------------------------


def test_max_steps_pass_and_fail() -> None:
    ev = build("agent_max_steps", max_steps=3)
    assert judge(ev, traj(message(), call("a"), result("a"))).verdict == "passed"
    j = judge(ev, traj(message(), call("a"), result("a"), message()))
    assert j.verdict == "failed"
    assert j.details == {"steps": 4, "max_steps": 3, "truncated": False}


def test_max_steps_on_truncated_trace() -> None:
    ev = build("agent_max_steps", max_steps=3)
    # 3 recorded steps on a truncated trace: the true count is larger than 3.
    reached = traj(message(), call("a"), result("a"), truncated=True)
    assert judge(ev, reached).verdict == "failed"
    below = traj(message(), call("a"), truncated=True)
    j = judge(ev, below)
    assert (j.verdict, j.reason) == ("missing", "truncated")
