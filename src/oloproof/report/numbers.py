"""Numbers as every report shows them: rounded for display, never for deciding
(docs/concepts.md#pass-rates-exact-intervals-with-missing-cases).

- Rates are percentages with one decimal; interval bounds round outward (a lower bound down,
  an upper bound up), estimates to nearest.
- Other quantities (steps, calls, milliseconds) show whole numbers as they are and fractions
  with three significant digits of the row's largest value, bounds rounded outward the same way
  (`0.0811 ms [0.0687, 0.0943] ms`, not `0.08107 ms [0.068742, 0.09425] ms`).
- A decision prints the comparison it made: the threshold exactly as the rule gives it, the
  bound rounded outward to the same number of decimals, and more decimals where that rounding
  would print a comparison that is not the one made (`lower 69.99% < min 70.00%`, never
  `lower 70.0% < min 70.0%`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Literal

from oloproof.document import (
    Conversations,
    CriterionComparison,
    ErrorKind,
    Executions,
    JudgeCalibration,
    QuantileRow,
    QuantileSliceRow,
    RateRow,
    RateSliceRow,
    UsageSum,
    UsageTotals,
)
from oloproof.stats import percent, percent_lower, percent_upper
from oloproof.stats.display import SCALED_TOLERANCE

NO_BOUND = "no bound"
#: Significant digits of a quantity that is not a whole number.
SIGNIFICANT = 3
#: The most decimals a decision's comparison is printed with.
MAX_DECIMALS = 6

Rounding = Literal["nearest", "down", "up"]


def quantity_decimals(*values: float | int | None) -> int:
    """Decimals that give the largest of `values` three significant digits (0 for whole
    numbers, and never fewer than whole units)."""
    present = [abs(float(v)) for v in values if v is not None]
    if all(float(v).is_integer() for v in present):
        return 0
    largest = max(present)
    if largest == 0:
        return SIGNIFICANT
    return max(0, SIGNIFICANT - 1 - math.floor(math.log10(largest)))


def rounded_steps(value: float, decimals: int, rounding: Rounding, scale: float) -> int:
    scaled = float(value) * scale * float(10**decimals)
    if rounding == "down":
        return math.floor(scaled + SCALED_TOLERANCE)
    if rounding == "up":
        return math.ceil(scaled - SCALED_TOLERANCE)
    return math.floor(scaled + 0.5 + SCALED_TOLERANCE)


def quantity(value: float | int | None, decimals: int, rounding: Rounding = "nearest") -> str:
    """A number (not a rate) at `decimals` decimals, rounded as asked; `no bound` for None."""
    if value is None:
        return NO_BOUND
    if float(value).is_integer() and decimals == 0:
        return str(int(value))
    steps = rounded_steps(value, decimals, rounding, 1)
    sign = "-" if steps < 0 else ""
    if decimals == 0:
        return f"{sign}{abs(steps)}"
    whole, part = divmod(abs(steps), 10**decimals)
    return f"{sign}{whole}.{part:0{decimals}d}"


def percent_text(value: float, decimals: int, rounding: Rounding) -> str:
    if rounding == "down":
        return percent_lower(value, decimals)
    if rounding == "up":
        return percent_upper(value, decimals)
    return percent(value, decimals)


def threshold_decimals(threshold: float, is_rate: bool) -> int:
    """The decimals a rule's threshold is written with (0.875 → 87.5% → 1)."""
    shown = round(threshold * 100 if is_rate else threshold, 9)
    text = f"{shown:.9f}".rstrip("0").rstrip(".")
    return len(text.split(".")[1]) if "." in text else 0


def threshold_text(threshold: float, is_rate: bool, unit: str | None = None) -> str:
    """A rule's threshold as the rule writes it, never rounded: `70.55%` for `min: 0.7055`
    (a rate, at least one decimal, as every rate is shown), `8 steps`, `0.25 ms`. The same
    text a decision prints beside its bound (`interval_comparison`)."""
    decimals = threshold_decimals(threshold, is_rate)
    if is_rate:
        return percent_text(threshold, max(1, decimals), "nearest")
    return quantity(threshold, decimals) + (f" {unit}" if unit else "")


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


