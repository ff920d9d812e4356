"""Pairing two runs case by case (docs/compare.md#oloproof-compare-baseline-candidate): counts, the
paired difference, McNemar.

Cases are paired by id. A case whose digest differs between the runs (its input or expected
changed) is *changed*: reported, never paired — its verdicts answer another question. A case in
the candidate only is unpaired. A case in the baseline only is *dropped*, and so, for the
paired difference, is a changed case's baseline side (the candidate no longer runs that case as
it was): each counts as a pair whose candidate side is missing (resolved the worst way for each
bound), so removing a failing case from a dataset, or editing it, can never improve the
comparison; a `non_inferiority` rule that means to allow removals says `dropped: ignore`, and
decides on the rows computed without them (`ignore_dropped`). For each metric both runs
define alike:

- a pair *counts* when neither side is excluded (`excluded` otherwise);
- it is *missing* when either side's value is not settled (a missing verdict, or missing trials
  that could move a share); otherwise both values are known and the pair is both passed (1, 1),
  both failed (0, 0), fixed (the candidate's value is higher), broken (lower) or, with trials,
  unchanged (the same share strictly between 0 and 1);
- the difference candidate − baseline has an interval over every counted pair, a missing side
  resolved the worst way for each bound (`stats.difference_bounds`):
  - when cases share a cluster (a source and its copies, a declared `cluster`) and some
    cluster has two counted pairs, over clusters: the difference is still the pairs' mean
    difference (every pair weighs the same), its interval the betting interval of that ratio
    over clusters, each cluster one draw of its pairs, in the order of the clusters' ids'
    digests (`stats.cluster_difference_interval`) — marked approximate, with the number of
    clusters, so a rule on it follows the clustered metrics' rules (docs/concepts.md#clusters);
  - else with 0/1 values on both sides (one trial; pass^k with k = trials) the melded interval
    compatible with exact McNemar, which the order of the pairs does not change;
  - else (fractions: trials) the betting interval over the pairs in the order of their case
    digests, so a comparison always gets the same interval whatever order cases finished in;
- McNemar's exact p-value is taken on the broken and fixed pairs (with fractional values this is
  the exact sign test on the pairs that moved), a description that never decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from oloproof.analysis.ordering import case_order, digest_order
from oloproof.comparison.sides import MetricSpec, RunSide
from oloproof.document import CriterionComparison
from oloproof.stats import (
    MeanInterval,
    binary_difference_interval,
    cluster_difference_interval,
    difference_bounds,
    mcnemar_exact,
    paired_difference_interval,
)

_T = TypeVar("_T", bound=np.generic)
IntArray = npt.NDArray[np.int64]
BoolArray = npt.NDArray[np.bool_]


@dataclass
class Pairs:
    """Which cases of two runs pair: rows in each side, by case digest (then id), the cases in
    the baseline only and the changed cases' baseline sides among them as dropped (candidate
    row −1), each with its cluster; and the cases that do not pair."""

    ids: list[str]
    baseline_rows: IntArray
    candidate_rows: IntArray
    clusters: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    baseline_only: list[str] = field(default_factory=list)
    candidate_only: list[str] = field(default_factory=list)

    @property
    def left_behind(self) -> list[str]:
        """The baseline's cases the candidate does not run as they were: in the baseline only,
        or changed (case-id order within each)."""
        return self.baseline_only + self.changed

    @property
    def dropped(self) -> BoolArray:
        """Which of the rows are dropped: cases in the baseline only, or changed."""
        mask: BoolArray = self.candidate_rows < 0
        return mask

    @property
    def paired(self) -> int:
        """How many cases pair (both runs, one digest)."""
        return int((self.candidate_rows >= 0).sum())


def pair_cases(baseline: RunSide, candidate: RunSide, *, within_candidate: bool = False
               ) -> Pairs:
    """Pair the cases of two runs by id (see the module's text); lists in case-id order.
    `within_candidate`: the candidate ran part of the suite, and the baseline's cases it did
    not choose are outside the comparison, not dropped."""
    base_at = baseline.position()
    cand_at = candidate.position()
    b_digests, c_digests = baseline.digests, candidate.digests
    shared = [(case_id, base_at[case_id], c_row) for case_id, c_row in cand_at.items()
              if case_id in base_at]
    changed = [case_id for case_id, b_row, c_row in shared
               if b_digests[b_row] != c_digests[c_row]]
    only = [] if within_candidate else [case_id for case_id in base_at
                                        if case_id not in cand_at]
    rows = sorted([(c_digests[c_row], case_id, b_row, c_row) for case_id, b_row, c_row in shared
                   if b_digests[b_row] == c_digests[c_row]]
                  + [(b_digests[base_at[case_id]], case_id, base_at[case_id], -1)
                     for case_id in (*only, *changed)])
    return Pairs(
        ids=[p[1] for p in rows],
        baseline_rows=np.fromiter((p[2] for p in rows), dtype=np.int64, count=len(rows)),
        candidate_rows=np.fromiter((p[3] for p in rows), dtype=np.int64, count=len(rows)),
        clusters=[baseline.cluster_key(p[2]) if p[3] < 0 else candidate.cluster_key(p[3])
                  for p in rows],
        changed=sorted(changed, key=case_order),
        baseline_only=sorted(only, key=case_order),
        candidate_only=sorted((c for c in cand_at if c not in base_at), key=case_order),
    )


@dataclass
class PairedMetric:
    """One metric compared: its row, and the paired cases that broke and were fixed."""

    row: CriterionComparison
    broken: list[str]
    fixed: list[str]


def compare_metric(baseline: RunSide, candidate: RunSide, pairs: Pairs, base_metric: MetricSpec,
                   cand_metric: MetricSpec, level: float, *, ignore_dropped: bool = False
                   ) -> PairedMetric:
    """The paired figures of one metric (see the module's text); `ignore_dropped` leaves the
    cases in the baseline only out of the interval (a rule with `dropped: ignore`)."""
    before = baseline.values(base_metric)
    after = candidate.values(cand_metric)
    present = pairs.candidate_rows >= 0
    b = pairs.baseline_rows
    # A dropped case's candidate side is missing: it counts (unless ignored), never settles,
    # and its value could be anything from 0 to 1.
    counted = before.counted[b] & _candidate(after.counted, pairs, not ignore_dropped)
    settled = counted & present & before.observed[b] & _candidate(after.observed, pairs, False)
    c_low = _candidate(after.lower, pairs, 0.0)
    c_high = _candidate(after.upper, pairs, 1.0)
    low, high = difference_bounds(before.lower[b][counted], before.upper[b][counted],
                                  c_low[counted], c_high[counted])
    binary = _binary(baseline, base_metric) and _binary(candidate, cand_metric)
    interval, clusters = _interval(low, high, [pairs.clusters[i] for i in
                                               np.flatnonzero(counted)], binary, level)
    b_value, c_value = before.lower[b], c_low  # equal to the upper where settled
    both_passed = settled & (b_value == 1.0) & (c_value == 1.0)
    both_failed = settled & (b_value == 0.0) & (c_value == 0.0)
    fixed = settled & (c_value > b_value)
    broken = settled & (c_value < b_value)
    unchanged = settled & (c_value == b_value) & ~both_passed & ~both_failed
    n_broken, n_fixed = int(broken.sum()), int(fixed.sum())
    dropped = int((counted & ~present).sum())
    row = CriterionComparison(
        criterion=cand_metric.id,
        paired=int((counted & present).sum()),
        both_passed=int(both_passed.sum()),
        fixed=n_fixed,
        broken=n_broken,
        both_failed=int(both_failed.sum()),
        missing=int((counted & present & ~settled).sum()),
        difference=interval.estimate,
        lower=interval.lower,
        upper=interval.upper,
        method=interval.method,
        mcnemar_p=mcnemar_exact(n_broken, n_fixed).p_value,
        excluded=int((present & ~counted).sum()),
        unchanged=int(unchanged.sum()) if not binary else None,
        metric_type=cand_metric.metric_type,  # type: ignore[arg-type]
        k=cand_metric.k if cand_metric.metric_type is not None else None,
        dropped=dropped or None,
        approximate=clusters is not None,
        clusters=clusters,
    )
    ids = pairs.ids
    return PairedMetric(
        row=row,
        broken=sorted((ids[i] for i in np.flatnonzero(broken)), key=case_order),
        fixed=sorted((ids[i] for i in np.flatnonzero(fixed)), key=case_order),
    )


def _candidate(values: npt.NDArray[_T], pairs: Pairs, fill: object) -> npt.NDArray[_T]:
    """The candidate's values in the pairs' order, `fill` for the dropped cases."""
    present = pairs.candidate_rows >= 0
    out = np.full(pairs.candidate_rows.size, fill, dtype=values.dtype)
    out[present] = values[pairs.candidate_rows[present]]
    return out


def _interval(low: npt.NDArray[np.float64], high: npt.NDArray[np.float64], clusters: list[str],
              binary: bool, level: float) -> tuple[MeanInterval, int | None]:
    """The interval of the paired difference (see the module's text), and the number of
    clusters when it is taken over clusters (None: over pairs)."""
    if len(set(clusters)) < len(clusters):
        # Some cluster holds two pairs: its pairs' sums and its size, clusters by their ids'
        # digests.
        order = {key: rank for rank, key in enumerate(digest_order(sorted(set(clusters))))}
        labels = np.asarray([order[k] for k in clusters], dtype=np.int64)
        sizes = np.bincount(labels, minlength=len(order)).astype(np.float64)
        observed = low == high
        interval = cluster_difference_interval(
            np.bincount(labels, weights=low, minlength=len(order)),
            np.bincount(labels, weights=high, minlength=len(order)), sizes, level,
            observed_sum=float(np.sort(low[observed]).sum()),
            observed_pairs=int(observed.sum()))
        return interval, len(order)
    if binary:
        return binary_difference_interval(low, high, level), None
    return paired_difference_interval(low, high, level), None


def _binary(side: RunSide, metric: MetricSpec) -> bool:
    """Whether every per-case value of the metric is 0 or 1: a criterion with one trial, or a
    pass^k / pass@k whose k is the run's trials."""
    return side.trials == 1 if metric.metric_type is None else metric.k == side.trials


def shared_metrics(baseline: RunSide, candidate: RunSide
                   ) -> tuple[list[tuple[MetricSpec, MetricSpec]], list[str], list[str]]:
    """The metrics both runs define alike (in the candidate's order); a warning for each one
    that is in one run only or defined differently; and the metrics not compared because the
    evaluator that judges their criterion is configured otherwise in the baseline run (another
    suite file: its verdicts answer another question), listed in one warning."""
    pairs: list[tuple[MetricSpec, MetricSpec]] = []
    warnings: list[str] = []
    base_keys, cand_keys = baseline.evaluator_keys(), candidate.evaluator_keys()
    judged_otherwise = {criterion for criterion, key in cand_keys.items()
                        if criterion in base_keys and base_keys[criterion] != key}
    not_compared: list[str] = []
    for metric in candidate.metrics:
        other = baseline.metric(metric.id)
        if other is None:
            if metric.metric_type is None:
                warnings.append(f"criterion {metric.id} is not in the baseline run: not "
                                "compared")
            continue
        if other.definition != metric.definition:
            warnings.append(f"metric {metric.id} is defined differently in the two runs: not "
                            "compared")
            continue
        if metric.criterion in judged_otherwise:
            not_compared.append(metric.id)
            continue
        pairs.append((other, metric))
    for metric in baseline.metrics:
        if metric.metric_type is None and candidate.metric(metric.id) is None:
            warnings.append(f"criterion {metric.id} is only in the baseline run: not compared")
    if not_compared:
        warnings.append(
            f"{len(not_compared)} of the metrics are judged by an evaluator configured "
            "otherwise in the baseline run (another suite file's evaluators), so their "
            "verdicts answer another question and they are not compared: "
            + ", ".join(not_compared))
    return pairs, warnings, not_compared
