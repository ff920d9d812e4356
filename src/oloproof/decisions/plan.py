"""What it would take to decide (docs/compare.md#what-it-would-take-to-decide-oloproof-plan): for
each undecided rule, a projection.

For an interval rule on a pass rate over cases, two totals of observed cases:

- **at the same rate**: the smallest total whose interval *at the same rate* (the estimate)
  would decide the rule, and the state it would reach — `stats.rate_projection` for the exact
  interval of 0/1 values, `stats.mean_projection` for the Bentkus interval of fractional ones
  (a case's share of its trials) — or that no number would (the estimate equals the threshold,
  or the limit is passed); `chance` is the chance that the run continued to that total reaches
  it (about half);
- **for an 80% chance**: `stats.assured_projection`, a total at which the run continued reaches
  the decision at least 80% of the time — or that no total does (`out_of_reach`: the run leaves
  more than a 20% chance that the rate is on the other side of the threshold).

Every chance is assurance (`stats.assurance`): the rate drawn from what the run says about it
(its confidence distribution), the run continued with its observed cases kept — exact for 0/1
values, simulated by the Bayesian bootstrap for fractions. Not the chance at any one true rate:
at a true rate at the threshold a continued run almost never decides. The first total assumes
the rate stays where it is; they are projections, never promises. Nothing is run.

A rule on a judged criterion (docs/compare.md#a-judged-criterion) is settled by people's labels:
its totals count labelled cases — those at which the labels alone, their exact interval at the
labels' rate, would decide it, with the chance (assurance over what the labels say about the
rate) and an 80% total as above — and, beside them, the labelled cases at which the corrected
interval the rule decides on, continued at the same rates, would (`stats.corrected_projection`),
each with the cases that hold them at the run's share of labelled cases.

No projection is made where the interval is not one over independent cases — intervals over
clusters (more clusters, not cases, would narrow them), quantiles, the paired difference of a
non_inferiority rule — nor where something other than more cases decides (missing cases of an
observed-count rule, an unchecked transform); each row says what would.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from oloproof.document import (
    DecisionReason,
    DecisionRow,
    MetricRow,
    Plan,
    PlanRow,
    RateRow,
    RuleState,
)
from oloproof.stats import (
    ASSURANCE,
    BENTKUS_METHOD,
    JUDGED_LABELS_LIMIT,
    RATE_METHOD,
    AssuredProjection,
    assured_projection,
    continued_chance,
    corrected_projection,
    mean_projection,
    percent,
    rate_projection,
)
from oloproof.suite.policy import Policy

R = DecisionReason

PROJECTION_NOTE = (
    "A projection, not a promise. The first total assumes the pass rate stays exactly at its "
    "current estimate as cases are added, which it will not. Each chance is the chance that "
    "this run, continued with its observed cases kept, reaches the decision, averaged over the "
    "rates this run leaves plausible (its confidence distribution) — not at any one true rate: "
    "near the threshold a continued run decides far less often. The second total decides at "
    "least 80% of the time in that sense, when any does. Both count observed cases (with "
    "trials, cases at the same number of trials). Nothing was run."
)

#: The note of a plan whose undecided rules are all sequential (a pytest session's tests,
#: docs/pytest.md#how-a-marked-test-decides): its totals are trials of one test, not cases.
SEQUENTIAL_PROJECTION_NOTE = (
    "A projection, not a promise. Each total counts the trials of one case (a pytest test): "
    "the number at which the exact interval at the pass share seen would decide, if the share "
    "stayed exactly there, which it will not; its chance is the exact chance that the rule, "
    "given that many trials, decides when the true pass rate is that share. Nothing was run."
)

_NO_MORE = {
    "estimate_equals_threshold": "the estimate equals the threshold: at this rate no number of "
                                 "cases would settle it",
    "beyond_limit": "at this rate no number of cases up to a billion would settle it: the "
                    "estimate is within rounding of the threshold",
    "no_observations": "no observed case: there is no rate to project from",
}


def _values_in_words(metric: RateRow) -> str:
    """What one case's value is, for a rate over cases with trials."""
    trials = f"its {metric.trials} trials" if metric.trials else "its trials"
    if metric.metric_type == "pass_hat_k":
        return f"each case's pass^{metric.k} (every one of {metric.k} trials passing) from {trials}"
    if metric.metric_type == "pass_at_k":
        return f"each case's pass@{metric.k} (one of {metric.k} trials passing) from {trials}"
    return f"each case's share of {trials} that passed"


