"""The Bentkus interval for the mean of values in [0, 1] (Hoeffding 1963, Bentkus 2004): held to
its definition by brute force, to Clopper–Pearson where the values are 0/1, and to its level by
exact coverage on lattice shapes (two-point, unanimous, shares of trials) and by simulation on
continuous skewed values, n = 5 … 400."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from scipy.stats import beta as beta_distribution
from scipy.stats import binom

from oloproof.stats import (
    BENTKUS_METHOD,
    MeanInterval,
    bentkus_bounds,
    bentkus_critical_sum,
    bentkus_interval,
    bentkus_lower_bounds,
    bentkus_tail_bound,
    clopper_pearson,
)

FloatArray = npt.NDArray[np.float64]
_level = st.sampled_from([0.8, 0.9, 0.95, 0.99])


def _brute_tail_bound(s: float, n: int, m: float) -> float:
    """inf over h < s of E(B − h)₊ / (s − h) on a dense grid of h (and every integer), with
    the binomial's whole distribution: no window, no shortcut."""
    b = np.arange(n + 1, dtype=np.float64)
    pmf = binom.pmf(b, n, m)
    grid = np.concatenate([np.linspace(-3.0, s, 4001, endpoint=False),
                           np.arange(0.0, math.ceil(s))])
    grid = grid[grid < s]
    excess = (np.maximum(b[None, :] - grid[:, None], 0.0) * pmf[None, :]).sum(axis=1)
    with np.errstate(over="ignore", divide="ignore"):
        return float(min(1.0, (excess / (s - grid)).min()))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 60), st.floats(0.0, 1.0), st.floats(0.001, 0.999))
def test_the_tail_bound_is_its_definition(n: int, share: float, m: float) -> None:
    s = share * n
    got = float(bentkus_tail_bound([s], n, m)[0])
    want = _brute_tail_bound(s, n, m)

    # Never below the definition (the interval may only widen), and equal to it up to the
    # e^-50 the window leaves out and the grid's resolution.
    assert got >= want * (1 - 1e-9) - 1e-15
    assert got <= want * (1 + 1e-6) + 1e-12


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 500), st.floats(0.0, 1.0), _level)
def test_the_lower_bound_is_the_smallest_mean_not_rejected(n: int, share: float,
                                                           level: float) -> None:
    s = share * n
    half_alpha = (1.0 - level) / 2.0
    lower = float(bentkus_lower_bounds([s], n, level)[0])

    if lower > 0.0:
        assert bentkus_tail_bound([s], n, lower)[0] <= half_alpha * (1 + 1e-9), "rejected"
    above = min(1.0, lower + 1e-9)
    assert bentkus_tail_bound([s], n, above)[0] > half_alpha, "and just above it, not"


@pytest.mark.parametrize("n", [1, 2, 5, 18, 33, 40, 100, 400, 2000])
@pytest.mark.parametrize("level", [0.9, 0.95, 0.99])
def test_every_value_passing_or_failing_gives_exactly_clopper_pearson(n: int,
                                                                      level: float) -> None:
    passing = bentkus_interval([1.0] * n, [1.0] * n, level)
    failing = bentkus_interval([0.0] * n, [0.0] * n, level)

    assert (passing.lower, passing.upper) == clopper_pearson(n, n, level)
    assert (failing.lower, failing.upper) == clopper_pearson(0, n, level)
    assert passing.method == failing.method == BENTKUS_METHOD == "bentkus"


def test_the_new_users_desk_reads_as_with_one_trial() -> None:
    # 18 cases, every trial of every case passing: 81.4% as with one trial (the betting
    # interval read 68.7%).
    interval = bentkus_interval([1.0] * 18, [1.0] * 18, 0.95)

    assert interval.lower == clopper_pearson(18, 18, 0.95)[0]
    assert math.floor(interval.lower * 1000) / 10 == 81.4


@pytest.mark.parametrize("n", [5, 10, 18, 40, 100, 400])
def test_on_zero_one_values_it_is_within_0_02_of_clopper_pearson_and_never_narrower(
        n: int) -> None:
    k = np.arange(n + 1)
    lower = bentkus_lower_bounds(k, n, 0.95)
    upper = 1.0 - bentkus_lower_bounds(n - k, n, 0.95)
    exact = np.asarray([clopper_pearson(int(i), n, 0.95) for i in k])

    assert np.all(lower <= exact[:, 0] + 1e-12) and np.all(upper >= exact[:, 1] - 1e-12)
    assert np.max(exact[:, 0] - lower) <= 0.0165 + 1e-4
    assert np.max(upper - exact[:, 1]) <= 0.0165 + 1e-4


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=200), _level, st.randoms())
def test_the_interval_does_not_depend_on_the_order_of_the_values(values: list[float],
                                                                 level: float,
                                                                 random) -> None:
    shuffled = list(values)
    random.shuffle(shuffled)

    assert bentkus_interval(values, values, level) == bentkus_interval(shuffled, shuffled,
                                                                       level)
    assert bentkus_bounds(values, level) == bentkus_bounds(shuffled, level)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=120), _level)
