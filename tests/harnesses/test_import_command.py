"""`oloproof import inspect|harbor`: logs Inspect made and a job Harbor's models wrote, stored as
runs that `gate`, `compare` and `inspect` read like any run (docs/imports.md)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fork_server import CliResult
from inspect_ai.log import read_eval_log
from inspect_fixture import made_logs

import oloproof
from oloproof.harnesses.eee import read_eee
from oloproof.harnesses.harbor import read_harbor_job
from oloproof.harnesses.inspect_logs import read_inspect_log
from oloproof.traces.atif import AtifTrajectory, read_atif

JOB = Path(__file__).parent.parent / "data" / "harnesses" / "harbor-job"
Cli = Callable[..., CliResult]


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return made_logs(tmp_path_factory)


def _import(cli: Cli, where: Path, *args: str) -> list[dict[str, Any]]:
    code, out, err = cli("import", *args, "--json", cwd=where)
    assert code == 0, err
    runs: list[dict[str, Any]] = json.loads(out)
    return runs


def _rows(where: Path, run: str) -> dict[str, Any]:
    document = oloproof.load_run(run, config=where / "oloproof.yaml").document
    return {row.id: row for row in document.metrics}


def test_an_inspect_log_is_a_run_whose_errored_and_limited_samples_are_not_failures(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    [run] = _import(cli, tmp_path, "inspect", str(inspect_logs["desk-eval"]))
    assert (run["trials"], run["by_status"], run["errored"]) == (
        27, {"scored": 20, "errored": 7}, {"system_error": 4, "limit": 3})
    document = oloproof.load_run(run["run_id"], config=tmp_path / "oloproof.yaml").document
    model = read_inspect_log(inspect_logs["desk-eval"]).model
    assert (document.system.name, document.cases) == (f"desk ({model})", 9)
    errors = sorted((e.case, str(e.kind)) for e in document.errors)
    assert errors == sorted([("broken", "system_error")] * 3 + [("crash", "system_error")]
                            + [("chatty", "limit")] * 3)
    answer = _rows(tmp_path, run["run_id"])["answer"]
    # chatty's three limit-stopped trials (which Inspect scored I) are missing, not failed:
    # the failures are sample 7's three P (below the pass mark 1), unsure's three N and
    # flaky's one I
    assert answer.observed - answer.passed == 7
    assert answer.missing_by_reason["case_errored"] == 7
    assert "partial_credit" not in answer.missing_by_reason
    assert answer.missing_by_reason["not_scored"] == 3  # odd's "maybe", skipped by name
    code, out, _ = cli("inspect", run["run_id"], "--failures", cwd=tmp_path)
    assert code == 0 and "limit" in out and "Message limit exceeded" in out


def test_the_rate_is_inspects_accuracy_and_the_interval_a_native_runs(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    log = inspect_logs["verdicts"]
    [run] = _import(cli, tmp_path, "inspect", str(log))
    rows = _rows(tmp_path, run["run_id"])
    results = read_eval_log(str(log), header_only=True).results
    assert results is not None
    accuracy = next(s for s in results.scores if s.name == "answer").metrics["accuracy"].value
    assert rows["answer"].estimate == pytest.approx(accuracy, abs=1e-12)
    # the same outcomes, each case's epochs as its trials, from a system run natively
    outcomes: dict[str, dict[str, bool]] = {}
    for trial in read_inspect_log(log).trials():
        score = trial.score("answer")
        assert score is not None and score.passed is not None
        outcomes.setdefault(trial.case_id, {})[str(trial.trial)] = score.passed
    native = tmp_path / "native"
    (native / "data").mkdir(parents=True)
    (native / "outcomes.json").write_text(json.dumps(outcomes))
    (native / "replay.py").write_text(
        "import json, pathlib\nimport oloproof\n"
        "OUT = json.loads((pathlib.Path(__file__).parent / 'outcomes.json').read_text())\n"
        "def run(case_input):\n"
        "    return {'ok': OUT[case_input['id']][str(oloproof.current_case().trial)]}\n")
    (native / "data" / "cases.jsonl").write_text("".join(
        json.dumps({"id": c, "input": {"id": c}, "expected": {"ok": True}}) + "\n"
        for c in outcomes))
    (native / "oloproof.yaml").write_text(
        "version: 1\nproject: native\ndataset: data/cases.jsonl\ntrials: 3\n"
        "system: {name: replay, version: '1', callable: 'replay:run'}\n"
        "evaluators: [{type: exact_match, criterion: answer, field: ok}]\n"
        "metrics: [{id: answer_pass_hat_3, type: pass_hat_k, criterion: answer, k: 3}]\n")
    (native / "release.yaml").write_text("version: 1\nrules: []\n")
    code, _, err = cli("run", cwd=native)
    assert code == 0, err
    native_rows = _rows(native, "latest")
    for metric in ("answer", "answer_pass_hat_3"):
        mine, theirs = rows[metric], native_rows[metric]
        assert (mine.estimate, mine.lower, mine.upper, mine.method) == (
            theirs.estimate, theirs.lower, theirs.upper, theirs.method), metric


def test_a_partial_credit_passes_at_the_pass_mark_and_its_mean_is_inspects_accuracy(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    """The `clean` log: every epoch ran; `partial` is graded P in each."""
    log = inspect_logs["clean"]
    results = read_eval_log(str(log), header_only=True).results
    assert results is not None
    accuracy = next(s for s in results.scores if s.name == "answer").metrics["accuracy"].value
    [full] = _import(cli, tmp_path, "inspect", str(log))
    [half] = _import(cli, tmp_path, "inspect", str(log), "--pass-at", "0.5")
    assert full["run_id"] != half["run_id"] and not half["already"]
    # the mean value the import reports is Inspect's own accuracy
    assert full["values"]["answer"] == {"mean": pytest.approx(accuracy, abs=1e-12),
                                        "cases": 4, "partial": 3}
    assert half["values"] == full["values"] and (full["pass_at"], half["pass_at"]) == (1, 0.5)
    rate_full = _rows(tmp_path, full["run_id"])["answer"]
    rate_half = _rows(tmp_path, half["run_id"])["answer"]
    # P is failed at 1 and passed at 0.5: no trial is missing, and with grades C/I/P
    # Inspect's accuracy (P = 0.5) lies halfway between the two rates
    assert (rate_full.missing, rate_half.missing) == (0, 0)
    assert (rate_full.passed, rate_half.passed) == (5, 8)
    assert (rate_full.estimate + rate_half.estimate) / 2 == pytest.approx(accuracy, abs=1e-12)
    code, out, _ = cli("import", "inspect", str(log), "--pass-at", "0.25", cwd=tmp_path)
    assert code == 0 and "Mean values (Inspect's accuracy where every epoch ran): answer " \
        f"{accuracy:.4g} (3 partial credit(s))" in " ".join(out.split())
    code, _, err = cli("import", "inspect", str(log), "--pass-at", "0", cwd=tmp_path)
    assert code == 2 and "--pass-at 0 is not in (0, 1]" in err


def test_importing_a_log_twice_stores_one_run(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    [first] = _import(cli, tmp_path, "inspect", str(inspect_logs["clean"]))
    copy = tmp_path / "elsewhere" / "copy.eval"
    copy.parent.mkdir()
    shutil.copy(inspect_logs["clean"], copy)
    [again] = _import(cli, tmp_path, "inspect", str(copy))
    assert (first["already"], again["already"]) == (False, True)
    assert again["run_id"] == first["run_id"]
    assert [r["run_id"] for r in oloproof.list_runs(config=tmp_path / "oloproof.yaml")] == [
        first["run_id"]]
    code, out, _ = cli("import", "inspect", str(copy), cwd=tmp_path)
    assert code == 0 and "Already imported" in out and "nothing was stored" in out


@pytest.mark.parametrize("damage", ["not a zip", "truncated"])
def test_a_log_that_cannot_be_read_is_exit_2_and_touches_nothing_stored(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path, damage: str) -> None:
    [stored] = _import(cli, tmp_path, "inspect", str(inspect_logs["clean"]))
    store = tmp_path / ".oloproof" / "store.sqlite"
    before = store.read_bytes()
    bad = tmp_path / "bad.eval"
    whole = inspect_logs["desk-eval"].read_bytes()
    bad.write_bytes(b"this is not an Inspect log" if damage == "not a zip"
                    else whole[: len(whole) // 2])
    code, out, err = cli("import", "inspect", str(bad), cwd=tmp_path)
    assert code == 2, out + err
    assert "bad.eval" in err and "Inspect cannot read this log" in err
    assert store.read_bytes() == before
    assert [r["run_id"] for r in oloproof.list_runs(config=tmp_path / "oloproof.yaml")] == [
        stored["run_id"]]


def test_gate_and_compare_read_imported_runs(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    policy = tmp_path / "release.yaml"
    policy.write_text("version: 1\nrules:\n"
                      "  - {id: polite, metric: rubric.polite, min: 0.9}\n")
    code, out, err = cli("import", "inspect", str(inspect_logs["desk-eval"]),
                         "--policy", str(policy), cwd=tmp_path)
    # refund is impolite in every epoch: 5 of 6 cases with a verdict, far from 0.9 either way
    assert code != 0 and "Gate:" in out, err
    [decided] = json.loads(cli("import", "inspect", str(inspect_logs["desk-eval"]),
                               "--policy", str(policy), "--json", cwd=tmp_path)[1])
    gate_code, gate_out, _ = cli("gate", decided["run_id"], "--policy", str(policy),
                                 cwd=tmp_path)
    assert gate_code == code == decided["gate"]["exit_code"]
    assert decided["already"] and "polite" in gate_out
    [other] = _import(cli, tmp_path, "inspect", str(inspect_logs["desk-json"]))
    # Two logs of one model on one task: records of another harness, never counted as runs of
    # that version (docs/limits.md#re-runs-and-re-drawn-samples), as a second `run` would be
    assert oloproof.load_run(other["run_id"], config=tmp_path / "oloproof.yaml"
                             ).document.record is None
    code, out, err = cli("compare", decided["run_id"], other["run_id"], "--json",
                         cwd=tmp_path)
    assert code == 0, err
    # the two logs ran the same samples: every case pairs by its input, none is dropped
    comparison = json.loads(out)
    answer = next(c for c in comparison["criteria"] if c["criterion"] == "answer")
    assert (comparison["changed"], answer["paired"], answer["broken"], answer["fixed"]) == (
        [], 9, 0, 0)


def test_a_harbor_job_keeps_missing_rewards_missing(cli: Cli, tmp_path: Path) -> None:
    [run] = _import(cli, tmp_path, "harbor", str(JOB))
    assert run["by_status"] == {"scored": 6, "errored": 4, "missing": 1}
    assert run["errored"] == {"system_error": 1, "timeout": 2, "limit": 1}
    reward = _rows(tmp_path, run["run_id"])["reward"]
    assert reward.missing_by_reason["no_reward"] == 1
    assert reward.missing_by_reason["case_errored"] == 4
    document = oloproof.load_run(run["run_id"], config=tmp_path / "oloproof.yaml").document
    assert sorted(str(e.kind) for e in document.errors) == [
        "limit", "system_error", "timeout", "timeout"]
    [again] = _import(cli, tmp_path, "harbor", str(JOB))
    assert again["already"] and again["run_id"] == run["run_id"]
    code, _, err = cli("import", "harbor", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert code == 2 and "nowhere" in err
    code, _, err = cli("import", "harbor", str(JOB), "--pass-at", "0", cwd=tmp_path)
    assert code == 2 and "--pass-at 0 is not in (0, 1]" in err


EXPORTED = Path(__file__).parent.parent / "data" / "harnesses" / "exported"


def test_export_atif_writes_what_harbors_validator_passed_and_round_trips(
        cli: Cli, tmp_path: Path) -> None:
    """`exported/` holds what these commands wrote when Harbor's own `validate_trajectory`
    passed each document (tests/data/harnesses/make_files.py)."""
    [run] = _import(cli, tmp_path, "harbor", str(JOB))
    code, out, err = cli("export", "atif", run["run_id"], "-o", "out/trajectories.json",
                         cwd=tmp_path)
    assert code == 0, err
    # the errored trials' trajectories too (what the agent did before it timed out or
    # overflowed its context is evidence); one trial recorded no trajectory
    assert "Wrote 11 ATIF trajectory(ies)" in out and "1 trial(s) recorded no step" in out
    written = json.loads((tmp_path / "out" / "trajectories.json").read_text())
    assert written == json.loads((EXPORTED / "harbor-job.atif.json").read_text())
    recorded = {(t.case_id, t.trial): t for t in read_harbor_job(JOB).trials()}
    for document in written:
        AtifTrajectory.model_validate(document)
        _, case, trial = document["session_id"].split("/")
        original = recorded[(case, int(trial))]
        assert read_atif(document).trajectory == original.trajectory
    code, _, _ = cli("export", "atif", run["run_id"], "--case", "fix-permissions", "-o",
                     "one.json", cwd=tmp_path)
    assert code == 0 and len(json.loads((tmp_path / "one.json").read_text())) == 3
    code, _, err = cli("export", "atif", run["run_id"], "--case", "nope", "-o", "x.json",
                       cwd=tmp_path)
    assert code == 2 and "nope" in err


def test_export_eee_writes_what_its_validator_passed(cli: Cli, tmp_path: Path) -> None:
    [run] = _import(cli, tmp_path, "harbor", str(JOB))
    code, _, err = cli("export", "eee", run["run_id"], "-o", "eee", "--developer", "acme",
                         cwd=tmp_path)
    assert code == 0, err
    [aggregate] = (tmp_path / "eee").rglob("*-*.json")
    expected = next(EXPORTED.joinpath("eee").rglob("*-*.json"))
    assert aggregate.relative_to(tmp_path / "eee") == expected.relative_to(EXPORTED / "eee")
    samples = aggregate.with_name(aggregate.stem + "_samples.jsonl")
    assert samples.read_text() == expected.with_name(expected.stem + "_samples.jsonl").read_text()
    times = ("evaluation_timestamp", "retrieved_timestamp")
    mine, theirs = json.loads(aggregate.read_text()), json.loads(expected.read_text())
    assert {k: v for k, v in mine.items() if k not in times} == {
        k: v for k, v in theirs.items() if k not in times}
    parsed, rows = read_eee(aggregate)
    reward = _rows(tmp_path, run["run_id"])["reward"]
    [result] = [r for r in parsed.evaluation_results if r.evaluation_result_id == "reward"]
    assert result.score_details.score == reward.estimate
    interval = result.score_details.uncertainty
    assert interval is not None and interval.confidence_interval is not None
    assert (interval.confidence_interval.lower, interval.confidence_interval.upper) == (
        reward.lower, reward.upper)
    # a row per trial with a verdict: the missing and errored trials are not scores of 0
    assert sum(1 for _ in rows) == reward.observed


def test_an_errored_trial_keeps_the_trajectory_its_harness_recorded(
        cli: Cli, inspect_logs: dict[str, Path], tmp_path: Path) -> None:
    [run] = _import(cli, tmp_path, "inspect", str(inspect_logs["desk-eval"]))
    code, out, err = cli("inspect", run["run_id"], "--case", "chatty", "--trial", "2",
                         cwd=tmp_path)
    assert code == 0, err
    shown = " ".join(out.split())
    # the message limit (8) stopped it after four calls of `lookup`: the steps are evidence
    assert "errored (limit): Message limit exceeded" in shown
    assert "Trajectory: 8 steps" in shown and "(None)" not in shown
    assert shown.count("tool_call lookup") == 4
    code, out, err = cli("export", "atif", run["run_id"], "--case", "chatty", "-o",
                         "chatty.json", cwd=tmp_path)
    assert code == 0, err
    written = json.loads((tmp_path / "chatty.json").read_text())
    assert [d["session_id"].rsplit("/", 1)[1] for d in written] == ["1", "2", "3"]
    for document in written:
        AtifTrajectory.model_validate(document)
        calls = [c for step in document["steps"] for c in step.get("tool_calls") or ()]
        assert [c["function_name"] for c in calls] == ["lookup"] * 4
    # the errors stay errors: missing for every criterion, never judged
    answer = _rows(tmp_path, run["run_id"])["answer"]
    assert answer.missing_by_reason["case_errored"] == 7


def test_the_hints_of_an_imported_runs_errors_say_what_happened_in_its_harness(
        cli: Cli, tmp_path: Path) -> None:
    [run] = _import(cli, tmp_path, "harbor", str(JOB))
    document = oloproof.load_run(run["run_id"], config=tmp_path / "oloproof.yaml").document
    assert document.imported_from == "Harbor"
    code, out, err = cli("inspect", run["run_id"], cwd=tmp_path)
    assert code == 0, err
    shown = " ".join(out.split())
    # not the advice for a run of this project's own system (system.timeout_s, retries)
    assert "system.timeout_s" not in shown and "retries" not in shown
    assert shown.count("hint: Harbor recorded this timeout in its own run") == 2
    assert "hint: Harbor stopped the agent at a limit of its own run" in shown
    assert "hint: Harbor recorded this error in its own run" in shown


@pytest.mark.parametrize("interruption", [KeyboardInterrupt, RuntimeError])
def test_an_interrupted_import_is_imported_again_and_nothing_stored_is_touched(
        inspect_logs: dict[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        interruption: type[BaseException]) -> None:
    from oloproof.api.imports import import_inspect
    from oloproof.execution.intake import ResultIntake

    config = tmp_path / "oloproof.yaml"
    [kept] = import_inspect([inspect_logs["verdicts"]], config=config)
    kept_before = oloproof.load_run(kept.run_id, config=config).document.to_json()
    take = ResultIntake._take_case
    taken: list[str] = []

    def interrupted(self: ResultIntake, *args: Any) -> None:
        if len(taken) == 5:
            raise interruption("injected: the import stops here")
        taken.append("case")
        take(self, *args)

    monkeypatch.setattr(ResultIntake, "_take_case", interrupted)
    with pytest.raises(Exception if interruption is RuntimeError else oloproof.RunStopped):
        import_inspect([inspect_logs["desk-eval"]], config=config)
    monkeypatch.undo()
    [stopped] = [r for r in oloproof.list_runs(config=config) if r["run_id"] != kept.run_id]
    assert stopped["status"] == ("stopped" if interruption is KeyboardInterrupt else "failed")
    stopped_before = oloproof.load_run(stopped["run_id"], config=config).document.to_json()

    [again] = import_inspect([inspect_logs["desk-eval"]], config=config)
    assert not again.already and again.interrupted == [stopped["run_id"]]
    assert again.run_id not in (stopped["run_id"], kept.run_id)
    document = oloproof.load_run(again.run_id, config=config).document
    assert (str(document.status), document.cases) == ("complete", 9)
    assert again.summary.by_status == {"scored": 20, "errored": 7}
    # what was stored before is as it was: the other log's run, and the interrupted one
    assert oloproof.load_run(kept.run_id, config=config).document.to_json() == kept_before
    assert oloproof.load_run(stopped["run_id"], config=config).document.to_json() == \
        stopped_before
    # and from now on the log is imported: the finished run is found past the stopped one
    [third] = import_inspect([inspect_logs["desk-eval"]], config=config)
    assert third.already and third.run_id == again.run_id
