"""The runs registry: a run begins and finishes, and the runs are listed, with how far each got.

A run is registered `running` before its first case, with the process and host that run it;
a `running` run whose process is gone from this host shows as `incomplete` (it can never allow
a release). A run's cases, errors and record are read back by `run_reads.RunReads`; a run is
found by a reference (`latest~N`, `tag:NAME`, `version:V`, …) by `references.RunReferences`.
"""

from __future__ import annotations

import json
import os
import socket
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from oloproof.errors import StoreError
from oloproof.store.reruns import WHOLE_SUITE
from oloproof.store.run_reads import RUN_COLUMNS, live_status, read_json_column
from oloproof.store.sql import damaged_row_error, dumps, writing


class RunsRegistry:
    """The runs of a `Store` (which provides `conn`, `path`, `flush` and `tags`)."""

    conn: sqlite3.Connection
    path: Path
    tags: Callable[[], dict[str, list[str]]]  # (`RunReferences.tags`)

    def flush(self, wait: bool = False) -> None:
        """Commit pending writes: `Writer.flush`, which comes first in `Store`'s bases."""
        raise NotImplementedError

    def begin_run(
        self, run_id: str, project: str, system_name: str, system_version: str,
        suite: dict[str, Any], policy: dict[str, Any], *, no_cache: bool = False,
        kind: str = WHOLE_SUITE, variant: str | None = None,
    ) -> None:
        """Register a run as `running`, with the suite and policy it runs under; whether it is
        made with --no-cache, its kind (`run`, of the whole suite: the only kind counted) and
        its variant (docs/limits.md#re-runs-and-re-drawn-samples)."""
        self._write(
            "INSERT INTO runs (run_id, project, started_at, status, pid, host, system_name, "
            "system_version, suite, policy, no_cache, kind, variant) "
            "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (run_id, project, time.time(), "running", os.getpid(), socket.gethostname(),
             system_name, system_version, dumps(suite), dumps(policy), int(no_cache), kind,
             variant),
        )

    def finish_run(
        self, run_id: str, status: str, n_cases: int, summary: dict[str, Any] | None,
        *, suite: dict[str, Any] | None = None,
    ) -> None:
        """Commit what the run wrote, then mark it finished with its status and summary;
        `suite`, given, replaces its suite description with what the run learnt of it (a
        rescored run: the cases it left out)."""
        self.flush(wait=True)
        if suite is not None:
            self._write("UPDATE runs SET suite=? WHERE run_id=?", (dumps(suite), run_id))
        self._write(
            "UPDATE runs SET status=?, finished_at=?, n_cases=?, summary=? WHERE run_id=?",
            (status, time.time(), n_cases, None if summary is None else dumps(summary), run_id),
        )

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        with writing(self.path):
            self.conn.execute(sql, params)

    def list_runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The stored runs, newest first, each with its live status and summary."""
        sql = (
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, summary, coalesce(CASE WHEN json_valid(suite) THEN "
            "json_extract(suite, '$.trials') END, 1), CASE WHEN json_valid(suite) THEN "
            "json_extract(suite, '$.subset.cases', '$.subset.of', '$.rescored_from') END, "
            "variant FROM runs ORDER BY started_at DESC, run_id DESC"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self.conn.execute(sql).fetchall()
        tags = self.tags()
        keys = (*RUN_COLUMNS, "summary", "trials")
        out = []
        for *row, marks, variant in rows:
            record = dict(zip(keys, row, strict=True))
            record.update(_kind(marks))
            if variant is not None:  # (a run of one combination of system.variants)
                record["variant"] = variant
            record["summary"] = read_json_column(self.path, record["summary"], "runs",
                                                 record["run_id"], "summary")
            record["status"] = live_status(record)
            record["tags"] = tags.get(record["run_id"], [])
            out.append(record)
        return out

    def run_rows(self) -> list[dict[str, Any]]:
        """Every run, newest first, as the runs page lists it: the `list_runs` columns, the
        gate, how many cases failed (a criterion failed or missed, or the case errored) and
        how many errored, the trials and the planned cases. SQLite takes these few fields out
        of the stored documents, so a store of many runs lists quickly; a run without a
        document yet (running, or it did not complete) is counted from its stored cases."""
        # One json_extract per document, for both paths: SQLite parses the text once a call.
        rows = self.conn.execute(
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, CASE WHEN json_valid(suite) THEN "
            "json_extract(suite, '$.trials', '$.cases', '$.subset.cases', '$.subset.of', "
            "'$.rescored_from') END, "
            "summary IS NOT NULL AND NOT json_valid(summary), CASE WHEN json_valid(summary) "
            "THEN json_extract(summary, '$.gate', '$.failing_cases.total', '$.errors') END "
            "FROM runs ORDER BY started_at DESC, run_id DESC").fetchall()
        tags = self.tags()
        out = []
        for row in rows:
            record = dict(zip(RUN_COLUMNS, row[:len(RUN_COLUMNS)], strict=True))
            if row[-2]:
                raise damaged_row_error(self.path, f"the runs row {record['run_id']} (summary)",
                                        ValueError("not JSON"))
            trials, planned, *marks = json.loads(row[len(RUN_COLUMNS)]
                                                 or "[1, null, null, null, null]")
            record.update(_kind(marks))
            record["status"] = live_status(record)
            record["trials"] = int(trials or 1)
            record["planned_cases"] = planned
            record["tags"] = tags.get(record["run_id"], [])
            if row[-1] is not None:  # the run's document says
                gate, failing, errors = json.loads(row[-1])
                errored = len({e.get("case") for e in errors or ()})
            else:  # no document yet: count what is stored
                gate, (failing, errored) = None, self._failing_and_errored(record["run_id"])
            record["gate"] = gate
            record["failing"], record["errored"] = int(failing or 0), errored
            out.append(record)
        return out

    def _failing_and_errored(self, run_id: str) -> tuple[int, int]:
        """Cases of a run so far that failed, as `Analysis` counts them (a criterion failed or
        missing, or the case errored), and that errored."""
        failing = self.conn.execute(
            "SELECT count(DISTINCT case_id) FROM run_cases WHERE run_id=? AND "
            "(instr(json_extract(outcome, '$.c'), 'F') OR instr(json_extract(outcome, '$.c'), "
            "'M') OR json_extract(outcome, '$.e') IS NOT NULL)", (run_id,)).fetchone()[0]
        errored = self.conn.execute(
            "SELECT count(DISTINCT case_id) FROM run_errors WHERE run_id=?",
            (run_id,)).fetchone()[0]
        return int(failing), int(errored)

    def run_progress(self, run_id: str) -> dict[str, Any]:
        """How far a run has got, from what it stored: its live status, cases done (every
        trial of the case stored) of the cases planned, executions done of planned (each
        trial), errored executions by kind, and when it started and finished. `retried` is
        the document's (known once the run is decided; None before)."""
        record = self.conn.execute(
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, json_extract(suite, '$.trials'), "
            "json_extract(suite, '$.cases'), json_extract(summary, '$.execution.retried') "
            "FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if record is None:
            raise StoreError(f"run {run_id} is not in the store")
        run = dict(zip(RUN_COLUMNS, record[:len(RUN_COLUMNS)], strict=True))
        trials, planned, retried = record[len(RUN_COLUMNS):]
        trials = int(trials or 1)
        executions, cases = self.conn.execute(
            "SELECT count(*), count(DISTINCT case_id) FROM run_cases WHERE run_id=?",
            (run_id,)).fetchone()
        if trials > 1:
            cases = self.conn.execute(
                "SELECT count(*) FROM (SELECT 1 FROM run_cases WHERE run_id=? GROUP BY case_id "
                "HAVING count(*) >= ?)", (run_id, trials)).fetchone()[0]
        kinds = dict(self.conn.execute(
            "SELECT kind, count(*) FROM run_errors WHERE run_id=? GROUP BY kind ORDER BY "
            "count(*) DESC, kind", (run_id,)).fetchall())
        total = int(planned) if planned is not None else run["n_cases"]
        return {
            "run_id": run_id,
            "status": live_status(run),
            "done": int(cases),
            "total": total,
            "trials": trials,
            "executions": {"done": int(executions),
                           "total": None if total is None else total * trials},
            "errored": sum(kinds.values()),
            "errored_by_kind": kinds,
            "retried": retried,
            "started": run["started_at"],
            "finished": run["finished_at"],
        }


def _kind(marks: Any) -> dict[str, Any]:
    """A listed run's kind, from its suite description's `[subset.cases, subset.of,
    rescored_from]` (as JSON text or a list): `subset` ({cases, of}) for a run of part of the
    suite, and `rescored_from`; both None for a run of the whole suite."""
    if isinstance(marks, str):
        marks = json.loads(marks)
    cases, of, rescored = (list(marks or ()) + [None, None, None])[:3]
    return {"subset": {"cases": int(cases), "of": int(of)} if cases is not None
            and of is not None else None, "rescored_from": rescored}
