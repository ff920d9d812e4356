"""The plan projections (issues 14 and 26): the total at the same rate checked against
a linear scan, for the exact and the Bentkus interval. The chance of deciding is the run's,
continued, averaged over its confidence distribution (issue 40):
tests/stats/test_stats_assurance.py."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import beta

from oloproof.stats import (
    BENTKUS_PROJECTION_METHOD,
    PROJECTION_METHOD,
    RateProjection,
    bentkus_lower_bounds,
    clopper_pearson,
    exact_bounds_at_rate,
    mean_projection,
    rate_projection,
)


def _scan_bounds(rate: float, totals: npt.NDArray[np.float64], level: float
                 ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """The exact interval at the same rate for every total at once, from scipy.stats."""
    half = round((1.0 - level) / 2.0, 12)
    k = rate * totals
    lower = np.zeros_like(totals) if rate == 0.0 else beta.ppf(half, k, totals - k + 1.0)
    upper = np.ones_like(totals) if rate == 1.0 else beta.ppf(1.0 - half, k + 1.0, totals - k)
    return lower, upper


def _first_deciding(passed: int, observed: int, level: float, threshold: float,
                    is_minimum: bool, up_to: int) -> tuple[int | None, str | None]:
    rate = passed / observed
    totals = np.arange(1, up_to + 1, dtype=np.float64)
    lower, upper = _scan_bounds(rate, totals, level)
    if is_minimum:
        passing, failing = lower >= threshold, upper < threshold
    else:
        passing, failing = upper <= threshold, lower > threshold
    wanted = passing if (rate > threshold) == is_minimum else failing
    state = "PASS" if (rate > threshold) == is_minimum else "FAIL"
    hits = np.flatnonzero(wanted)
    if hits.size == 0:
        return None, None
    # Once decided, it stays decided: the projection's search relies on that.
    assert wanted[hits[0]:].all()
    return int(hits[0]) + 1, state


def test_the_issues_example_33_of_40_at_min_80_percent() -> None:
    result = rate_projection(33, 40, 0.95, minimum=0.8)
    total, state = _first_deciding(33, 40, 0.95, 0.8, True, 5000)
    assert result == RateProjection(total, "PASS", None, PROJECTION_METHOD)
    assert state == "PASS"
    assert result.total == 1000
    # At 1,000 cases the rate gives a whole number of passes (825): the exact interval itself.
    assert exact_bounds_at_rate(0.825, 1000, 0.95) == clopper_pearson(825, 1000, 0.95)
    assert clopper_pearson(825, 1000, 0.95)[0] >= 0.8 > exact_bounds_at_rate(0.825, 999,
                                                                               0.95)[0]
    # Among the totals where the rate is a whole number of cases (multiples of 40), the first
    # whose exact interval clears 0.8 is that same 1,000.
    multiples = [n for n in range(40, 2001, 40)
                 if clopper_pearson(33 * n // 40, n, 0.95)[0] >= 0.8]
    assert multiples[0] == 1000


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 60), st.integers(0, 60), st.floats(0.02, 0.98),
       st.sampled_from([0.8, 0.9, 0.95, 0.99]), st.booleans())
def test_matches_a_linear_scan(observed: int, passed: int, threshold: float, level: float,
                               is_minimum: bool) -> None:
    assume(passed <= observed)
    rate = passed / observed
    assume(abs(rate - threshold) > 0.06)  # keeps the scan to a few thousand totals
    if is_minimum:
        result = rate_projection(passed, observed, level, minimum=threshold)
    else:
        result = rate_projection(passed, observed, level, maximum=threshold)
    assert result.total is not None
    total, state = _first_deciding(passed, observed, level, threshold, is_minimum,
                                   max(4000, 2 * result.total))
    assert (result.total, result.state, result.reason) == (total, state, None)


def test_equal_to_the_threshold_or_beyond_reach() -> None:
    assert rate_projection(32, 40, 0.95, minimum=0.8) == RateProjection(
        None, None, "estimate_equals_threshold", PROJECTION_METHOD)
    assert rate_projection(0, 0, 0.95, minimum=0.8).reason == "no_observations"
    near = rate_projection(1, 3, 0.95, maximum=1 / 3 + 1e-9, limit=10**6)
    assert (near.total, near.reason) == (None, "beyond_limit")
    # A rate on the failing side projects a FAIL; all-passing projects a PASS.
    assert rate_projection(24, 40, 0.95, minimum=0.8).state == "FAIL"
    assert rate_projection(40, 40, 0.95, minimum=0.9) == RateProjection(
        36, "PASS", None, PROJECTION_METHOD)
    assert clopper_pearson(36, 36, 0.95)[0] >= 0.9 > clopper_pearson(35, 35, 0.95)[0]
    assert rate_projection(0, 40, 0.95, maximum=0.05).state == "PASS"
    assert rate_projection(40, 40, 0.95, maximum=0.95).state == "FAIL"


def test_large_totals_are_found_quickly() -> None:
    # 0.8 against 0.799: about 1.96² · 0.8 · 0.2 / 0.001² ≈ 615,000 cases, in ~40 evaluations.
    result = rate_projection(4, 5, 0.95, minimum=0.799)
    assert result.total is not None and 600_000 < result.total < 640_000
    lower_at = exact_bounds_at_rate(0.8, result.total, 0.95)[0]
    lower_before = exact_bounds_at_rate(0.8, result.total - 1, 0.95)[0]
    assert lower_before < 0.799 <= lower_at


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 200), st.integers(0, 200), st.integers(1, 5),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_the_interval_at_the_rate_is_the_exact_interval_at_whole_counts(
    observed: int, passed: int, times: int, level: float
) -> None:
    assume(passed <= observed)
    total = observed * times
    assert exact_bounds_at_rate(passed / observed, total, level) == pytest.approx(
        clopper_pearson(passed * times, total, level), abs=1e-12)


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        rate_projection(3, 4, 0.95)
    with pytest.raises(ValueError, match="exactly one"):
        rate_projection(3, 4, 0.95, minimum=0.5, maximum=0.6)
    with pytest.raises(ValueError):
        rate_projection(5, 4, 0.95, minimum=0.5)
    with pytest.raises(ValueError):
        rate_projection(3, 4, 0.95, minimum=1.5)
    with pytest.raises(ValueError):
        exact_bounds_at_rate(1.2, 10, 0.95)


# ---- the Bentkus interval at the same rate, and the chance of deciding -----------------------


def _bentkus_at(rate: float, total: int, level: float) -> tuple[float, float]:
    """The Bentkus interval of ``total`` values with mean ``rate`` (only their sum counts)."""
    s = rate * total
    lows = bentkus_lower_bounds([s, total - s], total, level)
    return float(lows[0]), 1.0 - float(lows[1])


@settings(max_examples=12, deadline=None)
@given(st.floats(0.05, 0.95), st.floats(0.05, 0.95), st.booleans(),
       st.sampled_from([0.9, 0.95]))
def test_the_bentkus_projection_matches_a_linear_scan(rate: float, threshold: float,
                                                      is_minimum: bool, level: float) -> None:
    assume(abs(rate - threshold) > 0.15)
    side = {"minimum": threshold} if is_minimum else {"maximum": threshold}
    result = mean_projection(rate, level, **side)

    state = "PASS" if (rate > threshold) == is_minimum else "FAIL"

    def decided(total: int) -> bool:
        lower, upper = _bentkus_at(rate, total, level)
        if is_minimum:
            return lower >= threshold if state == "PASS" else upper < threshold
        return upper <= threshold if state == "PASS" else lower > threshold

    first = next(total for total in range(1, 1000) if decided(total))
    assert all(decided(total) for total in range(first, first + 40)), "it stays decided"
    assert (result.total, result.state, result.method) == (first, state,
                                                           BENTKUS_PROJECTION_METHOD)


def test_every_trial_passing_projects_as_the_exact_interval_does() -> None:
    # 18 of 18 (every trial of every case passing) under min 0.9: 36 cases, as 36 of 36.
    assert mean_projection(1.0, 0.95, minimum=0.9).total == 36 == \
        rate_projection(18, 18, 0.95, minimum=0.9).total
