"""Pairing two runs case by case (SPEC §17): counts, the paired difference, McNemar.

Cases are paired by id. A case whose digest differs between the runs (its input or expected
changed) is *changed*: reported, never paired — its verdicts answer another question. A case in
one run only is unpaired. For each metric both runs define alike, over the paired cases:

- a pair *counts* when neither side is excluded (`excluded` otherwise);
- it is *missing* when either side's value is not settled (a missing verdict, or missing trials
  that could move a share); otherwise both values are known and the pair is both passed (1, 1),
  both failed (0, 0), fixed (the candidate's value is higher), broken (lower) or, with trials,
  unchanged (the same share strictly between 0 and 1);
- the difference candidate − baseline has the interval of `stats.paired_difference_interval`
  over every counted pair, a missing side resolved the worst way for each bound
  (`stats.difference_bounds`), pairs taken in the order of their case digests so a comparison
  always gets the same interval;
- McNemar's exact p-value is taken on the broken and fixed pairs (with fractional values this is
  the exact sign test on the pairs that moved), a description that never decides anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from oloproof.analysis.metrics import case_order
from oloproof.comparison.sides import MetricSpec, RunSide
from oloproof.document import CriterionComparison
from oloproof.stats import difference_bounds, mcnemar_exact, paired_difference_interval

IntArray = npt.NDArray[np.int64]


@dataclass
class Pairs:
    """Which cases of two runs pair: rows in each side, in the order the interval takes them
    (by case digest, then id), and the cases that do not pair."""

    ids: list[str]
    baseline_rows: IntArray
    candidate_rows: IntArray
    changed: list[str] = field(default_factory=list)
    baseline_only: list[str] = field(default_factory=list)
    candidate_only: list[str] = field(default_factory=list)


def pair_cases(baseline: RunSide, candidate: RunSide) -> Pairs:
    """Pair the cases of two runs by id (see the module's text); lists in case-id order."""
    base_at = baseline.position()
    cand_at = candidate.position()
    b_digests, c_digests = baseline.digests, candidate.digests
    shared = [(case_id, base_at[case_id], c_row) for case_id, c_row in cand_at.items()
              if case_id in base_at]
    changed = [case_id for case_id, b_row, c_row in shared
               if b_digests[b_row] != c_digests[c_row]]
    paired = sorted((c_digests[c_row], case_id, b_row, c_row) for case_id, b_row, c_row in shared
                    if b_digests[b_row] == c_digests[c_row])
    return Pairs(
        ids=[p[1] for p in paired],
        baseline_rows=np.fromiter((p[2] for p in paired), dtype=np.int64, count=len(paired)),
        candidate_rows=np.fromiter((p[3] for p in paired), dtype=np.int64, count=len(paired)),
        changed=sorted(changed, key=case_order),
        baseline_only=sorted((c for c in base_at if c not in cand_at), key=case_order),
        candidate_only=sorted((c for c in cand_at if c not in base_at), key=case_order),
    )


@dataclass
class PairedMetric:
    """One metric compared: its row, and the paired cases that broke and were fixed."""

    row: CriterionComparison
    broken: list[str]
    fixed: list[str]


def compare_metric(baseline: RunSide, candidate: RunSide, pairs: Pairs, base_metric: MetricSpec,
                   cand_metric: MetricSpec, level: float) -> PairedMetric:
    """The paired figures of one metric (see the module's text)."""
    before = baseline.values(base_metric)
    after = candidate.values(cand_metric)
    b, c = pairs.baseline_rows, pairs.candidate_rows
    counted = before.counted[b] & after.counted[c]
    settled = counted & before.observed[b] & after.observed[c]
    b_low, b_high = before.lower[b][counted], before.upper[b][counted]
    c_low, c_high = after.lower[c][counted], after.upper[c][counted]
    low, high = difference_bounds(b_low, b_high, c_low, c_high)
    interval = paired_difference_interval(low, high, level)
    b_value, c_value = before.lower[b], after.lower[c]  # equal to the upper where settled
    both_passed = settled & (b_value == 1.0) & (c_value == 1.0)
    both_failed = settled & (b_value == 0.0) & (c_value == 0.0)
    fixed = settled & (c_value > b_value)
    broken = settled & (c_value < b_value)
    unchanged = settled & (c_value == b_value) & ~both_passed & ~both_failed
    n_broken, n_fixed = int(broken.sum()), int(fixed.sum())
    fractional = not (_binary(baseline, base_metric) and _binary(candidate, cand_metric))
    row = CriterionComparison(
        criterion=cand_metric.id,
        paired=int(counted.sum()),
        both_passed=int(both_passed.sum()),
        fixed=n_fixed,
        broken=n_broken,
        both_failed=int(both_failed.sum()),
        missing=int((counted & ~settled).sum()),
        difference=interval.estimate,
        lower=interval.lower,
        upper=interval.upper,
        method=interval.method,
        mcnemar_p=mcnemar_exact(n_broken, n_fixed).p_value,
        excluded=int(len(pairs.ids) - counted.sum()),
        unchanged=int(unchanged.sum()) if fractional else None,
        metric_type=cand_metric.metric_type,  # type: ignore[arg-type]
        k=cand_metric.k if cand_metric.metric_type is not None else None,
    )
    ids = pairs.ids
    return PairedMetric(
        row=row,
        broken=sorted((ids[i] for i in np.flatnonzero(broken)), key=case_order),
        fixed=sorted((ids[i] for i in np.flatnonzero(fixed)), key=case_order),
    )


def _binary(side: RunSide, metric: MetricSpec) -> bool:
    """Whether every per-case value of the metric is 0 or 1: a criterion with one trial, or a
    pass^k / pass@k whose k is the run's trials."""
    return side.trials == 1 if metric.metric_type is None else metric.k == side.trials


def shared_metrics(baseline: RunSide, candidate: RunSide
                   ) -> tuple[list[tuple[MetricSpec, MetricSpec]], list[str]]:
    """The metrics both runs define alike (in the candidate's order), and a warning for each
    one that is in one run only or defined differently."""
    pairs: list[tuple[MetricSpec, MetricSpec]] = []
    warnings: list[str] = []
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
        pairs.append((other, metric))
    for metric in baseline.metrics:
        if metric.metric_type is None and candidate.metric(metric.id) is None:
            warnings.append(f"criterion {metric.id} is only in the baseline run: not compared")
    return pairs, warnings
