"""The simulator is audited, never trusted
(docs/conversations.md#the-simulator-is-audited-never-trusted): each check constructed, a
good conversation passing it, and a case whose simulator failed a check missing for every
criterion of the agent — tested on the interval."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conversation_project import (  # noqa: F401 - the fixtures
    ConversationProject,
    customers,
    keyed_fixture,
    project_fixture,
    server_fixture,
)

import oloproof
from oloproof.evaluators.conversation_audit import LEAK_WORDS, audit, leaked_run
from oloproof.stats import rate_interval

INSTRUCTIONS = ("You are playing the part of a user who is talking to an AI assistant, so "
                "that the assistant can be tested.\n\nWhat you want: get order ord-7 refunded")


def _conversation(*turns: tuple[str, str, bool], **fields: Any) -> dict[str, Any]:
    return {"user": "simulated", "simulator": "customer", "instructions": INSTRUCTIONS,
            "ended": "user_done", "turns": [
                {"role": role, "text": text, **({"done": done} if role == "user" else {})}
                for role, text, done in turns], **fields}


GOOD = _conversation(("user", "Hi, please refund ord-7", False),
                     ("agent", "Which order is it?", False),
                     ("user", "It's ord-7: the order I want refunded, it arrived broken", False),
                     ("agent", "Order ord-7 has been refunded.", False),
                     ("user", "Thanks, that's all.", True))


def test_a_good_conversation_passes_every_check() -> None:
    assert audit(GOOD) == {}


def test_a_scripted_user_is_never_audited() -> None:
    scripted = dict(GOOD, user="scripted", turns=[{"role": "user", "text": "", "done": True}])
    assert audit(scripted) == {}


@pytest.mark.parametrize(("first", "why"), [
    ({"role": "user", "text": "Bye.", "done": True}, "its first reply says done"),
    ({"role": "user", "text": "  ", "done": False}, "its first reply holds no message"),
])
def test_ended_early(first: dict[str, Any], why: str) -> None:
    assert audit(dict(GOOD, turns=[first])) == {"ended_early": why}


def test_a_later_done_is_no_early_end() -> None:
    assert "ended_early" not in audit(GOOD)


def test_leaked_instructions_is_ten_consecutive_words_of_them() -> None:
    nine = "you are playing the part of a user who"
    ten = nine + " is"
    assert len(ten.split()) == LEAK_WORDS
    assert leaked_run(INSTRUCTIONS, [nine.upper() + " here"]) is None
    assert leaked_run(INSTRUCTIONS, [f"Well: {ten.upper()}!"]) == ten
    # the goal is part of its instructions; words across the punctuation of both count
    goal = "Sure. So that the assistant can be tested. What you want: get order ord-7"
    assert leaked_run(INSTRUCTIONS, [goal]) is not None
    leaked = _conversation(("user", ten, False))
    assert audit(leaked) == {"leaked_instructions": f"a turn repeats its instructions: {ten!r}"}


def test_simulator_error_is_read_from_how_the_conversation_ended() -> None:
    broken = dict(GOOD, ended="simulator_error", error="RateLimitError: slow down")
    assert audit(broken) == {"simulator_error": "RateLimitError: slow down"}


def _missing(result: oloproof.RunResult, criterion: str) -> dict[str, int]:
    return dict(result.metric(criterion).missing_by_reason)


@pytest.mark.parametrize(("marker", "check"), [
    ("done_first", "ended_early"), ("empty_first", "ended_early"),
    ("leak", "leaked_instructions"), ("empty_later", "simulator_error"),
    ("garbage", "simulator_error"),
])
def test_a_failed_check_makes_the_case_missing_for_the_agent(
        project: ConversationProject, marker: str, check: str) -> None:
    project.suite["metrics"] = [{"id": "turns_p50", "type": "quantile", "source": "turns",
                                 "quantile": 0.5}]
    project.write()
    project.write_cases(customers(4, **{marker: {2}}))
    result = oloproof.run(project.config)
    reason = f"simulator:{check}"
    for criterion in ("refunded", "agent_tool_issue_refund_called", "turns_p50"):
        assert _missing(result, criterion) == {reason: 1}, criterion
    assert result.metric("refunded").excluded == 0
    conversations = result.to_json()["conversations"]
    assert conversations["failures"] == {check: 1}
    assert conversations["failed_cases"] == {check: ["c02"]}
    view = oloproof.case_view("c02", result.run_id, config=project.config)
    assert view["conversation"]["checks"][0]["check"] == check
    assert {c["criterion"]: c["reason"] for c in view["criteria"]}["refunded"] == reason


FIDELITY_JUDGE = '''
from oloproof import JudgeVerdict

def fidelity(request):
    goal = request.shown["user"]["goal"]
    said = request.shown["conversation"]
    unfaithful = "[stray]" in goal
    return JudgeVerdict(verdict="fail" if unfaithful else "pass",
                        reason="it invented a fact" if unfaithful else "it kept to its facts")
'''


def test_unfaithful_is_the_fidelity_judges_verdict(project: ConversationProject) -> None:
    (project.root / "fidelity_judge.py").write_text(FIDELITY_JUDGE, encoding="utf-8")
    project.suite["judges"] = [{"name": "checker", "callable": "fidelity_judge:fidelity"}]
    project.suite["simulator_fidelity"] = {"judge": "checker"}
    project.suite["evaluators"].append({"type": "exact_match", "criterion": "turns_said",
                                        "field": "turns", "expected_field": "turns"})
    project.write()
    cases = customers(4, stray={3})
    cases[0]["user"] = {"turns": ["Hi, refund ord-001 please", "thanks"]}  # scripted
    project.write_cases(cases)
    result = oloproof.run(project.config)
    fidelity = result.metric("simulator_fidelity")
    # judged for the three simulated users (the scripted one is excluded), failing one; its
    # own verdicts stand: it is the simulator's criterion, not the agent's
    assert (fidelity.passed, fidelity.observed, fidelity.excluded) == (2, 3, 1)
    assert fidelity.excluded_by_reason == {"no_simulated_user": 1}
    assert _missing(result, "refunded") == {"simulator:unfaithful": 1}
    assert result.to_json()["conversations"]["failures"] == {"unfaithful": 1}
    view = oloproof.case_view("c03", result.run_id, config=project.config)
    assert view["conversation"]["checks"] == [{"check": "unfaithful",
                                               "why": "it invented a fact"}]
    judged = next(j for j in view["judges"] if j["criterion"] == "simulator_fidelity")
    assert set(judged["shown"]) == {"user", "conversation"}
    assert judged["shown"]["conversation"].startswith("user: ")


def test_max_turns_reached_is_a_truncated_trajectory(project: ConversationProject) -> None:
    project.suite["metrics"] = [{"id": "turns_p50", "type": "quantile", "source": "turns",
                                 "quantile": 0.5}]
    project.suite["evaluators"].append({"type": "agent_max_steps", "max_steps": 40})
    project.write()
    project.write_cases(customers(3, refuse={1, 2, 3}, never_done={2}, max_turns=5))
    result = oloproof.run(project.config)
    # Refused, a customer gives up at its fourth turn; the never-done one is cut at its fifth:
    # truncated, not the simulator's failure.
    assert result.to_json()["conversations"]["truncated"] == 1
    assert result.to_json()["conversations"]["failures"] == {}
    assert _missing(result, "turns_p50") == {"truncated": 1}
    assert _missing(result, "agent_steps_le_40") == {"truncated": 1}
    view = oloproof.case_view("c02", result.run_id, config=project.config)
    assert view["trajectory"]["truncated"] is True
    assert view["conversation"]["ended"] == "max_turns"
    assert sum(1 for t in view["conversation"]["turns"] if t["role"] == "user") == 5


def test_a_simulator_that_breaks_down_when_the_agent_fails_widens_the_interval(
        tmp_path: Path) -> None:
    """The desk refuses 5 of 20 customers. With a sound simulator the rate is 15 of 20; with
    one that breaks down exactly when refused, those 5 are missing — not failed, not
    excluded — so the interval widens: its lower bound is the sound run's, never the 15 of 15
    dropping them would flatter it to."""
    refused = {3, 7, 11, 15, 19}
    sound = ConversationProject(tmp_path / "sound")
    sound.write_cases(customers(20, refuse=refused))
    fair = oloproof.run(sound.config).metric("refunded")
    breaking = ConversationProject(tmp_path / "breaking")
    breaking.write_cases(customers(20, refuse=refused, fails_when_refused=set(range(1, 21))))
    result = oloproof.run(breaking.config)
    broken = result.metric("refunded")
    assert (fair.passed, fair.observed, fair.missing) == (15, 20, 0)
    assert (broken.passed, broken.observed, broken.missing, broken.excluded) == (15, 15, 5, 0)
    assert broken.missing_by_reason == {"simulator:simulator_error": 5}
    assert broken.lower == pytest.approx(fair.lower)
    assert broken.upper > fair.upper
    dropped = rate_interval(15, 15, 0, 0.95)
    assert broken.lower < dropped.lower  # what excluding them would have claimed
    assert result.to_json()["conversations"]["failed_cases"]["simulator_error"] == [
        f"c{i:02d}" for i in sorted(refused)]
