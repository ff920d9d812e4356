"""Rules → states → gate → exit code (docs/configuration.md#states-reasons-and-exit-codes).

Pure: a rule and a metric row (as analysis produced it) in, a decision out. Decisions are made
on the interval, never on the estimate, and each decision carries the numbers it compared (the
bound and the threshold, or the failures and the limit), so a report can print the comparison
that was made.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Literal

from oloproof.document import (
    BaselineSummary,
    Conversations,
    CriterionComparison,
    DecisionReason,
    DecisionRow,
    Executions,
    ExitCode,
    Gate,
    GateAction,
    MetricRow,
    RateRow,
    RuleState,
)
from oloproof.stats.binomial import RATE_METHOD
from oloproof.suite.policy import Policy, Rule

if TYPE_CHECKING:
    from oloproof.stats.sequential import SequentialDecision

MIN_CLUSTERS = 20

# The names the package exported before the document was typed.
Decision = DecisionRow

R = DecisionReason
S = RuleState


def _interval(rule: Rule, state: RuleState, reason: DecisionReason, metric: MetricRow | None,
              side: Literal["lower", "upper"]) -> DecisionRow:
    threshold_side: Literal["min", "max"] = "min" if rule.min is not None else "max"
    threshold = rule.min if rule.min is not None else rule.max
    bound = None if metric is None else (metric.lower if side == "lower" else metric.upper)
    return DecisionRow(rule=rule.id, metric=rule.subject, state=state, reasons=[reason],
                       kind="interval", bound=bound, bound_side=side, threshold=threshold,
                       threshold_side=threshold_side)


def decide_rule(
    rule: Rule, metric: MetricRow, policy: Policy, checked_transforms: dict[str, bool]
) -> DecisionRow:
    """The state of one rule on one metric row."""
    # The bound a PASS needs: the lower for a minimum, the upper for a maximum.
    needed: Literal["lower", "upper"] = "lower" if rule.min is not None else "upper"
    other: Literal["lower", "upper"] = "upper" if needed == "lower" else "lower"

    def out(state: RuleState, reason: DecisionReason,
            side: Literal["lower", "upper"] = needed) -> DecisionRow:
        if rule.kind == "observed_count":
            return _count_row(rule, metric, state, reason)
        return _interval(rule, state, reason, metric, side)

    transform = metric.transform if isinstance(metric, RateRow) else None
    if transform is not None and not checked_transforms.get(transform, False):
        return out(S.INSUFFICIENT_EVIDENCE, R.TRANSFORM_NOT_CHECKED)
    judge = metric.judge if isinstance(metric, RateRow) else None
    if judge is not None:  # a judged criterion (docs/judges.md): its judge checked first
        if judge.status == "uncalibrated":
            return out(S.INSUFFICIENT_EVIDENCE, R.JUDGE_NOT_CHECKED)
        if judge.status == "disagrees":
            return out(S.MANUAL_REVIEW, R.JUDGE_DISAGREES_WITH_PEOPLE)
    if rule.kind == "observed_count":
        return _observed_count(rule, metric)
    # Over declared or metamorphic clusters (docs/concepts.md#clusters); a case's own trials
    # never make a row approximate: their intervals are valid for every number of cases.
    # A judged criterion's PPI++ (docs/judges.md#an-approximate-interval-ppi) counted its labels
    # and disagreements before it was used: no clusters to count.
    if metric.approximate:
        if not policy.allow_approximate_methods:
            return out(S.MANUAL_REVIEW, R.APPROXIMATE_METHOD_NOT_PERMITTED)
        if judge is None and int(metric.clusters or 0) < MIN_CLUSTERS:
            return out(S.INSUFFICIENT_EVIDENCE, R.INSUFFICIENT_CLUSTERS)
    if not metric.observed:
        return out(S.INSUFFICIENT_EVIDENCE, R.NO_OBSERVATIONS)
    decided = _on_interval(rule, metric.lower, metric.upper)
    if decided is not None:
        state, reason = decided
        return out(state, reason, needed if state == S.PASS else other)
    undecided = out(S.INSUFFICIENT_EVIDENCE, R.INTERVAL_OVERLAPS_THRESHOLD)
    if _errors_hide_interval(rule, metric, policy.confidence_level):
        undecided.reasons.append(R.ERRORED_EXECUTIONS_HIDE_OUTCOME)
    return undecided


def _on_interval(rule: Rule, lower: float | None, upper: float | None
                 ) -> tuple[RuleState, DecisionReason] | None:
    """PASS or FAIL on this interval, with the reason, or None: it overlaps the threshold."""
    if rule.min is not None:
        t = rule.min
        if lower is not None and lower >= t:
            return S.PASS, R.LOWER_BOUND_MEETS_MINIMUM
        if upper is not None and upper < t:
            return S.FAIL, R.UPPER_BOUND_BELOW_MINIMUM
        return None
    t = float(rule.max if rule.max is not None else 0)
    if upper is not None and upper <= t:
        return S.PASS, R.UPPER_BOUND_MEETS_MAXIMUM
    if lower is not None and lower > t:
        return S.FAIL, R.LOWER_BOUND_ABOVE_MAXIMUM
    return None


def _errored_missing(metric: MetricRow) -> int:
    """How many of the row's missing cases (trials) are missing because their execution
    errored (a judge's failure is not an errored execution: docs/failures.md#the-error-budget)."""
    return metric.missing_by_reason.get("case_errored", 0)


def _errors_hide_interval(rule: Rule, metric: MetricRow, level: float) -> bool:
    """Whether an undecided interval rule is undecided because of its errored executions
    (docs/failures.md#errors-that-hide-an-outcome): on an exact interval over cases, had they all
    passed the rule would PASS, or had they all failed it would FAIL, the other missing cases
    bounded as they are. On a row over trials or clusters, whose bounds come from per-case
    values the row does not carry, whenever errored executions are among the missing."""
    errored = _errored_missing(metric)
    if not errored or not isinstance(metric, RateRow):
        return False
    if metric.method != RATE_METHOD:
        return True
    from oloproof.stats import rate_interval

    passed, observed, missing = metric.passed, metric.observed + errored, \
        metric.missing - errored
    if_passed = rate_interval(passed + errored, observed, missing, level)
    if_failed = rate_interval(passed, observed, missing, level)
    return (_on_interval(rule, if_passed.lower, if_passed.upper) is not None
            or _on_interval(rule, if_failed.lower, if_failed.upper) is not None)


def _count_row(rule: Rule, metric: MetricRow | None, state: RuleState,
               reason: DecisionReason) -> DecisionRow:
    failures = missing = None
    if isinstance(metric, RateRow):
        failures, missing = metric.observed - metric.passed, metric.missing
    return DecisionRow(rule=rule.id, metric=rule.subject, state=state, reasons=[reason],
                       kind="observed_count", failures=failures, missing=missing,
                       limit=int(rule.max_failures or 0))


def _observed_count(rule: Rule, metric: MetricRow) -> DecisionRow:
    """docs/concepts.md#observed-count-rules: decided on the suite that ran, with no interval. With
    no observed case there is nothing to count (every case excluded, say by a misspelt
    `expected_field`): no failures is then no evidence, not a pass (`no_observations`, as every
    other rule)."""
    limit = int(rule.max_failures or 0)
    passed = metric.passed if isinstance(metric, RateRow) else 0
    failures = metric.observed - passed
    if not metric.observed:
        state, reason = S.INSUFFICIENT_EVIDENCE, R.NO_OBSERVATIONS
    elif failures > limit:
        state, reason = S.FAIL, R.OBSERVED_FAILURES_EXCEED_LIMIT
    elif failures + metric.missing <= limit:
        state, reason = S.PASS, R.OBSERVED_FAILURES_WITHIN_LIMIT
    else:
        state, reason = S.INSUFFICIENT_EVIDENCE, R.MISSING_COULD_CHANGE_OUTCOME
    row = _count_row(rule, metric, state, reason)
    errored = _errored_missing(metric)
    # Had every errored one passed, a PASS; had every one failed, a FAIL: they decide it.
    if reason == R.MISSING_COULD_CHANGE_OUTCOME and errored and (
            failures + metric.missing - errored <= limit or failures + errored > limit):
        row.reasons.append(R.ERRORED_EXECUTIONS_HIDE_OUTCOME)
    return row


def decide_non_inferiority(rule: Rule, row: CriterionComparison | None,
                           baseline: str | None, policy: Policy | None = None,
                           dropped: int = 0) -> DecisionRow:
    """docs/compare.md#gating-on-it-kind-non_inferiority: the paired difference candidate − baseline
    against −margin.

    PASS when its lower bound ≥ −margin; FAIL when its upper bound < −margin; otherwise
    INSUFFICIENT_EVIDENCE; no paired case (or the metric not in the baseline) →
    INSUFFICIENT_EVIDENCE (`no_paired_cases`). A difference taken over clusters follows the
    rules of every clustered metric (docs/concepts.md#clusters): MANUAL_REVIEW unless the
    policy sets `allow_approximate_methods: true`, INSUFFICIENT_EVIDENCE below 20 clusters.
    `dropped` cases of the baseline are not in this run: the row counts them as pairs whose
    candidate side is missing, or (`dropped: ignore`) is the row without them.
    """
    threshold = -float(rule.margin or 0.0)

    def out(state: RuleState, reason: DecisionReason,
            side: Literal["lower", "upper"] = "lower") -> DecisionRow:
        bound = None if row is None else (row.lower if side == "lower" else row.upper)
        return DecisionRow(rule=rule.id, metric=rule.subject, state=state, reasons=[reason],
                           kind="non_inferiority", bound=bound, bound_side=side,
                           threshold=threshold, threshold_side="min", baseline=baseline,
                           paired=0 if row is None else row.paired, dropped=dropped or None,
                           dropped_ignored=(rule.dropped == "ignore") if dropped else None)

    if row is None or not row.paired or row.lower is None or row.upper is None:
        return out(S.INSUFFICIENT_EVIDENCE, R.NO_PAIRED_CASES)
    if row.approximate:  # over clusters, as a clustered metric
        if policy is None or not policy.allow_approximate_methods:
            return out(S.MANUAL_REVIEW, R.APPROXIMATE_METHOD_NOT_PERMITTED)
        if int(row.clusters or 0) < MIN_CLUSTERS:
            return out(S.INSUFFICIENT_EVIDENCE, R.INSUFFICIENT_CLUSTERS)
    if row.lower >= threshold:
        return out(S.PASS, R.DIFFERENCE_LOWER_BOUND_WITHIN_MARGIN)
    if row.upper < threshold:
        return out(S.FAIL, R.DIFFERENCE_UPPER_BOUND_BELOW_MARGIN, "upper")
    return out(S.INSUFFICIENT_EVIDENCE, R.DIFFERENCE_INTERVAL_OVERLAPS_MARGIN)


def _budget(rule: Rule, count: int, total: int, over_reason: R, within_reason: R
            ) -> tuple[S, R]:
    """A budget rule's state and reason: `count` of `total` against `max_count` or
    `max_share`; nothing to count when `total` is 0."""
    if not total:
        return S.INSUFFICIENT_EVIDENCE, R.NO_OBSERVATIONS
    if rule.max_count is not None:
        over = count > rule.max_count
    else:  # the share as written (0.3 is 3/10, not the float just below it)
        over = Fraction(count, total) > Fraction(repr(float(rule.max_share or 0.0)))
    return (S.FAIL, over_reason) if over else (S.PASS, within_reason)


def decide_max_errored(rule: Rule, executions: Executions) -> DecisionRow:
    """The error budget (docs/failures.md#the-error-budget): an observed count, no interval,
    of the run's executions that errored, whatever the kind, against `max_count` or
    `max_share` (of every execution of the run, cached ones included: an errored execution is
    never cached, so a cached one did not error). FAIL above the limit, PASS at or below it;
    a run with no execution has nothing to count (`no_observations`)."""
    errored, total = executions.errored_total, executions.cases
    state, reason = _budget(rule, errored, total, R.ERRORED_SHARE_EXCEEDS_LIMIT,
                            R.ERRORED_SHARE_WITHIN_LIMIT)
    return DecisionRow(rule=rule.id, metric=rule.subject, state=state, reasons=[reason],
                       kind="max_errored", errored=errored, executions=total,
                       max_share=rule.max_share, max_count=rule.max_count)


def decide_sequential(rule: Rule, outcomes: Sequence[str], level: float) -> DecisionRow:
    """docs/pytest.md#the-stored-run: the case's trials of the rule's criterion, in trial order
    (`passed`, `failed`, or `errored` for a missing one; excluded trials left out), fed to the
    sequential rule (`oloproof.stats.sequential.SequentialRate`) until it decides or `trials`
    are used: the decision a marked pytest test made, made again from what was stored."""
    from oloproof.stats.sequential import SequentialRate

    rate = SequentialRate(minimum=float(rule.min or 0.0), trials=int(rule.trials or 0),
                          level=level)
    for outcome in outcomes:
        if rate.decided:
            break
        rate = rate.add(outcome)
    return sequential_row(rule.id, rule.subject, rule.case, rate.decision())


def sequential_row(rule: str, metric: str, case: str | None,
                   made: SequentialDecision) -> DecisionRow:
    """A sequential rule's decision row from the rule's decision (`SequentialRate.decision`):
    its state with the reason, counts and bounds. A case whose trials end before the rule
    decides is INSUFFICIENT_EVIDENCE (`trials_not_finished`; with none at all,
    `no_observations`)."""
    if made.trials_run == 0:
        state, reason = S.INSUFFICIENT_EVIDENCE, R.NO_OBSERVATIONS
    elif made.state == S.PASS:
        state, reason = S.PASS, R.LOWER_BOUND_MEETS_MINIMUM
    elif made.state == S.FAIL:
        state, reason = S.FAIL, R.UPPER_BOUND_BELOW_MINIMUM
    elif made.state == S.INSUFFICIENT_EVIDENCE:
        state, reason = S.INSUFFICIENT_EVIDENCE, R.INTERVAL_OVERLAPS_THRESHOLD
    else:  # CONTINUE: more trials were to run
        state, reason = S.INSUFFICIENT_EVIDENCE, R.TRIALS_NOT_FINISHED
    side: Literal["lower", "upper"] = "upper" if state == S.FAIL else "lower"
    return DecisionRow(
        rule=rule, metric=metric, state=state, reasons=[reason], kind="sequential",
        bound=made.upper if side == "upper" else made.lower, bound_side=side,
        threshold=made.minimum, threshold_side="min", case=case, level=made.level,
        trials=made.trials, trials_run=made.trials_run, passed=made.passed, failed=made.failed,
        errored=made.errored, lower=made.lower, upper=made.upper, more_trials=made.more_trials,
        more_trials_chance=made.more_trials_chance, projection_reason=made.projection_reason,
        method=made.method)
def decide_max_simulator_failures(rule: Rule, conversations: Conversations | None
                                  ) -> DecisionRow:
    """The simulators' budget (docs/conversations.md#the-simulators-budget): an observed count,
    no interval, of the run's simulated conversations whose simulator failed a check, against
    `max_count` or `max_share` (of the simulated conversations: a scripted user cannot fail).
    FAIL above the limit, PASS at or below it; a run without a simulated conversation has
    nothing to count (`no_observations`)."""
    total = 0 if conversations is None else conversations.simulated
    failed = 0 if conversations is None else conversations.failed
    state, reason = _budget(rule, failed, total, R.SIMULATOR_FAILURES_EXCEED_LIMIT,
                            R.SIMULATOR_FAILURES_WITHIN_LIMIT)
    return DecisionRow(rule=rule.id, metric=rule.subject, state=state, reasons=[reason],
                       kind="max_simulator_failures", simulator_failures=failed,
                       conversations=total, max_share=rule.max_share, max_count=rule.max_count)


def decide(
    policy: Policy, metrics: Sequence[MetricRow], checked_transforms: dict[str, bool],
    baseline: BaselineSummary | None = None, executions: Executions | None = None,
    case_trials: Mapping[str, Sequence[str]] | None = None,
    conversations: Conversations | None = None,
) -> tuple[list[DecisionRow], Gate]:
    """Every rule's decision and the release gate.

    `baseline` holds the paired figures against the baseline run that `non_inferiority` rules
    decide on (docs/compare.md#gating-on-it-kind-non_inferiority); a policy with such a rule and no
    baseline is refused before this (a configuration error), so here a missing one is a bug.
    `executions` is the run's accounting, which `max_errored` rules decide on. `case_trials`
    holds, by rule id, the trial outcomes each `sequential` rule decides on (`decide_sequential`);
    `conversations` the run's conversations, which `max_simulator_failures` rules decide on.
    """
    by_id = {m.id: m for m in metrics}
    decisions = []
    for rule in policy.rules:
        if rule.kind == "sequential":
            decisions.append(decide_sequential(
                rule, (case_trials or {}).get(rule.id, ()),
                rule.level if rule.level is not None else policy.confidence_level))
            continue
        if rule.kind == "max_errored":
            if executions is None:
                raise ValueError(f"rule {rule.id!r} needs the run's executions")
            decisions.append(decide_max_errored(rule, executions))
            continue
        if rule.kind == "max_simulator_failures":
            decisions.append(decide_max_simulator_failures(rule, conversations))
            continue
        if rule.kind == "non_inferiority":
            if baseline is None:
                raise ValueError(f"rule {rule.id!r} needs the comparison with a baseline run")
            rows = baseline.criteria
            if rule.dropped == "ignore" and baseline.ignoring_dropped is not None:
                rows = baseline.ignoring_dropped
            row = next((r for r in rows if r.criterion == rule.subject), None)
            decisions.append(decide_non_inferiority(rule, row, baseline.baseline, policy,
                                                    baseline.baseline_only + baseline.changed))
            continue
        metric = by_id.get(rule.subject)
        if metric is None:  # a stored run re-decided under a policy naming an unknown metric
            if rule.kind == "observed_count":
                decisions.append(_count_row(rule, None, S.INSUFFICIENT_EVIDENCE,
                                            R.NO_OBSERVATIONS))
            else:
                needed: Literal["lower", "upper"] = "lower" if rule.min is not None else "upper"
                decisions.append(_interval(rule, S.INSUFFICIENT_EVIDENCE, R.NO_OBSERVATIONS,
                                           None, needed))
            continue
        decisions.append(decide_rule(rule, metric, policy, checked_transforms))
    return decisions, gate(policy, [d.state for d in decisions])


def gate(policy: Policy, states: Sequence[str]) -> Gate:
    """ALLOW / WARN / BLOCK and the exit code
    (docs/configuration.md#states-reasons-and-exit-codes)."""
    blocking = [s for s in states if s in policy.block_on]
    if blocking:
        if S.FAIL in blocking:
            return Gate(action=GateAction.BLOCK, exit_code=ExitCode.FAIL)
        if S.MANUAL_REVIEW in blocking:
            return Gate(action=GateAction.BLOCK, exit_code=ExitCode.MANUAL_REVIEW)
        return Gate(action=GateAction.BLOCK, exit_code=ExitCode.INSUFFICIENT_EVIDENCE)
    if any(s in policy.warn_on for s in states):
        return Gate(action=GateAction.WARN, exit_code=ExitCode.OK)
    return Gate(action=GateAction.ALLOW, exit_code=ExitCode.OK)