# ---- metric and slice rows --------------------------------------------------------------------

Row = RateRow | QuantileRow | RateSliceRow | QuantileSliceRow


def _decimals(row: QuantileRow | QuantileSliceRow) -> int:
    return quantity_decimals(row.estimate, row.lower, row.upper)


def estimate_text(row: Row) -> str:
    """`82.5%` for a rate, `10 steps` for a quantile, `—` when there is nothing to show."""
    if row.estimate is None:
        return "—"
    if isinstance(row, RateRow | RateSliceRow):
        return percent(row.estimate)
    return f"{quantity(row.estimate, _decimals(row))} {row.unit}"


def interval_text(row: Row) -> str:
    """`[67.2%, 92.7%]`, `[10, no bound] steps`; `—` below slice support."""
    if isinstance(row, RateSliceRow | QuantileSliceRow) and row.below_support:
        return "—"
    if isinstance(row, RateRow | RateSliceRow):
        if row.lower is None or row.upper is None:
            return "—"
        return f"[{percent_lower(row.lower)}, {percent_upper(row.upper)}]"
    decimals = _decimals(row)
    return (f"[{quantity(row.lower, decimals, 'down')}, "
            f"{quantity(row.upper, decimals, 'up')}] {row.unit}")


def n_text(row: Row) -> str:
    """`33 / 40 observed · 0 missing · 0 excluded` or `p95 of 39 observed · 1 missing · ...`.

    With repeated trials (docs/reliability.md#why-every-interval-is-over-cases): a criterion reads
    `40 cases × 5 trials · 3 missing trials · 0 excluded` (excluded trials), a pass^k / pass@k
    counts cases (`12 / 38 cases observed · 2 missing · 0 excluded`), a quantile
    `p95 of 40 cases × 5 trials · ...`, and a slice row its group's trials.
    """
    trials = row.trials if row.trials and row.trials > 1 else None
    if trials is not None:
        if isinstance(row, RateRow) and row.metric_type is not None:
            head = (f"{row.passed} / {row.observed} cases observed" if row.k == trials
                    else f"{row.observed} cases observed")
            return f"{head} · {row.missing} missing · {row.excluded} excluded"
        if isinstance(row, RateRow | QuantileRow):
            head = f"{row.cases or 0} cases × {trials} trials"
            if isinstance(row, QuantileRow):
                head = f"p{row.quantile * 100:g} of {head}"
            return f"{head} · {row.missing} missing trials · {row.excluded} excluded"
        if isinstance(row, RateSliceRow):
            return (f"{row.passed} / {row.observed} trials observed · {row.missing} missing · "
                    f"{row.excluded} excluded")
        return (f"p{row.quantile * 100:g} of {row.observed} trials observed · {row.missing} "
                f"missing · {row.excluded} excluded")
    if isinstance(row, RateRow | RateSliceRow):
        head = f"{row.passed} / {row.observed} observed"
    else:
        head = f"p{row.quantile * 100:g} of {row.observed} observed"
    return f"{head} · {row.missing} missing · {row.excluded} excluded"


def signed_percent(value: float | None, rounding: Rounding = "nearest", decimals: int = 1
                   ) -> str:
    """A difference of rates as a signed percentage (`+0.5%`, `-2.1%`, `0.0%`); `—` for
    None. Bounds round outward like every bound."""
    if value is None:
        return "—"
    text = percent_text(value, decimals, rounding)
    return text if text.startswith("-") or rounded_steps(value, decimals, rounding, 100) == 0 \
        else "+" + text


def difference_text(row: CriterionComparison) -> str:
    """`+0.5% [-0.7%, +2.1%]`: a paired difference with its interval (outward)."""
    if row.lower is None or row.upper is None:
        return "—"
    estimate = "—" if row.difference is None else signed_percent(row.difference)
    return (f"{estimate} [{signed_percent(row.lower, 'down')}, "
            f"{signed_percent(row.upper, 'up')}]")