def test_it_contains_the_mean_is_mirror_symmetric_and_monotone_in_the_level(
        values: list[float], level: float) -> None:
    lower, upper = bentkus_bounds(values, level)
    mirrored = bentkus_bounds([1.0 - v for v in values], level)
    mean = math.fsum(values) / len(values)

    assert lower <= mean + 1e-12 and upper >= mean - 1e-12
    assert mirrored[0] == pytest.approx(1.0 - upper, abs=1e-11)
    assert mirrored[1] == pytest.approx(1.0 - lower, abs=1e-11)
    wider = bentkus_bounds(values, 0.995)
    assert wider[0] <= lower + 1e-12 and wider[1] >= upper - 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)), min_size=1, max_size=60),
       _level)
# An observed mean of exactly 0 (or 1) holds the interval's bound at the estimate: found by
# Hypothesis when the check read a 0.0 estimate as absent (`0.0 or 1.0`).
@example(pairs=[(0.0, 0.0), (1.0, 0.5)], level=0.8)
@example(pairs=[(1.0, 1.0), (0.0, 0.5)], level=0.8)
def test_missing_values_bound_each_side_from_their_own_values(
        pairs: list[tuple[float, float]], level: float) -> None:
    low = [min(a, b) for a, b in pairs]
    high = [max(a, b) for a, b in pairs]

    interval = bentkus_interval(low, high, level)

    estimate = interval.estimate
    assert interval.lower == pytest.approx(min(bentkus_bounds(low, level)[0],
                                               1.0 if estimate is None else estimate), abs=0)
    assert interval.upper == pytest.approx(max(bentkus_bounds(high, level)[1],
                                               0.0 if estimate is None else estimate), abs=0)
    observed = [a for a, b in zip(low, high, strict=True) if a == b]
    if observed:
        assert interval.estimate == pytest.approx(math.fsum(observed) / len(observed))
    else:
        assert interval.estimate is None


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 300), st.floats(0.01, 0.99), _level)
def test_the_critical_sum_is_where_the_lower_bound_passes_the_mean(n: int, m: float,
                                                                   level: float) -> None:
    critical = bentkus_critical_sum(n, m, level)

    if math.isinf(critical):
        assert bentkus_lower_bounds([n], n, level)[0] < m
        return
    assert bentkus_tail_bound([critical], n, m)[0] <= (1.0 - level) / 2.0 * (1 + 1e-9)
    below = max(0.0, critical - 1e-7 * n)
    assert bentkus_tail_bound([below], n, m)[0] > (1.0 - level) / 2.0
    assert bentkus_lower_bounds([critical], n, level)[0] >= m - 1e-9


def test_edges_and_bad_input() -> None:
    assert bentkus_interval([], [], 0.95) == MeanInterval(None, None, None, "bentkus")
    assert bentkus_bounds([], 0.95) == (0.0, 1.0)
    assert list(bentkus_lower_bounds([0.0, 3.0], 3, 0.9)) == [0.0, clopper_pearson(3, 3,
                                                                                   0.9)[0]]
    nothing_known = bentkus_interval([0.0] * 3, [1.0] * 3, 0.95)
    assert (nothing_known.estimate, nothing_known.lower, nothing_known.upper) == (None, 0.0,
                                                                                 1.0)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        bentkus_interval([1.5], [1.5], 0.95)
    with pytest.raises(ValueError, match="exceeds"):
        bentkus_interval([0.6], [0.4], 0.95)
    with pytest.raises(ValueError, match="one entry per case"):
        bentkus_interval([0.1, 0.2], [0.3], 0.95)
    with pytest.raises(ValueError, match=r"in \[0, n\]"):
        bentkus_lower_bounds([4.0], 3, 0.95)
    with pytest.raises(ValueError, match="confidence level"):
        bentkus_interval([0.5], [0.5], 1.0)


# ---- coverage: exact on lattice shapes, simulated on continuous ones -------------------------


