"""A rule's decision in words, as every report prints it: the comparison the rule made, with the
threshold exactly as the rule gives it and the bound rounded outward to as many decimals, more
where that rounding would print a comparison that is not the one made
(docs/concepts.md#pass-rates-exact-intervals-with-missing-cases); a count against its limit; a
paired difference against its margin; a sequential rule's trials and what more would decide."""

from __future__ import annotations

from oloproof.decisions.rules import MIN_CLUSTERS
from oloproof.document import (
    CriterionComparison,
    DecisionReason,
    DecisionRow,
    MetricRow,
    QuantileRow,
    RateRow,
)
from oloproof.report.numbers import (
    MAX_DECIMALS,
    NO_BOUND,
    Rounding,
    percent_text,
    plural,
    quantity,
    quantity_decimals,
    rounded_steps,
    threshold_decimals,
)
from oloproof.stats import percent, percent_lower


def count_comparison(decision: DecisionRow) -> str:
    """`3 failures > max 0`; `0 failures + 1 missing ≤ max 1`; `0 failures ≤ max 0 < 0 + 2
    missing` (the missing cases could still exceed the limit)."""
    failures, missing, limit = decision.failures, decision.missing, decision.limit
    if failures is None or missing is None or limit is None:
        return f"no metric {decision.metric} in this run"
    if DecisionReason.NO_OBSERVATIONS in decision.reasons:
        return "no observed case" + (f" ({missing} missing)" if missing else "")
    if decision.state == "FAIL":
        return f"{plural(failures, 'failure')} > max {limit}"
    if decision.state == "PASS":
        if missing:
            return f"{plural(failures, 'failure')} + {missing} missing ≤ max {limit}"
        return f"{plural(failures, 'failure')} ≤ max {limit}"
    return (f"{plural(failures, 'failure')} ≤ max {limit}, but {failures} + {missing} missing "
            f"> max {limit}")


def errored_comparison(decision: DecisionRow) -> str:
    """A budget rule's comparison: `max_errored` (docs/failures.md#the-error-budget) `41 of
    2,000 executions errored (2.05%) > max 2.00%`, `0 of 40 executions errored ≤ max 3`;
    `max_simulator_failures` (docs/conversations.md#the-simulators-budget) `1 of 20 simulated
    conversations failed a check (5.00%) ≤ max 5.00%`; the share with as many decimals as it
    takes to print the comparison that was made."""
    if decision.kind == "max_simulator_failures":
        count, total = decision.simulator_failures, decision.conversations
        unit, verb, nothing = ("simulated conversation", "failed a check",
                               "no simulated conversation to count")
    else:
        count, total = decision.errored, decision.executions
        unit, verb, nothing = "execution", "errored", "no execution to count"
    if count is None or total is None:
        return ""
    if not total:
        return nothing
    head = f"{count:,} of {total:,} {unit}{'' if total == 1 else 's'} {verb}"
    sign = ">" if decision.state == "FAIL" else "≤"
    if decision.max_count is not None:
        return f"{head} {sign} max {decision.max_count:,}"
    threshold = float(decision.max_share or 0.0)
    share = count / total
    first = max(1, threshold_decimals(threshold, True))
    for decimals in range(first, max(first, MAX_DECIMALS) + 1):
        low = rounded_steps(share, decimals, "down", 100)
        high = rounded_steps(share, decimals, "up", 100)
        if _printed_as_made("max", low, high, rounded_steps(threshold, decimals, "nearest", 100),
                            decision.state):
            break
    shown = percent_text(share, decimals, "down" if decision.state == "FAIL" else "up")
    return f"{head} ({shown}) {sign} max {percent_text(threshold, decimals, 'nearest')}"


