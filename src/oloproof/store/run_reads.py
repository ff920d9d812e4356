"""Reading a stored run back: its record, its cases (whole, as a case list outlines them, as a
comparison reads their verdicts), one case and each of its trials, its errors and the failed
attempts before them.

`RunReads` is a mixin of `Store` (which provides `conn` and `path`). A stored JSON column that
cannot be read is a `StoreError` saying the store is damaged, naming the table and row
(`read_json_column`), never an internal error. A `running` run whose process is gone from this
host reads as `incomplete` (`live_status`).
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oloproof.errors import ErrorKind, StoreError
from oloproof.store.sql import JSON_ERRORS, damaged_row_error

#: The columns of a `runs` row that every listing of runs reads, in this order.
RUN_COLUMNS = ("run_id", "project", "started_at", "finished_at", "status", "pid", "host",
               "system_name", "system_version", "n_cases")


def live_status(record: dict[str, Any]) -> str:
    """A run's status now: a `running` run whose process is gone on this host did not
    complete."""
    if record["status"] != "running":
        return str(record["status"])
    if record["host"] == socket.gethostname() and record["pid"]:
        try:
            os.kill(int(record["pid"]), 0)
        except ProcessLookupError:
            return "incomplete"
        except PermissionError:
            pass
    return "running"


def read_json_column(path: Path, text: str | None, table: str, key: object, column: str) -> Any:
    """A stored JSON column (None when empty); text that is not JSON is a damaged store."""
    if not text:
        return None
    try:
        return json.loads(text)
    except JSON_ERRORS as exc:
        raise damaged_row_error(path, f"the {table} row {key} ({column})", exc) from None


class RunReads:
    """The reads of one stored run (see the module docstring)."""

    conn: sqlite3.Connection
    path: Path

    def run_record(self, run_id: str) -> dict[str, Any]:
        """One run whole: its row, with suite, policy and summary parsed, and its live status."""
        row = self.conn.execute(
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, suite, policy, summary FROM runs WHERE run_id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"run {run_id} is not in the store")
        keys = (*RUN_COLUMNS, "suite", "policy", "summary")
        record = dict(zip(keys, row, strict=True))
        for key in ("suite", "policy", "summary"):
            record[key] = read_json_column(self.path, record[key], "runs", run_id, key)
        record["status"] = live_status(record)
        return record

    def iter_run_cases(self, run_id: str) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
        """(case id, case digest, execution key, outcome) for each case of a run, in order."""
        cursor = self.conn.execute(
            "SELECT case_id, case_digest, exec_key, outcome FROM run_cases WHERE run_id=? "
            "ORDER BY seq", (run_id,),
        )
        for case_id, case_digest, exec_key, outcome in cursor:
            try:
                parsed = json.loads(outcome)
            except JSON_ERRORS as exc:
                raise damaged_row_error(self.path, f"the run_cases row of case {case_id!r} "
                                        f"in run {run_id} (outcome)", exc) from None
            yield case_id, case_digest, exec_key, parsed

    def iter_run_outlines(self, run_id: str
                          ) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
        """Like `iter_run_cases`, with only what a case list shows of each outcome — verdict
        codes `c`, error kind `e`, slice groups `s`, source `src`, trial `tr` — taken out by
        SQLite rather than parsing every outcome whole."""
        cursor = self.conn.execute(
            "SELECT case_id, case_digest, exec_key, json_extract(outcome, '$.c'), "
            "json_extract(outcome, '$.e'), json_extract(outcome, '$.s'), "
            "json_extract(outcome, '$.src'), json_extract(outcome, '$.tr') "
            "FROM run_cases WHERE run_id=? ORDER BY seq", (run_id,))
        while rows := cursor.fetchmany(4096):
            # Every row's slice groups parsed in one call (one JSON array of them all).
            groups = json.loads("[" + ",".join(row[5] or "[]" for row in rows) + "]")
            for (case_id, case_digest, exec_key, codes, error, _, source, trial), found in zip(
                    rows, groups, strict=True):
                yield case_id, case_digest, exec_key, {
                    "c": codes, "e": error, "s": found, "src": source, "tr": trial or 1}

    def iter_run_verdicts(self, run_id: str, *, trials: bool = True, clusters: bool = False
                          ) -> Iterator[tuple[Any, ...]]:
        """(case id, case digest, execution key, verdict codes, trial) of each case (each trial
        of a case) of a run, in order: what a comparison of two runs reads, taken out of the
        stored outcomes by SQLite rather than parsing each one. `trials=False` (a run of one
        trial per case) reads every trial as 1 without looking (one JSON lookup a row);
        `clusters=True` adds a sixth field, the case's cluster (None outside any)."""
        trial = "coalesce(json_extract(outcome, '$.tr'), 1)" if trials else "1"
        cluster = ", json_extract(outcome, '$.cl')" if clusters else ""
        try:
            cursor = self.conn.execute(
                f"SELECT case_id, case_digest, exec_key, json_extract(outcome, '$.c'), {trial}"
                f"{cluster} FROM run_cases WHERE run_id=? ORDER BY seq", (run_id,),
            )
            yield from cursor
        except sqlite3.OperationalError as exc:
            if "malformed JSON" not in str(exc):
                raise
            raise damaged_row_error(self.path, f"a run_cases row of run {run_id} (outcome)",
                                    exc) from None

    def run_case(self, run_id: str, case_id: str) -> tuple[str, str | None, dict[str, Any]] | None:
        """(case digest, execution key, outcome) of one case of a run (its first trial), or
        None."""
        row = self.conn.execute(
            "SELECT case_digest, exec_key, outcome FROM run_cases WHERE run_id=? AND case_id=? "
            "ORDER BY seq LIMIT 1",
            (run_id, case_id),
        ).fetchone()
        if row is None:
            return None
        return row[0], row[1], read_json_column(
            self.path, row[2], "run_cases", f"of case {case_id!r} in run {run_id}", "outcome")

    def run_case_trials(self, run_id: str, case_id: str
                        ) -> list[tuple[str, str | None, dict[str, Any]]]:
        """(case digest, execution key, outcome) of each trial of one case of a run, in trial
        order (one row for a run without trials; none for a case the run does not have)."""
        rows = self.conn.execute(
            "SELECT case_digest, exec_key, outcome FROM run_cases WHERE run_id=? AND case_id=? "
            "ORDER BY seq", (run_id, case_id),
        ).fetchall()
        found = [(row[0], row[1], read_json_column(
            self.path, row[2], "run_cases", f"of case {case_id!r} in run {run_id}", "outcome"))
            for row in rows]
        found.sort(key=lambda row: int(row[2].get("tr", 1)))
        return found

    def run_errors(self, run_id: str) -> list[dict[str, Any]]:
        """What broke in a run's cases, in the order it was recorded; each `kind` an
        `ErrorKind` (names stored before the kinds were one set read as the kind they were)."""
        rows = self.conn.execute(
            "SELECT case_id, kind, message, traceback, trial, attempt FROM run_errors "
            "WHERE run_id=? AND retried IS NULL ORDER BY rowid", (run_id,),
        ).fetchall()
        return [{"case": r[0], "kind": ErrorKind.of(r[1]), "message": r[2], "traceback": r[3],
                 "trial": r[4] or 1, "attempt": r[5] or 1} for r in rows]

    def rerun_errored(self, run_id: str) -> tuple[str, int] | None:
        """The run before `run_id` of the same project and system version, and how many of
        `run_id`'s executions that ran (not cached) had errored in it -- what the next run
        re-runs (docs/failures.md#resuming); None when there is no such run, or none did."""
        row = self.conn.execute(
            "SELECT r.run_id FROM runs r, runs me WHERE me.run_id = ? AND r.run_id != me.run_id "
            "AND r.project = me.project AND r.system_name IS me.system_name "
            "AND r.system_version IS me.system_version AND r.started_at <= me.started_at "
            "ORDER BY r.started_at DESC, r.run_id DESC LIMIT 1", (run_id,)).fetchone()
        if row is None:
            return None
        before = row[0]
        count = self.conn.execute(
            "SELECT COUNT(*) FROM run_cases rc WHERE rc.run_id = ? "
            "AND json_extract(rc.outcome, '$.h') IS NULL AND EXISTS (SELECT 1 FROM run_errors e "
            "WHERE e.run_id = ? AND e.case_id = rc.case_id AND e.retried IS NULL "
            "AND coalesce(e.trial, 1) = coalesce(json_extract(rc.outcome, '$.tr'), 1))",
            (run_id, before)).fetchone()[0]
        return (before, int(count)) if count else None

    def attempt_errors(self, run_id: str, case_id: str) -> list[dict[str, Any]]:
        """Every failed attempt of one case of a run (`system.retries`), the case's own error
        included (`retried` False), in trial and attempt order."""
        rows = self.conn.execute(
            "SELECT kind, message, traceback, trial, attempt, retried FROM run_errors "
            "WHERE run_id=? AND case_id=? ORDER BY coalesce(trial, 1), coalesce(attempt, 1), "
            "rowid", (run_id, case_id),
        ).fetchall()
        return [{"kind": ErrorKind.of(r[0]), "message": r[1], "traceback": r[2],
                 "trial": r[3] or 1, "attempt": r[4] or 1, "retried": bool(r[5])}
                for r in rows]


__all__ = ["RUN_COLUMNS", "RunReads", "live_status", "read_json_column"]