def p_value_text(p: float | None) -> str:
    """A descriptive p-value in three significant digits (`0.5`, `0.0312`, `< 0.0001`)."""
    if p is None:
        return "—"
    if p < 0.0001:
        return "< 0.0001"
    return f"{p:.3g}"


def conversations_text(conversations: Conversations) -> str:
    """The run's conversations in one line, as every report prints them
    (docs/conversations.md#accounting): `20 conversations (20 simulated) · 96 user turns · 94
    agent turns · 57 simulator calls · 1 simulator failure (leaked_instructions 1) · 2 cut at
    max_turns`."""
    n = conversations.conversations
    parts = [f"{n:,} conversation{'' if n == 1 else 's'}"
             + (f" ({conversations.simulated:,} simulated)" if conversations.simulated else ""),
             f"{conversations.turns:,} user turn{'' if conversations.turns == 1 else 's'}",
             f"{conversations.agent_turns:,} agent turn"
             f"{'' if conversations.agent_turns == 1 else 's'}"]
    if conversations.simulated:
        calls = conversations.simulator_calls
        parts.append(f"{calls:,} simulator call{'' if calls == 1 else 's'}")
        failed = conversations.failed
        detail = ", ".join(f"{check} {count}" for check, count
                           in conversations.failures.items())
        parts.append(f"{failed:,} simulator failure{'' if failed == 1 else 's'}"
                     + (f" ({detail})" if detail else ""))
    if conversations.truncated:
        parts.append(f"{conversations.truncated:,} cut at max_turns")
    return " · ".join(parts)


def _usage_parts(usage: UsageTotals | UsageSum) -> str:
    parts = []
    if usage.input_tokens is not None:
        parts.append(f"{usage.input_tokens:,} input tokens")
    if usage.output_tokens is not None:
        parts.append(f"{usage.output_tokens:,} output tokens")
    if usage.cost is not None:
        parts.append(f"cost {usage.cost:.4g}")
    return " · ".join(parts) or "no tokens or cost said"


def usage_text(usage: UsageTotals) -> str:
    """The run's usage totals as both reports print them (docs/traces.md#tokens-and-cost): the
    agent's, then what its simulated users and its judges cost, each apart, a line each
    (docs/conversations.md#cost-accounting)."""
    lines = []
    if usage.cases:
        what = "execution" if usage.cases == 1 else "executions"
        lines.append(f"Usage: {_usage_parts(usage)} (recorded by {usage.cases} {what})")
    if usage.simulator is not None:
        lines.append(f"Usage of the simulated users: {_usage_parts(usage.simulator)} (not "
                     "the agent's)")
    if usage.judge is not None:
        lines.append(f"Usage of the judges: {_usage_parts(usage.judge)} (not the agent's)")
    return "\n".join(lines)


def _rate_or_dash(value: float | None) -> str:
    return "—" if value is None else percent(value)


def _bounds_or_dash(lower: float | None, upper: float | None) -> str:
    if lower is None or upper is None:
        return "[—]"
    return f"[{percent_lower(lower)}, {percent_upper(upper)}]"


def judged_mark(row: object) -> str:
    """What follows a judged criterion's interval (docs/judges.md): ` uncalibrated` (the
    judge's raw rate, not yet checked), ` corrected` (the rate as people would judge it, the
    judge's verdicts used) or ` labels alone` (`correction: people_only`); `` for another
    row."""
    judge = row.judge if isinstance(row, RateRow) else None
    if judge is None:
        return ""
    if judge.status == "uncalibrated":
        return " uncalibrated"
    return " labels alone" if judge.correction == "people_only" else " corrected"


def _points(width: float) -> str:
    return f"{abs(width) * 100:.1f} points"


