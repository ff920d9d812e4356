"""The runs registry: a run begins, finishes, is listed, and is found by a reference.

A run is registered `running` before its first case, with the process and host that run it;
a `running` run whose process is gone from this host shows as `incomplete` (it can never allow
a release). The cases, errors and summary of a run are read back from here.

A run is found by a reference: `latest`, `latest~N`, a unique prefix or suffix of its id,
`tag:NAME` (the run `oloproof tag RUN NAME` named; a tag is on one run at a time) or
`version:V` (the newest complete run whose system version is V;
docs/compare.md#pinned-baselines-versions-and-tags).
"""

from __future__ import annotations

import json
import os
import re
import socket
import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from oloproof.errors import ErrorKind, StoreError, UsageError
from oloproof.store.sql import JSON_ERRORS, damaged_row_error, dumps, writing

_LISTED = ("run_id", "project", "started_at", "finished_at", "status", "pid", "host",
           "system_name", "system_version", "n_cases")

#: What a tag may be: it is written after `tag:` in a reference, and never reads as one.
TAG_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}")


class RunsRegistry:
    """The runs of a `Store` (which provides `conn`, `path` and `flush`)."""

    conn: sqlite3.Connection
    path: Path

    def flush(self, wait: bool = False) -> None:
        """Commit pending writes: `Writer.flush`, which comes first in `Store`'s bases."""
        raise NotImplementedError

    def begin_run(
        self, run_id: str, project: str, system_name: str, system_version: str,
        suite: dict[str, Any], policy: dict[str, Any],
    ) -> None:
        """Register a run as `running`, with the suite and policy it runs under."""
        self._write(
            "INSERT INTO runs (run_id, project, started_at, status, pid, host, system_name, "
            "system_version, suite, policy) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (run_id, project, time.time(), "running", os.getpid(), socket.gethostname(),
             system_name, system_version, dumps(suite), dumps(policy)),
        )

    def finish_run(
        self, run_id: str, status: str, n_cases: int, summary: dict[str, Any] | None
    ) -> None:
        """Commit what the run wrote, then mark it finished with its status and summary."""
        self.flush(wait=True)
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
            "json_extract(suite, '$.trials') END, 1) "
            "FROM runs ORDER BY started_at DESC, run_id DESC"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self.conn.execute(sql).fetchall()
        tags = self.tags()
        keys = (*_LISTED, "summary", "trials")
        out = []
        for row in rows:
            record = dict(zip(keys, row, strict=True))
            record["summary"] = self._json(record["summary"], "runs", record["run_id"],
                                           "summary")
            record["status"] = self._live_status(record)
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
            "json_extract(suite, '$.trials', '$.cases') END, "
            "summary IS NOT NULL AND NOT json_valid(summary), CASE WHEN json_valid(summary) "
            "THEN json_extract(summary, '$.gate', '$.failing_cases.total', '$.errors') END "
            "FROM runs ORDER BY started_at DESC, run_id DESC").fetchall()
        tags = self.tags()
        out = []
        for row in rows:
            record = dict(zip(_LISTED, row[:len(_LISTED)], strict=True))
            if row[-2]:
                raise damaged_row_error(self.path, f"the runs row {record['run_id']} (summary)",
                                        ValueError("not JSON"))
            trials, planned = json.loads(row[len(_LISTED)] or "[1, null]")
            record["status"] = self._live_status(record)
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
        run = dict(zip(_LISTED, record[:len(_LISTED)], strict=True))
        trials, planned, retried = record[len(_LISTED):]
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
            "status": self._live_status(run),
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

    def tags(self) -> dict[str, list[str]]:
        """Run id → the names it is tagged with, in name order."""
        out: dict[str, list[str]] = {}
        for name, run_id in self.conn.execute("SELECT name, run_id FROM tags ORDER BY name"):
            out.setdefault(run_id, []).append(name)
        return out

    def tag_run(self, run_id: str, name: str) -> str | None:
        """Tag a run `name` (a tag is on one run at a time: one on another run moves here).
        Returns the run the tag was on before, if another; a UsageError for a bad name."""
        if not TAG_NAME.fullmatch(name) or name == "latest" or name.startswith("run_"):
            raise UsageError(
                f"{name!r} cannot be a tag: a tag is 1 to 64 letters, digits, '.', '_', '+' "
                "or '-', starting with a letter or digit, and neither `latest` nor starting "
                "with `run_` (it is written `tag:NAME` wherever a run is named)")
        self.run_record(run_id)  # a StoreError if it is not stored
        before = self.conn.execute("SELECT run_id FROM tags WHERE name=?", (name,)).fetchone()
        self._write("INSERT INTO tags (name, run_id, tagged_at) VALUES (?,?,?) ON CONFLICT(name) "
                    "DO UPDATE SET run_id=excluded.run_id, tagged_at=excluded.tagged_at",
                    (name, run_id, time.time()))
        return before[0] if before is not None and before[0] != run_id else None

    def _json(self, text: str | None, table: str, key: object, column: str) -> Any:
        """A stored JSON column (None when empty); text that is not JSON is a damaged store."""
        if not text:
            return None
        try:
            return json.loads(text)
        except JSON_ERRORS as exc:
            raise damaged_row_error(self.path, f"the {table} row {key} ({column})",
                                    exc) from None

    @staticmethod
    def _live_status(record: dict[str, Any]) -> str:
        """A `running` run whose process is gone on this host did not complete."""
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

    def _run_ids(self) -> list[str]:
        return [r[0] for r in self.conn.execute(
            "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC")]

    def resolve_run(self, ref: str, project: str | None = None,
                    candidate: str | None = None) -> str:
        """`latest`, `latest~N`, a unique prefix or suffix of a run id, `tag:NAME`, or
        `version:V` (the newest complete run of `project` whose system version is V); when the
        run named is a baseline, `candidate` is the run it is compared with (never what
        `version:V` names)."""
        ids = self._run_ids()
        if not ids:
            raise StoreError("no runs are stored yet; run `oloproof run` first", file=self.path)
        named = self._named(ref, project, candidate)
        return named if named is not None else _resolve_in(ids, ref, tags=self._tag_names())

    def _tag_names(self) -> list[str]:
        return [row[0] for row in self.conn.execute("SELECT name FROM tags ORDER BY name")]

    def _named(self, ref: str, project: str | None, candidate: str | None,
               what: str = "") -> str | None:
        """The run a `tag:NAME` or `version:V` reference names (None for other references);
        a UsageError saying what is stored when none is."""
        if ref.startswith("tag:"):
            name = ref[4:]
            row = self.conn.execute("SELECT run_id FROM tags WHERE name=?", (name,)).fetchone()
            if row is None:
                known = self._tag_names()
                raise UsageError(
                    f"{what}{ref!r}: no run is tagged {name!r}; "
                    + (f"the tags are {', '.join(known)}" if known else "no run is tagged yet")
                    + " (`oloproof tag RUN NAME` tags a run)")
            if row[0] == candidate:
                raise UsageError(
                    f"{what}{ref!r} names the candidate run {candidate} itself (the tag was "
                    "moved to it); name the baseline another way (`oloproof runs` lists the "
                    "runs and their tags)")
            return str(row[0])
        if ref.startswith("version:"):
            version = ref[8:]
            sql = ("SELECT run_id FROM runs WHERE status = 'complete' AND system_version = ?"
                   + (" AND project = ?" if project is not None else "")
                   + (" AND run_id != ?" if candidate is not None else "")
                   + " ORDER BY started_at DESC, run_id DESC LIMIT 1")
            params = [version, *([project] if project is not None else []),
                      *([candidate] if candidate is not None else [])]
            found = self.conn.execute(sql, params).fetchone()
            if found is None:
                versions = [row[0] for row in self.conn.execute(
                    "SELECT DISTINCT system_version FROM runs WHERE status = 'complete'"
                    + (" AND project = ?" if project is not None else "")
                    + " ORDER BY system_version", [project] if project is not None else [])]
                raise UsageError(
                    f"{what}{ref!r}: no complete run"
                    + (f" of project {project!r}" if project is not None else "")
                    + f" has system version {version!r}"
                    + (" besides the candidate" if candidate is not None else "")
                    + "; " + (f"complete runs have versions {', '.join(versions)}" if versions
                              else "no run is complete yet")
                    + " (`oloproof runs` lists them)")
            return str(found[0])
        return None

    def resolve_baseline(self, ref: str, candidate: str | None,
                         project: str | None = None) -> str:
        """A baseline reference resolved beside its candidate run
        (docs/compare.md#which-run-is-the-baseline).

        It resolves as every run reference does, with the candidate counted among the runs:
        while `oloproof run` makes the candidate (`candidate` None: not registered yet), the
        run being made is `latest`, so `latest~1` is the newest run before it — the same run
        `latest~1` names once it is stored. A reference that names the candidate itself
        (`latest` in a policy `oloproof run` decides) means the newest run started before it.
        `version:V` is the newest complete run of `project` with that system version other
        than the candidate; `tag:NAME` the run tagged so (never the candidate itself).
        """
        named = self._named(ref, project, candidate, what="baseline ")
        if named is not None:
            return named
        stored = self._run_ids()
        ids = [_BEING_MADE, *stored] if candidate is None else stored
        if candidate is None and not stored:
            raise UsageError(f"baseline {ref!r}: no run is stored yet to compare this one with; "
                             "run the baseline first (without the non_inferiority rule or "
                             "--baseline), then the candidate")
        found = _resolve_in(ids, ref, what="baseline ")
        me = _BEING_MADE if candidate is None else candidate
        if found != me:
            return found
        at = ids.index(me)
        if at + 1 >= len(ids):
            raise UsageError(f"baseline {ref!r} names the candidate run itself, and no run "
                             "started before it; run the baseline first")
        return ids[at + 1]

    def run_record(self, run_id: str) -> dict[str, Any]:
        """One run whole: its row, with suite, policy and summary parsed, and its live status."""
        row = self.conn.execute(
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, suite, policy, summary FROM runs WHERE run_id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"run {run_id} is not in the store")
        keys = (*_LISTED, "suite", "policy", "summary")
        record = dict(zip(keys, row, strict=True))
        for key in ("suite", "policy", "summary"):
            record[key] = self._json(record[key], "runs", run_id, key)
        record["status"] = self._live_status(record)
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
        return row[0], row[1], self._json(row[2], "run_cases", f"of case {case_id!r} in run "
                                          f"{run_id}", "outcome")

    def run_case_trials(self, run_id: str, case_id: str
                        ) -> list[tuple[str, str | None, dict[str, Any]]]:
        """(case digest, execution key, outcome) of each trial of one case of a run, in trial
        order (one row for a run without trials; none for a case the run does not have)."""
        rows = self.conn.execute(
            "SELECT case_digest, exec_key, outcome FROM run_cases WHERE run_id=? AND case_id=? "
            "ORDER BY seq", (run_id, case_id),
        ).fetchall()
        found = [(row[0], row[1], self._json(row[2], "run_cases", f"of case {case_id!r} in "
                                             f"run {run_id}", "outcome")) for row in rows]
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


