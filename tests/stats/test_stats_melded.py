"""The paired difference's power and validity (issue 26 acceptance 3 and 4).

0/1 values on both sides: the melded interval compatible with exact McNemar (Fay & Lumbard
2021, `oloproof.stats.melded`). Its coverage is *computed*, not simulated: for n pairs the
table (discordant m, favourable x) has a known distribution, so the chance that the lower bound
lies above the true difference is a finite sum over every table. Property tests draw shapes
(P(broken), P(fixed)) and require each one-sided miss to be at most α/2 — so coverage ≥ 1 − α
and P(PASS at exactly −margin) ≤ α/2.

Clustered pairs (a cluster's cases changing together, the audit's 40 × 5 and 20 × 10): one
value per cluster, the betting interval over clusters; simulated, with the same one-sided
evidence rule as the betting tests (`test_stats_paired.py`): the Clopper–Pearson lower bound
of the coverage at 1 − 10⁻³ must clear the level.
"""

from __future__ import annotations

from functools import cache

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta, binom, binomtest

from oloproof.stats import (
    betting_lower_bounds,
    binary_difference_interval,
    cluster_difference_interval,
    mcnemar_exact,
    melded_bounds,
    melded_lower_bound,
)

LEVEL = 0.95
HALF_ALPHA = 0.025
SIZES = (5, 12, 25)  # pairs per suite in the exact checks (every table of each is computed)

FloatArray = npt.NDArray[np.float64]


@cache
def _lower_table(n: int) -> FloatArray:
    """The melded lower bound of every table of n pairs: [m, x] (NaN where x > m)."""
    table = np.full((n + 1, n + 1), np.nan)
    for m in range(n + 1):
        for x in range(m + 1):
            table[m, x] = melded_lower_bound(n, m, x, LEVEL)
    return table


def _upper(table: FloatArray, m: int, x: int) -> float:
    return -float(table[m, m - x])  # the upper bound is the mirrored table's lower bound


def _misses(n: int, p_broken: float, p_fixed: float, *, at_or_above: bool = False
            ) -> tuple[float, float]:
    """P(lower > Δ) and P(upper < Δ) for n pairs drawn with these chances, summed over every
    table (`at_or_above`: P(lower ≥ Δ), a PASS at a margin of exactly −Δ)."""
    table = _lower_table(n)
    delta = p_fixed - p_broken
    psi = p_fixed + p_broken
    theta = p_fixed / psi if psi > 0 else 0.5
    low_miss = high_miss = 0.0
    p_m = binom.pmf(np.arange(n + 1), n, psi)
    for m in range(n + 1):
        if p_m[m] == 0.0:
            continue
        p_x = binom.pmf(np.arange(m + 1), m, theta)
        lows = table[m, : m + 1]
        highs = -table[m, m::-1]
        above = lows >= delta - 1e-12 if at_or_above else lows > delta + 1e-12
        low_miss += p_m[m] * float(p_x[above].sum())
        high_miss += p_m[m] * float(p_x[highs < delta - 1e-12].sum())
    return low_miss, high_miss


# ---- figures -----------------------------------------------------------------------------------


def test_all_concordant_pairs_read_the_exact_bound_on_the_discordant_share() -> None:
    """Issue 26: with all 400 pairs concordant the betting interval read ±0.0184; the
    difference can be no larger than the discordant share, whose exact upper bound for 0 of
    400 is 1 − (α/2)^(1/400) = 0.0092."""
    lower, upper = melded_bounds(400, 0, 0, LEVEL)
    assert upper == pytest.approx(1 - HALF_ALPHA ** (1 / 400), rel=1e-12)
    assert lower == -upper
    assert upper <= 0.011
    result = binary_difference_interval([0.0] * 400, [0.0] * 400, LEVEL)
    assert (result.estimate, result.lower, result.upper, result.method) == (
        0.0, lower, upper, "melded_mcnemar")


def _passes_at(n: int, m: int, margin: float) -> int:
    """The fewest fixed pairs x of m discordant ones at which the melded lower bound is at or
    above −margin (m + 1 if none): it rises with x (a broken pair turned fixed never lowers
    it, `test_the_lower_bound_never_rises_when_a_pair_falls`), so a bisection finds it."""
    low, high = 0, m + 1
    while low < high:
        x = (low + high) // 2
        if melded_lower_bound(n, m, x, LEVEL) >= -margin:
            high = x
        else:
            low = x + 1
    return low


def test_the_four_percent_discordant_scenario_passes_more_often_than_betting_did() -> None:
    """Issue 26: n = 400, 2% broken and 2% fixed (true difference 0), margin 0.02. The betting
    interval let a non_inferiority rule pass 26% of the time; the asymptotic z-test (not valid
    at every n) passes about half the time, a ceiling no exact method reaches. The melded
    interval's chance, summed exactly over every table of probability above 1e-12, lies
    between them (`benchmarks/paired.py` reports it: 0.413)."""
    n, chance, margin = 400, 0.02, 0.02
    p_m = binom.pmf(np.arange(n + 1), n, 2 * chance)
    melded = wald = 0.0
    for m in np.flatnonzero(p_m > 1e-12):
        m = int(m)
        p_x = binom.pmf(np.arange(m + 1), m, 0.5) * p_m[m]
        melded += float(p_x[_passes_at(n, m, margin):].sum())
        d = (2 * np.arange(m + 1) - m) / n
        se = np.sqrt(np.maximum(m / n - d * d, 0.0) / n)
        wald += float(p_x[d - 1.959963984540054 * se >= -margin].sum())
    assert 0.26 < melded < wald, (melded, wald)
    assert wald > 0.5


