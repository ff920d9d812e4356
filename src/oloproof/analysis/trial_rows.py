"""The metric and slice rows of a run with repeated trials (docs/reliability.md): every interval
over cases, each case's value computed from its folded trials (analysis/trials.py) by
`oloproof.stats.pass_k`.

Where every value is 0 or 1 (pass^k / pass@k with j = k) the interval is the exact one over
cases (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases); where values are
fractions it is the Bentkus interval (`oloproof.stats.bentkus_interval`), which reads the
values only through their sum: the same suite always gives the same interval whatever order
its trials finished in. (Rows are still taken in the order of their cases' digests, so that
every floating-point sum is added up in one order.) With declared clusters, a case outside any
is a cluster of its own named by its id — never by its row, which fills in finishing order.

Slices: a group's row is over the cases with a trial in it, each case's value its share among
*those* trials — again one value per case, cases independent, so the Bentkus interval over
cases applies. Rows are never tested against the rest of the suite (the Fisher test of
docs/concepts.md#slices-are-exploratory-and-never-gate assumes independent cases; a group's
trials are not).

Quantile metrics count each trial's value and are clustered by case:
`oloproof.stats.clustered_quantile_interval`, valid for every number of cases (not
approximate). With one trial a pass^k / pass@k row is its criterion's own (`single_trial_row`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from oloproof.analysis.metrics import UNITS, QuantileSpec
from oloproof.analysis.ordering import case_digest_order, group_order
from oloproof.analysis.rows import plain_number, sorted_counts

if TYPE_CHECKING:  # NumPy and the statistics are imported when rows are made, not before
    import numpy as np
    import numpy.typing as npt

    from oloproof.analysis.metrics import Analysis
    from oloproof.analysis.trials import CaseTrials, TrialAnalysis, TrialMetricSpec
    from oloproof.document import MetricRow, RateRow, SliceRow
    from oloproof.stats.pass_k import CaseValues
    from oloproof.stats.quantile import QuantileInterval

    FloatArray = npt.NDArray[np.float64]

#: The reason a case with fewer counted trials than a pass^j / pass@j's j is missing.
TOO_FEW_TRIALS = "too_few_trials"


def single_trial_row(spec: TrialMetricSpec, row: MetricRow) -> RateRow:
    """A pass^k / pass@k row of a run with one trial: the criterion's own row under the
    metric's id (with one trial pass^1 and pass@1 are the criterion itself)."""
    from oloproof.document import RateRow
    assert isinstance(row, RateRow)
    return row.model_copy(update={"id": spec.id, "metric_type": spec.type,
                                  "criterion": row.id, "k": spec.k, "missing_examples": None})


