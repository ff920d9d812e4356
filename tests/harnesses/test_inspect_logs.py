"""Inspect AI eval logs, made by Inspect (`inspect_tasks.py`), read as trials."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path
from types import ModuleType

import pytest
from inspect_fixture import made_logs

from oloproof.errors import TraceError
from oloproof.harnesses import inspect_logs as inspect_reader
from oloproof.harnesses.inspect_logs import read_inspect_log
from oloproof.harnesses.records import ImportedTrial


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return made_logs(tmp_path_factory)


@pytest.fixture(scope="module")
def tasks() -> ModuleType:
    """`inspect_tasks.py`, what the logs were made from. Imported here, not at the top: it
    imports Inspect (2 s of CPU), which a pytest-xdist worker that collects this file but runs
    none of it need not import."""
    import inspect_tasks

    return inspect_tasks


def _trials(path: Path) -> dict[tuple[str, int], ImportedTrial]:
    return {(t.case_id, t.trial): t for t in read_inspect_log(path).trials()}


@pytest.fixture(scope="module")
def desk(inspect_logs: dict[str, Path]) -> dict[tuple[str, int], ImportedTrial]:
    return _trials(inspect_logs["desk-eval"])


def test_the_header_names_the_system_and_its_version(inspect_logs: dict[str, Path],
                                                     tasks: ModuleType) -> None:
    log = read_inspect_log(inspect_logs["desk-eval"])
    head = subprocess.run(["git", "-C", str(inspect_logs["repo"]), "rev-parse", "HEAD"],
                          check=True, capture_output=True, text=True).stdout.strip()
    assert (log.task, log.model, log.task_version) == ("desk", tasks.MODEL, "2")
    assert log.revision is not None and head.startswith(log.revision.removesuffix("-dirty"))
    assert log.system_name == f"desk ({tasks.MODEL})"
    assert log.system_version == f"2+{log.revision}"
    assert (log.epochs, log.reducers, log.status) == (3, ("mean",), "success")
    assert log.scorers == ("answer", "quality", "rubric")
    assert log.sample_ids == tuple(str(s.id) for s in tasks.DESK)
    assert log.warnings == []


def test_every_sample_and_epoch_is_a_trial_with_its_status(
        desk: dict[tuple[str, int], ImportedTrial], tasks: ModuleType) -> None:
    assert len(desk) == len(tasks.DESK) * tasks.EPOCHS
    errored = {key: (t.error.kind, t.error.detail) for key, t in desk.items() if t.error}
    assert errored == {
        ("crash", 2): ("system_error", None),
        **{("broken", e): ("system_error", None) for e in (1, 2, 3)},
        **{("chatty", e): ("limit", f"message limit {tasks.MESSAGE_LIMIT}")
           for e in (1, 2, 3)},
    }
    assert all(t.status == "errored" for key, t in desk.items() if key in errored)
    assert all(t.status == "scored" for key, t in desk.items() if key not in errored)
    crash = desk[("crash", 2)].error
    assert crash is not None and crash.message == "RuntimeError('order service down (epoch 2)')"
    assert crash.traceback and "order service down" in crash.traceback
    # Inspect scored what the limit left; the scores are kept, the trial is not a failure
    assert desk[("chatty", 1)].score("answer").passed is False  # type: ignore[union-attr]


def test_grades_numbers_and_dicts_map_to_criteria(
        desk: dict[tuple[str, int], ImportedTrial], inspect_logs: dict[str, Path]) -> None:
    def answer(case: str, epoch: int = 1) -> tuple[float | None, bool | None]:
        score = desk[(case, epoch)].score("answer")
        assert score is not None
        return score.value, score.passed

    assert answer("weather") == (1.0, True)  # C
    assert answer("flaky", 2) == (0.0, False)  # I
    assert answer("7") == (0.5, False)  # P: the value 0.5, below the default pass mark 1
    assert answer("unsure") == (0.0, False)  # N
    assert desk[("odd", 1)].score("answer") is None  # "maybe": a named skip
    quality = {case: desk[(case, 1)].score("quality") for case in ("weather", "7", "odd")}
    assert (quality["weather"].value, quality["weather"].passed) == (0.75, False)  # type: ignore
    assert (quality["7"].value, quality["7"].passed) == (0.0, False)  # type: ignore[union-attr]
    assert quality["odd"] is not None and quality["odd"].value is None
    assert quality["odd"].missing == "grader_failed"  # Inspect's unscored, with its reason
    assert desk[("unsure", 1)].score("quality") is None  # 7: outside [0, 1]
    polite = desk[("refund", 1)].score("rubric.polite")
    concise = desk[("weather", 1)].score("rubric.concise")
    assert polite is not None and (polite.value, polite.passed, polite.recorded) == (0.0, False,
                                                                                     "I")
    assert concise is not None and (concise.value, concise.passed) == (0.5, False)
    half = {(t.case_id, t.trial): t for t in read_inspect_log(
        inspect_logs["desk-eval"], pass_at=0.5).trials()}
    assert half[("7", 1)].score("answer").passed is True  # type: ignore[union-attr]
    assert half[("weather", 1)].score("quality").passed is True  # type: ignore[union-attr]
    assert half[("refund", 1)].score("answer").passed is True  # type: ignore[union-attr]
    assert half[("flaky", 2)].score("answer").passed is False  # type: ignore[union-attr]
    assert desk[("weather", 1)].score("rubric") is None


def test_skipped_scores_are_counted_by_name(inspect_logs: dict[str, Path]) -> None:
    log = read_inspect_log(inspect_logs["desk-eval"])
    for _ in log.trials():
        pass
    assert log.summary.skipped_text() == ("answer: text value 'maybe' × 3; "
                                          "quality: number 7 outside [0, 1] × 3")
    assert log.summary.by_status == {"scored": 20, "errored": 7}
    assert log.summary.errored == {"system_error": 4, "limit": 3}


def test_a_complete_logs_mean_is_inspects_accuracy(inspect_logs: dict[str, Path]) -> None:
    """Where every epoch of every sample ran, the mean over cases of each case's mean over its
    trials is Inspect's own accuracy (its default mean reduction)."""
    from inspect_ai.log import read_eval_log

    trials = list(read_inspect_log(inspect_logs["clean"]).trials())
    assert {t.status for t in trials} == {"scored"}
    per_case: dict[str, list[float]] = {}
    for trial in trials:
        score = trial.score("answer")
        assert score is not None and score.value is not None
        per_case.setdefault(trial.case_id, []).append(score.value)
    ours = sum(sum(v) / len(v) for v in per_case.values()) / len(per_case)
    results = read_eval_log(str(inspect_logs["clean"]), header_only=True).results
    assert results is not None
    [answer] = [s for s in results.scores if s.name == "answer"]
    assert ours == pytest.approx(answer.metrics["accuracy"].value, abs=1e-12)
    assert ours != pytest.approx(1.0)  # the log holds failures and a partial credit