def test_known_tables() -> None:
    # Every discordant pair broke: minus the exact upper bound of the discordant share.
    assert melded_lower_bound(40, 7, 0, LEVEL) == pytest.approx(
        -beta.ppf(1 - HALF_ALPHA, 8, 33), rel=1e-12)
    # Every pair discordant: the exact interval of θ, mapped by 2θ − 1.
    assert melded_bounds(30, 10, 20, LEVEL)[0] <= 2 * beta.ppf(HALF_ALPHA, 20, 11) - 1
    assert melded_lower_bound(0, 0, 0, LEVEL) == -1.0
    with pytest.raises(ValueError, match="favourable"):
        melded_lower_bound(10, 3, 4, LEVEL)


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 300), st.data())
def test_swapping_fixed_and_broken_turns_the_interval_around_zero(n: int, data: st.DataObject
                                                                  ) -> None:
    broken = data.draw(st.integers(0, n))
    fixed = data.draw(st.integers(0, n - broken))
    lower, upper = melded_bounds(n, broken, fixed, LEVEL)
    assert -1.0 <= lower <= (fixed - broken) / n <= upper <= 1.0
    assert melded_bounds(n, fixed, broken, LEVEL) == (-upper, -lower)


@pytest.mark.parametrize("n", [*SIZES, 60])
def test_it_excludes_zero_exactly_when_exact_mcnemar_rejects(n: int) -> None:
    """Compatible with the exact (central) McNemar test: the lower bound is above 0 exactly
    when P(X ≥ x) < α/2 for X ~ Binomial(m, ½), that is when McNemar's p < α."""
    for m in range(0, n + 1, 1 if n <= 25 else 7):
        for x in range(m + 1):
            lower, upper = melded_bounds(n, m - x, x, LEVEL)
            p = mcnemar_exact(m - x, x).p_value
            assert (lower > 0 or upper < 0) == (p < 1 - LEVEL), (n, m, x, lower, upper, p)
            if 0 < m < 40:
                assert p == pytest.approx(binomtest(x, m, 0.5).pvalue, rel=1e-9)


@pytest.mark.parametrize("n", SIZES)
def test_the_lower_bound_never_rises_when_a_pair_falls(n: int) -> None:
    """What makes a missing side resolved the worst way valid: lowering one pair's difference
    (0 → −1: m + 1; +1 → 0: m − 1, x − 1) never raises the lower bound."""
    table = _lower_table(n)
    for m in range(n + 1):
        for x in range(m + 1):
            if m < n:
                assert table[m + 1, x] <= table[m, x] + 1e-12, (n, m, x)
            if x > 0:
                assert table[m - 1, x - 1] <= table[m, x] + 1e-12, (n, m, x)


# ---- exact coverage on independent pairs -------------------------------------------------------

# Chances below 1e-9 are 0 (scipy's binomial pmf overflows on subnormal chances).
_chance = st.floats(0.0, 1.0).map(lambda p: 0.0 if p < 1e-9 else p)
_shapes = st.tuples(_chance, _chance).map(
    lambda ab: (ab[0] * (1.0 - ab[1]), ab[1]) if ab[0] + ab[1] > 1.0 else ab)


@settings(max_examples=120, deadline=None, database=None)
@given(st.sampled_from(SIZES), _shapes)
def test_each_bound_misses_at_most_half_alpha(n: int, shape: tuple[float, float]) -> None:
    low_miss, high_miss = _misses(n, *shape)
    assert low_miss <= HALF_ALPHA + 1e-12, (n, shape, low_miss)
    assert high_miss <= HALF_ALPHA + 1e-12, (n, shape, high_miss)


@settings(max_examples=80, deadline=None, database=None)
@given(st.sampled_from(SIZES), _chance.map(lambda p: 0.3 * p), st.floats(0.005, 0.3))
def test_a_candidate_exactly_at_the_margin_passes_at_most_half_alpha(
        n: int, p_fixed: float, margin: float) -> None:
    """P(PASS) when the true difference is exactly −margin (the lower bound at or above it)."""
    p_broken = p_fixed + margin
    if p_broken + p_fixed > 1.0:
        return
    passes, _ = _misses(n, p_broken, p_fixed, at_or_above=True)
    assert passes <= HALF_ALPHA + 1e-12, (n, p_fixed, margin, passes)


@pytest.mark.parametrize(("p_broken", "p_fixed"), [(0.02, 0.02), (0.0, 0.0), (0.5, 0.5),
                                                   (0.3, 0.0), (0.02, 0.0), (0.1, 0.05)])
