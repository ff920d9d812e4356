"""`agent_tool_sequence` match modes and argument rules
(docs/agents-and-tools.md#the-agent-evaluators), truncation included."""

from __future__ import annotations

import itertools
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

from oloproof.evaluators import agent  # noqa: F401  (registers the types)
from oloproof.evaluators.base import Evaluator, judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.registry import REGISTRY
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentStep, AgentTrajectory
from oloproof.suite.case import Case


def sequence(**fields: Any) -> Evaluator:
    cls = REGISTRY.evaluator_type("agent_tool_sequence")
    assert cls is not None
    return cls(cls.Config(type="agent_tool_sequence", **fields))


def call(tool: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"kind": "tool_call", "tool_name": tool,
            "arguments": {} if arguments is None else arguments}


def unrecorded(tool: str) -> dict[str, Any]:
    return {"kind": "tool_call", "tool_name": tool, "arguments": None}


def traj(*steps: dict[str, Any], truncated: bool = False) -> AgentTrajectory:
    return AgentTrajectory(
        steps=tuple(AgentStep(index=i, **s) for i, s in enumerate(steps, 1)),
        truncated=truncated, step_limit=len(steps) if truncated else None,
    )


def judge(evaluator: Evaluator, trajectory: AgentTrajectory, tools: list[Any]) -> Judgment:
    case = Case(id="c1", line=1, input={}, expected={"tools": tools}, initial_state=None,
                state_ref=None, metadata={}, cluster=None, digest="sha256:0",
                exec_digest="sha256:0")
    evidence = Evidence(case=case, output={},
                        artifacts={TRAJECTORY_KIND: trajectory.model_dump(mode="json")})
    return judge_case(evaluator, evidence)


def verdict(evaluator: Evaluator, trajectory: AgentTrajectory, tools: list[Any]) -> str:
    return judge(evaluator, trajectory, tools).verdict


LOOKUP, REFUND, SEARCH = call("lookup_order"), call("issue_refund"), call("search")
EXPECTED = ["lookup_order", "issue_refund"]


# --- configuration --------------------------------------------------------------------------


def test_mode_defaults_to_exact_and_ordered_stays_its_alias() -> None:
    assert sequence().config.resolved_mode == "exact"
    assert sequence(ordered=True).config.resolved_mode == "exact"
    assert sequence(ordered=False).config.resolved_mode == "unordered"
    assert sequence(ordered=False, mode="unordered").config.resolved_mode == "unordered"
    assert sequence(mode="superset").criterion == "agent_tool_sequence"


def test_contradicting_ordered_and_mode_is_a_configuration_error() -> None:
    with pytest.raises(ValidationError, match="contradicts"):
        sequence(ordered=True, mode="subset")
    with pytest.raises(ValidationError):
        sequence(mode="prefix")
    with pytest.raises(ValidationError):
        sequence(arguments="loose")


# --- the four modes on complete traces ------------------------------------------------------


@pytest.mark.parametrize(("mode", "calls", "expected_verdict"), [
    ("exact", [LOOKUP, REFUND], "passed"),
    ("exact", [REFUND, LOOKUP], "failed"),
    ("exact", [LOOKUP, SEARCH, REFUND], "failed"),
    ("unordered", [REFUND, LOOKUP], "passed"),
    ("unordered", [LOOKUP, REFUND, LOOKUP], "failed"),
    ("unordered", [LOOKUP], "failed"),
    ("subset", [LOOKUP], "passed"),
    ("subset", [REFUND], "passed"),
    ("subset", [], "passed"),
    ("subset", [LOOKUP, REFUND], "passed"),
    ("subset", [REFUND, LOOKUP], "failed"),  # order kept
    ("subset", [LOOKUP, SEARCH], "failed"),
    ("subset", [LOOKUP, LOOKUP], "failed"),  # each entry once
    ("superset", [LOOKUP, REFUND], "passed"),
    ("superset", [SEARCH, LOOKUP, SEARCH, REFUND, SEARCH], "passed"),
    ("superset", [REFUND, LOOKUP], "failed"),  # in order
    ("superset", [LOOKUP, SEARCH], "failed"),
])
def test_modes_on_complete_traces(mode: str, calls: list[dict[str, Any]],
                                  expected_verdict: str) -> None:
    assert verdict(sequence(mode=mode), traj(*calls), EXPECTED) == expected_verdict


