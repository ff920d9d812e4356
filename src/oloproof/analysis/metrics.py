"""Judgments → metrics and slices, with intervals (SPEC §5, §10.2).

`Analysis` takes case outcomes one at a time and keeps only tallies; `finish` turns the tallies
into metric and slice rows using `oloproof.stats`. The same code serves a run in progress and
`gate` re-reading a stored run.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from oloproof.analysis.facts import quantile_value
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.tally import QuantileTally, RateTally
from oloproof.stats import (
    benjamini_yekutieli,
    bounded_mean_interval,
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
    # Some dataset cases name a `cluster`: the others are clusters of one, and a clustered
    # metric takes clusters in an order fixed by their ids, so their codes are kept by id.
    case_clusters: bool = False


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
        # Cases outside any named cluster, by id (only when the plan says some have one).
        self.singles: dict[str, str] = {}
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
        if outcome.cluster is None:
            if self.plan.case_clusters:
                self.singles[outcome.case_id] = outcome.codes
        else:
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
        if any(c[i][1] + c[i][2] > 1 for c in self.clusters.values()):
            # Cases of one cluster are not independent: each cluster's share of passing cases
            # is one value, and the interval is the betting interval over clusters (SPEC §5.4).
            lower, upper = self._cluster_shares(i, tally)
            interval = bounded_mean_interval(lower, upper, level)
            row.update(estimate=interval.estimate, lower=interval.lower, upper=interval.upper,
                       method=interval.method, approximate=True, clusters=len(lower))
        if name in self.plan.relation_transforms:
            row["transform"] = self.plan.relation_transforms[name]
        return row

    def _cluster_shares(self, i: int, tally: RateTally) -> tuple[list[float], list[float]]:
        """Each cluster's lowest and highest possible share of passing cases for criterion
        ``i`` (missing cases failed, then passed), clusters in the order of their ids' digests.

        The betting interval depends on the order of its values. The order must not depend on
        the outcomes (nor on the order cases finished in): the ids fix it, hashed so that ids
        named by difficulty ("hard-01", …, "easy-09") cannot line the failures up together.
        """
        counts = {cid: list(c[i]) for cid, c in self.clusters.items()}
        for case_id, codes in self.singles.items():
            cell = counts.setdefault(case_id, [0, 0, 0])
            code = codes[i]
            cell[0] += code == "P"
            cell[1] += code in "PF"
            cell[2] += code == "M"
        values = [(hashlib.sha256(cid.encode()).digest(), cid, c) for cid, c in counts.items()
                  if c[1] + c[2] > 0]
        values.sort()
        lower = [p / (o + m) for _, _, (p, o, m) in values]
        upper = [(p + m) / (o + m) for _, _, (p, o, m) in values]
        singletons = _singletons(tally, [c for _, _, c in values])
        if singletons is not None:
            # Only when the plan said no case names a cluster and one did: their ids are
            # unknown, and any order made up from their counts would be chosen by outcome.
            raise RuntimeError(
                f"{singletons} cases outside any named cluster were not kept by id; "
                "re-run the suite to decide this clustered metric"
            )
        return lower, upper

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


def _singletons(tally: RateTally, counted: list[list[int]]) -> int | None:
    """How many of the criterion's counted cases are in no cluster counted (None if none)."""
    left = tally.support - sum(c[1] + c[2] for c in counted)
    return left if left > 0 else None


def _group_order(key: tuple[int, str]) -> tuple[int, int, str]:
    s, group = key
    # Buckets in their natural order (le_4 < le_8 < gt_8), other values alphabetically.
    if group.startswith("le_") and group[3:].isdigit():
        return (s, int(group[3:]), group)
    if group.startswith("gt_") and group[3:].isdigit():
        return (s, 1 << 40, group)
    return (s, 0, group)
