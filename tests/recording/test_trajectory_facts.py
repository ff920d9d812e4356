"""What a trajectory tells about itself (docs/agents-and-tools.md#the-models): its tool calls,
which calls are identical, its route, its actions, where a call of a tool was made — each
computed once per trajectory and shared by the evaluators, the slices and the fault replays."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import pytest

import oloproof.digest
from oloproof.analysis.facts import trajectory_facts
from oloproof.evaluators.base import judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.registry import REGISTRY
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentStep, AgentTrajectory
from oloproof.suite.case import Case


def msg(agent: str | None = None) -> dict[str, Any]:
    return {"kind": "message", "agent": agent}


def hand(agent: str, to: str) -> dict[str, Any]:
    return {"kind": "handoff", "agent": agent, "to_agent": to}


def call(tool: str, agent: str | None = None, arguments: Any = None) -> dict[str, Any]:
    return {"kind": "tool_call", "tool_name": tool, "agent": agent, "arguments": arguments}


def traj(*specs: dict[str, Any]) -> AgentTrajectory:
    return AgentTrajectory(steps=tuple(AgentStep(index=i, **s) for i, s in enumerate(specs, 1)))


# --- route ------------------------------------------------------------------------------------


def test_route_with_explicit_handoff() -> None:
    t = traj(msg("triage"), hand("triage", "billing"), call("lookup_order", "billing"))
    assert t.route() == ["triage", "billing"]


def test_route_without_a_handoff_step_when_another_agent_acts() -> None:
    assert traj(msg("triage"), call("search_kb", "tech"), msg("billing")).route() == [
        "triage", "tech", "billing"]


def test_handoff_to_a_person_ends_the_route_there() -> None:
    t = traj(msg("triage"), hand("triage", "billing"), call("lookup_order", "billing"),
             hand("billing", "person"))
    assert t.route() == ["triage", "billing", "person"]


def test_route_collapses_consecutive_repeats() -> None:
    t = traj(msg("triage"), msg("triage"), hand("triage", "billing"), msg("billing"),
             msg("billing"), hand("billing", "tech"), msg("tech"), hand("tech", "billing"))
    assert t.route() == ["triage", "billing", "tech", "billing"]


def test_unnamed_or_empty_trajectory_has_no_route() -> None:
    assert traj(msg(), call("a")).route() is None
    assert AgentTrajectory().route() is None


def test_the_route_a_caller_gets_is_its_own_list() -> None:
    t = traj(msg("triage"), hand("triage", "billing"))
    t.route().append("mallory")  # type: ignore[union-attr]
    assert t.route() == ["triage", "billing"]


# --- identical calls, actions, where a call was made -----------------------------------------


def test_identical_calls_have_equal_keys_whatever_the_key_order_or_a_missing_arguments() -> None:
    t = traj(call("search", arguments={"q": "a", "n": 1}),
             call("search", arguments={"n": 1, "q": "a"}),
             call("search"), call("search", arguments={}), call("lookup", arguments={"q": "a"}))
    keys = t.call_keys()
    assert keys[0] == keys[1] == ("search", '{"n":1,"q":"a"}')
    assert keys[2] == keys[3] == ("search", "{}")
    assert keys[4] == ("lookup", '{"q":"a"}')


def test_a_repeated_call_is_one_made_twice_anywhere() -> None:
    assert traj(call("a", arguments={"x": 1}), msg(), call("b"),
                call("a", arguments={"x": 1})).has_repeated_call()
    different = traj(call("a", arguments={"x": 1}), call("a", arguments={"x": 2}))
    assert not different.has_repeated_call()
    assert not AgentTrajectory().has_repeated_call()


def test_actions_are_the_tool_calls_with_their_arguments() -> None:
    t = traj(msg(), call("lookup", arguments={"id": 7}), {"kind": "tool_result",
             "tool_name": "lookup", "result": {"ok": True}}, call("refund"))
    assert t.actions() == [["lookup", {"id": 7}], ["refund", {}]]
    assert [s.index for s in t.tool_calls()] == [2, 4]


def test_call_index_finds_the_nth_call_of_a_tool() -> None:
    t = traj(call("lookup"), msg(), call("refund"), call("lookup"), call("lookup"))
    assert t.call_index("lookup") == 1
    assert t.call_index("lookup", 2) == 4
    assert t.call_index("lookup", 3) == 5
    assert t.call_index("lookup", 4) is None
    assert t.call_index("refund") == 3
    assert t.call_index("escalate") is None


# --- computed once, and never stale ----------------------------------------------------------


def make_case(expected: dict[str, Any] | None = None) -> Case:
    return Case(
        id="c1", line=1, input={"q": "x"}, expected=expected or {}, initial_state=None,
        state_ref=None,
        metadata={}, cluster=None, digest="sha256:0", exec_digest="sha256:0",
    )


def test_canonical_argument_text_is_computed_once_per_call_for_facts_and_evaluators(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    loop = REGISTRY.evaluator_type("agent_no_tool_loop")
    no_loop = loop(loop.Config(type="agent_no_tool_loop"))
    # Every canonical JSON text in the engine goes through this one encoder: count its uses.
    texts: list[Any] = []
    real = oloproof.digest._encoder

    class Counting:
        def encode(self, value: Any) -> str:
            texts.append(value)
            return real.encode(value)

    monkeypatch.setattr(oloproof.digest, "_encoder", Counting())
    t = traj(*[call("search", arguments={"q": str(i % 3)}) for i in range(6)])
    facts = trajectory_facts(t)
    evidence = Evidence(case=make_case(), output={}, artifacts={TRAJECTORY_KIND: t}, facts=facts)
    judgment = judge_case(no_loop, evidence)
    assert facts["repeated"] is True
    assert judgment.verdict == "passed"
    assert len(texts) == 6  # one canonical text per call, shared by both


def test_matching_arguments_reuses_each_calls_text_and_makes_each_entrys_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sequence = REGISTRY.evaluator_type("agent_tool_sequence")
    assert sequence is not None
    exact = sequence(sequence.Config(type="agent_tool_sequence", mode="unordered",
                                     arguments="exact"))
    texts: list[Any] = []
    real = oloproof.digest._encoder

    class Counting:
        def encode(self, value: Any) -> str:
            texts.append(value)
            return real.encode(value)

    monkeypatch.setattr(oloproof.digest, "_encoder", Counting())
    t = traj(*[call("search", arguments={"q": str(i)}) for i in range(6)])
    expected = [{"name": "search", "arguments": {"q": str(i)}} for i in reversed(range(6))]
    judgment = judge_case(exact, Evidence(case=make_case({"tools": expected}), output={},
                                          artifacts={TRAJECTORY_KIND: t}))
    assert judgment.verdict == "passed"
    # six calls and six entries, each made into text once (not once per pair compared)
    assert len(texts) == 12


def test_calls_of_different_tools_need_no_argument_text(monkeypatch: pytest.MonkeyPatch) -> None:
    loop = REGISTRY.evaluator_type("agent_no_tool_loop")
    no_loop = loop(loop.Config(type="agent_no_tool_loop"))
    sequence = REGISTRY.evaluator_type("agent_tool_sequence")
    in_order = sequence(sequence.Config(type="agent_tool_sequence"))
    texts: list[Any] = []
    real = oloproof.digest._encoder

    class Counting:
        def encode(self, value: Any) -> str:
            texts.append(value)
            return real.encode(value)

    monkeypatch.setattr(oloproof.digest, "_encoder", Counting())
    t = traj(call("lookup", arguments={"id": 1}), call("refund", arguments={"id": 1}))
    facts = trajectory_facts(t)
    evidence = Evidence(case=make_case({"tools": ["lookup", "refund"]}), output={},
                        artifacts={TRAJECTORY_KIND: t}, facts=facts)
    assert facts["repeated"] is False
    assert judge_case(no_loop, evidence).verdict == "passed"
    assert judge_case(in_order, evidence).verdict == "passed"
    assert texts == []  # two different tools, names compared only: no argument text made
    assert t.call_keys() == (("lookup", '{"id":1}'), ("refund", '{"id":1}'))


def test_facts_do_not_change_what_a_trajectory_equals_dumps_or_pickles_to() -> None:
    t = traj(msg("triage"), hand("triage", "billing"), call("lookup", "billing", {"id": 1}))
    fresh = AgentTrajectory.model_validate_json(t.model_dump_json())
    before = t.model_dump_json()
    assert t.route() == ["triage", "billing"] and t.call_keys()
    assert t == fresh and fresh == t
    assert t.model_dump_json() == before
    for clone in (pickle.loads(pickle.dumps(t)), copy.deepcopy(t), copy.copy(t)):
        assert clone == t and clone.route() == ["triage", "billing"]


def test_a_copy_with_other_steps_computes_its_own_facts() -> None:
    t = traj(msg("triage"), hand("triage", "billing"), call("lookup", "billing"))
    assert t.route() == ["triage", "billing"] and t.call_index("lookup") == 3
    shorter = t.model_copy(update={"steps": t.steps[:1]})
    assert shorter.route() == ["triage"]
    assert shorter.call_index("lookup") is None
    assert shorter.call_keys() == ()
    assert t.route() == ["triage", "billing"]
