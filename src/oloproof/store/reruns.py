"""The record of re-runs and re-drawn samples (docs/limits.md#re-runs-and-re-drawn-samples):
complete runs counted per suite, system version and variant, and every labels sample drawn.

A run's **suite digest** is the digest of its evaluators and its cases: the evaluators' keys
(each the digest of one evaluator's configuration, a judge's definition included), sorted —
their order in the file makes no other suite —, and every case id the run ran (metamorphic
copies included) with its case digest (input, expected, initial state, metadata). A run's trials,
policy, executor and system version are not part of it: the version is counted apart, and the
rest re-measure the same cases by the same criteria.

The runs counted beside a run are the **complete** runs of its project, system name, version
and variant, of kind `run` (a run of the whole suite) and with its suite digest, oldest first.
A run that stopped, failed or never finished is not counted; a run of another kind (a subset of
the cases, `subset`; a rescoring of a stored run's executions, `rescored`: the kind its suite
description names, `project/describe.py`; an import, when imports are stored) is not counted and
is not given a place.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path

from oloproof.digest import digest
from oloproof.store.sql import writing

#: The kind of a run of the whole suite: the only kind counted.
WHOLE_SUITE = "run"


def suite_digest(conn: sqlite3.Connection, run_id: str, evaluator_keys: list[str]) -> str:
    """The suite digest of a stored run (see the module's text), from its committed cases."""
    cases = hashlib.sha256()
    # In the order of the (run_id, case_id) index; a case's trials, one row each, are one case.
    # (Not DISTINCT: SQLite would sort every row again. 200,000 cases take about 0.3 s.)
    rows = conn.execute("SELECT case_id, case_digest FROM run_cases WHERE run_id=? "
                        "ORDER BY case_id, case_digest", (run_id,))
    last = None
    for row in rows:
        if row != last:
            # (The id's length first: no id, whatever it holds, reads as another id and digest.)
            cases.update(f"{len(row[0])}:{row[0]}{row[1]}\n".encode("utf-8", "surrogatepass"))
            last = row
    return digest({"evaluators": sorted(evaluator_keys), "cases": "sha256:" + cases.hexdigest()})


def backfill_suite_digests(conn: sqlite3.Connection) -> None:
    """The kind and suite digest of every run stored before runs had them (the migration to
    schema 6), so the runs made before an upgrade are counted with those after it: the kind
    its suite description names (a subset, a rescored run), else `run`."""
    conn.execute("UPDATE runs SET kind = json_extract(suite, '$.kind') WHERE json_valid(suite) "
                 "AND json_type(suite, '$.kind') = 'text'")
    runs = conn.execute(
        "SELECT run_id, CASE WHEN json_valid(suite) THEN json_extract(suite, "
        "'$.evaluator_keys') END FROM runs WHERE status = 'complete' AND suite_digest IS NULL"
    ).fetchall()
    for run_id, keys in runs:
        try:
            evaluator_keys = [str(k) for k in json.loads(keys)] if keys else []
        except (TypeError, ValueError):
            continue  # a damaged suite record: the run is not counted, as before
        conn.execute("UPDATE runs SET suite_digest=? WHERE run_id=?",
                     (suite_digest(conn, run_id, evaluator_keys), run_id))


@dataclass(frozen=True)
class Counted:
    """The complete runs of one suite, version and variant (oldest first), and where one run
    stands among them: `runs[at]` is that run."""

    runs: list[str]
    no_cache: list[bool]  # whether each was made with --no-cache
    at: int
    suite: str
    variant: str | None


@dataclass(frozen=True)
class LabelSample:
    """One labels sample drawn (`oloproof labels sample`): the criterion, the seed and size of
    the draw, the digest of the case ids it was drawn from, the run whose shown text was
    written, the file and when (Unix time)."""

    criterion: str
    seed: str
    n: int
    suite: str
    run_id: str
    file: str
    drawn_at: float


def distinct_samples(samples: list[LabelSample]) -> list[LabelSample]:
    """The first of each seed and size drawn, oldest first (a sample drawn again with its seed
    and size, to add to its file, is the same sample)."""
    seen: dict[tuple[str, int], LabelSample] = {}
    for sample in samples:
        seen.setdefault((sample.seed, sample.n), sample)
    return list(seen.values())


class Reruns:
    """The record of a `Store` (which provides `conn` and `path`)."""

    conn: sqlite3.Connection
    path: Path

    def set_suite_digest(self, run_id: str, evaluator_keys: list[str]) -> str:
        """Give a run its suite digest, from its cases as stored: they must be committed."""
        value = suite_digest(self.conn, run_id, evaluator_keys)
        with writing(self.path):
            self.conn.execute("UPDATE runs SET suite_digest=? WHERE run_id=?", (value, run_id))
        return value

    def counted_runs(self, run_id: str, *, as_complete: bool = False) -> Counted | None:
        """The complete runs counted beside `run_id` (see the module's text), with its place
        among them; `as_complete`: the run is being decided complete (its row still says
        `running`). None for a run not counted: not complete, of another kind, or without a
        suite digest."""
        row = self.conn.execute(
            "SELECT project, system_name, system_version, variant, kind, suite_digest, status "
            "FROM runs WHERE run_id=?", (run_id,)).fetchone()
        if row is None:
            return None
        project, name, version, variant, kind, suite, status = row
        if suite is None or kind != WHOLE_SUITE or not (as_complete or status == "complete"):
            return None
        found = self.conn.execute(
            "SELECT run_id, no_cache FROM runs WHERE project=? AND system_name IS ? AND "
            "system_version IS ? AND variant IS ? AND kind=? AND suite_digest=? AND "
            "(status='complete' OR run_id=?) ORDER BY started_at, run_id",
            (project, name, version, variant, WHOLE_SUITE, suite, run_id)).fetchall()
        ids = [str(r[0]) for r in found]
        return Counted(ids, [bool(r[1]) for r in found], ids.index(run_id), str(suite),
                       variant)

    def record_label_sample(self, project: str, sample: LabelSample) -> None:
        """Keep a labels sample drawn for `project`."""
        with writing(self.path):
            self.conn.execute(
                "INSERT INTO label_samples (project, criterion, seed, n, suite, run_id, file, "
                "drawn_at) VALUES (?,?,?,?,?,?,?,?)",
                (project, sample.criterion, sample.seed, sample.n, sample.suite,
                 sample.run_id, sample.file, sample.drawn_at or time.time()))

    def label_samples(self, project: str, criterion: str) -> list[LabelSample]:
        """Every labels sample drawn for `criterion` of `project`, oldest first."""
        return [LabelSample(str(c), str(s), int(n), str(u), str(r), str(f), float(t))
                for c, s, n, u, r, f, t in self.conn.execute(
                    "SELECT criterion, seed, n, suite, run_id, file, drawn_at FROM "
                    "label_samples WHERE project=? AND criterion=? ORDER BY drawn_at, rowid",
                    (project, criterion))]


__all__ = ["WHOLE_SUITE", "Counted", "LabelSample", "Reruns", "backfill_suite_digests",
           "distinct_samples", "suite_digest"]
