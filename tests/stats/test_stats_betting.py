"""The betting interval for bounded means (Waudby-Smith & Ramdas 2023;
docs/concepts.md#the-betting-interval)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oloproof.stats import (
    BETTING_METHOD,
    MeanInterval,
    betting_bounds,
    betting_lower_bounds,
    bounded_mean_interval,
)

# ---- against a direct, unvectorised capital process ------------------------------------------


def _brute_force_accepts(values: list[float], level: float, m: float) -> bool:
    """Is ``m`` inside the interval? The paper's definitions, one round at a time, no logs."""
    return bool(_brute_force_accepts_each(values, level, np.array([m]))[0])


def _brute_force_accepts_each(values: list[float], level: float,
                              ms: npt.NDArray[np.float64]) -> npt.NDArray[np.bool_]:
    """`_brute_force_accepts` for each candidate of ``ms`` at once: per candidate the same
    float operations, one round at a time (a candidate rejected at a round stays rejected;
    its capitals go on being computed, unread). At ``m = 0`` (``m = 1``) ``c/m`` is infinite,
    so the bet is untruncated on that side, as the definitions say."""
    alpha = round(1.0 - level, 12)
    n = len(values)
    total, squares, variance_before = 0.0, 0.0, 0.25
    long_capital, short_capital = np.ones(ms.shape), np.ones(ms.shape)
    inside = np.ones(ms.shape, dtype=bool)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        long_cap, short_cap = 0.5 / ms, 0.5 / (1.0 - ms)
        for t, x in enumerate(values, 1):
            bet = math.sqrt(2.0 * math.log(2.0 / alpha) / (n * variance_before))
            long_capital *= 1.0 + np.minimum(bet, long_cap) * (x - ms)
            short_capital *= 1.0 - np.minimum(bet, short_cap) * (x - ms)
            inside &= ~(np.maximum(0.5 * long_capital, 0.5 * short_capital) >= 1.0 / alpha)
            total += x
            mean = (0.5 + total) / (t + 1)
            squares += (x - mean) ** 2
            variance_before = (0.25 + squares) / (t + 1)
    return inside


_values = st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30)
_level = st.sampled_from([0.8, 0.9, 0.95, 0.99])


@settings(max_examples=60, deadline=None)
@given(_values, _level)
def test_matches_the_capital_process_on_a_fine_grid(values: list[float], level: float) -> None:
    lower, upper = betting_bounds(values, level)
    slack = 1e-9
    grid = np.linspace(0.0, 1.0, 401)
    for m, inside in zip(grid, _brute_force_accepts_each(values, level, grid), strict=True):
        if m < lower - slack or m > upper + slack:
            assert not inside, (m, lower, upper)
        elif lower + slack < m < upper - slack:
            assert inside, (m, lower, upper)


def test_known_small_samples_against_brute_force_bisection() -> None:
    rng = np.random.default_rng(7)
    for n in (3, 12, 40):
        values = [float(v) for v in rng.beta(0.5, 5.0, size=n)]
        lower, upper = betting_bounds(values, 0.95)
        # Bisect the brute-force acceptance on each side independently.
        for end, inward in ((lower, 1.0), (upper, -1.0)):
            if (inward > 0 and end == 0.0) or (inward < 0 and end == 1.0):
                assert _brute_force_accepts(values, 0.95, end)
                continue
            assert not _brute_force_accepts(values, 0.95, end)  # reported on the rejected side
            assert _brute_force_accepts(values, 0.95, end + inward * 1e-9)


# ---- properties --------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200), _level)
def test_the_reported_interval_contains_the_sample_mean(values: list[float], level: float) -> None:
    result = bounded_mean_interval(values, values, level)
    assert result.estimate is not None and result.lower is not None and result.upper is not None
    assert result.estimate == pytest.approx(float(np.mean(values)), abs=1e-12)
    assert 0.0 <= result.lower <= result.estimate <= result.upper <= 1.0
    assert result.method == BETTING_METHOD == "betting"
    paper = betting_bounds(values, level)
    # Widened only where the paper's set leaves the mean out, never narrowed.
    assert result.lower == min(paper[0], result.estimate)
    assert result.upper == max(paper[1], result.estimate)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=120))
def test_monotone_in_the_level(values: list[float]) -> None:
    bounds = [bounded_mean_interval(values, values, level) for level in (0.5, 0.8, 0.9, 0.95,
                                                                         0.99, 0.999)]
    for narrow, wide in itertools.pairwise(bounds):
        assert narrow.lower is not None and wide.lower is not None
        assert narrow.upper is not None and wide.upper is not None
        assert wide.lower <= narrow.lower + 1e-12
        assert wide.upper >= narrow.upper - 1e-12


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=100), _level)
def test_deterministic_for_a_fixed_order_and_mirror_symmetric(
    values: list[float], level: float
) -> None:
    first = bounded_mean_interval(values, values, level)
    assert bounded_mean_interval(list(values), list(values), level) == first
    assert betting_bounds(np.asarray(values), level) == betting_bounds(values, level)
    lower, upper = betting_bounds(values, level)
    mirrored = betting_bounds([1.0 - v for v in values], level)
    assert mirrored[0] == pytest.approx(1.0 - upper, abs=2e-12)
    assert mirrored[1] == pytest.approx(1.0 - lower, abs=2e-12)