def _projected(rule_id: str, decision: DecisionRow, metric: RateRow, level: float,
               values: Sequence[float] | None) -> PlanRow:
    threshold = float(decision.threshold) if decision.threshold is not None else 0.0
    low = threshold if decision.threshold_side == "min" else None
    high = None if decision.threshold_side == "min" else threshold
    if values is None:  # 0/1 per-case values: the exact interval
        observed, passed = metric.observed, metric.passed
        rate = passed / observed
        projection = rate_projection(passed, observed, level, minimum=low, maximum=high)
        words = None
    else:  # fractions: the Bentkus interval, the chance simulated from the values
        observed, passed = len(values), None
        rate = metric.estimate if metric.estimate is not None else sum(values) / observed
        projection = mean_projection(rate, level, minimum=low, maximum=high)
        words = _values_in_words(metric)
    base = PlanRow(rule=rule_id, metric=decision.metric, reasons=list(decision.reasons),
                   observed=observed, passed=passed, estimate=metric.estimate,
                   threshold=threshold, method=projection.method, values=words)
    if projection.total is None:
        reason = projection.reason or "beyond_limit"
        return base.model_copy(update={"reason": reason, "note": _NO_MORE.get(reason, reason)})
    state = RuleState(projection.state) if projection.state else None
    more = max(projection.total - observed, 0)
    if values is None:
        chance, method = continued_chance(projection.total, level, passed=passed,
                                          observed=observed, minimum=low, maximum=high)
        likely = assured_projection(level, passed=passed, observed=observed, minimum=low,
                                    maximum=high)
    else:
        chance, method = continued_chance(projection.total, level, values=values,
                                          minimum=low, maximum=high)
        likely = assured_projection(level, values=values, minimum=low, maximum=high)
    now = f"{passed}/{observed}" if passed is not None else \
        f"a mean of {percent(rate)} over {observed} cases"
    note = (f"{projection.total} observed cases at {now} would reach {state}: {more} more than "
            f"now (continued to that many, the run reaches it with a {percent(chance)} chance, "
            f"the rate drawn from what the run says about it)")
    update: dict[str, object] = {"total": projection.total, "more": more, "state": state,
                                 "chance": chance, "chance_method": method,
                                 "chance_assumption": ASSURANCE,
                                 "reachable": likely.reachable}
    note += _likely(likely, observed, update, "observed cases", "cases", "the run leaves",
                    f", where no number of cases reaches {state}")
    if metric.missing:
        note += (f"; the {metric.missing} missing case(s) widen today's interval and are not "
                 "counted (observed cases only)")
    update["note"] = note
    return base.model_copy(update=update)


def _likely(likely: AssuredProjection, now: int, update: dict[str, object], unit: str,
            counted: str, who: str, beyond: str = "") -> str:
    """The 80% total into `update`, and what the note says of it: the total and its chance,
    or why no number of `counted` gives 80% (`who` leaves the chance it leaves)."""
    if likely.total is not None:
        update.update(likely_total=likely.total, likely_more=max(likely.total - now, 0),
                      likely_chance=likely.chance, likely_method=likely.method)
        return (f"; {likely.total} {unit} would reach it with a "
                f"{percent(likely.chance or 0.0)} chance ({likely.method})")
    if likely.reason == "out_of_reach" and likely.reachable is not None:
        return (f"; no number of {counted} gives an 80% chance: {who} a "
                f"{percent(1.0 - likely.reachable)} chance that the rate is on the other side "
                f"of the threshold{beyond}")
    return ""


