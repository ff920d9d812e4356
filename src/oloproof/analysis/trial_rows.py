"""The metric and slice rows of a run with repeated trials (docs/reliability.md): every interval
over cases, each case's value from its folded trials (analysis/trials.py).

A criterion's row is over the cases' shares of passing trials, a pass^k / pass@k row over the
cases' values of docs/reliability.md#what-passk-means, a quantile over every trial's value
clustered by case; a slice group's row is over the cases with a trial in it. With one trial a
pass^k / pass@k row is the criterion's own (`single_trial_row`).
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from oloproof.analysis.metrics import UNITS, QuantileSpec, plain_number, sorted_counts
from oloproof.analysis.ordering import group_order

if TYPE_CHECKING:
    from oloproof.analysis.metrics import Analysis
    from oloproof.analysis.trials import TrialAnalysis, TrialMetricSpec
    from oloproof.document import MetricRow, RateRow, SliceRow


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

    from oloproof.analysis.trials import (
        TOO_FEW_TRIALS,
        TRIAL_NOT_RUN,
        case_values,
        cluster_names,
        rate_over_cases,
    )
    from oloproof.document import RateRow
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
    from oloproof.analysis.trials import quantile_over_cases
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
    trials (see analysis/trials.py); no group is tested against the rest."""
    from oloproof.analysis.trials import case_values, rate_over_cases
    from oloproof.document import RateSliceRow
    plan = analysis.plan
    table = folding.table
    rows: list[SliceRow] = []
    for key in sorted(folding.groups, key=group_order):
        s, group = key
        members = folding.groups[key]
        counts = members.matrix(len(plan.criteria))
        local = sorted(range(len(members.rows)),
                       key=lambda r: (table.digests[members.rows[r]] or "",
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
