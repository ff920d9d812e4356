"""Judgments → metrics and slices, with intervals (SPEC §5, §10.2).

`Analysis` takes case outcomes one at a time and keeps only tallies; `finish` turns the tallies
into metric and slice rows using `oloproof.stats`. The same code serves a run in progress and
`gate` re-reading a stored run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from oloproof.analysis.facts import quantile_value
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.tally import QuantileTally, RateTally
from oloproof.stats import (
    DEFAULT_RESAMPLES,
    benjamini_yekutieli,
    cluster_bootstrap_rate,
    fisher_two_sided,
    quantile_interval,
    rate_interval,
)

UNITS = {"agent_steps": "steps", "agent_tool_calls": "calls", "latency_ms": "ms"}
MARK_LEVEL = 0.05


@dataclass(frozen=True)
class QuantileSpec:
    id: str
    source: str
    quantile: float


@dataclass
class MetricPlan:
    """What to compute: criteria (pass rates, in order), quantile metrics, declared slices."""

    criteria: list[str]
    quantiles: list[QuantileSpec]
    slices: list[str]
    min_slice_support: int
    # criterion -> transform name, for metamorphic relations (validity is checked per transform)
    relation_transforms: dict[str, str] = field(default_factory=dict)


class Analysis:
    """Accumulates case outcomes; `finish` computes metrics and slice rows."""

    def __init__(self, plan: MetricPlan) -> None:
        self.plan = plan
        self.rates: list[RateTally] = []
        self.quantiles = [QuantileTally() for _ in plan.quantiles]
        self.groups: dict[tuple[int, str], tuple[list[RateTally], list[QuantileTally]]] = {}
        self._combos: Counter[tuple[str, tuple[str | None, ...]]] = Counter()
        self._group_combos: dict[tuple[int, str], Counter[tuple[str, tuple[str | None, ...]]]] = {}
        self._group_quantiles: dict[tuple[int, str], list[QuantileTally]] = {}
        # Per cluster, per criterion: [passed, observed, missing] (cases with a cluster only).
        self.clusters: dict[str, list[list[int]]] = {}
        self.cases = 0

    def add(self, outcome: CaseOutcome) -> None:
        """Count one case. Verdicts are counted by their combination (most cases of a suite
        share a handful), so a case costs one dictionary update per group it joins."""
        self.cases += 1
        combo = (outcome.codes, tuple(outcome.reasons))
        self._combos[combo] += 1
        values = self._quantile_values(outcome) if self.quantiles else []
        for tally, (value, why) in zip(self.quantiles, values, strict=True):
            tally.add(value, why)
        for s, group in enumerate(outcome.groups):
            if group is None:
                continue
            key = (s, group)
            combos = self._group_combos.get(key)
            if combos is None:
                combos = self._group_combos[key] = Counter()
                self._group_quantiles[key] = [QuantileTally() for _ in self.quantiles]
            combos[combo] += 1
            for tally, (value, why) in zip(self._group_quantiles[key], values, strict=True):
                tally.add(value, why)
        if outcome.cluster is not None:
            counts = self.clusters.get(outcome.cluster)
            if counts is None:
                counts = [[0, 0, 0] for _ in self.plan.criteria]
                self.clusters[outcome.cluster] = counts
            for i, code in enumerate(outcome.codes):
                if code == "P":
                    counts[i][0] += 1
                    counts[i][1] += 1
                elif code == "F":
                    counts[i][1] += 1
                elif code == "M":
                    counts[i][2] += 1

    def _tallies(self, combos: Counter[tuple[str, tuple[str | None, ...]]]) -> list[RateTally]:
        tallies = [RateTally() for _ in self.plan.criteria]
        for (codes, reasons), count in combos.items():
            for tally, code, reason in zip(tallies, codes, reasons, strict=True):
                tally.add(code, reason, count)
        return tallies

    def _materialize(self) -> None:
        self.rates = self._tallies(self._combos)
        self.groups = {key: (self._tallies(combos), self._group_quantiles[key])
                       for key, combos in self._group_combos.items()}

    def _quantile_values(self, outcome: CaseOutcome) -> list[tuple[float | None, str | None]]:
        out: list[tuple[float | None, str | None]] = []
        for spec in self.plan.quantiles:
            if outcome.source is not None:
                out.append((None, "metamorphic_copy"))
            elif outcome.error is not None:
                out.append((None, None))
            else:
                out.append((quantile_value(spec.source, outcome.facts, outcome.latency_ms), None))
        return out

    # ---- results -------------------------------------------------------------------------

    def finish(self, level: float) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """(metrics, slice rows) as JSON-ready dicts with unrounded bounds."""
        self._materialize()
        metrics = [self._rate_metric(i, level) for i in range(len(self.rates))]
        metrics += [
            _quantile_row(spec, tally, level)
            for spec, tally in zip(self.plan.quantiles, self.quantiles, strict=True)
        ]
        return metrics, self._slice_rows(level)

    def _rate_metric(self, i: int, level: float) -> dict[str, Any]:
        name, tally = self.plan.criteria[i], self.rates[i]
        row = _rate_row(tally, level)
        row = {"id": name, "kind": "rate", **row}
        shared = [c[i] for c in self.clusters.values() if c[i][1] + c[i][2] > 0]
        if any(c[1] + c[2] > 1 for c in shared):
            # Cases of one cluster are not independent: resample whole clusters (SPEC §5.4).
            singles = _singletons(tally, shared)
            passed = [c[0] for c in shared] + singles[0]
            observed = [c[1] for c in shared] + singles[1]
            missing_ = [c[2] for c in shared] + singles[2]
            boot = cluster_bootstrap_rate(passed, observed, missing_, level,
                                          resamples=DEFAULT_RESAMPLES, seed=0)
            # A percentile bootstrap collapses when every cluster agrees (33 of 33 passing gives
            # [100%, 100%]). Clustering only ever widens the truth, so the interval reported is
            # the hull of the bootstrap's and the exact one computed as if cases were
            # independent: never narrower than either.
            lower = min(x for x in (boot.lower, row["lower"]) if x is not None) \
                if row["lower"] is not None or boot.lower is not None else None
            upper = max(x for x in (boot.upper, row["upper"]) if x is not None) \
                if row["upper"] is not None or boot.upper is not None else None
            row.update(lower=lower, upper=upper,
                       method=boot.method + ", widened to contain the exact interval",
                       approximate=True, clusters=len(passed))
        if name in self.plan.relation_transforms:
            row["transform"] = self.plan.relation_transforms[name]
        return row

    def _slice_rows(self, level: float) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        tests: list[tuple[int, float]] = []
        for (s, group) in sorted(self.groups, key=_group_order):
            rate_tallies, quantile_tallies = self.groups[(s, group)]
            for i, tally in enumerate(rate_tallies):
                row: dict[str, Any] = {"slice": self.plan.slices[s], "value": group,
                                       "metric": self.plan.criteria[i], "kind": "rate"}
                if tally.support >= self.plan.min_slice_support:
                    row.update(_rate_row(tally, level))
                    rest = self.rates[i]
                    if tally.observed and rest.observed - tally.observed:
                        p = fisher_two_sided(tally.passed, tally.failed,
                                             rest.passed - tally.passed,
                                             rest.failed - tally.failed)
                        tests.append((len(rows), p))
                else:
                    row.update(_counts_only(tally))
                row["support"] = tally.support
                row["mark"] = None
                rows.append(row)
            for spec, qtally in zip(self.plan.quantiles, quantile_tallies, strict=True):
                row = {"slice": self.plan.slices[s], "value": group, "metric": spec.id,
                       "kind": "quantile"}
                if qtally.support >= self.plan.min_slice_support:
                    row.update({k: v for k, v in _quantile_row(spec, qtally, level).items()
                                if k != "id"})
                else:
                    row.update(kind="quantile", quantile=spec.quantile, unit=UNITS[spec.source],
                               estimate=None, lower=None, upper=None,
                               observed=len(qtally.values), missing=qtally.missing,
                               excluded=qtally.excluded, below_support=True)
                row["support"] = qtally.support
                row["mark"] = None
                rows.append(row)
        if tests:
            adjusted = benjamini_yekutieli([p for _, p in tests])
            for (index, p), q in zip(tests, adjusted, strict=True):
                rows[index]["p_value"] = p
                rows[index]["q_value"] = q
                if q <= MARK_LEVEL:
                    rows[index]["mark"] = "*"
        return rows


def _rate_row(tally: RateTally, level: float) -> dict[str, Any]:
    interval = rate_interval(tally.passed, tally.observed, tally.missing, level)
    return {
        "estimate": interval.estimate, "lower": interval.lower, "upper": interval.upper,
        "passed": tally.passed, "observed": tally.observed, "missing": tally.missing,
        "excluded": tally.excluded, "excluded_by_reason": dict(sorted(
            tally.excluded_by_reason.items())),
        "missing_by_reason": dict(sorted(tally.missing_by_reason.items())),
        "method": interval.method,
    }


def _counts_only(tally: RateTally) -> dict[str, Any]:
    return {
        "estimate": None, "lower": None, "upper": None, "passed": tally.passed,
        "observed": tally.observed, "missing": tally.missing, "excluded": tally.excluded,
        "excluded_by_reason": dict(sorted(tally.excluded_by_reason.items())),
        "below_support": True,
    }


def _quantile_row(spec: QuantileSpec, tally: QuantileTally, level: float) -> dict[str, Any]:
    interval = quantile_interval(tally.values, tally.missing, spec.quantile, level)
    return {
        "id": spec.id, "kind": "quantile", "quantile": spec.quantile,
        "unit": UNITS[spec.source], "estimate": _number(interval.estimate),
        "lower": _number(interval.lower), "upper": _number(interval.upper),
        "observed": len(tally.values), "missing": tally.missing, "excluded": tally.excluded,
        "excluded_by_reason": dict(sorted(tally.excluded_by_reason.items())),
        "method": interval.method,
    }


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)


def _singletons(tally: RateTally, shared: list[list[int]]) -> tuple[list[int], ...]:
    """Cases outside any named cluster are clusters of one: rebuild them from the counts."""
    p = tally.passed - sum(c[0] for c in shared)
    f = tally.observed - sum(c[1] for c in shared) - p
    m = tally.missing - sum(c[2] for c in shared)
    return ([1] * p + [0] * f + [0] * m, [1] * p + [1] * f + [0] * m, [0] * p + [0] * f + [1] * m)


def _group_order(key: tuple[int, str]) -> tuple[int, int, str]:
    s, group = key
    # Buckets in their natural order (le_4 < le_8 < gt_8), other values alphabetically.
    if group.startswith("le_") and group[3:].isdigit():
        return (s, int(group[3:]), group)
    if group.startswith("gt_") and group[3:].isdigit():
        return (s, 1 << 40, group)
    return (s, 0, group)