def _not_projected(rule_id: str, decision: DecisionRow, metric: MetricRow | None,
                   reason: str, note: str, values: Sequence[float] | None = None) -> PlanRow:
    rate = metric if isinstance(metric, RateRow) else None
    threshold = float(decision.threshold) if decision.threshold is not None else None
    row = PlanRow(rule=rule_id, metric=decision.metric, reasons=list(decision.reasons),
                  observed=rate.observed if rate else None,
                  passed=rate.passed if rate else None,
                  estimate=rate.estimate if rate else None, threshold=threshold,
                  reason=reason, note=note)
    if rate is not None and values is not None:
        # Fractional per-case values: count cases, not trials, and say what a value is.
        row = row.model_copy(update={"observed": len(values), "passed": None,
                                     "values": _values_in_words(rate)})
    return row


def _sequential_plan(decision: DecisionRow) -> PlanRow:
    """An undecided sequential rule (docs/pytest.md#how-a-marked-test-decides): the projection
    its decision carries — the trials at which the exact interval at the pass share seen would
    decide, and the exact chance the rule with that many trials decides at that share — in
    trials, not cases (its `method` says so)."""
    counts = (f"{decision.passed or 0} passed, {decision.failed or 0} failed"
              + (f", {decision.errored} errored" if decision.errored else "")
              + f" of {decision.trials_run} trials (at most {decision.trials})")
    base = PlanRow(rule=decision.rule, metric=decision.metric, reasons=list(decision.reasons),
                   observed=decision.trials_run, passed=decision.passed,
                   threshold=None if decision.threshold is None else float(decision.threshold),
                   method=decision.method or "")
    if R.TRIALS_NOT_FINISHED in decision.reasons:
        return base.model_copy(update={"reason": "trials_not_finished", "note": (
            f"now {counts}; no projection needed: the case's trials stopped before the rule "
            "decided, and running the rest of them settles it or says how far it is")})
    if decision.more_trials is None or decision.trials is None:
        reason = decision.projection_reason or "no_observations"
        return base.model_copy(update={"reason": reason, "note": (
            f"now {counts}; no projection: {_NO_SEQUENTIAL.get(reason, reason)}")})
    total = decision.trials + decision.more_trials
    note = (f"now {counts}; projected: at the pass share seen, {total} trials "
            f"({decision.more_trials} more than the rule's {decision.trials}) would decide "
            "the exact interval")
    if decision.more_trials_chance is not None:
        note += (f" — the sequential rule with trials={total} decides with a "
                 f"{percent(decision.more_trials_chance)} chance at that share")
    return base.model_copy(update={"total": total, "more": decision.more_trials,
                                   "chance": decision.more_trials_chance,
                                   "chance_method": decision.method, "note": note})


_NO_SEQUENTIAL = {
    "errored_trials": "the errored trials leave the minimum between the share of passes and "
                      "the share of passes or errored; fixing what errors settles it",
    "share_equals_minimum": "the pass share seen equals the minimum: at that share no number "
                            "of trials decides",
    "beyond_limit": "more than 20,000 trials at the pass share seen",
    "no_observations": "no trial ran",
}


