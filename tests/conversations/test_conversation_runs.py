"""A run of conversations as the reports and the gate see it (docs/conversations.md): the
simulator is part of the measurement (runs whose simulators differ are not paired unless the
rule says `simulator: any`), its cost and the judges' are counted apart from the agent's, and
`max_simulator_failures` is a budget like `max_errored`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conversation_project import ConversationProject, customers

import oloproof
from oloproof.errors import ConfigError, UsageError


def _two_runs(tmp_path: Path, change: dict[str, Any]) -> ConversationProject:
    project = ConversationProject(tmp_path / "paired")
    project.write_cases(customers(6, refuse={2}))
    oloproof.run(project.config)
    project.suite["simulators"][0].update(change)
    project.suite["system"]["version"] = "v2"
    project.desk(version="v2")
    project.write()
    return project


def test_compare_refuses_runs_whose_simulators_differ(tmp_path: Path, cli: Any) -> None:
    project = _two_runs(tmp_path, {"temperature": 0.1})
    oloproof.run(project.config)
    with pytest.raises(UsageError) as refused:
        oloproof.compare("latest~1", "latest", config=project.config)
    assert "were run with different simulated users" in refused.value.message
    assert "temperature 0.7" in refused.value.message and "temperature 0.1" in refused.value.message
    code, _, err = cli("compare", "latest~1", "latest", cwd=project.root)
    assert code == 2 and "simulator: any" in err
    paired = oloproof.compare("latest~1", "latest", config=project.config, simulator="any")
    assert any("played by different simulators" in w for w in paired.warnings)
    code, out, err = cli("compare", "latest~1", "latest", "--simulator", "any", "--json",
                         cwd=project.root)
    assert code == 0, err
    assert json.loads(out)["criteria"][0]["criterion"] == "refunded"


def test_the_same_simulator_is_paired_without_a_word(tmp_path: Path) -> None:
    project = _two_runs(tmp_path, {})
    oloproof.run(project.config)
    paired = oloproof.compare("latest~1", "latest", config=project.config)
    assert not any("simulator" in w for w in paired.warnings)


def test_a_non_inferiority_rule_refuses_another_simulator_unless_it_says_any(
        tmp_path: Path) -> None:
    project = _two_runs(tmp_path, {"version": "2"})
    project.policy = {"version": 1, "baseline": "latest~1", "rules": [
        {"id": "no-worse", "kind": "non_inferiority", "metric": "refunded", "margin": 0.5}]}
    project.write()
    with pytest.raises(UsageError, match="different simulated users"):
        oloproof.run(project.config)
    project.policy["rules"][0]["simulator"] = "any"
    project.policy["baseline"] = "latest"
    project.write()
    result = oloproof.run(project.config)
    assert result.to_json()["decisions"][0]["kind"] == "non_inferiority"
    assert any("played by different simulators" in w
               for w in result.to_json()["baseline"]["warnings"])


def test_simulator_any_is_only_for_non_inferiority(tmp_path: Path) -> None:
    project = ConversationProject(tmp_path / "any")
    project.policy["rules"][0]["simulator"] = "any"
    project.write()
    project.write_cases(customers(2))
    with pytest.raises(ConfigError, match="simulator: any is for a non_inferiority rule"):
        oloproof.run(project.config)


USAGE_DESK = '''
from oloproof import current_case, system


@system(name="desk", version="v1")
def run(case_input):
    user = current_case().user
    message = user.first_message()
    while message is not None:
        current_case().usage(input_tokens=100, output_tokens=10)
        message = user.respond("Order ord-001 has been refunded.")
    return {"answer": "refunded"}
'''

COUNTING_JUDGE = '''
from oloproof import JudgeVerdict

def grade(request):
    return JudgeVerdict(verdict="pass", reason="ok", input_tokens=1000, output_tokens=3)
'''


def test_the_simulators_and_the_judges_usage_are_kept_apart_from_the_agents(
        tmp_path: Path) -> None:
    project = ConversationProject(tmp_path / "usage")
    (project.root / "usage_desk.py").write_text(USAGE_DESK, encoding="utf-8")
    (project.root / "counting.py").write_text(COUNTING_JUDGE, encoding="utf-8")
    project.suite["system"] = {"name": "desk", "version": "v1", "callable": "usage_desk:run",
                               "records": ["usage/v1"]}
    project.suite["judges"] = [{"name": "counter", "callable": "counting:grade"}]
    project.suite["evaluators"] = [
        {"type": "exact_match", "criterion": "refunded", "field": "answer",
         "expected_field": "answer"},
        {"type": "judge", "criterion": "kind", "judge": "counter", "rubric": "Kind.",
         "shows": ["output.answer"]}]
    project.policy["rules"] = []
    project.write()
    project.write_cases(customers(4, leak={3}))
    result = oloproof.run(project.config)
    usage = result.to_json()["usage"]
    turns = result.to_json()["conversations"]["turns"]
    agent_turns = result.to_json()["conversations"]["agent_turns"]
    # The agent's: every case's, the one whose simulator failed included.
    assert (usage["cases"], usage["input_tokens"], usage["output_tokens"]) == (
        4, 100 * agent_turns, 10 * agent_turns)
    assert usage["simulator"]["output_tokens"] == 9 * turns
    assert usage["judge"] == {"input_tokens": 4000, "output_tokens": 12, "cost": None}
    assert result.metric("refunded").missing_by_reason == {"simulator:leaked_instructions": 1}
    # Re-read from the store, the same.
    again = oloproof.redecide("latest", config=project.config)
    assert again.to_json()["usage"] == usage


@pytest.mark.parametrize(("limit", "state"), [
    ({"max_share": 0.25}, "PASS"), ({"max_share": 0.2}, "FAIL"),
    ({"max_count": 1}, "PASS"), ({"max_count": 0}, "FAIL")])
def test_max_simulator_failures_is_a_budget_over_simulated_conversations(
        tmp_path: Path, limit: dict[str, Any], state: str) -> None:
    project = ConversationProject(tmp_path / "budget")
    project.policy["rules"] = [{"id": "simulators", "kind": "max_simulator_failures", **limit}]
    project.write()
    cases = customers(4, leak={2})
    cases.append({"id": "s1", "input": {}, "user": {"turns": ["refund ord-009"]},
                  "expected": {"answer": "refunded"}})  # scripted: never counted
    project.write_cases(cases)
    result = oloproof.run(project.config)
    decision = result.to_json()["decisions"][0]
    assert decision["state"] == state
    assert (decision["simulator_failures"], decision["conversations"]) == (1, 4)
    assert decision["metric"] == "conversations"


def test_max_simulator_failures_without_a_simulated_conversation_has_nothing_to_count(
        tmp_path: Path) -> None:
    project = ConversationProject(tmp_path / "none")
    project.policy["rules"] = [{"id": "simulators", "kind": "max_simulator_failures",
                                "max_share": 0.05}]
    project.write()
    project.write_cases([{"id": "s1", "input": {}, "user": {"turns": ["refund ord-009"]},
                          "expected": {"answer": "refunded"}}])
    decision = oloproof.run(project.config).to_json()["decisions"][0]
    assert (decision["state"], decision["reasons"]) == ("INSUFFICIENT_EVIDENCE",
                                                        ["no_observations"])


@pytest.mark.parametrize(("rule", "said", "key"), [
    ({"metric": "refunded", "max_share": 0.1}, "it names no metric; remove `metric:`", "metric"),
    ({"max_share": 0.1, "max_count": 2}, "not both", "max_count"),
    ({"max_share": 5}, "max_share: 5 is outside [0, 1]", "max_share"),
    ({}, "takes exactly one of max_share", "kind"),
])
def test_a_max_simulator_failures_rule_written_wrong_is_refused_at_its_line(
        tmp_path: Path, rule: dict[str, Any], said: str, key: str) -> None:
    project = ConversationProject(tmp_path / "wrong")
    project.policy["rules"] = [{"id": "simulators", "kind": "max_simulator_failures", **rule}]
    project.write()
    project.write_cases(customers(1))
    with pytest.raises(ConfigError) as refused:
        oloproof.run(project.config)
    assert said in refused.value.message
    lines = (project.root / "release.yaml").read_text(encoding="utf-8").splitlines()
    assert refused.value.line is not None and f"{key}:" in lines[refused.value.line - 1]


def test_the_terminal_says_what_broke_and_counts_the_conversations(tmp_path: Path,
                                                                   cli: Any) -> None:
    project = ConversationProject(tmp_path / "terminal")
    project.write_cases(customers(5, refuse={1}, leak={4}))
    code, out, err = cli("run", cwd=project.root)
    # 3 of the 4 observed refunded cannot show a 50% floor: insufficient evidence, exit 3.
    assert code == 3, err
    assert ("What broke: the simulator failed a check in 1 of 5 simulated conversation(s): "
            "the simulator's failure, not the agent's") in " ".join(out.split())
    assert "leaked_instructions × 1" in out and "cases: c04" in out
    assert "Conversations: 5 conversations (5 simulated)" in out
    assert "1 simulator failure (leaked_instructions 1)" in " ".join(out.split())
    code, out, err = cli("inspect", "latest", "--case", "c04", cwd=project.root)
    assert code == 0, err
    assert "Conversation: simulated by customer" in out
    assert "The simulator failed leaked_instructions" in " ".join(out.split())


def test_what_broke_names_eight_cases_and_counts_the_rest(tmp_path: Path, cli: Any) -> None:
    project = ConversationProject(tmp_path / "many")
    project.policy["rules"] = []
    project.write()
    project.write_cases(customers(10, leak=set(range(1, 11))))
    code, out, err = cli("run", cwd=project.root)
    assert code == 0, err
    said = " ".join(out.split())
    assert ("leaked_instructions × 10 cases: c01, c02, c03, c04, c05, c06, c07, c08 (+2 more)"
            in said)
    assert "over their trials" not in said