def _exact_coverage(support: FloatArray, pmf: FloatArray, n: int, truth: float,
                    level: float) -> float:
    """The chance, computed exactly, that the interval covers ``truth`` when the sum of the
    n values takes the value ``support[i]`` with probability ``pmf[i]``."""
    lower = bentkus_lower_bounds(support, n, level)
    upper = 1.0 - bentkus_lower_bounds(np.clip(n - support, 0.0, n), n, level)
    covered = (lower <= truth) & (truth <= upper)
    return float(pmf[covered].sum())


@settings(max_examples=25, deadline=None)
@given(st.integers(5, 400), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.01, 0.99),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_coverage_is_at_least_nominal_on_two_point_values(n: int, a: float, b: float,
                                                          weight: float,
                                                          level: float) -> None:
    # Each value is b with probability `weight`, else a: the sum is n·a + (b − a)·K with
    # K ~ Binomial(n, weight). a = 0, b = 1 is the unanimous case (every trial of a case
    # agrees); the coverage is computed exactly over K.
    a, b = min(a, b), max(a, b)
    k = np.arange(n + 1, dtype=np.float64)
    support = np.clip(n * a + (b - a) * k, 0.0, n)
    truth = a + (b - a) * weight

    coverage = _exact_coverage(support, binom.pmf(k, n, weight), n, truth, level)

    assert coverage >= level - 1e-9, (n, a, b, weight, coverage)


@settings(max_examples=20, deadline=None)
@given(st.integers(5, 400), st.floats(0.02, 0.98))
def test_coverage_is_at_least_nominal_on_unanimous_values(n: int, rate: float) -> None:
    # Every trial of a case agrees: its share of its trials is 0 or 1.
    k = np.arange(n + 1, dtype=np.float64)

    coverage = _exact_coverage(k, binom.pmf(k, n, rate), n, rate, 0.95)

    assert coverage >= 0.95 - 1e-9, (n, rate, coverage)


def _power(pmf: FloatArray, n: int) -> FloatArray:
    """The distribution of a sum of n independent draws from ``pmf`` (over 0 … len − 1)."""
    result = np.ones(1)
    base = pmf
    while n:
        if n & 1:
            result = np.convolve(result, base)
        n >>= 1
        if n:
            base = np.convolve(base, base)
        result = np.clip(result, 0.0, None)
    return result


@settings(max_examples=20, deadline=None)
@given(st.integers(5, 400), st.integers(2, 6), st.floats(0.2, 5.0), st.floats(0.2, 5.0))
def test_coverage_is_at_least_nominal_on_skewed_shares_of_trials(
        n: int, trials: int, a: float, b: float) -> None:
    # A case's chance of passing a trial is Beta(a, b) (skewed for a ≠ b); its value is its
    # share c / trials of passing trials, c beta-binomial. The sum of the n shares is
    # (Σ c) / trials, whose distribution is the n-fold convolution: coverage exactly.
    c = np.arange(trials + 1)
    chance = beta_distribution(a, b)
    grid = np.linspace(0.0, 1.0, 2001)[1:-1]
    weights = chance.pdf(grid)
    weights /= weights.sum()
    per_case = (binom.pmf(c[:, None], trials, grid[None, :]) * weights[None, :]).sum(axis=1)
    per_case /= per_case.sum()
    truth = float((c * per_case).sum() / trials)
    totals = _power(per_case, n)
    support = np.arange(totals.size, dtype=np.float64) / trials

    coverage = _exact_coverage(support, totals, n, truth, 0.95)

    assert coverage >= 0.95 - 1e-6, (n, trials, a, b, coverage)


@pytest.mark.parametrize("n", [5, 20, 100, 400])
@pytest.mark.parametrize(("a", "b"), [(0.5, 5.0), (5.0, 0.5), (0.3, 0.3)])
def test_coverage_is_at_least_nominal_on_continuous_skewed_values(n: int, a: float,
                                                                  b: float) -> None:
    rng = np.random.default_rng(n * 7 + int(a * 10))
    reps = 2000
    values = rng.beta(a, b, size=(reps, n))
    sums = values.sum(axis=1)
    truth = a / (a + b)

    lower = bentkus_lower_bounds(sums, n, 0.95)
    upper = 1.0 - bentkus_lower_bounds(np.clip(n - sums, 0.0, n), n, 0.95)
    covered = int(((lower <= truth) & (truth <= upper)).sum())

    # Fails only when the coverage is clearly below 95%: 2000 suites covering this often
    # or less would happen with probability under 10⁻³ at a true coverage of 95%.
    assert binom.cdf(covered, reps, 0.95) > 1e-3, covered / reps