def _judged(decision: DecisionRow, metric: RateRow, level: float,
            reason: DecisionReason | str | None) -> PlanRow:
    """A rule on a judged criterion: the labelled cases that would settle it (see the
    module's text), or why none is projected."""
    judge = metric.judge
    assert judge is not None
    labelled = judge.both_pass + judge.judge_only + judge.person_only + judge.both_fail
    people = judge.both_pass + judge.person_only
    criterion = metric.id
    base = _not_projected(decision.rule, decision, metric, "", "").model_copy(update={
        "reason": None, "unit": LABELLED, "observed": labelled, "passed": people,
        "estimate": people / labelled if labelled else None,
        "cases": metric.observed + metric.missing})
    sample = (f"`oloproof labels sample --criterion {criterion} --n N -o FILE` draws more "
              "of the suite's cases (the same seed keeps the ones drawn), "
              "`oloproof labels review FILE` labels them")
    if reason == R.JUDGE_NOT_CHECKED or judge.status == "uncalibrated":
        return base.model_copy(update={"reason": "judge_not_checked", "note": (
            f"no projection yet: the judge is not checked against people ({judge.why}); "
            f"until at least 10 of its sampled cases are labelled, its verdicts decide "
            f"nothing — {sample}")})
    if metric.trials and metric.trials > 1:
        return base.model_copy(update={"reason": "judged_with_trials", "note": (
            "no projection for a judged criterion with trials: a case's value is its share "
            "of agreeing trials, which more labels narrow unevenly")})
    threshold = float(decision.threshold) if decision.threshold is not None else 0.0
    low = threshold if decision.threshold_side == "min" else None
    high = None if decision.threshold_side == "min" else threshold
    if not labelled:
        return base.model_copy(update={"reason": "no_observations",
                                       "note": _NO_MORE["no_observations"]})
    projection = rate_projection(people, labelled, level, minimum=low, maximum=high)
    corrected = corrected_projection(
        judge.both_pass, judge.judge_only, judge.person_only, judge.both_fail,
        judge_passed=metric.passed, judge_observed=metric.observed,
        judge_missing=metric.missing, level=level, minimum=low, maximum=high,
        approximate=bool(metric.approximate))
    cases = metric.observed + metric.missing
    shared = {"threshold": threshold, "method": projection.method,
              "corrected_total": corrected.labelled, "corrected_cases": corrected.cases,
              "corrected_reason": corrected.reason}
    after = (f"the corrected interval the rule decides on ({metric.method}), continued at "
             "the same rates, " + (
                 f"reaches it at {corrected.labelled} labelled cases ({corrected.cases} cases)"
                 if corrected.labelled is not None else
                 "has no estimate to continue: a verdict of the judge has none of its cases "
                 "labelled" if corrected.reason == "stratum_unlabelled" else
                 f"reaches it at no number of labelled cases up to {JUDGED_LABELS_LIMIT:,}"))
    if projection.total is None:
        why = projection.reason or "beyond_limit"
        return base.model_copy(update=shared | {"reason": why, "note": (
            f"{_NO_MORE.get(why, why)} (people's labels: {people}/{labelled}); {after}")})
    state = RuleState(projection.state) if projection.state else None
    total = projection.total
    more = max(total - labelled, 0)
    chance, method = continued_chance(total, level, passed=people, observed=labelled,
                                      minimum=low, maximum=high)
    likely = assured_projection(level, passed=people, observed=labelled, minimum=low,
                                maximum=high)
    cases_total = math.ceil(cases * total / labelled)
    update: dict[str, object] = shared | {
        "total": total, "more": more, "state": state, "chance": chance,
        "chance_method": method, "chance_assumption": LABELS_ASSURANCE,
        "reachable": likely.reachable, "cases_total": cases_total}
    note = (f"people's labels decide it: at their rate ({people}/{labelled} labelled cases "
            f"passed), {total} labelled cases would reach {state} on the labels alone (their "
            f"exact interval): {more} more than now, {cases_total} cases at this run's share "
            f"({labelled} labelled of {cases}); continued to that many labels, the run reaches "
            f"it with a {percent(chance)} chance, the rate drawn from what the labels say")
    note += _likely(likely, labelled, update, "labelled cases", "labels", "the labels leave")
    update["note"] = f"{note}. {after[0].upper()}{after[1:]}. {sample[0].upper()}{sample[1:]}"
    return base.model_copy(update=update)


#: The unit a judged rule's plan counts.
LABELLED = "labelled cases"
#: The assumption a judged rule's chances rest on, in words.
LABELS_ASSURANCE = ("the rate drawn from what people's labels say about it (their confidence "
                    "distribution), the labels continued with those made kept")


