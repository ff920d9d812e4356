"""A Harbor job folder, made by Harbor's own models (tests/data/harnesses), read as trials."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from oloproof.errors import TraceError, UsageError
from oloproof.harnesses.harbor import read_harbor_job
from oloproof.harnesses.records import ImportedTrial
from oloproof.traces.atif import read_atif

JOB = Path(__file__).parent.parent / "data" / "harnesses" / "harbor-job"


def _trials(job: Path = JOB, **options: float) -> dict[tuple[str, int], ImportedTrial]:
    return {(t.case_id, t.trial): t for t in read_harbor_job(job, **options).trials()}


def _raw(trial: ImportedTrial) -> dict:  # type: ignore[type-arg]
    return json.loads((Path(trial.source) / "result.json").read_text())


def test_each_trial_is_a_case_and_attempt_with_its_status() -> None:
    trials = _trials()
    summary = {key: (t.status, t.error.kind if t.error else t.missing,
                     t.error.detail if t.error else None) for key, t in trials.items()}
    assert summary == {
        ("fix-permissions", 1): ("scored", None, None),
        ("fix-permissions", 2): ("scored", None, None),
        ("fix-permissions", 3): ("scored", None, None),
        ("parse-logs", 1): ("scored", None, None),
        ("parse-logs", 2): ("scored", None, None),
        ("parse-logs", 3): ("errored", "timeout", "AgentTimeoutError"),
        ("build-index", 1): ("errored", "system_error", "NonZeroAgentExitCodeError"),
        ("build-index", 2): ("missing", "no_reward", None),
        ("build-index", 3): ("errored", "limit", "ContextWindowExceededError"),
        ("resize-images", 1): ("errored", "timeout", "VerifierTimeoutError"),
        ("resize-images", 2): ("scored", None, None),
    }
    # attempts are numbered in the order the task's trials started
    for (_, attempt), trial in trials.items():
        siblings = sorted((_raw(t)["started_at"], k[1]) for k, t in trials.items()
                          if k[0] == trial.case_id)
        assert siblings[attempt - 1][0] == _raw(trial)["started_at"]


def test_rewards_are_criteria_passed_at_the_mark() -> None:
    def reward(trials: dict[tuple[str, int], ImportedTrial], key: tuple[str, int]) -> tuple:  # type: ignore[type-arg]
        score = trials[key].score("reward")
        assert score is not None
        return score.value, score.passed

    default = _trials()
    assert reward(default, ("fix-permissions", 1)) == (1.0, True)
    assert reward(default, ("fix-permissions", 3)) == (0.0, False)
    assert reward(default, ("parse-logs", 2)) == (0.5, False)  # a fraction below 1.0
    lenient = _trials(pass_at=0.5)
    assert reward(lenient, ("parse-logs", 2)) == (0.5, True)
    # the exception wins over the reward Harbor kept (an agent timeout's 0.75): errored
    assert reward(default, ("parse-logs", 3)) == (0.75, False)
    assert default[("parse-logs", 3)].status == "errored"
    assert default[("build-index", 2)].scores == ()  # no reward: missing, never 0


@pytest.mark.parametrize("mark", [0.0, -1.0, 1.5, float("nan"), float("inf")])
def test_a_pass_mark_no_reward_in_0_1_can_reach_is_refused(mark: float) -> None:
    # a mark of 0 would pass every reward of 0, a NaN fail them all: both silently
    with pytest.raises(UsageError, match=r"--pass-at .* is not in \(0, 1\]"):
        read_harbor_job(JOB, pass_at=mark)


def test_harbors_own_stats_count_the_same_errors() -> None:
    stats = json.loads((JOB / "result.json").read_text())["stats"]
    trials = _trials()
    assert stats["n_errored_trials"] == sum(t.status == "errored" for t in trials.values())
    assert stats["n_completed_trials"] == len(trials)


def test_tokens_and_cost_are_the_agents() -> None:
    for trial in _trials().values():
        recorded = _raw(trial)["agent_result"]
        assert trial.usage is not None
        assert (trial.usage.input_tokens, trial.usage.output_tokens, trial.usage.cost) == (
            recorded["n_input_tokens"], recorded["n_output_tokens"], recorded["cost_usd"])


def test_the_trajectory_is_the_agents_atif_file() -> None:
    trial = _trials()[("fix-permissions", 1)]
    expected = read_atif(Path(trial.source) / "agent" / "trajectory.json").trajectory
    assert trial.trajectory == expected
    assert [s.tool_name for s in expected.tool_calls()] == [
        "bash_command", "bash_command", "mark_task_complete"]
    assert expected.tool_calls()[0].arguments == {"keystrokes": "chmod 600 /app/key\n",
                                                  "duration": 1.0}
    assert trial.input == "Task fix-permissions: see /app/README.md."


def test_a_folder_that_is_not_a_job_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(TraceError, match=r"no trial folder with a result\.json"):
        read_harbor_job(tmp_path)
    with pytest.raises(TraceError, match="not a folder"):
        read_harbor_job(tmp_path / "absent")
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    [victim] = [p for p in job.glob("parse-logs__*/result.json")
                if json.loads(p.read_text())["verifier_result"] == {"rewards": {"reward": 0.5}}]
    damaged = json.loads(victim.read_text())
    del damaged["agent_info"]
    victim.write_text(json.dumps(damaged))
    with pytest.raises(TraceError, match="not a Harbor trial result: agent_info") as refused:
        read_harbor_job(job)
    assert refused.value.file == str(victim)
    victim.write_text("{")
    with pytest.raises(TraceError, match="not JSON"):
        read_harbor_job(job)


def test_a_trajectory_that_is_not_atif_is_refused_by_name(tmp_path: Path) -> None:
    job = tmp_path / "job"
    shutil.copytree(JOB, job)
    victim = next(job.glob("build-index__*/agent/trajectory.json"))
    document = json.loads(victim.read_text())
    document["steps"][1]["step_id"] = 7
    victim.write_text(json.dumps(document))
    with pytest.raises(TraceError, match="step_id") as refused:
        list(read_harbor_job(job).trials())
    assert refused.value.file == str(victim)