def test_the_order_matters_which_is_why_callers_fix_it() -> None:
    ones_first = [1.0] * 33 + [0.0] * 7
    shuffled = list(np.random.default_rng(3).permutation(ones_first))
    assert betting_bounds(ones_first, 0.95) != betting_bounds(shuffled, 0.95)
    # Sorted data is the worst case: after 100 passes in a row the long capital has rejected
    # every mean below ~0.93 and the 100 failures after them every mean above ~0.87, so the
    # paper's set is empty; the reported interval is widened to the sample mean.
    halves = [1.0] * 100 + [0.0] * 100
    paper_lower, paper_upper = betting_bounds(halves, 0.95)
    assert paper_lower > 0.9 > paper_upper > 0.5
    result = bounded_mean_interval(halves, halves, 0.95)
    assert (result.estimate, result.lower, result.upper) == (0.5, 0.5, paper_upper)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=60),
       _level)
def test_missing_values_widen_each_side(pairs: list[tuple[float, float]], level: float) -> None:
    low = [min(p) for p in pairs]
    high = [max(p) for p in pairs]
    result = bounded_mean_interval(low, high, level)
    from_low = bounded_mean_interval(low, low, level)
    from_high = bounded_mean_interval(high, high, level)
    assert result.lower is not None and from_low.lower is not None
    assert result.upper is not None and from_high.upper is not None
    # Bounds come from the lower values (below) and the upper values (above).
    assert result.lower <= from_low.lower + 1e-15
    assert result.upper >= from_high.upper - 1e-15
    observed = [a for a, b in zip(low, high) if a == b]
    if observed:
        assert result.estimate == pytest.approx(sum(observed) / len(observed), abs=1e-12)
        assert result.lower <= result.estimate <= result.upper
    else:
        assert result.estimate is None


def test_edges_and_bad_input() -> None:
    assert bounded_mean_interval([], [], 0.95) == MeanInterval(None, None, None, "betting")
    assert betting_bounds([], 0.95) == (0.0, 1.0)
    nothing_known = bounded_mean_interval([0.0] * 5, [1.0] * 5, 0.95)
    assert nothing_known.estimate is None
    assert (nothing_known.lower, nothing_known.upper) == (0.0, 1.0)
    constant = bounded_mean_interval([0.5] * 1000, [0.5] * 1000, 0.95)
    assert constant.lower is not None and constant.upper is not None
    assert 0.45 < constant.lower < 0.5 < constant.upper < 0.55
    with pytest.raises(ValueError, match=r"lower_values\[1\]"):
        bounded_mean_interval([0.2, 0.9], [0.3, 0.4], 0.95)
    with pytest.raises(ValueError, match="one entry per case"):
        bounded_mean_interval([0.2], [0.3, 0.4], 0.95)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        bounded_mean_interval([1.5], [1.5], 0.95)
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        betting_bounds([float("nan")], 0.95)
    with pytest.raises(ValueError):
        betting_bounds([0.5], 1.0)


# ---- coverage by simulation ------------------------------------------------------------------


def _coverage(samples: npt.NDArray[np.float64], mean: float, level: float) -> float:
    """Share of rows whose reported interval (as `bounded_mean_interval`) contains `mean`."""
    sample_means = samples.mean(axis=1)
    lower = np.minimum(betting_lower_bounds(samples, level), sample_means)
    upper = np.maximum(1.0 - betting_lower_bounds(1.0 - samples, level), sample_means)
    for row in range(3):  # the batched rows are the public function's intervals
        one = bounded_mean_interval(samples[row], samples[row], level)
        assert (one.lower, one.upper) == pytest.approx((lower[row], upper[row]), abs=1e-15)
    return float(np.mean((lower <= mean) & (mean <= upper)))


def _draw(kind: str, rng: np.random.Generator, shape: tuple[int, int]
          ) -> tuple[npt.NDArray[np.float64], float]:
    if kind == "two-point 0/1 at 0.9":
        return (rng.uniform(size=shape) < 0.9).astype(np.float64), 0.9
    if kind == "two-point 0.2/0.7 at 0.5":
        return np.where(rng.uniform(size=shape) < 0.5, 0.7, 0.2), 0.45
    if kind == "skewed Beta(0.5, 5)":
        return rng.beta(0.5, 5.0, size=shape), 0.5 / 5.5
    assert kind == "uniform"
    return rng.uniform(size=shape), 0.5


KINDS = ["two-point 0/1 at 0.9", "two-point 0.2/0.7 at 0.5", "skewed Beta(0.5, 5)", "uniform"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [20, 50, 200])
def test_coverage_at_least_nominal(kind: str, n: int) -> None:
    rng = np.random.default_rng(20230 + n)
    samples, mean = _draw(kind, rng, (1000, n))
    coverage = _coverage(samples, mean, 0.95)
    # 1,000 repetitions: a coverage of 0.95 would show as ≥ 0.95 only about half the time, so
    # passing needs the method to be at its level with room to spare, as it is (≈ 0.98–1.0).
    assert coverage >= 0.95, (kind, n, coverage)


@pytest.mark.slow
@pytest.mark.parametrize("level", [0.9, 0.95])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("n", [20, 50, 200])
def test_coverage_at_least_nominal_many_repetitions(kind: str, n: int, level: float) -> None:
    rng = np.random.default_rng(777 + n)
    samples, mean = _draw(kind, rng, (4_000, n))
    assert _coverage(samples, mean, level) >= level
