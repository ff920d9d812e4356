"""What would settle a rule on a judged criterion (docs/compare.md#a-judged-criterion): the
labelled cases at which the corrected interval, at the same rates, would decide it.

A judged criterion's rate, as people would judge it, is estimated from the judge's verdicts on
all `N` cases and people's labels on `n` of them drawn uniformly; its interval narrows as more
cases are labelled (people's labels are what it is uncertain about). `corrected_projection`
continues such a run at the same rates: `n'` labelled cases among `N' = N·n'/n` cases (the
share of labelled cases kept), the four judge × person counts and the judge's pass and missing
shares scaled with them, the sampled cases' corrections in a fixed shuffled order (the interval
of `stats.prediction_powered` reads them in order), and finds the smallest `n'` whose interval
decides the rule — doubling, then bisecting, as `stats.projection` does.

The interval is the one the run decides on (`prediction_powered_bounds`: the construction
`analysis/judged.py` uses); a new construction there is a new one here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from oloproof.stats._checks import count
from oloproof.stats.prediction_powered import prediction_powered_bounds
from oloproof.stats.projection import _smallest, _sought, _threshold

__all__ = ["JUDGED_LABELS_LIMIT", "CorrectedProjection", "corrected_bounds_at",
           "corrected_projection"]

#: The most labelled cases a projection looks at.
JUDGED_LABELS_LIMIT = 100_000
# The order the projected corrections are taken in: the same every time.
_SEED = 20_27


@dataclass(frozen=True)
class CorrectedProjection:
    """The smallest number of labelled cases (`labelled`, among `cases`) whose corrected
    interval at the same rates decides the rule, reaching `state`; or None with `reason`
    (`estimate_equals_threshold`, `beyond_limit`)."""

    labelled: int | None
    cases: int | None
    state: str | None
    reason: str | None = None


def corrected_bounds_at(
    labelled_total: int, both_pass: int, judge_only: int, person_only: int, both_fail: int, *,
    judge_passed: int, judge_observed: int, judge_missing: int, level: float,
) -> tuple[float, float, int]:
    """The corrected interval of the run continued to `labelled_total` labelled cases at the
    same rates (see the module's text), and how many cases hold them: `(lower, upper,
    cases)`. The corrections are taken in an order fixed by `labelled_total` alone."""
    counts = (both_pass, judge_only, person_only, both_fail)
    labelled = sum(counts)
    cases = judge_observed + judge_missing
    total = math.ceil(cases * labelled_total / labelled)
    shares = [round(c * labelled_total / labelled) for c in counts]
    corrections = np.concatenate([np.zeros(shares[0] + shares[3]), np.full(shares[1], -1.0),
                                  np.full(shares[2], 1.0)])
    np.random.default_rng((_SEED, labelled_total)).shuffle(corrections)
    judged = round(judge_observed * total / cases)
    low, high = prediction_powered_bounds(
        round(judge_passed * judged / judge_observed), judged, total - judged, corrections,
        corrections, level)
    return float(low[0]), float(high[0]), total


def corrected_projection(
    both_pass: int, judge_only: int, person_only: int, both_fail: int, *,
    judge_passed: int, judge_observed: int, judge_missing: int, level: float,
    minimum: float | None = None, maximum: float | None = None,
    limit: int = JUDGED_LABELS_LIMIT,
) -> CorrectedProjection:
    """The labelled cases at which the corrected interval of a judged rate, continued at the
    same rates, decides a `min` / `max` rule (see the module's text).

    The four counts are the labelled sampled cases' judge × person verdicts; the judge passed
    `judge_passed` of `judge_observed` cases (`judge_missing` more have no verdict). Exactly
    one of `minimum` and `maximum` is given.

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
    threshold, is_minimum = _threshold(minimum, maximum)
    cases = observed + missing
    if labelled == 0 or observed == 0:
        raise ValueError("a corrected projection needs labelled cases and judged ones")
    estimate = passed / observed + (person_only - judge_only) / labelled
    if math.isclose(estimate, threshold, abs_tol=1e-12):
        return CorrectedProjection(None, None, None, "estimate_equals_threshold")
    state = _sought(estimate, threshold, is_minimum)
    def decides(n: int) -> bool:
        if n < labelled:
            return False
        lower, upper, _ = corrected_bounds_at(
            n, *counts, judge_passed=passed, judge_observed=observed, judge_missing=missing,
            level=level)
        if is_minimum:
            return lower >= threshold if state == "PASS" else upper < threshold
        return upper <= threshold if state == "PASS" else lower > threshold

    found = _smallest(decides, limit)
    if found is None:
        return CorrectedProjection(None, None, state, "beyond_limit")
    return CorrectedProjection(found, math.ceil(cases * found / labelled), state)
