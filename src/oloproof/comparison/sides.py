"""One side of a comparison: a stored run's cases with their per-case values
(docs/reliability.md#what-passk-means).

A run is read once, from its `run_cases` rows (verdict codes only, taken out by SQLite), into
per-case counts of passing, failing and missing trials for each criterion — one trial per case
without trials. Every metric a comparison pairs is then a per-case value computed from those
counts (`oloproof.stats.pass_k.case_values`): the criterion itself (0/1, or the share of passing
trials), or a declared `pass_hat_k` / `pass_at_k`. This is the seam between a run and the
pairing: whatever the trials, a side is "for each case and metric, its lowest and highest
possible value, whether it counts and whether it is observed".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from oloproof.stats.pass_k import CaseValues, case_values
from oloproof.store.store import Store

IntArray = npt.NDArray[np.int64]

_P, _F, _M = ord("P"), ord("F"), ord("M")


@dataclass(frozen=True)
class MetricSpec:
    """A metric a comparison can pair: a criterion (`metric_type` None) or a declared
    pass^k / pass@k (`metric_type`, its criterion and `k`)."""

    id: str
    criterion: str
    metric_type: str | None = None
    k: int = 1

    @property
    def definition(self) -> tuple[str, str | None, int]:
        """What makes two runs' metrics of one id the same metric."""
        return (self.criterion, self.metric_type, self.k)


@dataclass
class RunSide:
    """A stored run, read for a comparison: its cases (ids, digests, execution keys of the
    first trial, in stored order) and per case and criterion the counts of passed, failed and
    missing trials (`counts`: cases × criteria × 3)."""

    run_id: str
    record: dict[str, Any]
    ids: list[str]
    digests: list[str]
    exec_keys: list[str | None]
    criteria: list[str]
    trials: int
    counts: IntArray
    metrics: list[MetricSpec]
    codes: list[str] = field(default_factory=list)  # trial 1's verdict codes, per case
    # Per case, its cluster (a declared `cluster`, a copy's source), None outside any; empty
    # when the suite has none.
    clusters: list[str | None] = field(default_factory=list)
    _values: dict[str, CaseValues] = field(default_factory=dict)
    _position: dict[str, int] | None = None

    @property
    def project(self) -> str:
        return str(self.record["project"])

    @property
    def suite(self) -> dict[str, Any]:
        return dict(self.record["suite"] or {})

    def position(self) -> dict[str, int]:
        """Case id → its row (built once: pairing and the changes both look cases up)."""
        if self._position is None or len(self._position) != len(self.ids):
            self._position = {case_id: i for i, case_id in enumerate(self.ids)}
        return self._position

    def cluster_key(self, row: int) -> str:
        """The cluster a case belongs to: its `cluster` (a copy's is its source's), else the
        case's own id — as the run's analysis groups them (a case whose id names a cluster
        joins it, as a source case joins its copies)."""
        cluster = self.clusters[row] if self.clusters else None
        return cluster if cluster is not None else self.ids[row]

    def evaluator_keys(self) -> dict[str, str]:
        """Criterion → the digest of the evaluator configuration that judged it (empty for a
        run stored before the suite kept them)."""
        keys = self.suite.get("evaluator_keys") or []
        return dict(zip(self.criteria, keys, strict=False)) if len(keys) == len(
            self.criteria) else {}

    def metric(self, metric_id: str) -> MetricSpec | None:
        return next((m for m in self.metrics if m.id == metric_id), None)

    def values(self, metric: MetricSpec) -> CaseValues:
        """The per-case values of a metric over every case of this run
        (docs/reliability.md#what-passk-means)."""
        found = self._values.get(metric.id)
        if found is None:
            i = self.criteria.index(metric.criterion)
            counts = self.counts[:, i, :] if len(self.ids) else np.zeros((0, 3), np.int64)
            found = case_values(counts[:, 0], counts[:, 1], counts[:, 2], metric.metric_type,
                                metric.k)
            self._values[metric.id] = found
        return found


def metric_specs(suite: dict[str, Any]) -> list[MetricSpec]:
    """The metrics of a stored suite that per-case values define: its criteria, then its
    pass^k / pass@k metrics."""
    criteria = list(suite.get("criteria") or [])
    specs = [MetricSpec(c, c) for c in criteria]
    for m in suite.get("trial_metrics") or ():
        specs.append(MetricSpec(str(m["id"]), str(m["criterion"]), str(m["type"]), int(m["k"])))
    return specs


def read_side(store: Store, run_id: str) -> RunSide:
    """Read a stored run's cases and verdicts into a `RunSide`.

    With trials a case has one row per trial; its counts add them up, and trials that never
    ran (a stopped or incomplete run) count as missing, as the run's own analysis counts them.
    Excluded trials do not count (a case whose every trial is excluded has no value).
    """
    record = store.run_record(run_id)
    suite = record["suite"] or {}
    criteria = list(suite.get("criteria") or [])
    trials = int(suite.get("trials", 1))
    # Runs stored before the key existed may have clusters: read them.
    clustered = bool(suite.get("case_clusters", True) or suite.get("transforms"))
    stored = list(store.iter_run_verdicts(run_id, trials=trials > 1, clusters=clustered))
    width = 6 if clustered else 5
    columns: list[tuple[Any, ...]] = list(zip(*stored, strict=True)) if stored else [()] * width
    codes: list[str] = list(columns[3])
    ids: list[str] = list(columns[0])
    clusters: list[str | None] = []
    if len(set(ids)) == len(ids):  # one row per case: the rows are the cases
        digests: list[str] = list(columns[1])
        exec_keys: list[str | None] = list(columns[2])
        first_codes = codes
        rows = list(range(len(ids)))
        if clustered:
            clusters = list(columns[5])
    else:
        ids, digests, exec_keys, first_codes, rows = [], [], [], [], []
        where: dict[str, int] = {}
        for case_id, digest, exec_key, case_codes, trial, *cluster in stored:
            at = where.get(case_id)
            if at is None:
                at = where[case_id] = len(ids)
                ids.append(case_id)
                digests.append(digest)
                exec_keys.append(exec_key)
                first_codes.append(case_codes)
                if clustered:
                    clusters.append(cluster[0])
            elif int(trial) == 1:  # trial 1 is what the case panel shows
                exec_keys[at] = exec_key
                first_codes[at] = case_codes
            rows.append(at)
    n, k = len(ids), len(criteria)
    counts = np.zeros((n, k, 3), dtype=np.int64)
    if codes and k:
        matrix = np.frombuffer("".join(codes).encode("ascii"), dtype=np.uint8).reshape(
            len(codes), k)
        if len(rows) == n:  # one row per case (no trials, or one trial each)
            counts[:, :, 0] = matrix == _P
            counts[:, :, 1] = matrix == _F
            counts[:, :, 2] = matrix == _M
        else:
            at_rows = np.asarray(rows, dtype=np.int64)
            for slot, code in enumerate((_P, _F, _M)):
                np.add.at(counts[:, :, slot], at_rows, (matrix == code).astype(np.int64))
        if trials > 1:
            seen = np.bincount(np.asarray(rows, dtype=np.int64), minlength=n)
            counts[:, :, 2] += np.maximum(trials - seen, 0)[:, None]
    return RunSide(run_id=run_id, record=record, ids=ids, digests=digests, exec_keys=exec_keys,
                   criteria=criteria, trials=trials, counts=counts,
                   metrics=metric_specs(suite), codes=first_codes, clusters=clusters)
