"""What would settle a rule on a judged criterion (docs/compare.md#a-judged-criterion): the
labelled cases at which the corrected interval, at the same rates, would decide it.

A judged criterion's rate, as people would judge it, is estimated from the judge's verdicts on
all `N` cases and people's labels on `n` of them drawn uniformly; its interval narrows as more
cases are labelled (people's labels are what it is uncertain about). `corrected_projection`
continues such a run at the same rates: `n'` labelled cases among `N' = N·n'/n` cases (the
share of labelled cases kept), the four judge × person counts and the judge's pass share
scaled with them (a case without a verdict in the judge's fail stratum, as the gate counts
it), and finds the smallest `n'` whose interval decides the rule — doubling, then bisecting,
as `stats.projection` does.

The interval is the one the run decides on: `stats.judged_rate_interval`, the construction
`analysis/judged.py` uses (stratified by the judge's verdict, never more than 1.05x the width
of the labels alone; with `approximate`, PPI++ where it applies). It depends on the counts per
stratum only, not on the cases' order. A new construction there is a new one here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oloproof.stats._checks import count
from oloproof.stats.projection import rule_threshold, smallest_deciding, sought_state
from oloproof.stats.verdict_strata import judged_rate_interval

__all__ = ["JUDGED_LABELS_LIMIT", "CorrectedProjection", "corrected_bounds_at",
           "corrected_projection"]

#: The most labelled cases a projection looks at.
JUDGED_LABELS_LIMIT = 100_000


@dataclass(frozen=True)
class CorrectedProjection:
    """The smallest number of labelled cases (`labelled`, among `cases`) whose corrected
    interval at the same rates decides the rule, reaching `state`; or None with `reason`
    (`estimate_equals_threshold`, `beyond_limit`, `stratum_unlabelled`: a verdict of the judge
    none of whose cases is labelled)."""

    labelled: int | None
    cases: int | None
    state: str | None
    reason: str | None = None


def corrected_bounds_at(
    labelled_total: int, both_pass: int, judge_only: int, person_only: int, both_fail: int, *,
    judge_passed: int, judge_observed: int, judge_missing: int, level: float,
    approximate: bool = False,
) -> tuple[float, float, int]:
    """The corrected interval of the run continued to `labelled_total` labelled cases at the
    same rates (see the module's text), and how many cases hold them: `(lower, upper,
    cases)`."""
    counts = (both_pass, judge_only, person_only, both_fail)
    labelled = sum(counts)
    cases = judge_observed + judge_missing
    total = math.ceil(cases * labelled_total / labelled)
    shares = [round(c * labelled_total / labelled) for c in counts]
    in_pass, in_fail = shares[0] + shares[1], shares[2] + shares[3]
    passed = max(round(judge_passed * total / cases), in_pass)
    total = max(total, passed + in_fail)
    rate = _judged_rate(shares, passed, total, level, approximate)
    return rate[1], rate[2], total


def _judged_rate(shares: list[int], passed: int, cases: int, level: float,
                 approximate: bool) -> tuple[float | None, float, float]:
    """`judged_rate_interval` of `cases` cases, `passed` of them in the judge's pass stratum,
    the labelled ones holding `shares` (both pass, judge only, person only, both fail):
    `(estimate, lower, upper)`, the estimate None when a stratum holding cases has no
    labelled one."""
    both_pass, judge_only, person_only, both_fail = shares
    every = [1.0] * passed + [0.0] * (cases - passed)
    judge = [1.0] * (both_pass + judge_only) + [0.0] * (person_only + both_fail)
    people = ([1.0] * both_pass + [0.0] * judge_only + [1.0] * person_only
              + [0.0] * both_fail)
    rate = judged_rate_interval(every, judge, people, people, level, approximate)
    return rate.estimate, rate.lower, rate.upper


def corrected_projection(
    both_pass: int, judge_only: int, person_only: int, both_fail: int, *,
    judge_passed: int, judge_observed: int, judge_missing: int, level: float,
    minimum: float | None = None, maximum: float | None = None,
    limit: int = JUDGED_LABELS_LIMIT, approximate: bool = False,
) -> CorrectedProjection:
    """The labelled cases at which the corrected interval of a judged rate, continued at the
    same rates, decides a `min` / `max` rule (see the module's text).

    The four counts are the labelled sampled cases' judge × person verdicts; the judge passed
    `judge_passed` of `judge_observed` cases (`judge_missing` more have no verdict). Exactly
    one of `minimum` and `maximum` is given; `approximate`: the run's interval is PPI++'s,
    continued as PPI++'s.

    Example: the judged_agent example's counts (20 both pass, 7 judge-only passes, 3 both
    fail of 30 labelled; the judge passed 36 of 40) under `min: 0.6`.

    >>> from oloproof.stats import corrected_projection
    >>> found = corrected_projection(20, 7, 0, 3, judge_passed=36, judge_observed=40,
    ...                              judge_missing=0, level=0.95, minimum=0.6)
    >>> found.state, found.labelled > 30, found.cases > found.labelled
    ('PASS', True, True)
    """
    counts = [count(name, value) for name, value in (
        ("both_pass", both_pass), ("judge_only", judge_only), ("person_only", person_only),
        ("both_fail", both_fail))]
    labelled = sum(counts)
    passed, observed = count("judge_passed", judge_passed), count("judge_observed",
                                                                  judge_observed)
    missing = count("judge_missing", judge_missing)
    threshold, is_minimum = rule_threshold(minimum, maximum)
    cases = observed + missing
    if labelled == 0 or observed == 0:
        raise ValueError("a corrected projection needs labelled cases and judged ones")
    estimate = _judged_rate(counts, passed, cases, level, approximate)[0]
    if estimate is None:
        return CorrectedProjection(None, None, None, "stratum_unlabelled")
    if math.isclose(estimate, threshold, abs_tol=1e-12):
        return CorrectedProjection(None, None, None, "estimate_equals_threshold")
    state = sought_state(estimate, threshold, is_minimum)
    def decides(n: int) -> bool:
        if n < labelled:
            return False
        lower, upper, _ = corrected_bounds_at(
            n, *counts, judge_passed=passed, judge_observed=observed, judge_missing=missing,
            level=level, approximate=approximate)
        if is_minimum:
            return lower >= threshold if state == "PASS" else upper < threshold
        return upper <= threshold if state == "PASS" else lower > threshold

    found = smallest_deciding(decides, limit)
    if found is None:
        return CorrectedProjection(None, None, state, "beyond_limit")
    return CorrectedProjection(found, math.ceil(cases * found / labelled), state)