def judged_intervals_text(judge: JudgeCalibration) -> str:
    """The two intervals of a checked judge criterion and what the judge saved or cost:
    `as people would judge it 66.7% [46.4%, 83.2%] (stratified_by_verdict) · labels alone
    66.7% [47.1%, 82.8%] (clopper_pearson): the judge cost 1.2 points of width` (each bound
    rounded outwards)."""
    assert judge.corrected_lower is not None and judge.people_lower is not None
    corrected = (f"as people would judge it {_rate_or_dash(judge.corrected_estimate)} "
                 f"{_bounds_or_dash(judge.corrected_lower, judge.corrected_upper)} "
                 f"({judge.corrected_method}"
                 f"{', approximate' if judge.corrected_approximate else ''}"
                 f"{', not deciding' if judge.correction == 'people_only' else ''})")
    deciding = ", deciding: correction people_only" if judge.correction == "people_only" \
        else ""
    people = (f"labels alone {_rate_or_dash(judge.people_estimate)} "
              f"{_bounds_or_dash(judge.people_lower, judge.people_upper)} "
              f"({judge.people_method}{deciding})")
    saved = judge.width_saved or 0.0
    if abs(saved) < 0.0005:
        effect = "the judge changed the width by less than 0.1 point"
    elif saved > 0:
        effect = f"the judge saved {_points(saved)} of width"
    else:
        effect = f"the judge cost {_points(saved)} of width"
    return f"{corrected} · {people}: {effect}"


def judge_check_text(row: RateRow) -> str:
    """A judge criterion checked against people, in one sentence (docs/judges.md): the counts,
    the agreement and κ, the judge's own rate, the rate as people would judge it with the
    labels' own interval beside it and the width the judge saved or cost — or why it is not
    checked, and that its raw rate decides nothing."""
    judge = row.judge
    assert judge is not None
    raw = (f"the judge's own rate {_rate_or_dash(judge.raw_estimate)} "
           f"{_bounds_or_dash(judge.raw_lower, judge.raw_upper)}")
    if judge.status == "uncalibrated":
        return f"uncalibrated — {judge.why}; {raw} decides nothing (judge_not_checked)"
    counts = (f"{judge.labelled} labelled of {judge.sampled} sampled: judge pass & person pass "
              f"{judge.both_pass}, judge pass & person fail {judge.judge_only}, judge fail & "
              f"person pass {judge.person_only}, both fail {judge.both_fail}")
    kappa = "undefined" if judge.kappa is None else f"{judge.kappa:.2f}"
    agreement = (f"agreement {_rate_or_dash(judge.agreement)} "
                 f"{_bounds_or_dash(judge.agreement_lower, judge.agreement_upper)} vs minimum "
                 f"{percent(judge.minimum_agreement)} · κ {kappa}")
    if judge.corrected_lower is not None and judge.people_lower is not None:
        people = judged_intervals_text(judge)
    else:  # a run stored before issue 39: the row holds the one corrected interval
        people = (f"as people would judge it {_rate_or_dash(row.estimate)} "
                  f"{_bounds_or_dash(row.lower, row.upper)} ({row.method})")
    verdict = ("checked" if judge.status == "checked" else
               "disagrees with people (judge_disagrees_with_people)")
    return f"{counts} · {agreement} · {raw} → {people} → {verdict}"


def errored_text(errored: Mapping[ErrorKind, int]) -> str:
    """`6 errored (timeout 4, system_error 2)`: the errored executions by kind, commonest
    first (`0 errored` when none did)."""
    total = sum(errored.values())
    if not total:
        return "0 errored"
    kinds = sorted(errored.items(), key=lambda item: (-item[1], str(item[0])))
    return f"{total:,} errored (" + ", ".join(f"{k} {n:,}" for k, n in kinds) + ")"


def executions_text(executions: Executions, trials: int | None = None) -> str:
    """The run's accounting in one line, as every report prints it
    (docs/failures.md#accounting): `2,000 cases · 1,994 ran · 6 cached · 6 errored
    (timeout 4, system_error 2) · 31 retried`; with trials the executions are counted (`2,000
    executions (400 cases × 5 trials)`)."""
    count = executions.cases
    if trials and trials > 1:
        head = f"{count:,} executions ({count // trials:,} cases × {trials} trials)"
    else:
        head = f"{count:,} case{'' if count == 1 else 's'}"
    parts = [head, f"{executions.ran:,} ran"]
    if executions.cached:
        parts.append(f"{executions.cached:,} cached")
    parts.append(errored_text(executions.errored))
    if executions.retried:
        parts.append(f"{executions.retried:,} retried")
    return " · ".join(parts)