def plan_row(decision: DecisionRow, metric: MetricRow | None, level: float,
             values: Sequence[float] | None = None) -> PlanRow:
    """The projection (or why there is none) for one INSUFFICIENT_EVIDENCE decision.

    `values` are the metric's observed per-case values where they are fractions (a run with
    trials): the projection then uses the Bentkus interval and simulates from them."""
    reason = decision.reasons[0] if decision.reasons else None
    rule = decision.rule
    fractional = isinstance(metric, RateRow) and metric.method == BENTKUS_METHOD
    shown = values if fractional else None

    def skip(why: str, note: str) -> PlanRow:
        return _not_projected(rule, decision, metric, why, note, shown)

    if decision.kind == "max_errored":  # undecided only when there is nothing to count
        return _not_projected(rule, decision, None, "no_executions", (
            "no projection: the run holds no execution to count errors among; running the "
            "suite settles the rule"))
    if decision.kind == "sequential":
        return _sequential_plan(decision)
    if decision.kind == "max_simulator_failures":  # (the same: nothing to count)
        return _not_projected(rule, decision, None, "no_conversations", (
            "no projection: the run holds no simulated conversation to count the "
            "simulator's failures among; running cases with a simulated user settles the "
            "rule"))
    if decision.kind == "non_inferiority":
        return _not_projected(rule, decision, None, "paired_difference", (
            "no projection for a non_inferiority rule: its paired difference interval "
            "depends on how many pairs broke and how many were fixed (with trials or "
            "clusters, on every pair), not only on the difference and a count; more paired "
            "cases (fewer changed or missing ones) narrow it"))
    if reason == R.MISSING_COULD_CHANGE_OUTCOME:
        return skip("missing_cases", (
            f"no projection needed: the {decision.missing} missing case(s) decide it — "
            "running them (they errored or were not judged) settles the rule"))
    if reason == R.TRANSFORM_NOT_CHECKED:
        return skip("transform_not_checked", (
            "no projection: more cases cannot settle it; people's labels that check the "
            "transform (`oloproof labels export`) can"))
    if reason == R.APPROXIMATE_METHOD_NOT_PERMITTED:
        return skip("approximate_method_not_permitted", (
            "no projection: the interval over clusters is approximate and the policy does not "
            "allow approximate methods"))
    if reason == R.INSUFFICIENT_CLUSTERS:
        return skip("insufficient_clusters", (
            "no projection: the interval over clusters needs more clusters, not more cases of "
            "the same ones"))
    if isinstance(metric, RateRow) and metric.judge is not None and metric.metric_type is None:
        return _judged(decision, metric, level, reason)
    if not isinstance(metric, RateRow):
        return skip("quantile", (
            "no projection for a quantile: its order-statistic interval depends on the values "
            "themselves, not only on a rate"))
    if metric.approximate:
        return skip("over_clusters", (
            "no projection for an interval over clusters: it narrows with more clusters, and "
            "how a new cluster's cases would spread is not something this run can say"))
    if metric.method not in (RATE_METHOD, BENTKUS_METHOD) or (fractional and values is None):
        return skip("fractional_values", (
            f"no projection for this metric: its interval ({metric.method}) is not one this "
            "plan projects"))
    if reason == R.NO_OBSERVATIONS or not metric.observed or (fractional and not values):
        return skip("no_observations", _NO_MORE["no_observations"])
    return _projected(rule, decision, metric, level, shown)


def plan_decisions(run_id: str, policy: Policy, decisions: Sequence[DecisionRow],
                   metrics: Sequence[MetricRow],
                   values: Mapping[str, Sequence[float]] | None = None) -> Plan:
    """docs/compare.md#what-it-would-take-to-decide-oloproof-plan: each INSUFFICIENT_EVIDENCE
    decision with its projection (see the module).

    `values`: per metric, its observed per-case values where they are fractions (a run with
    trials; `Analysis.observed_values`)."""
    by_id = {m.id: m for m in metrics}
    found = values or {}
    undecided = [d for d in decisions if d.state == RuleState.INSUFFICIENT_EVIDENCE]
    rows = [plan_row(d, by_id.get(d.metric), policy.confidence_level, found.get(d.metric))
            for d in undecided]
    sequential = bool(undecided) and all(d.kind == "sequential" for d in undecided)
    return Plan(run_id=run_id, confidence_level=policy.confidence_level, rules=rows,
                decided=len(decisions) - len(rows),
                note=SEQUENTIAL_PROJECTION_NOTE if sequential else PROJECTION_NOTE)