def test_where_an_epoch_did_not_run_inspect_and_the_trials_differ(
        inspect_logs: dict[str, Path], desk: dict[tuple[str, int], ImportedTrial]) -> None:
    """What docs/imports.md says of the desk log, against Inspect's own per-sample reductions."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(inspect_logs["desk-eval"]))
    [answer] = [r for r in log.reductions or () if r.scorer == "answer"]
    reduced = {str(s.sample_id): s.value for s in answer.samples}
    assert log.results is not None
    [accuracy] = [s.metrics["accuracy"].value for s in log.results.scores if s.name == "answer"]
    assert round(accuracy, 3) == 0.521
    # crash: Inspect averages the epochs that ran; the errored one is a trial, not dropped
    assert reduced["crash"] == 1.0
    assert [desk[("crash", e)].status for e in (1, 2, 3)] == ["scored", "errored", "scored"]
    # broken: errored in every epoch, left out of Inspect's accuracy, three errored trials here
    assert "broken" not in reduced
    assert {desk[("broken", e)].status for e in (1, 2, 3)} == {"errored"}
    # chatty: Inspect counts what the limit left as a failure (0); here it errored `limit`
    assert reduced["chatty"] == 0.0
    assert {desk[("chatty", e)].error.kind for e in (1, 2, 3)} == {"limit"}  # type: ignore
    # odd: "maybe" counts 0 in Inspect's accuracy; here it is a named skip
    assert reduced["odd"] == 0.0 and desk[("odd", 1)].score("answer") is None


def test_messages_become_the_trajectory(desk: dict[tuple[str, int], ImportedTrial],
                                        tasks: ModuleType) -> None:
    refund = desk[("refund", 1)].trajectory
    assert refund is not None
    assert [(s.kind, s.tool_name) for s in refund.steps] == [
        ("message", None), ("message", None), ("tool_call", "find_order"),
        ("tool_result", "find_order"), ("tool_call", "refund"), ("tool_result", "refund"),
        ("final", None)]
    assert refund.steps[2].arguments == {"order_id": "A-17"}
    assert refund.steps[4].arguments == {"order_id": "A-17", "amount": 42.5}
    assert refund.steps[5].result == "refunded 42.5 on A-17"
    assert refund.terminal_status == "success"
    assert desk[("refund", 1)].input == "refund order A-17"
    assert desk[("refund", 1)].output == "answer to refund order A-17"
    weather = desk[("weather", 1)].trajectory
    assert weather is not None  # a long result is the text itself, never an attachment's name
    assert weather.steps[2].result == "sunny in Paris. " + tasks.FORECAST
    chatty = desk[("chatty", 1)].trajectory
    assert chatty is not None and chatty.truncated  # the limit cut off the last call
    assert chatty.terminal_status == "unknown"
    assert desk[("broken", 1)].trajectory is not None


def test_model_usage_becomes_tokens_and_cost(desk: dict[tuple[str, int], ImportedTrial],
                                             tasks: ModuleType) -> None:
    usage = desk[("weather", 1)].usage
    # two model calls: the question (1 message), then with the call and its result (3)
    per = tasks.INPUT_TOKENS_PER_MESSAGE
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (per * (1 + 3),
                                                         2 * tasks.OUTPUT_TOKENS)
    assert usage.cost == pytest.approx(2 * tasks.COST)
    assert desk[("broken", 1)].usage is None  # it never called the model


def test_json_and_eval_logs_give_the_same_trials(
        inspect_logs: dict[str, Path], desk: dict[tuple[str, int], ImportedTrial]) -> None:
    from_json = _trials(inspect_logs["desk-json"])
    assert from_json.keys() == desk.keys()
    for key, trial in desk.items():
        other = from_json[key]
        assert (other.status, other.scores, other.trajectory, other.usage, other.skipped) == (
            trial.status, trial.scores, trial.trajectory, trial.usage, trial.skipped)
        assert (other.error and other.error.message) == (trial.error and trial.error.message)


def test_samples_stream_in_batches(inspect_logs: dict[str, Path],
                                   desk: dict[tuple[str, int], ImportedTrial],
                                   monkeypatch: pytest.MonkeyPatch, tasks: ModuleType) -> None:
    monkeypatch.setattr(inspect_reader, "BATCH", 4)
    keys = [(t.case_id, t.trial) for t in read_inspect_log(inspect_logs["desk-eval"]).trials()]
    assert keys == [(str(s.id), e) for s in tasks.DESK
                    for e in range(1, tasks.EPOCHS + 1)]
    assert set(keys) == desk.keys()


def test_an_eval_that_stopped_gives_the_samples_it_logged(inspect_logs: dict[str, Path],
                                                          tasks: ModuleType) -> None:
    from inspect_ai.log import read_eval_log_sample_summaries

    log = read_inspect_log(inspect_logs["failed"])
    assert log.status == "error"
    assert log.warnings == ["the eval ended error: only the samples it logged are read"]
    trials = {(t.case_id, t.trial): t for t in log.trials()}
    logged = read_eval_log_sample_summaries(str(inspect_logs["failed"]))
    assert trials.keys() == {(str(s.id), s.epoch) for s in logged}
    assert len(trials) < len(tasks.FAILED) * tasks.EPOCHS
    assert trials[("broken", 1)].status == "errored"
    assert trials[("weather", 1)].status == "scored"


def test_a_file_that_is_not_a_log_is_refused_by_name(tmp_path: Path,
                                                     inspect_logs: dict[str, Path]) -> None:
    text = tmp_path / "notes.json"
    text.write_text('{"hello": 1}')
    with pytest.raises(TraceError, match="Inspect cannot read this log") as refused:
        read_inspect_log(text)
    assert refused.value.file == str(text)
    with pytest.raises(TraceError, match="no such Inspect log"):
        read_inspect_log(tmp_path / "absent.eval")
    # a log whose samples were lost: the header reads, the samples do not
    broken = tmp_path / "broken.eval"
    with zipfile.ZipFile(inspect_logs["desk-eval"]) as source, \
            zipfile.ZipFile(broken, "w") as target:
        for item in source.infolist():
            if not item.filename.startswith("samples/refund_"):
                target.writestr(item, source.read(item))
    log = read_inspect_log(broken)
    with pytest.raises(TraceError, match="Inspect cannot read samples") as lost:
        list(log.trials())
    assert lost.value.file == str(broken)


def test_without_inspect_the_error_says_how_to_install_the_extra(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """From the checkout, never `oloproof[inspect]`: a package of that name on the public
    registry is another project."""
    monkeypatch.setitem(sys.modules, "inspect_ai.log", None)  # (import raises ImportError)
    with pytest.raises(TraceError) as refused:
        read_inspect_log(tmp_path / "any.eval")
    assert "pip install -e '.[inspect]'" in str(refused.value)
    assert "oloproof[" not in str(refused.value)
    assert refused.value.file == str(tmp_path / "any.eval")
