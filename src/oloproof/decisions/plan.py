"""What it would take to decide (SPEC §18): for each undecided rule, a projection.

For an interval rule on a pass rate whose per-case values are 0 or 1, the projection is
`stats.rate_projection`: the smallest total of observed cases whose exact interval *at the
same rate* (the estimate passed / observed) would decide the rule, and the state it would reach
— or that no number would (the estimate equals the threshold, or the limit is passed). It
assumes the rate stays where it is; a rate moves as cases are added, so it is a projection,
never a promise. It runs nothing.

No projection is made where the interval is not a function of the rate and the number of
cases — fractional per-case values (trials), intervals over clusters, quantiles, the paired
difference of a non_inferiority rule — nor where something other than more cases decides
(missing cases of an observed-count rule, an unchecked transform); each row says what would.
"""

from __future__ import annotations

from collections.abc import Sequence

from oloproof.document import (
    DecisionReason,
    DecisionRow,
    MetricRow,
    Plan,
    PlanRow,
    RateRow,
    RuleState,
)
from oloproof.stats import RATE_METHOD, rate_projection
from oloproof.suite.policy import Policy

R = DecisionReason

PROJECTION_NOTE = (
    "A projection, not a promise: each total assumes the pass rate stays exactly at its "
    "current estimate as cases are added, which it will not; it says how many observed cases "
    "the exact interval would need at that rate. Nothing was run."
)

_NO_MORE = {
    "estimate_equals_threshold": "the estimate equals the threshold: at this rate no number of "
                                 "cases would settle it",
    "beyond_limit": "at this rate no number of cases up to a billion would settle it: the "
                    "estimate is within rounding of the threshold",
    "no_observations": "no observed case: there is no rate to project from",
}


def _projected(rule_id: str, decision: DecisionRow, metric: RateRow, level: float) -> PlanRow:
    threshold = float(decision.threshold) if decision.threshold is not None else 0.0
    if decision.threshold_side == "min":
        projection = rate_projection(metric.passed, metric.observed, level, minimum=threshold)
    else:
        projection = rate_projection(metric.passed, metric.observed, level, maximum=threshold)
    base = PlanRow(rule=rule_id, metric=decision.metric, reasons=list(decision.reasons),
                   observed=metric.observed, passed=metric.passed, estimate=metric.estimate,
                   threshold=threshold, method=projection.method)
    if projection.total is None:
        reason = projection.reason or "beyond_limit"
        return base.model_copy(update={"reason": reason, "note": _NO_MORE.get(reason, reason)})
    state = RuleState(projection.state) if projection.state else None
    more = max(projection.total - metric.observed, 0)
    note = (f"{projection.total} observed cases at {metric.passed}/{metric.observed} would "
            f"reach {state}: {more} more than now")
    if metric.missing:
        note += (f"; the {metric.missing} missing case(s) widen today's interval and are not "
                 "counted (observed cases only)")
    return base.model_copy(update={"total": projection.total, "more": more, "state": state,
                                   "note": note})


def _not_projected(rule_id: str, decision: DecisionRow, metric: MetricRow | None,
                   reason: str, note: str) -> PlanRow:
    rate = metric if isinstance(metric, RateRow) else None
    return PlanRow(rule=rule_id, metric=decision.metric, reasons=list(decision.reasons),
                   observed=rate.observed if rate else None,
                   passed=rate.passed if rate else None,
                   estimate=rate.estimate if rate else None,
                   threshold=float(decision.threshold) if decision.threshold is not None
                   else None,
                   reason=reason, note=note)


def plan_row(decision: DecisionRow, metric: MetricRow | None, level: float) -> PlanRow:
    """The projection (or why there is none) for one INSUFFICIENT_EVIDENCE decision."""
    reason = decision.reasons[0] if decision.reasons else None
    rule = decision.rule
    if decision.kind == "non_inferiority":
        return _not_projected(rule, decision, None, "paired_difference", (
            "no projection for a non_inferiority rule: its paired difference interval "
            "depends on how many pairs broke and how many were fixed (with trials or "
            "clusters, on every pair), not only on the difference and a count; more paired "
            "cases (fewer changed or missing ones) narrow it"))
    if reason == R.MISSING_COULD_CHANGE_OUTCOME:
        return _not_projected(rule, decision, metric, "missing_cases", (
            f"no projection needed: the {decision.missing} missing case(s) decide it — "
            "running them (they errored or were not judged) settles the rule"))
    if reason == R.TRANSFORM_NOT_CHECKED:
        return _not_projected(rule, decision, metric, "transform_not_checked", (
            "no projection: more cases cannot settle it; people's labels that check the "
            "transform (`oloproof labels export`) can"))
    if reason == R.APPROXIMATE_METHOD_NOT_PERMITTED:
        return _not_projected(rule, decision, metric, "approximate_method_not_permitted", (
            "no projection: the interval over clusters is approximate and the policy does not "
            "allow approximate methods"))
    if reason == R.INSUFFICIENT_CLUSTERS:
        return _not_projected(rule, decision, metric, "insufficient_clusters", (
            "no projection: the interval over clusters needs more clusters, not more cases of "
            "the same ones"))
    if not isinstance(metric, RateRow):
        return _not_projected(rule, decision, metric, "quantile", (
            "no projection for a quantile: its order-statistic interval depends on the values "
            "themselves, not only on a rate"))
    if metric.method != RATE_METHOD or metric.approximate:
        return _not_projected(rule, decision, metric, "fractional_values", (
            "no projection for this metric: its per-case values are fractions (shares of "
            "trials), whose betting interval depends on every value and their order, not only "
            "on the estimate and a count"))
    if reason == R.NO_OBSERVATIONS or not metric.observed:
        return _not_projected(rule, decision, metric, "no_observations",
                              _NO_MORE["no_observations"])
    return _projected(rule, decision, metric, level)


def plan_decisions(run_id: str, policy: Policy, decisions: Sequence[DecisionRow],
                   metrics: Sequence[MetricRow]) -> Plan:
    """SPEC §18: each INSUFFICIENT_EVIDENCE decision with its projection (see the module)."""
    by_id = {m.id: m for m in metrics}
    rows = [plan_row(d, by_id.get(d.metric), policy.confidence_level) for d in decisions
            if d.state == RuleState.INSUFFICIENT_EVIDENCE]
    return Plan(run_id=run_id, confidence_level=policy.confidence_level, rules=rows,
                decided=len(decisions) - len(rows), note=PROJECTION_NOTE)