# Stands for the run `oloproof run` is about to make, while its baseline is resolved.
_BEING_MADE = "\x00the run being made"


def _resolve_in(ids: list[str], ref: str, what: str = "", tags: list[str] | None = None) -> str:
    """`ref` among `ids` (newest first): `latest`, `latest~N`, a unique prefix or suffix;
    `tags` (the names in use) make a bare tag name's error say to write `tag:NAME`."""
    if ref == "latest" or ref.startswith("latest~"):
        back = 0
        if ref != "latest":
            try:
                back = int(ref.split("~", 1)[1])
            except ValueError:
                raise UsageError(f"{what}{ref!r}: write latest~N with a number N") from None
        if back < 0:
            raise UsageError(f"{what}{ref!r}: latest~N counts back from the newest run, so N "
                             "is 0 or more (latest is the newest run, latest~1 the one before "
                             "it); `oloproof runs` lists them")
        if back >= len(ids):
            being_made = _BEING_MADE in ids
            stored = len(ids) - int(being_made)
            runs = f"{stored} run{'s are' if stored != 1 else ' is'} stored" + (
                " besides the run being made" if being_made else "")
            newest = "latest" if len(ids) == 1 else f"latest to latest~{len(ids) - 1}"
            raise UsageError(f"{what}{ref!r} names the run {back} before the newest, and only "
                             f"{runs}: use {newest}; `oloproof runs` lists them")
        return ids[back]
    if ref in ids:
        return ref
    matches = [i for i in ids if i.startswith(ref) or i.endswith(ref)
               or i.removeprefix("run_").startswith(ref)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        hint = f" (a tag is written tag:{ref})" if tags and ref in tags else ""
        raise UsageError(f"no run matches {what}{ref!r}{hint}; `oloproof runs` lists them")
    raise UsageError(
        f"{what}{ref!r} matches {len(matches)} runs ({', '.join(matches[:4])}...); "
        "give more of the id"
    )