def interval_comparison(decision: DecisionRow, metric: MetricRow | None) -> str:
    """The comparison of an interval rule, printed as it was made (see the module's text)."""
    reason = decision.reasons[0] if decision.reasons else None
    if metric is None:
        return f"no metric {decision.metric} in this run"
    if reason == DecisionReason.NO_OBSERVATIONS:
        return "no observed case"
    if reason == DecisionReason.TRANSFORM_NOT_CHECKED and isinstance(metric, RateRow):
        return f"transform {metric.transform} is not checked by people's labels"
    judge = metric.judge if isinstance(metric, RateRow) else None
    if reason == DecisionReason.JUDGE_NOT_CHECKED and judge is not None:
        return f"judge {judge.judge} is not checked by people's labels (uncalibrated)"
    if reason == DecisionReason.JUDGE_DISAGREES_WITH_PEOPLE and judge is not None:
        lower = "—" if judge.agreement_lower is None else percent_lower(judge.agreement_lower)
        return (f"judge {judge.judge} agrees with people: lower {lower} < minimum_agreement "
                f"{percent(judge.minimum_agreement)}")
    if reason == DecisionReason.APPROXIMATE_METHOD_NOT_PERMITTED:
        if judge is not None:
            return (f"the corrected interval ({metric.method}) is approximate; "
                    "allow_approximate_methods is off")
        return "the interval over clusters is approximate; allow_approximate_methods is off"
    if reason == DecisionReason.INSUFFICIENT_CLUSTERS:
        return f"{metric.clusters or 0} clusters < {MIN_CLUSTERS}"
    threshold = decision.threshold
    if threshold is None:
        return ""
    is_rate = isinstance(metric, RateRow)
    side = decision.threshold_side or "min"
    unit = f" {metric.unit}" if isinstance(metric, QuantileRow) else ""
    first = threshold_decimals(threshold, is_rate)
    if is_rate:
        first = max(1, first)
    else:
        first = max(first, quantity_decimals(metric.lower, metric.upper))
    scale = 100 if is_rate else 1
    for decimals in range(first, max(first, MAX_DECIMALS) + 1):
        t_steps = rounded_steps(threshold, decimals, "nearest", scale)
        low = None if metric.lower is None else rounded_steps(metric.lower, decimals, "down", scale)
        high = None if metric.upper is None else rounded_steps(metric.upper, decimals, "up", scale)
        if _printed_as_made(side, low, high, t_steps, decision.state):
            break

    def shown(value: float | int | None, rounding: Rounding) -> str:
        if value is None:
            return NO_BOUND
        return percent_text(value, decimals, rounding) if is_rate else quantity(value, decimals,
                                                                           rounding) + unit

    t = percent_text(threshold, decimals, "nearest") if is_rate else \
        quantity(threshold, decimals) + unit
    lower, upper = shown(metric.lower, "down"), shown(metric.upper, "up")
    if side == "min":
        if decision.state == "PASS":
            return f"lower {lower} ≥ min {t}"
        if decision.state == "FAIL":
            return f"upper {upper} < min {t}"
        left = "no lower bound; " if metric.lower is None else f"lower {lower} < "
        right = "; no upper bound" if metric.upper is None else f" ≤ upper {upper}"
        return f"{left}min {t}{right}"
    if decision.state == "PASS":
        return f"upper {upper} ≤ max {t}"
    if decision.state == "FAIL":
        return f"lower {lower} > max {t}"
    left = "no lower bound; " if metric.lower is None else f"lower {lower} ≤ "
    right = "; no upper bound" if metric.upper is None else f" < upper {upper}"
    return f"{left}max {t}{right}"


def _printed_as_made(side: str, low: int | None, high: int | None, t: int, state: str) -> bool:
    """Whether the rounded numbers (in display steps), compared as printed, say what the
    unrounded ones said."""
    if side == "min":
        checks = {"PASS": [low is not None and low >= t],
                  "FAIL": [high is not None and high < t],
                  }.get(state, [low is None or low < t, high is None or t <= high])
    else:
        checks = {"PASS": [high is not None and high <= t],
                  "FAIL": [low is not None and low > t],
                  }.get(state, [low is None or low <= t, high is None or t < high])
    return all(checks)


def _signed(shown: str) -> str:
    """`+4.0%` for a difference shown above zero (as the comparison table shows it)."""
    return "+" + shown if shown[0] != "-" and any(c in "123456789" for c in shown) else shown


def difference_comparison(decision: DecisionRow, row: CriterionComparison | None) -> str:
    """A `non_inferiority` rule's comparison (docs/compare.md#gating-on-it-kind-non_inferiority),
    printed as it was made: `difference lower -0.6% ≥ -2.0%`, `difference upper -5.1% < -2.0%`,
    `difference lower -3.1% < -2.0% ≤ upper +1.2%`; `row` (the paired figures) gives the other bound
    where both are printed."""
    reason = decision.reasons[0] if decision.reasons else None
    against = ""
    if reason == DecisionReason.NO_PAIRED_CASES or decision.threshold is None:
        return "no paired case" + (f" with baseline {decision.baseline}"
                                   if decision.baseline else "")
    if reason == DecisionReason.APPROXIMATE_METHOD_NOT_PERMITTED:
        return ("the difference over clusters is approximate; allow_approximate_methods is "
                "off")
    if reason == DecisionReason.INSUFFICIENT_CLUSTERS:
        clusters = row.clusters if row is not None else None
        return f"{clusters or 0} clusters < {MIN_CLUSTERS}"
    threshold = float(decision.threshold)
    lower = row.lower if row is not None else (
        decision.bound if decision.bound_side == "lower" else None)
    upper = row.upper if row is not None else (
        decision.bound if decision.bound_side == "upper" else None)
    first = max(1, threshold_decimals(abs(threshold), True))
    for decimals in range(first, max(first, MAX_DECIMALS) + 1):
        t_steps = rounded_steps(threshold, decimals, "nearest", 100)
        low = None if lower is None else rounded_steps(lower, decimals, "down", 100)
        high = None if upper is None else rounded_steps(upper, decimals, "up", 100)
        if _printed_as_made("min", low, high, t_steps, decision.state):
            break
    t = percent_text(threshold, decimals, "nearest")
    shown_lower = NO_BOUND if lower is None else _signed(percent_text(lower, decimals, "down"))
    shown_upper = NO_BOUND if upper is None else _signed(percent_text(upper, decimals, "up"))
    if decision.state == "PASS":
        return f"difference lower {shown_lower} ≥ {t}{against}"
    if decision.state == "FAIL":
        return f"difference upper {shown_upper} < {t}{against}"
    if upper is None:
        return f"difference lower {shown_lower} < {t}{against}"
    return f"difference lower {shown_lower} < {t} ≤ upper {shown_upper}{against}"