def trial_rows(analysis: Analysis, folding: TrialAnalysis, level: float
               ) -> tuple[list[MetricRow], list[SliceRow]]:
    """Metric and slice rows of a run with trials: every interval over cases."""
    import numpy as np

    from oloproof.analysis.trials import TRIAL_NOT_RUN
    from oloproof.document import RateRow
    from oloproof.stats.pass_k import case_values
    plan = analysis.plan
    k = plan.trials
    counts = folding.counts()
    table = folding.table
    order = table.order()
    clusters = None if table.clusters is None else cluster_names(table.clusters, table.ids)
    metrics: list[MetricRow] = []
    for i, name in enumerate(plan.criteria):
        c, f, m = counts[:, i, 0], counts[:, i, 1], counts[:, i, 2]
        figures = rate_over_cases(case_values(c, f, m, None), order, level, binary=False,
                                  clusters=clusters)
        tally = analysis.rates[i]  # the trials that ran, with their reasons
        trials_missing = Counter(tally.missing_by_reason)
        not_run = int(m.sum()) - tally.missing
        if not_run > 0:
            trials_missing[TRIAL_NOT_RUN] += not_run
        passed, failed, missing = int(c.sum()), int(f.sum()), int(m.sum())
        metrics.append(RateRow(
            id=name, estimate=figures.estimate, lower=figures.lower, upper=figures.upper,
            passed=passed, observed=passed + failed, missing=missing,
            excluded=len(table) * k - passed - failed - missing,
            excluded_by_reason=sorted_counts(tally.excluded_by_reason),
            missing_by_reason=sorted_counts(trials_missing), method=figures.method,
            approximate=figures.clusters is not None, clusters=figures.clusters,
            transform=plan.relation_transforms.get(name), trials=k, cases=figures.cases,
            excluded_cases=figures.excluded,
        ))
    for spec in plan.trial_metrics:
        i = spec.criterion
        c, f, m = counts[:, i, 0], counts[:, i, 1], counts[:, i, 2]
        values = case_values(c, f, m, spec.type, spec.k)
        figures = rate_over_cases(values, order, level, binary=spec.k == k, clusters=clusters)
        missing_by_reason: Counter[str] = Counter()
        excluded_by_reason: Counter[str] = Counter()
        for row in np.flatnonzero(values.counted & ~values.observed).tolist():
            missing_by_reason[TOO_FEW_TRIALS if values.too_few[row] else
                              table.missing_reasons.get((row, i), "unknown")] += 1
        for row in np.flatnonzero(~values.counted).tolist():
            excluded_by_reason[table.excluded_reasons.get((row, i), "unknown")] += 1
        criterion = plan.criteria[i]
        metrics.append(RateRow(
            id=spec.id, estimate=figures.estimate, lower=figures.lower, upper=figures.upper,
            passed=figures.passed, observed=figures.observed, missing=figures.missing,
            excluded=figures.excluded, excluded_by_reason=sorted_counts(excluded_by_reason),
            missing_by_reason=sorted_counts(missing_by_reason), method=figures.method,
            approximate=figures.clusters is not None, clusters=figures.clusters,
            transform=plan.relation_transforms.get(criterion), trials=k, cases=figures.cases,
            metric_type="pass_hat_k" if spec.type == "pass_hat_k" else "pass_at_k",
            criterion=criterion, k=spec.k,
        ))
    for s, quantile in enumerate(plan.quantiles):
        cases = [folding.quantiles[s][row] for row in order]
        metrics.append(_trial_quantile_row(quantile, cases, k, level))
    return metrics, _trial_slice_rows(analysis, folding, level)


def _trial_quantile_row(spec: QuantileSpec, cases: list[Any], k: int,
                        level: float | None, slice_of: tuple[str, str] | None = None
                        ) -> Any:
    """A quantile over every trial's value, clustered by case (a metric row, or with
    `slice_of` a slice row); `level` None: below support, counts only."""
    from oloproof.document import QuantileRow, QuantileSliceRow
    counted = [c for c in cases if c.values or c.missing]
    observed = sum(len(c.values) for c in counted)
    missing = sum(c.missing for c in counted)
    excluded = sum(c.excluded for c in cases)
    excluded_by: Counter[str] = Counter()
    missing_by: Counter[str] = Counter()
    for c in cases:
        if c.excluded:
            excluded_by[c.excluded_reason or "unknown"] += c.excluded
        missing_by.update(c.missing_reasons)
    interval = None if level is None or not counted else \
        quantile_over_cases(counted, spec.quantile, level)
    estimate = plain_number(interval.estimate) if interval else None
    lower = plain_number(interval.lower) if interval else None
    upper = plain_number(interval.upper) if interval else None
    method = interval.method if interval else None
    if slice_of is not None:
        return QuantileSliceRow(
            slice=slice_of[0], value=slice_of[1], metric=spec.id, quantile=spec.quantile,
            unit=UNITS[spec.source], estimate=estimate, lower=lower, upper=upper,
            observed=observed, missing=missing, excluded=excluded,
            excluded_by_reason=sorted_counts(excluded_by),
            missing_by_reason=sorted_counts(missing_by), method=method,
            below_support=level is None, support=len(counted), trials=k)
    return QuantileRow(
        id=spec.id, quantile=spec.quantile, unit=UNITS[spec.source], estimate=estimate,
        lower=lower, upper=upper, observed=observed, missing=missing, excluded=excluded,
        excluded_by_reason=sorted_counts(excluded_by), missing_by_reason=sorted_counts(missing_by),
        method=method or "", trials=k, cases=len(counted))