@pytest.mark.parametrize("n", SIZES)
def test_coverage_in_named_shapes(n: int, p_broken: float, p_fixed: float) -> None:
    low_miss, high_miss = _misses(n, p_broken, p_fixed)
    assert 1.0 - low_miss - high_miss >= LEVEL - 1e-12


def test_the_exact_check_fails_an_interval_that_covers_less() -> None:
    """The same sum on the Wald interval (normal approximation) finds its miss above α/2 for
    rare changes: the check can fail."""
    n, p_broken = 25, 0.02  # and P(fixed) = 0: every discordant pair broke
    miss = 0.0
    for m in range(n + 1):
        b = m  # every discordant pair broke
        d = -b / n
        se = np.sqrt(max(b / n - d * d, 0.0) / n)
        lower = d - 1.959964 * se
        if lower > -p_broken + 1e-12:
            miss += float(binom.pmf(m, n, p_broken))
    assert miss > HALF_ALPHA


# ---- clustered pairs (simulated) ---------------------------------------------------------------

REPETITIONS = 8_000


def _clustered_differences(clusters: int, size: int, p_broken: float, p_fixed: float,
                           seed: int) -> FloatArray:
    """REPETITIONS suites of clusters × size paired differences whose cases change together:
    a cluster breaks (each of its cases breaks with chance 0.8), is fixed (likewise), or
    stays; the true difference is 0.8 (p_fixed − p_broken)."""
    rng = np.random.default_rng(seed)
    kind = rng.random((REPETITIONS, clusters, 1))
    sign = np.where(kind < p_broken, -1.0, np.where(kind > 1.0 - p_fixed, 1.0, 0.0))
    moves = rng.random((REPETITIONS, clusters, size)) < 0.8
    return (sign * moves).reshape(REPETITIONS, clusters * size)


def _lower_bounds(values: FloatArray) -> FloatArray:
    """The reported lower bound of the betting interval on differences (rows), as
    `paired_difference_interval` reports it (widened to the sample mean)."""
    shifted = (values + 1.0) / 2.0
    low = np.minimum(betting_lower_bounds(shifted, LEVEL), shifted.mean(axis=1))
    return np.maximum(-1.0, 2.0 * low - 1.0)


def _shown_at_most(count: int, level: float) -> bool:
    """Whether `count` events of REPETITIONS show a chance ≤ `level`: the one-sided
    Clopper–Pearson upper bound at 1 − 10⁻³ is at most it."""
    return float(beta.ppf(1 - 1e-3, count + 1, REPETITIONS - count)) <= level


@pytest.mark.parametrize(("clusters", "size"), [(40, 5), (20, 10)])
def test_clustered_pairs_over_clusters_are_valid_and_ignoring_clusters_is_not(
        clusters: int, size: int) -> None:
    """The audit's scenarios. Over clusters: the lower bound misses the truth (from above) at
    most α/2 of the time — and P(PASS at exactly −margin) is that chance at a true difference
    of −margin. Pairs taken as independent (what compare did) miss far more often."""
    margin = 0.05
    p_fixed = 0.1
    p_broken = p_fixed + margin / 0.8  # the true difference is exactly −margin
    d = _clustered_differences(clusters, size, p_broken, p_fixed, seed=clusters)
    sums = d.reshape(REPETITIONS, clusters, size).sum(axis=2)
    sizes = np.full(clusters, float(size))
    over_clusters = _lower_bounds(d.reshape(REPETITIONS, clusters, size).mean(axis=2))
    for row in range(20):  # the vectorised bound is the reported one
        reported = cluster_difference_interval(sums[row], sums[row], sizes, LEVEL,
                                               observed_sum=float(sums[row].sum()),
                                               observed_pairs=clusters * size)
        assert reported.lower == pytest.approx(over_clusters[row], abs=1e-9)
    passed = int((over_clusters >= -margin).sum())
    assert _shown_at_most(passed, HALF_ALPHA), passed / REPETITIONS
    as_independent = _lower_bounds(d)
    assert not _shown_at_most(int((as_independent >= -margin).sum()), HALF_ALPHA)


@pytest.mark.parametrize(("clusters", "size"), [(40, 5), (20, 10)])
@pytest.mark.parametrize(("p_broken", "p_fixed"), [(0.1, 0.1), (0.3, 0.05), (0.0, 0.2)])
def test_clustered_coverage_at_least_nominal(clusters: int, size: int, p_broken: float,
                                             p_fixed: float) -> None:
    d = _clustered_differences(clusters, size, p_broken, p_fixed, seed=7 * clusters + size)
    truth = 0.8 * (p_fixed - p_broken)
    means = d.reshape(REPETITIONS, clusters, size).mean(axis=2)
    lower = _lower_bounds(means)
    upper = -_lower_bounds(-means)
    missed = int(((lower > truth + 1e-12) | (upper < truth - 1e-12)).sum())
    assert _shown_at_most(missed, 1 - LEVEL), missed / REPETITIONS