def test_empty_expectation_per_mode() -> None:
    calls = traj(SEARCH)
    assert verdict(sequence(mode="exact"), calls, []) == "failed"
    assert verdict(sequence(mode="subset"), calls, []) == "failed"
    assert verdict(sequence(mode="superset"), calls, []) == "passed"
    assert verdict(sequence(mode="unordered"), traj(), []) == "passed"


# --- the truncation column ------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "calls", "expected_verdict"), [
    # exact: fail once the recorded calls depart or run past the entries, else missing
    ("exact", [LOOKUP], "missing"),
    ("exact", [LOOKUP, REFUND], "missing"),
    ("exact", [SEARCH], "failed"),
    ("exact", [LOOKUP, REFUND, SEARCH], "failed"),
    # unordered: fail once a call fits no entry left
    ("unordered", [REFUND], "missing"),
    ("unordered", [REFUND, LOOKUP], "missing"),
    ("unordered", [REFUND, REFUND], "failed"),
    # subset: fail once a call fits no later entry; it can never pass early
    ("subset", [LOOKUP, REFUND], "missing"),
    ("subset", [REFUND, LOOKUP], "failed"),
    ("subset", [SEARCH], "failed"),
    # superset: pass once every entry is matched; never fails
    ("superset", [LOOKUP, SEARCH, REFUND], "passed"),
    ("superset", [LOOKUP], "missing"),
    ("superset", [REFUND, SEARCH], "missing"),
])
def test_modes_on_truncated_traces(mode: str, calls: list[dict[str, Any]],
                                   expected_verdict: str) -> None:
    j = judge(sequence(mode=mode), traj(*calls, truncated=True), EXPECTED)
    assert j.verdict == expected_verdict
    if j.verdict == "missing":
        assert j.reason == "truncated"


# --- arguments ------------------------------------------------------------------------------


REFUND_O2 = {"name": "issue_refund", "arguments": {"order_id": "o2"}}


def test_arguments_exact_and_subset_and_bare_names() -> None:
    tools = ["lookup_order", REFUND_O2]
    right = traj(call("lookup_order", {"order_id": "o2"}),
                 call("issue_refund", {"order_id": "o2"}))
    extra_field = traj(call("lookup_order", {"order_id": "o2"}),
                       call("issue_refund", {"order_id": "o2", "reason": "broken"}))
    wrong = traj(call("lookup_order", {"order_id": "o2"}),
                 call("issue_refund", {"order_id": "o1"}))
    assert verdict(sequence(arguments="exact"), right, tools) == "passed"
    assert verdict(sequence(arguments="exact"), extra_field, tools) == "failed"
    assert verdict(sequence(arguments="subset"), extra_field, tools) == "passed"
    assert verdict(sequence(arguments="subset"), wrong, tools) == "failed"
    # arguments: ignore compares names only, whatever the entries say
    assert verdict(sequence(), wrong, tools) == "passed"


def test_subset_arguments_compare_nested_objects_by_leaf_and_lists_whole() -> None:
    tools = [{"name": "ship", "arguments": {"to": {"city": "Oslo"}, "items": [1, 2]}}]
    ok = traj(call("ship", {"to": {"city": "Oslo", "zip": "0150"}, "items": [1, 2]}))
    other_list = traj(call("ship", {"to": {"city": "Oslo"}, "items": [1, 2, 3]}))
    assert verdict(sequence(arguments="subset"), ok, tools) == "passed"
    assert verdict(sequence(arguments="subset"), other_list, tools) == "failed"


def test_arguments_in_unordered_mode_need_the_right_pairing() -> None:
    tools = ["lookup_order", {"name": "lookup_order", "arguments": {"order_id": "o1"}}]
    calls = traj(call("lookup_order", {"order_id": "o1"}), call("lookup_order", {"order_id": "o9"}))
    # The o1 call must take the entry that wants o1, the bare name takes the other.
    assert verdict(sequence(mode="unordered", arguments="exact"), calls, tools) == "passed"
    both_wrong = traj(call("lookup_order", {"order_id": "o8"}),
                      call("lookup_order", {"order_id": "o9"}))
    assert verdict(sequence(mode="unordered", arguments="exact"), both_wrong, tools) == "failed"


