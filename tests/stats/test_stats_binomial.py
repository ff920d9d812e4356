"""Exact binomial intervals with missingness bounds
(docs/concepts.md#pass-rates-exact-intervals-with-missing-cases)."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from oloproof.stats import (
    RATE_METHOD,
    RateInterval,
    clopper_pearson,
    percent,
    percent_lower,
    percent_upper,
    rate_interval,
)

# (passed, observed, missing, printed lower, printed upper) — docs/concepts.md and the
# examples' figures, all at 95%.
WORKED_EXAMPLES = [
    (33, 40, 0, "67.2%", "92.7%"),
    (39, 39, 1, "86.8%", "100.0%"),
    (39, 40, 0, "86.8%", "100.0%"),
    (29, 30, 0, "82.7%", "100.0%"),
    (30, 30, 0, "88.4%", "100.0%"),
    (0, 6, 1, "0.0%", "57.9%"),
    (0, 7, 0, "0.0%", "41.0%"),
    (27, 29, 0, "77.2%", "99.2%"),
    (6, 10, 0, "26.2%", "87.9%"),
    (26, 30, 0, "69.2%", "96.3%"),
    (27, 29, 1, "73.4%", "99.2%"),
    (37, 40, 0, "79.6%", "98.5%"),
    (24, 40, 0, "43.3%", "75.2%"),
    (29, 39, 1, "56.1%", "87.4%"),
]


@pytest.mark.parametrize(("k", "n", "m", "low", "high"), WORKED_EXAMPLES)
def test_worked_examples_print_as_in_spec(k: int, n: int, m: int, low: str, high: str) -> None:
    result = rate_interval(k, n, m, 0.95)
    assert result.lower is not None and result.upper is not None
    assert (percent_lower(result.lower), percent_upper(result.upper)) == (low, high)
    assert result.method == RATE_METHOD


def test_33_of_40_unrounded_bounds() -> None:
    result = rate_interval(33, 40, 0, 0.95)
    assert result.estimate == pytest.approx(0.825)
    assert result.lower == pytest.approx(0.67221, abs=1e-5)
    assert result.upper == pytest.approx(0.92662, abs=1e-5)


def test_39_of_40_exact_upper_is_99_94_percent() -> None:
    upper = rate_interval(39, 40, 0, 0.95).upper
    assert upper is not None
    assert round(upper, 4) == 0.9994
    assert percent_upper(upper) == "100.0%"


@pytest.mark.parametrize(
    ("k", "n", "m", "shown"),
    [
        (33, 40, 0, "82.5%"),
        (39, 39, 1, "100.0%"),
        (29, 39, 1, "74.4%"),
        (24, 40, 0, "60.0%"),
        (37, 40, 0, "92.5%"),
        (39, 40, 0, "97.5%"),
        (0, 6, 1, "0.0%"),
        (27, 29, 0, "93.1%"),
        (29, 30, 0, "96.7%"),
        (26, 30, 0, "86.7%"),
    ],
)
def test_worked_estimates(k: int, n: int, m: int, shown: str) -> None:
    estimate = rate_interval(k, n, m, 0.95).estimate
    assert estimate is not None
    assert percent(estimate) == shown


def test_validity_label_bar_section_9() -> None:
    lower_20 = clopper_pearson(20, 20, 0.95)[0]
    lower_24 = clopper_pearson(24, 24, 0.95)[0]
    assert round(lower_20, 3) == 0.832
    assert round(lower_24, 3) == 0.858
    # "At 95% and a bar of 0.85 that takes at least 23 pairs, all kept."
    assert clopper_pearson(22, 22, 0.95)[0] < 0.85 <= clopper_pearson(23, 23, 0.95)[0]
    assert clopper_pearson(23, 24, 0.95)[0] < 0.85


def test_edge_cases() -> None:
    assert clopper_pearson(0, 0, 0.95) == (0.0, 1.0)
    assert clopper_pearson(0, 5, 0.95)[0] == 0.0
    assert clopper_pearson(5, 5, 0.95)[1] == 1.0
    assert rate_interval(0, 0, 0, 0.95) == RateInterval(None, None, None, RATE_METHOD)
    only_missing = rate_interval(0, 0, 3, 0.95)
    assert only_missing.estimate is None
    assert (only_missing.lower, only_missing.upper) == (0.0, 1.0)
    # With no missing case the interval is the plain exact interval.
    plain = rate_interval(12, 20, 0, 0.9)
    assert (plain.lower, plain.upper) == clopper_pearson(12, 20, 0.9)


@pytest.mark.parametrize(
    "args",
    [
        (3, 2, 0, 0.95),
        (-1, 2, 0, 0.95),
        (1, 2, -1, 0.95),
        (1, 2, 0, 1.0),
        (1, 2, 0, 0.0),
        (1, 2, 0, float("nan")),
    ],
)
def test_rejects_bad_arguments(args: tuple[int, int, int, float]) -> None:
    with pytest.raises(ValueError):
        rate_interval(*args)


def test_rejects_non_integers() -> None:
    with pytest.raises(TypeError):
        rate_interval(1.5, 2, 0, 0.95)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        clopper_pearson(True, 2, 0.95)


def _bisect(f: Callable[[float], float], lo: float = 0.0, hi: float = 1.0) -> float:
    """Root of an increasing function on [lo, hi] by plain bisection."""
    for _ in range(80):
        mid = (lo + hi) / 2.0
        if f(mid) < 0.0:
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2.0


def _brute_force(k: int, n: int, m: int, level: float) -> tuple[float, float]:
    """Exact bounds straight from the binomial tails, found by bisection on p."""
    big_n = n + m
    half = (1.0 - level) / 2.0
    # Lower: P(X ≥ k | p) = α/2, increasing in p; 0 when k = 0.
    lower = 0.0 if k == 0 else _bisect(lambda p: float(binom.sf(k - 1, big_n, p)) - half)
    # Upper: P(X ≤ k+m | p) = α/2, decreasing in p; 1 when k + m = N.
    top = k + m
    upper = 1.0 if top == big_n else _bisect(lambda p: half - float(binom.cdf(top, big_n, p)))
    return lower, upper


@st.composite
def _counts(draw: st.DrawFn) -> tuple[int, int, int, float]:
    n = draw(st.integers(0, 150))
    k = draw(st.integers(0, n))
    m = draw(st.integers(0, 20))
    level = draw(st.floats(0.5, 0.999))
    return k, n, m, level


@settings(max_examples=120, deadline=None)
@given(_counts())
def test_rate_interval_matches_brute_force(case: tuple[int, int, int, float]) -> None:
    k, n, m, level = case
    result = rate_interval(k, n, m, level)
    if n + m == 0:
        assert result == RateInterval(None, None, None, RATE_METHOD)
        return
    assert result.lower is not None and result.upper is not None
    lower, upper = _brute_force(k, n, m, level)
    assert result.lower == pytest.approx(lower, abs=1e-8)
    assert result.upper == pytest.approx(upper, abs=1e-8)
    assert 0.0 <= result.lower <= result.upper <= 1.0
    if n > 0:
        assert result.estimate == k / n
        assert result.lower <= result.estimate <= result.upper
    else:
        assert result.estimate is None


# ---- α from the level's decimal text (issue 12, acceptance 7) ---------------------------------


def test_one_of_one_at_90_percent_has_lower_bound_exactly_0_05() -> None:
    # 1.0 - 0.9 is 0.09999999999999998 in floating point; α must be 0.1.
    assert clopper_pearson(1, 1, 0.9) == (0.05, 1.0)
    assert clopper_pearson(0, 1, 0.9) == (0.0, 0.95)
    assert rate_interval(1, 1, 0, 0.9).lower == 0.05


@pytest.mark.parametrize(
    ("level", "half_alpha"),
    [(0.9, 0.05), (0.95, 0.025), (0.99, 0.005), (0.8, 0.1), (0.999, 0.0005), (0.5, 0.25),
     (0.98, 0.01), (0.6, 0.2)],
)
def test_one_case_bounds_are_the_tail_probability_exactly(level: float, half_alpha: float) -> None:
    # For 1 of 1 the exact lower bound is α/2 and for 0 of 1 the upper bound is 1 − α/2.
    assert clopper_pearson(1, 1, level)[0] == half_alpha
    assert clopper_pearson(0, 1, level)[1] == 1.0 - half_alpha


def test_tail_probabilities_come_from_the_decimal_text() -> None:
    from oloproof.stats._checks import tail_probabilities

    assert tail_probabilities(0.9) == (0.1, 0.05, 0.95)
    assert tail_probabilities(0.95) == (0.05, 0.025, 0.975)
    assert tail_probabilities(0.999) == (0.001, 0.0005, 0.9995)
    assert tail_probabilities(0.1 + 0.2) == (0.7, 0.35, 0.65)  # 0.30000000000000004 as written
