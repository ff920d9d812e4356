"""The typed run document (docs/cli.md#the-json-document): same JSON, typed in Python, older stored
runs still load."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest

import oloproof
from oloproof.document import (
    DecisionRow,
    ExitCode,
    GateAction,
    QuantileRow,
    RateRow,
    RuleState,
    RunDocument,
    RunStatus,
    Verdict,
)


@pytest.fixture(scope="module")
def run(new_probe: Any, cli: Any) -> tuple[Any, dict[str, Any]]:
    """Fifteen cases: c003 … c014 answer wrongly, c015 raises."""
    probe = new_probe()
    cases = probe.plain_cases(15)
    for case in cases[2:14]:
        case["input"]["answer"] = "no"
    cases[14]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    probe.suite["slices"] = ["first_tool"]
    probe.suite["min_slice_support"] = 20  # every slice row below support
    probe.write_suite()
    code, out, err = cli("run", "--json", cwd=probe.path)
    assert code == 1, err
    return probe, json.loads(out)


def test_the_vocabulary_dumps_as_the_plain_values_of_the_contract() -> None:
    assert json.dumps([RuleState.INSUFFICIENT_EVIDENCE, GateAction.BLOCK, ExitCode.FAIL,
                       Verdict.MISSING, RunStatus.COMPLETE]) == \
        '["INSUFFICIENT_EVIDENCE", "BLOCK", 1, "missing", "complete"]'
    assert RuleState("FAIL") is RuleState.FAIL and ExitCode(3) is ExitCode.INSUFFICIENT_EVIDENCE


def test_the_document_is_typed_and_dumps_back_to_the_same_json(run: Any) -> None:
    probe, printed = run

    result = oloproof.load_run("latest", probe.path / "oloproof.yaml")
    document = result.document

    assert isinstance(document, RunDocument)
    assert isinstance(document.metric("answer_correct"), RateRow)
    assert isinstance(document.metric("steps_p50"), QuantileRow)
    assert isinstance(document.decisions[0], DecisionRow)
    assert document.gate.action is GateAction.BLOCK and document.gate.exit_code is ExitCode.FAIL
    assert result.metric("answer_correct").lower == printed["metrics"][0]["lower"]
    assert result.to_json() == printed
    assert RunDocument.model_validate(printed).to_json() == printed


def test_the_first_ten_failing_cases_are_named_in_case_order(run: Any) -> None:
    _, printed = run

    failing = printed["failing_cases"]

    assert failing["total"] == 13
    assert [c["case"] for c in failing["first"]] == [f"c{i:03d}" for i in range(3, 13)]
    assert failing["first"][0] == {"case": "c003", "failed": ["answer_correct"], "missing": []}


def test_a_metric_names_the_first_case_missing_for_each_reason_and_its_error(run: Any) -> None:
    _, printed = run

    answer = next(m for m in printed["metrics"] if m["id"] == "answer_correct")

    assert answer["missing_by_reason"] == {"case_errored": 1}
    assert answer["missing_examples"] == {"case_errored": {
        "case": "c015", "message": "RuntimeError: the order service is down"}}


def _as_stored_before_typing(summary: dict[str, Any]) -> dict[str, Any]:
    """The document as runs stored it before it was typed: none of the keys added since."""
    old = json.loads(json.dumps(summary))
    old.pop("failing_cases")
    for row in old["decisions"]:
        for key in ("kind", "bound", "bound_side", "threshold", "threshold_side", "failures",
                    "missing", "limit"):
            row.pop(key, None)
    for row in old["metrics"]:
        row.pop("missing_examples", None)
        if row["kind"] == "quantile":
            row.pop("missing_by_reason")
    for row in old["slices"]:
        if row.get("below_support"):
            row.pop("missing_by_reason")
            if row["kind"] == "quantile":
                row.pop("excluded_by_reason")
    return old


def test_a_run_stored_before_the_document_was_typed_still_loads(run: Any, cli: Any) -> None:
    probe, printed = run
    old = _as_stored_before_typing(printed)
    with sqlite3.connect(probe.store) as conn:
        conn.execute("UPDATE runs SET summary=? WHERE run_id=?",
                     (json.dumps(old), printed["run_id"]))

    code, out, err = cli("inspect", "latest", "--json", cwd=probe.path)
    shown_code, shown, _ = cli("inspect", "latest", cwd=probe.path)
    gate_code, _, _ = cli("gate", "latest", cwd=probe.path)

    assert code == 0, err
    loaded = json.loads(out)
    assert loaded["decisions"] == old["decisions"], "old decision rows are kept as they were"
    for key in ("metrics", "slices"):
        for old_row, row in zip(old[key], loaded[key], strict=True):
            assert old_row.items() <= row.items(), "every stored value is read back unchanged"
    assert loaded["failing_cases"] == printed["failing_cases"], "recomputed from the store"
    assert shown_code == 0 and "Gate: BLOCK (exit 1)" in shown
    assert gate_code == 1