def _trial_slice_rows(analysis: Analysis, folding: TrialAnalysis, level: float
                      ) -> list[SliceRow]:
    """Each group over the cases with a trial in it, a case's value its share among those
    trials; no group is tested against the rest."""
    from oloproof.document import RateSliceRow
    from oloproof.stats.pass_k import case_values
    plan = analysis.plan
    table = folding.table
    rows: list[SliceRow] = []
    for key in sorted(folding.groups, key=group_order):
        s, group = key
        members = folding.groups[key]
        counts = members.matrix(len(plan.criteria))
        local = sorted(range(len(members.rows)),
                       key=lambda r: case_digest_order(table.digests[members.rows[r]],
                                                       table.ids[members.rows[r]]))
        slice_name = plan.slices[s]
        for i, name in enumerate(plan.criteria):
            c, f, m, x = (counts[:, i, n] for n in range(4))
            values = case_values(c, f, m, None)
            support = int(values.counted.sum())
            shown = support >= plan.min_slice_support
            figures = rate_over_cases(values, local, level, binary=False) if shown else None
            rows.append(RateSliceRow(
                slice=slice_name, value=group, metric=name,
                estimate=figures.estimate if figures else None,
                lower=figures.lower if figures else None,
                upper=figures.upper if figures else None,
                passed=int(c.sum()), observed=int(c.sum() + f.sum()), missing=int(m.sum()),
                excluded=int(x.sum()), method=figures.method if figures else None,
                below_support=not shown, support=support, trials=plan.trials,
            ))
        for q, spec in enumerate(plan.quantiles):
            cases = [members.quantiles[r][q] for r in local]
            support = sum(1 for c in cases if c.values or c.missing)
            rows.append(_trial_quantile_row(
                spec, cases, plan.trials,
                level if support >= plan.min_slice_support else None, (slice_name, group)))
    return rows


# ---- intervals over cases --------------------------------------------------------------------


@dataclass
class RateOverCases:
    """A metric's figures over cases: estimate, interval, method, case counts."""

    estimate: float | None
    lower: float | None
    upper: float | None
    method: str
    cases: int        # counted (not excluded)
    observed: int     # cases whose value is settled
    passed: int       # observed cases whose value is 1
    missing: int      # cases whose value missing trials could change
    excluded: int     # cases with every trial excluded
    clusters: int | None = None  # set when the interval is over clusters (approximate)


def rate_over_cases(values: CaseValues, order: Sequence[int], level: float, *, binary: bool,
                    clusters: Sequence[str] | None = None) -> RateOverCases:
    """The interval over cases given in `order` (indices into `values`;
    docs/reliability.md#why-every-interval-is-over-cases).

    `binary` (every value 0 or 1 by construction): the exact interval over cases
    (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases). Else the
    Bentkus interval over the cases' lower and upper values (`oloproof.stats.bentkus`), which
    depends only on their sums. With `clusters` (one cluster name per case: its declared
    cluster, or its own id) and some cluster counting two cases or more: the mean of the cases'
    values with its interval over clusters (`oloproof.stats.cluster_ratio`,
    docs/concepts.md#clusters). `order` only fixes the order floating-point sums are taken in;
    the figures depend on which cases are in, never on the order they finished.
    """
    import numpy as np

    from oloproof.stats import bentkus_interval, rate_interval
    idx = np.asarray(order, dtype=np.int64)
    counted = values.counted[idx] if idx.size else np.zeros(0, dtype=bool)
    idx = idx[counted]
    observed = values.observed[idx]
    lower, upper = values.lower[idx], values.upper[idx]
    n_obs = int(observed.sum())
    passed = int((observed & (lower == 1.0)).sum())
    excluded = int(len(order) - idx.size)
    base = dict(cases=int(idx.size), observed=n_obs, passed=passed,
                missing=int(idx.size - n_obs), excluded=excluded)
    if clusters is not None and idx.size:
        ids = [clusters[i] for i in idx.tolist()]
        if len(set(ids)) < len(ids):
            return _over_clusters(ids, lower, upper, observed, level, base)
    if binary:
        interval = rate_interval(passed, n_obs, int(idx.size - n_obs), level)
        return RateOverCases(interval.estimate, interval.lower, interval.upper,
                             interval.method, **base)
    mean = bentkus_interval(lower, upper, level)
    return RateOverCases(mean.estimate, mean.lower, mean.upper, mean.method, **base)


