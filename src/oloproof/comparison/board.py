"""The board: many candidate runs side by side against one baseline, every interval that
decides something holding simultaneously (docs/board.md).

`build_board` reads each candidate once (`sides.read_side`), checks that every candidate holds
the baseline's cases (same ids, same digests, same trials: the board pairs them all, so a case
one of them lacks is an error that says which, never a silent drop), puts the cases in one
order (by case digest, then id: the order a betting interval takes them in), and computes at
the level `stats.simultaneous.each_level` gives each member of the family:

- each rate a rule reads, and the success criterion's rate (`metrics`);
- each paired difference a `non_inferiority` rule reads, against the baseline (`difference`);
- each quantile an interval rule reads (`metrics`, by its metric id);
- cost per case (the agent's own `usage/v1` cost, never a judge's or a simulator's), when a
  cost cap is declared (docs/board.md#cost-per-case).

That is the family: the intervals the rules read plus those `dominated_by` reads (success and
cost). Cost per successful case is derived (no member); latency p50 and p95 are shown at the
same level of each member and join the family only as a rule's quantile.

`can_ship`: the policy's rules decided for the candidate as the gate decides them
(`decisions.rules`) — floors and budgets on the run as it stands —, every interval rule and
`non_inferiority` rule on the board's interval instead of its own; the candidate can ship when
that gate does not BLOCK. A rule whose interval the board cannot re-derive at the family's
level (a judged criterion corrected by labels, a clustered metric) blocks: it is decided
MANUAL_REVIEW, and the board says why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from oloproof.analysis.facts import quantile_value
from oloproof.comparison.sides import MetricSpec, RunSide, read_side
from oloproof.decisions.rules import decide_non_inferiority, decide_rule, gate
from oloproof.document import (
    CriterionComparison,
    DecisionRow,
    GateAction,
    RateRow,
    RuleState,
    RunDocument,
)
from oloproof.errors import UsageError
from oloproof.stats.betting import MeanInterval
from oloproof.stats.quantile import quantile_interval
from oloproof.stats.simultaneous import (
    SIMULTANEOUS_METHOD,
    case_rate,
    cost_interval,
    dominated_by,
    each_level,
    paired_difference,
    per_success,
)
from oloproof.store.store import Store
from oloproof.suite.policy import Policy

FloatArray = npt.NDArray[np.float64]

#: The latency quantiles every candidate shows.
LATENCY_QUANTILES = {"latency_p50": 0.5, "latency_p95": 0.95}


@dataclass(frozen=True)
class Figure:
    """An estimate with its interval (`None`: not computable, or no bound)."""

    estimate: float | None
    lower: float | None
    upper: float | None

    def to_json(self) -> dict[str, float | None]:
        return {"estimate": self.estimate, "lower": self.lower, "upper": self.upper}


def _figure(found: Any) -> Figure:
    return Figure(found.estimate, found.lower, found.upper)


@dataclass(frozen=True)
class BoardRow:
    """One candidate on the board (the baseline is one, without differences)."""

    run_id: str
    variant: str | None
    system: str
    metrics: dict[str, Figure]
    difference: dict[str, Figure]
    cost_per_case: Figure
    cost_per_success: Figure
    latency: dict[str, Figure]
    can_ship: bool
    decisions: list[DecisionRow]
    blocked_by: list[str]
    dominated_by: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """How the board names it: its variant, else its system and run id."""
        return self.variant if self.variant is not None else f"{self.system} {self.run_id}"


@dataclass(frozen=True)
class Board:
    """The board's figures (docs/board.md#reading-the-board): `level` holds familywise over the
    `family_size` intervals, each at `each_level`, by `method`."""

    baseline: str
    level: float
    each_level: float
    family_size: int
    method: str
    criterion: str
    cost_cap: float | None
    candidates: list[BoardRow]
    warnings: list[str] = field(default_factory=list)
    # The metrics in `metrics` that are quantiles (the others are rates).
    quantile_metrics: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "baseline": self.baseline,
            "level": self.level,
            "familywise": True,
            "method": self.method,
            "family_size": self.family_size,
            "each_level": self.each_level,
            "criterion": self.criterion,
            "cost_cap": self.cost_cap,
            "candidates": [{
                "run_id": row.run_id,
                "variant": row.variant,
                "metrics": {k: v.to_json() for k, v in row.metrics.items()},
                "difference": {k: v.to_json() for k, v in row.difference.items()},
                "cost_per_case": row.cost_per_case.to_json(),
                "cost_per_success": row.cost_per_success.to_json(),
                "latency_p50": row.latency["latency_p50"].to_json(),
                "latency_p95": row.latency["latency_p95"].to_json(),
                "can_ship": row.can_ship,
                "blocked_by": row.blocked_by,
                "dominated_by": list(row.dominated_by),
            } for row in self.candidates],
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True)
class BoardInput:
    """What the board needs of one candidate besides its stored cases: its variant, and the
    run document the policy decides it by on its own (rules read the budgets, counts and
    metric rows from it; `baseline` holds its comparison with the board's baseline); and
    whether it was imported from another harness (its latency is then its replay's, not
    shown)."""

    run_id: str
    variant: str | None
    document: RunDocument
    imported: bool = False


def _case_order(side: RunSide) -> list[int]:
    """The side's rows by case digest, then id."""
    return sorted(range(len(side.ids)), key=lambda i: (side.digests[i], side.ids[i]))


def _check_same_cases(base: RunSide, side: RunSide) -> None:
    """Every candidate holds the baseline's cases as they were, with as many trials."""
    mine = dict(zip(side.ids, side.digests, strict=True))
    theirs = dict(zip(base.ids, base.digests, strict=True))
    if mine != theirs:
        lacking = sorted(set(theirs) - set(mine))
        extra = sorted(set(mine) - set(theirs))
        changed = sorted(c for c in set(mine) & set(theirs) if mine[c] != theirs[c])
        said = [f"{len(found)} {what} (first {found[0]})" for found, what in (
            (lacking, "of the baseline's cases missing"), (extra, "cases the baseline lacks"),
            (changed, "cases whose input or expected differ")) if found]
        raise UsageError(
            f"run {side.run_id} does not hold the cases of the baseline run {base.run_id}: "
            f"{'; '.join(said)}. The board pairs every candidate with the baseline case by "
            "case, so every candidate must be run on the same cases: run it on the whole "
            "dataset the baseline ran (a run of part of the suite, or of another dataset, "
            "cannot be a candidate), or name runs of one dataset (`oloproof runs` lists them)")
    if side.trials != base.trials:
        raise UsageError(
            f"run {side.run_id} ran {side.trials} trial(s) per case and the baseline run "
            f"{base.run_id} {base.trials}: a case's share of passing trials means another "
            f"thing; run every candidate with --trials {max(side.trials, base.trials)}")


def _values(side: RunSide, metric: MetricSpec, rows: list[int]) -> FloatArray:
    """The per-case values of a metric in the board's order: NaN where a case is missing
    (its value not settled) or excluded."""
    found = side.values(metric)
    order = np.asarray(rows, dtype=np.int64)
    settled = found.counted[order] & (found.lower[order] == found.upper[order])
    return np.where(settled, found.lower[order], np.nan)


def _per_case(db: Store, run_id: str, rows: Mapping[str, int], source: str | None
              ) -> tuple[FloatArray, list[float], int]:
    """Each case's own cost (the mean of its trials' recorded costs; NaN when none recorded
    one), in the board's order by `rows` (case id → position), and the values of the quantile
    `source` over every trial with the count of trials missing it."""
    totals = np.zeros(len(rows))
    counts = np.zeros(len(rows))
    values: list[float] = []
    missing = 0
    for case_id, _digest, _key, outcome in db.iter_run_cases(run_id):
        facts = outcome.get("f")
        usage = (facts or {}).get("usage") or {}
        cost = usage.get("cost")
        if cost is not None and case_id in rows:
            totals[rows[case_id]] += float(cost)
            counts[rows[case_id]] += 1
        if source is not None:
            value = quantile_value(source, facts, outcome.get("l"))
            if value is None or not math.isfinite(value):
                missing += 1
            else:
                values.append(value)
    with np.errstate(invalid="ignore", divide="ignore"):
        costs: FloatArray = np.where(counts > 0, totals / np.maximum(counts, 1), np.nan)
    return costs, values, missing


def _latencies(db: Store, run_id: str) -> tuple[list[float], int]:
    _, values, missing = _per_case(db, run_id, {}, "latency_ms")
    return values, missing


def _not_simultaneous(decision: DecisionRow) -> DecisionRow:
    """A rule the board cannot decide on its own intervals: blocked, for a person to look at."""
    return decision.model_copy(update={"state": RuleState.MANUAL_REVIEW})


def build_board(db: Store, inputs: Sequence[BoardInput], baseline: str, policy: Policy,
                criterion: str, cost_cap: float | None) -> Board:
    """The board of `inputs` (the baseline's among them) against `baseline` (see the module's
    text).

    Raises:
        UsageError: a candidate that does not hold the baseline's cases or trials; a criterion
            the runs do not have; a case's cost above the cap.
    """
    sides = {i.run_id: read_side(db, i.run_id) for i in inputs}
    base = sides[baseline]
    for side in sides.values():
        _check_same_cases(base, side)
    if base.metric(criterion) is None or any(s.metric(criterion) is None
                                             for s in sides.values()):
        known = ", ".join(m.id for m in base.metrics) or "none"
        raise UsageError(f"--criterion {criterion}: the runs have no such criterion (theirs: "
                         f"{known}); name one of them")
    rate_ids: list[str] = []
    quantile_ids: list[str] = []
    ni_ids: list[str] = []
    quantiles = {m["id"]: m for m in base.suite.get("metrics") or ()}
    for rule in policy.rules:
        if rule.kind == "interval" and rule.metric is not None:
            if rule.metric in quantiles:
                quantile_ids.append(rule.metric)
            elif base.metric(rule.metric) is not None:
                rate_ids.append(rule.metric)
        elif rule.kind == "non_inferiority" and rule.metric is not None \
                and base.metric(rule.metric) is not None:
            ni_ids.append(rule.metric)
    rate_ids = list(dict.fromkeys([criterion, *rate_ids]))
    quantile_ids, ni_ids = list(dict.fromkeys(quantile_ids)), list(dict.fromkeys(ni_ids))
    k = len(inputs)
    size = k * (len(rate_ids) + len(quantile_ids) + (cost_cap is not None)) \
        + (k - 1) * len(ni_ids)
    each = each_level(policy.confidence_level, size)
    order = {i.run_id: [sides[i.run_id].position()[case_id] for case_id in
                        (base.ids[r] for r in _case_order(base))] for i in inputs}
    position = {base.ids[r]: at for at, r in enumerate(_case_order(base))}
    base_values = {m: _values(base, base.metric(m), order[baseline])  # type: ignore[arg-type]
                   for m in ni_ids}
    rows: list[BoardRow] = []
    warnings: list[str] = []
    for item in inputs:
        side = sides[item.run_id]
        metrics: dict[str, Figure] = {}
        for metric_id in rate_ids:
            spec = side.metric(metric_id)
            assert spec is not None
            metrics[metric_id] = _figure(case_rate(_values(side, spec, order[item.run_id]),
                                                   each))
        costs, _, _ = _per_case(db, item.run_id, position, None)
        for metric_id in quantile_ids:
            spec_q = quantiles[metric_id]
            _, values, missing = _per_case(db, item.run_id, {}, str(spec_q["source"]))
            metrics[metric_id] = _figure(quantile_interval(values, missing,
                                                           float(spec_q["quantile"]), each))
        difference = {} if item.run_id == baseline else {
            m: _figure(paired_difference(_values(side, side.metric(m), order[item.run_id]),  # type: ignore[arg-type]
                                         base_values[m], each)) for m in ni_ids}
        if cost_cap is None:
            cost = MeanInterval(float(np.nanmean(costs)) if np.any(~np.isnan(costs)) else None,
                                None, None, "")
        else:
            over = np.flatnonzero(costs > cost_cap)
            if over.size:
                case_id = base.ids[_case_order(base)[int(over[0])]]
                raise UsageError(
                    f"run {item.run_id}: case {case_id!r} cost {costs[over[0]]:g}, above the "
                    f"cost cap {cost_cap:g}: the cost interval holds only for costs within the "
                    "cap, so the board refuses it; raise `cost_cap:` in the policy (or "
                    "--cost-cap) to a cost no case can exceed")
            cost = cost_interval(costs, cost_cap, each)
        success = metrics[criterion]
        if item.imported:  # (played back from a record: the time of the playing)
            latency = {name: Figure(None, None, None) for name in LATENCY_QUANTILES}
        else:
            values, missing = _latencies(db, item.run_id)
            latency = {name: _figure(quantile_interval(values, missing, q, each))
                       for name, q in LATENCY_QUANTILES.items()}
        decisions, unsure = _decisions(item, policy, baseline, metrics, difference)
        rows.append(BoardRow(
            run_id=item.run_id, variant=item.variant,
            system=f"{side.record['system_name']} {side.record['system_version']}",
            metrics=metrics, difference=difference, cost_per_case=_figure(cost),
            cost_per_success=_figure(per_success(
                cost, MeanInterval(success.estimate, success.lower, success.upper, ""))),
            latency=latency,
            can_ship=gate(policy, [d.state for d in decisions]).action != GateAction.BLOCK,
            decisions=decisions,
            blocked_by=[d.rule for d in decisions if d.state in policy.block_on]))
        for rule_id in unsure:
            warnings.append(f"{rows[-1].name}: rule {rule_id} reads an interval the board "
                            "cannot take at the family's level (a judged or clustered "
                            "metric), so it blocks (MANUAL_REVIEW); decide it with "
                            f"`oloproof gate {item.run_id}`")
    if cost_cap is None:
        warnings.append("no cost cap is declared (`cost_cap:` in the policy, or --cost-cap): "
                        "cost per case has no interval, so no candidate is shown dominated "
                        "(docs/board.md#cost-per-case)")
        beaten: dict[str, tuple[str, ...]] = {r.run_id: () for r in rows}
    else:
        beaten = dominated_by([(r.run_id, _mean(r.metrics[criterion]), _mean(r.cost_per_case))
                               for r in rows])
    done = [BoardRow(r.run_id, r.variant, r.system, r.metrics, r.difference, r.cost_per_case,
                     r.cost_per_success, r.latency, r.can_ship, r.decisions, r.blocked_by,
                     beaten[r.run_id]) for r in rows]
    return Board(baseline=baseline, level=policy.confidence_level, each_level=each,
                 family_size=size, method=SIMULTANEOUS_METHOD, criterion=criterion,
                 cost_cap=cost_cap, candidates=done, warnings=warnings,
                 quantile_metrics=tuple(quantile_ids))


def _mean(found: Figure) -> MeanInterval:
    return MeanInterval(found.estimate, found.lower, found.upper, "")


def _decisions(item: BoardInput, policy: Policy, baseline: str, metrics: dict[str, Figure],
               difference: dict[str, Figure]) -> tuple[list[DecisionRow], list[str]]:
    """The policy's rules for one candidate, each interval and non_inferiority rule decided on
    the board's interval (see the module's text); the others as the run's own gate decides
    them. The baseline's non_inferiority rules are left out: it is what they compare with.
    With them, the rules the board blocked because it cannot hold their interval."""
    document = item.document
    own = {d.rule: d for d in document.decisions}
    rows = {m.id: m for m in document.metrics}
    checked = {t.transform: t.checked for t in document.transforms}
    comparisons: dict[str, CriterionComparison] = {
        c.criterion: c for c in (document.baseline.criteria if document.baseline else [])}
    out: list[DecisionRow] = []
    unsure: list[str] = []

    def add(decided: DecisionRow, simultaneous: bool) -> None:
        if not simultaneous and decided.state == RuleState.PASS:
            unsure.append(decided.rule)
            decided = _not_simultaneous(decided)
        out.append(decided)

    for rule in policy.rules:
        if rule.kind == "non_inferiority":
            if item.run_id == baseline:
                continue
            found = difference.get(rule.subject)
            paired = comparisons.get(rule.subject)
            if found is None or paired is None:
                out.append(own[rule.id])
                continue
            decided = decide_non_inferiority(
                rule, paired.model_copy(update={"lower": found.lower, "upper": found.upper,
                                                "difference": found.estimate}),
                baseline, policy)
            add(decided, not paired.approximate)
            continue
        shown = metrics.get(rule.subject) if rule.kind == "interval" else None
        row = rows.get(rule.subject)
        if shown is None or row is None:
            out.append(own[rule.id])
            continue
        decided = decide_rule(rule, row.model_copy(update={"lower": shown.lower,
                                                           "upper": shown.upper}),
                              policy, checked)
        add(decided, not (isinstance(row, RateRow) and (row.judge is not None
                                                         or row.approximate)))
    return out, unsure


__all__ = ["Board", "BoardInput", "BoardRow", "Figure", "build_board"]
