"""Re-scoring without re-running (docs/cli.md#oloproof-rescore): `oloproof rescore [RUN]` and
`oloproof.rescore` make a new run from RUN's stored outputs, trajectories and states with the
suite's current evaluators and judges, calling no system (counted at the system); the new run
records `rescored_from`; cases whose system or case changed since, that errored in RUN or that
the dataset no longer holds are listed, not re-scored; a rescored run is never taken as a
baseline unless named.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

import pytest

import oloproof
from oloproof.errors import UsageError

sys.path.insert(0, str(Path(__file__).parents[1] / "judges"))

from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)

CHECK = '''
from oloproof import evaluator


@evaluator(name="says_yes")
def says_yes(case, output, artifacts):
    return output.get("answer") == "{wanted}"
'''


def _with_check(probe: Any, wanted: str = "yes") -> None:
    (probe.path / "checks.py").write_text(CHECK.format(wanted=wanted), encoding="utf-8")
    if not any(e.get("type") == "custom" for e in probe.suite["evaluators"]):
        probe.suite["evaluators"].append({"type": "custom", "name": "says_yes",
                                          "callable": "checks:says_yes"})
        probe.write_suite()


@pytest.fixture
def scored(new_probe: Any) -> Any:
    """A probe of ten cases, run once with its check passing every case."""
    probe = new_probe()
    probe.write_cases(probe.plain_cases(10))
    _with_check(probe)
    first = oloproof.run(probe.path / "oloproof.yaml")
    assert first.metric("says_yes").passed == 10 and len(probe.calls()) == 10
    probe.first = first.run_id
    return probe


def test_an_edited_check_is_rescored_without_calling_the_system(scored: Any, cli: Any) -> None:
    probe = scored
    _with_check(probe, wanted="no")  # the check now fails every stored answer
    result = oloproof.rescore(config=probe.path / "oloproof.yaml")
    assert len(probe.calls()) == 10, "no system call"
    document = result.document
    assert document.rescored_from == probe.first and document.not_rescored is None
    assert document.subset is None and document.cases == 10
    assert result.metric("says_yes").passed == 0
    assert result.metric("answer_correct").passed == 10  # unchanged criteria, as stored
    assert document.cache.execution.hit == 10 and document.cache.execution.miss == 0
    # the unchanged criteria's judgments came from the cache; the edited check's were made
    assert document.cache.judgment.hit == 20 and document.cache.judgment.miss == 10
    assert result.gate.exit_code == 0

    code, out, _ = cli("rescore", probe.first, cwd=probe.path)
    assert code == 0 and len(probe.calls()) == 10
    assert f"Rescored from {probe.first}: its stored outputs scored" in " ".join(out.split())
    stored = json.loads(cli("inspect", "latest", "--json", cwd=probe.path).out)
    assert stored["rescored_from"] == probe.first
    # A rescored run is listed as one, and its suite description says so.
    assert "ALLOW (exit 0) · rescored" in cli("runs", cwd=probe.path).out
    with sqlite3.connect(probe.store) as conn:
        kinds = [json.loads(s).get("kind") for (s,) in
                 conn.execute("SELECT suite FROM runs ORDER BY started_at")]
    assert kinds == [None, "rescored", "rescored"]


def test_what_changed_since_is_listed_not_rescored(scored: Any, cli: Any) -> None:
    probe = scored
    cases = probe.plain_cases(10)
    cases[2]["expected"] = {"answer": "no"}           # c003's case changed
    del cases[4]                                      # c005 left the dataset
    cases.append({"id": "c011", "input": {"question": 11, "answer": "yes"},
                  "expected": {"answer": "yes"}})     # new since: not in the run
    probe.write_cases(cases)
    result = oloproof.rescore(probe.first, probe.path / "oloproof.yaml")
    assert len(probe.calls()) == 10
    listed = [(n.case, n.reason) for n in result.document.not_rescored or ()]
    assert listed == [("c003", "case_changed"), ("c005", "not_in_dataset")]
    subset = result.document.subset
    assert subset is not None and (subset.cases, subset.of) == (8, 10)
    assert subset.selection == {"rescored_from": probe.first}
    assert result.document.cases == 8 and result.gate.exit_code == 3

    code, out, _ = cli("rescore", probe.first, cwd=probe.path)
    said = " ".join(out.split())
    assert code == 3
    assert "Not rescored: 2 case(s), listed by reason" in said
    assert "the case changed since (its input, expected, metadata or initial state): c003" in said
    assert "the dataset no longer holds it: c005" in said
    assert "subset of 8 of 10 cases: not a release decision" in said


def test_a_new_system_version_rescores_nothing(scored: Any, cli: Any) -> None:
    probe = scored
    probe.set_system(version="v2")
    # (with a rule against a baseline: nothing to pair, and still a run that measured nothing)
    probe.policy["baseline"] = "latest~1"
    probe.policy["rules"].append({"id": "no-worse", "metric": "answer_correct",
                                  "kind": "non_inferiority", "margin": 0.1})
    probe.write_policy()
    code, out, _ = cli("rescore", cwd=probe.path)
    assert len(probe.calls()) == 10
    assert code == 5  # a run that measured nothing
    said = " ".join(out.split())
    assert ("the system changed since (its name or version, or how its trajectory is "
            "obtained) (the stored run is probe v1): c001, c002") in said
    document = json.loads(cli("inspect", "latest", "--json", cwd=probe.path).out)
    assert document["status"] == "failed" and document["cases"] == 0
    assert len(document["not_rescored"]) == 10
    assert {n["reason"] for n in document["not_rescored"]} == {"system_changed"}


def test_a_case_that_errored_is_listed(new_probe: Any) -> None:
    probe = new_probe()
    cases = probe.plain_cases(4)
    cases[1]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    oloproof.run(probe.path / "oloproof.yaml")
    result = oloproof.rescore(config=probe.path / "oloproof.yaml")
    assert probe.calls().count("c002") == 1
    assert [(n.case, n.reason, n.words) for n in result.document.not_rescored or ()] == [
        ("c002", "errored", "it errored in the stored run: there is no output to score "
                            "(system_error)")]
    assert result.document.subset is not None and result.document.subset.cases == 3


def test_a_rescored_subset_holds_the_subset_and_trials(scored: Any) -> None:
    probe = scored
    config = probe.path / "oloproof.yaml"
    small = oloproof.run(config, cases=["c004", "c006"], trials=2)
    calls = len(probe.calls())
    again = oloproof.rescore(small.run_id, config)
    assert len(probe.calls()) == calls
    assert again.document.not_rescored is None  # the cases outside it are not listed
    assert again.document.trials == 2
    subset = again.document.subset
    assert subset is not None and (subset.cases, subset.of) == (2, 10)
    assert subset.selection == {"cases": ["c004", "c006"], "rescored_from": small.run_id}


def test_a_rescored_run_is_a_baseline_only_when_named(scored: Any) -> None:
    probe = scored
    config = probe.path / "oloproof.yaml"
    rescored = oloproof.rescore(config=config).run_id
    assert oloproof.compare("version:v1", rescored, config=config).baseline == probe.first
    oloproof.run(config)  # (from the cache)
    assert oloproof.compare(config=config).baseline == probe.first  # latest~1 passes it by
    assert oloproof.compare(rescored, "latest", config=config).baseline == rescored
    with pytest.raises(UsageError, match="no run matches 'nothing'"):
        oloproof.rescore("nothing", config)


def test_judges_are_asked_only_for_what_their_cache_lacks(
        judged: JudgedProject, server: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("JUDGE_TEST_KEY", "any")
    judged.model_judge(server)
    judged.write_cases(desk_cases(6, lies={2}))
    first = oloproof.run(judged.config)
    assert server.calls == 6 and first.metric("reply_truthful").observed == 6
    unchanged = oloproof.rescore(config=judged.config)
    assert server.calls == 6 and unchanged.document.cache.judgment.hit == 6
    # A new criterion with the same judge, rubric and shown text: the judge cache answers.
    judged.suite["evaluators"].append(dict(judged.suite["evaluators"][0],
                                           criterion="reply_truthful_too"))
    judged.write()
    again = oloproof.rescore(first.run_id, judged.config)
    assert again.document.cache.judgment.miss == 6
    assert again.document.cache.judge is not None and again.document.cache.judge.hit == 6
    assert server.calls == 6, "every verdict came from the judge cache"
    assert again.metric("reply_truthful_too").passed == first.metric("reply_truthful").passed
    del judged.suite["evaluators"][1]
    judged.suite["evaluators"][0]["rubric"] = "The reply tells the truth about the refund."
    judged.write()
    rubric = oloproof.rescore(first.run_id, judged.config)
    assert server.calls == 12, "a changed rubric asks the judge again"
    assert rubric.document.cache.execution.miss == 0, "and runs no system"
    assert rubric.document.rescored_from == first.run_id


SANDBOX_DESK = '''
from oloproof import AgentStep, AgentTrajectory, current_case


class Desk:
    """Refunds the order asked about; `sloppy` cases also write on the other order and call
    `lookup` first."""

    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def __call__(self, case_input):
        log("calls", case_input["order"])
        steps = []
        if case_input.get("sloppy"):
            self.state["orders"]["other"]["note"] = "seen"
            steps.append(AgentStep(index=1, kind="tool_call", tool_name="lookup",
                                   arguments={"order": "other"}))
        steps.append(AgentStep(index=len(steps) + 1, kind="tool_call", tool_name="refund",
                               arguments={"order": case_input["order"]}))
        steps.append(AgentStep(index=len(steps) + 1, kind="final"))
        self.state["orders"][case_input["order"]]["status"] = "refunded"
        current_case().agent_trajectory(AgentTrajectory(steps=tuple(steps),
                                                        terminal_status="success"))
        return {"answer": "refunded"}


desk = Desk()
'''


def test_criteria_added_since_read_the_stored_trajectories_and_end_states(
        tmp_path: Path) -> None:
    from stateful_support import StatefulProject

    project = StatefulProject(tmp_path / "sandbox", SANDBOX_DESK)
    project.suite["evaluators"] = [{"type": "state_matches", "mode": "changes"}]
    sloppy = {"o2", "o5"}
    cases = [{"id": f"o{n}", "input": {"order": f"o{n}", "sloppy": f"o{n}" in sloppy},
              "initial_state": {"orders": {f"o{n}": {"status": "paid"},
                                           "other": {"status": "paid"}}},
              "expected": {"state": {"orders": {f"o{n}": {"status": "refunded"}}}}}
             for n in range(1, 7)]
    project.write(cases)
    first = project.run()
    assert len(project.log("calls")) == 6
    assert first.metric("state_matches").passed == 4  # (mode changes: `other` changed)

    # Checks written after the run: of the end state it left, and of the trajectory.
    project.suite["evaluators"] += [
        {"type": "state_unchanged", "criterion": "other_untouched", "paths": ["orders.other"]},
        {"type": "agent_tool_called", "tool_name": "lookup", "criterion": "looked_up"},
        {"type": "agent_max_steps", "max_steps": 2},
    ]
    project.write()
    rescored = oloproof.rescore(first.run_id, project.root / "oloproof.yaml")
    assert len(project.log("calls")) == 6, "no system call"
    assert rescored.document.rescored_from == first.run_id
    assert rescored.document.not_rescored is None and rescored.document.cases == 6
    verdicts = project.verdicts(rescored.run_id)
    assert {c for c, v in verdicts.items() if v["other_untouched"][0] == "failed"} == sloppy
    assert {c for c, v in verdicts.items() if v["looked_up"][0] == "passed"} == sloppy
    assert {c for c, v in verdicts.items() if v["agent_steps_le_2"][0] == "failed"} == sloppy
    assert {c for c, v in verdicts.items() if v["state_matches"][0] == "failed"} == sloppy

    # What the system gives when called again is what the rescore read from the store.
    fresh = project.run(no_cache=True)
    assert len(project.log("calls")) == 12
    assert project.verdicts(fresh.run_id) == verdicts