def test_arguments_not_recorded_make_the_case_missing_never_failed() -> None:
    tools = ["lookup_order", REFUND_O2]
    j = judge(sequence(arguments="exact"), traj(LOOKUP, unrecorded("issue_refund")), tools)
    assert (j.verdict, j.reason) == ("missing", "arguments_not_recorded")
    assert j.details is not None
    assert j.details["alignment"][1]["status"] == "arguments_not_recorded"
    # ...but a case the names already decide is decided.
    assert verdict(sequence(arguments="exact"), traj(unrecorded("search")), tools) == "failed"
    assert verdict(sequence(mode="superset", arguments="exact"),
                   traj(call("lookup_order"), call("issue_refund", {"order_id": "o2"}),
                        unrecorded("issue_refund")), tools) == "passed"


# --- the alignment --------------------------------------------------------------------------


def test_the_judgment_shows_the_alignment_step_by_step() -> None:
    trajectory = traj({"kind": "message", "arguments": {"text": "hi"}},
                      call("search", {"q": "x"}), call("lookup_order", {"order_id": "o2"}),
                      call("issue_refund", {"order_id": "o1"}))
    j = judge(sequence(mode="superset", arguments="exact"), trajectory,
              ["lookup_order", REFUND_O2])
    assert j.verdict == "failed" and j.reason == "expected_not_called"
    assert j.details is not None
    assert j.details["mode"] == "superset" and j.details["arguments"] == "exact"
    assert j.details["alignment"] == [
        {"expected": None, "step": 2, "called": "search", "arguments": {"q": "x"},
         "status": "other_call"},
        {"expected": "lookup_order", "step": 3, "called": "lookup_order",
         "arguments": {"order_id": "o2"}, "status": "matched"},
        {"expected": None, "step": 4, "called": "issue_refund",
         "arguments": {"order_id": "o1"}, "status": "other_call"},
        {"expected": REFUND_O2, "step": None, "called": None, "arguments": None,
         "status": "not_called"},
    ]
    assert j.details["not_called"] == [REFUND_O2]


def test_exact_alignment_without_arguments_keeps_the_older_details() -> None:
    j = judge(sequence(), traj(REFUND, LOOKUP), EXPECTED)
    assert j.details is not None
    assert j.details["ordered"] is True and j.details["diverges_at"] == 0
    assert j.details["alignment"][0] == {"expected": "lookup_order", "step": 1,
                                         "called": "issue_refund", "status": "different"}


# --- each mode against its definition, by brute force ---------------------------------------

TOOLS = st.lists(st.sampled_from(["a", "b", "c"]), max_size=5)


def is_subsequence(short: list[str], long: list[str]) -> bool:
    return any(list(c) == short for c in itertools.combinations(long, len(short)))


@settings(max_examples=200, deadline=None)
@given(expected=TOOLS, called=TOOLS, truncated=st.booleans())
def test_every_mode_agrees_with_its_definition(expected: list[str], called: list[str],
                                               truncated: bool) -> None:
    trajectory = traj(*[call(t) for t in called], truncated=truncated)
    definitions = {
        "exact": called == expected,
        "unordered": sorted(called) == sorted(expected),
        "subset": is_subsequence(called, expected),
        "superset": is_subsequence(expected, called),
    }
    # Truncated: settled only when no continuation of the calls could change the answer
    # (continuations longer than the expectation plus one change nothing more).
    extensions = [called + list(more) for n in range(len(expected) + 2)
                  for more in itertools.product("abc", repeat=n)] if truncated else []
    for mode, holds in definitions.items():
        got = verdict(sequence(mode=mode), trajectory, expected)
        if not truncated:
            assert got == ("passed" if holds else "failed"), mode
            continue
        outcomes = {
            {"exact": lambda e: e == expected,
             "unordered": lambda e: sorted(e) == sorted(expected),
             "subset": lambda e: is_subsequence(e, expected),
             "superset": lambda e: is_subsequence(expected, e)}[mode](e)
            for e in extensions
        }
        if got == "passed":
            assert outcomes == {True}, mode
        elif got == "failed":
            assert outcomes == {False}, mode
        else:
            assert outcomes == {True, False}, mode
