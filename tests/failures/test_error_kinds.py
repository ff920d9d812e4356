"""Every errored execution has one kind of a closed set (docs/failures.md#error-kinds).

The kind is stored with the error, named in the run document and the reports, and a run
stored before the kinds were one set reads its old names as the kinds they were.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from oloproof.document import CaseError, ErrorKind, RunDocument


def test_the_kinds_are_the_documented_set() -> None:
    assert {k.value for k in ErrorKind} == {
        "system_error", "timeout", "worker_lost", "no_trace", "snapshot_failed",
        "judge_error", "judge_unparseable", "system_exit", "process_exit", "unstorable_output",
        "internal_error", "limit"}


@pytest.mark.parametrize(("stored", "kind"), [
    ("exception", "system_error"), ("invalid_output", "system_error"),
    ("invalid_artifact", "system_error"), ("reset_failed", "system_error"),
    ("engine_error", "internal_error"), ("timeout", "timeout"),
    ("something_new", "internal_error"),
])
def test_a_stored_name_reads_as_its_kind(stored: str, kind: str) -> None:
    error = CaseError.model_validate({"case": "c1", "kind": stored, "message": "m"})
    assert error.kind is ErrorKind(kind)
    assert error.to_json()["kind"] == kind


def test_a_run_stores_and_reports_system_error_for_a_raising_system(probe, cli) -> None:
    cases = probe.plain_cases(3)
    cases[1]["input"]["behave"] = "raise"
    probe.write_cases(cases)

    code, out, err = cli("run", "--json", cwd=probe.path)

    assert code == 3, err
    document = RunDocument.model_validate(json.loads(out))
    assert [(e.case, e.kind) for e in document.errors] == [("c002", ErrorKind.SYSTEM_ERROR)]
    with sqlite3.connect(probe.store) as conn:
        assert conn.execute("SELECT kind FROM run_errors").fetchall() == [("system_error",)]