def cluster_names(clusters: Sequence[str | None], ids: Sequence[str]) -> list[str]:
    """Each case's cluster for an interval over clusters: its declared cluster, or — outside
    any — a cluster of its own named by its id (a case id that is also a declared cluster's
    name joins it, as in a run without trials). Never a row number: rows fill in the order
    cases finish."""
    return [cluster if cluster is not None else case_id
            for cluster, case_id in zip(clusters, ids, strict=True)]


def _over_clusters(ids: list[str], lower: FloatArray, upper: FloatArray,
                   observed: npt.NDArray[np.bool_], level: float,
                   base: dict[str, int]) -> RateOverCases:
    """The cases' mean value, its interval over clusters: each cluster's sums of its cases'
    lowest and highest values, and its size."""
    import numpy as np

    from oloproof.stats import cluster_ratio_interval
    names, where = np.unique(np.asarray(ids, dtype=str), return_inverse=True)
    where = where.reshape(-1)
    size = np.bincount(where, minlength=names.size).astype(np.float64)
    low = np.bincount(where, weights=lower, minlength=names.size)
    high = np.bincount(where, weights=upper, minlength=names.size)
    seen = float(np.sort(lower[observed]).sum())
    mean = cluster_ratio_interval(np.minimum(low, size), np.minimum(high, size), size, level,
                                  observed_sum=min(seen, float(observed.sum())),
                                  observed_cases=int(observed.sum()))
    return RateOverCases(mean.estimate, mean.lower, mean.upper, mean.method, **base,
                         clusters=int(names.size))


def quantile_over_cases(cases: Sequence[Any], q: float, level: float) -> QuantileInterval:
    """A quantile over every trial's value, clustered by case (cases in the caller's order)."""
    from oloproof.stats.clustered_quantile import clustered_quantile_interval
    return clustered_quantile_interval([c.values for c in cases], [c.missing for c in cases],
                                       q, level)


def pass_hat_curve(cases: Sequence[CaseTrials], criterion: int, level: float
                   ) -> list[RateOverCases]:
    """pass^j for j = 1 … trials of one criterion, each with its interval over cases (what the
    HTML report draws against j): exact where j = trials, Bentkus below."""
    import numpy as np

    from oloproof.stats.pass_k import PASS_HAT_K, case_values
    trials = max((c.trials for c in cases), default=1)
    ordered = sorted(cases, key=lambda c: case_digest_order(c.digest, c.case_id))
    counts = [c.counts[criterion] for c in ordered]
    passed = np.asarray([c.passed for c in counts], dtype=np.int64)
    failed = np.asarray([c.failed for c in counts], dtype=np.int64)
    missing = np.asarray([c.missing for c in counts], dtype=np.int64)
    clusters = [c.cluster for c in ordered]
    order = list(range(len(ordered)))
    named = any(c is not None for c in clusters)
    names = cluster_names(clusters, [c.case_id for c in ordered]) if named else None
    return [rate_over_cases(case_values(passed, failed, missing, PASS_HAT_K, j), order, level,
                            binary=j == trials, clusters=names)
            for j in range(1, trials + 1)]
