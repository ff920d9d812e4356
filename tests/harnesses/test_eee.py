"""Every Eval Ever files, made by that project's own Inspect converter and passed by its own
validator (tests/data/harnesses/eee), read by Oloproof's models of the schema."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from inspect_fixture import made_logs

from oloproof.errors import TraceError
from oloproof.harnesses.eee import SCHEMA_VERSION, EeeAggregate, read_eee
from oloproof.harnesses.inspect_logs import read_inspect_log

FILES = Path(__file__).parent.parent / "data" / "harnesses"
AGGREGATES = sorted((FILES / "eee").glob("data/*/*/*/*.json"))


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return made_logs(tmp_path_factory)


def _aggregate(benchmark: str) -> Path:
    [path] = [p for p in AGGREGATES if p.parts[-4] == benchmark]
    return path


@pytest.mark.parametrize("path", AGGREGATES, ids=lambda p: p.parts[-4])
def test_the_files_read(path: Path) -> None:
    aggregate, rows = read_eee(path)
    rows_read = list(rows)
    assert aggregate.schema_version == SCHEMA_VERSION
    assert aggregate.model_info.id == "acme/desk-1"
    assert rows_read and {r.evaluation_id for r in rows_read} == {aggregate.evaluation_id}
    detail = aggregate.detailed_evaluation_results
    assert detail is not None and detail.total_rows == len(rows_read)
    assert {r.sample_id for r in rows_read} <= set(
        aggregate.evaluation_results[0].source_data.sample_ids or ())


def test_the_aggregate_is_inspects_accuracy_and_ours(inspect_logs: dict[str, Path]) -> None:
    """The converter's `answer` accuracy of the clean task, the same task Inspect ran for the
    session's log, is the mean of the trials read from that log."""
    aggregate, _ = read_eee(_aggregate("clean"))
    [answer] = [r for r in aggregate.evaluation_results
                if r.evaluation_result_id == "answer:accuracy"]
    per_case: dict[str, list[float]] = {}
    for trial in read_inspect_log(inspect_logs["clean"]).trials():
        score = trial.score("answer")
        assert score is not None and score.value is not None
        per_case.setdefault(trial.case_id, []).append(score.value)
    ours = sum(sum(v) / len(v) for v in per_case.values()) / len(per_case)
    assert answer.score_details.score == pytest.approx(ours, abs=1e-12)


def test_an_errored_sample_is_a_row_with_its_error() -> None:
    _, rows = read_eee(_aggregate("desk"))
    broken = [r for r in rows if r.sample_id == "broken"]
    assert broken and all(r.error and "order service down" in r.error for r in broken)
    # what Every Eval Ever's converter records for it: a score of 0, as if it failed
    assert {(r.evaluation.score, r.evaluation.is_correct) for r in broken} == {(0.0, False)}


def test_what_is_not_the_schema_is_refused_with_file_and_line(tmp_path: Path) -> None:
    source = _aggregate("desk")
    copy = tmp_path / "data" / "desk" / "acme" / "desk-1"
    shutil.copytree(source.parent, copy)
    aggregate = copy / source.name
    samples = next(copy.glob("*_samples.jsonl"))
    lines = samples.read_text().splitlines()
    row = json.loads(lines[2])
    row["surprise"] = 1
    lines[2] = json.dumps(row)
    samples.write_text("\n".join(lines) + "\n")
    _, rows = read_eee(aggregate)
    with pytest.raises(TraceError, match="not an Every Eval Ever sample row: surprise") as bad:
        list(rows)
    assert (bad.value.file, bad.value.line) == (str(samples), 3)
    samples.unlink()
    with pytest.raises(TraceError, match="not beside it"):
        read_eee(aggregate)
    document = json.loads(aggregate.read_text())
    document["detailed_evaluation_results"]["file_path"] = "elsewhere/x_samples.jsonl"
    aggregate.write_text(json.dumps(document))
    with pytest.raises(TraceError, match=r"detailed_evaluation_results\.file_path"):
        read_eee(aggregate)


def test_the_aggregate_model_refuses_unknown_top_level_fields() -> None:
    document = json.loads(_aggregate("clean").read_text())
    EeeAggregate.model_validate(document)
    document["extra_field"] = True
    with pytest.raises(ValueError, match="extra_field"):
        EeeAggregate.model_validate(document)