#: Why a sequential rule that ended undecided gives no "about N more trials"
#: (`oloproof.stats.sequential.SequentialDecision.projection_reason`).
_NO_PROJECTION = {
    "errored_trials": "the errored trials leave it open: fix what errors and run again",
    "share_equals_minimum": "the pass share seen equals min: no number of trials at that share "
                            "decides",
    "beyond_limit": "more than 20,000 more trials",
    "no_trials": "no trial ran",
}


def sequential_more(decision: DecisionRow) -> str:
    """`about 62 more trials (a 54% chance they decide)`, or why there is no such figure, for
    an undecided sequential rule; '' for one that decided."""
    if decision.state != "INSUFFICIENT_EVIDENCE":
        return ""
    if DecisionReason.TRIALS_NOT_FINISHED in decision.reasons:
        return "its trials stopped before it decided"
    if decision.more_trials is not None:
        chance = "" if decision.more_trials_chance is None else \
            f" (a {percent(decision.more_trials_chance, 0)} chance they decide)"
        return f"about {decision.more_trials:,} more trials{chance}"
    return _NO_PROJECTION.get(decision.projection_reason or "", "")


def sequential_parts(decision: DecisionRow) -> tuple[str, str, str]:
    """A `sequential` rule's comparison in three parts (docs/pytest.md#the-stored-run): the
    bounds against `min`, printed as compared (`lower 85.2% ≥ min 80.0%`; undecided, both);
    the trials (`23 of 50 trials: 23 passed, 0 failed`); for an undecided rule, about how many
    more trials would decide (`sequential_more`), else ''."""
    if DecisionReason.NO_OBSERVATIONS in decision.reasons:
        return f"no trial of case {decision.case}", "", ""
    lower, upper, threshold = decision.lower, decision.upper, decision.threshold
    if lower is None or upper is None or threshold is None:
        return "", "", ""
    first = max(1, threshold_decimals(float(threshold), True))
    for decimals in range(first, max(first, MAX_DECIMALS) + 1):
        if _printed_as_made("min", rounded_steps(lower, decimals, "down", 100),
                            rounded_steps(upper, decimals, "up", 100),
                            rounded_steps(float(threshold), decimals, "nearest", 100),
                            decision.state):
            break
    t = percent_text(float(threshold), decimals, "nearest")
    low, high = percent_text(lower, decimals, "down"), percent_text(upper, decimals, "up")
    if decision.state == "PASS":
        compared = f"lower {low} ≥ min {t}"
    elif decision.state == "FAIL":
        compared = f"upper {high} < min {t}"
    else:
        compared = f"lower {low} < min {t} ≤ upper {high}"
    counts = [f"{decision.passed or 0} passed", f"{decision.failed or 0} failed"]
    if decision.errored:
        counts.append(f"{decision.errored} errored")
    trials = f"{decision.trials_run} of {decision.trials} trials: {', '.join(counts)}"
    return compared, trials, sequential_more(decision)


def sequential_comparison(decision: DecisionRow) -> str:
    """A `sequential` rule's comparison in one line (`sequential_parts`):
    `lower 85.2% ≥ min 80.0% · 23 of 50 trials: 23 passed, 0 failed`."""
    compared, trials, more = sequential_parts(decision)
    text = " · ".join(part for part in (compared, trials) if part)
    return f"{text}; {more}" if more else text


def decision_comparison(decision: DecisionRow, metric: MetricRow | None,
                        paired: CriterionComparison | None = None) -> str:
    """What a decision compared, in words and numbers (empty for a row stored without them).
    A `non_inferiority` rule's numbers are the paired figures `paired`."""
    if decision.kind == "non_inferiority":
        return difference_comparison(decision, paired)
    if decision.kind in ("max_errored", "max_simulator_failures"):
        return errored_comparison(decision)
    if decision.kind == "sequential":
        return sequential_comparison(decision)
    reason = decision.reasons[0] if decision.reasons else None
    if reason in (DecisionReason.JUDGE_NOT_CHECKED, DecisionReason.JUDGE_DISAGREES_WITH_PEOPLE):
        return interval_comparison(decision, metric)  # (the judge decided it, not the counts)
    if decision.kind == "observed_count":
        return count_comparison(decision)
    if decision.kind == "interval":
        return interval_comparison(decision, metric)
    return ""


def decision_text(decision: DecisionRow, metric: MetricRow | None,
                  paired: CriterionComparison | None = None) -> str:
    """`FAIL · upper 23.2% < min 80.0%`: the state and the comparison that made it."""
    comparison = decision_comparison(decision, metric, paired)
    return f"{decision.state} · {comparison}" if comparison else str(decision.state)
