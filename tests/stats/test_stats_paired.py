"""A candidate against its baseline (docs/compare.md#the-interval): the paired difference and exact
McNemar."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import beta, binomtest

from oloproof.stats import (
    MCNEMAR_METHOD,
    MeanInterval,
    betting_lower_bounds,
    bounded_mean_interval,
    cluster_difference_interval,
    difference_bounds,
    mcnemar_exact,
    paired_difference_interval,
    ratio_lower_bounds,
)

# ---- McNemar -----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_equals_scipys_exact_binomial_test(b: int, c: int) -> None:
    result = mcnemar_exact(b, c)
    assert result.method == MCNEMAR_METHOD == "exact mcnemar"
    assert (result.b, result.c) == (b, c)
    if b + c == 0:
        assert result.p_value == 1.0
        return
    expected = binomtest(b, b + c, 0.5).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-11, abs=1e-300)
    assert mcnemar_exact(c, b).p_value == result.p_value


@pytest.mark.parametrize(("b", "c"), [(0, 2), (2, 0), (1, 1), (0, 1), (5, 5), (12, 1), (0, 30),
                                      (2_000, 2_120), (9_000, 1)])
def test_mcnemar_worked_values(b: int, c: int) -> None:
    assert mcnemar_exact(b, c).p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue,
                                                        rel=1e-11, abs=1e-300)


@pytest.mark.parametrize(("b", "c"), [(9_990, 10_010), (10_001, 10_000), (12_000, 12_400),
                                      (100_000, 100_500), (30_000, 29_000), (20_500, 1)])
def test_mcnemar_many_discordant_pairs(b: int, c: int) -> None:
    """Past EXACT_TERM_UP_TO the tail's first term comes from log-gamma: still scipy's value."""
    assert mcnemar_exact(b, c).p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue,
                                                        rel=1e-8, abs=1e-300)


def test_mcnemar_known_figures() -> None:
    assert mcnemar_exact(2, 0).p_value == 0.5  # 2 fixed, 0 broken
    assert mcnemar_exact(1, 1).p_value == 1.0
    assert mcnemar_exact(0, 10).p_value == pytest.approx(2 / 1024)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)
    with pytest.raises(TypeError):
        mcnemar_exact(1.5, 2)  # type: ignore[arg-type]


# ---- the paired difference ---------------------------------------------------------------------


_verdict = st.sampled_from([0.0, 1.0, None])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_verdict, _verdict), min_size=1, max_size=150),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_the_difference_lies_in_its_interval_and_missing_sides_widen_it(
    pairs: list[tuple[float | None, float | None]], level: float
) -> None:
    def low(v: float | None) -> float:
        return 0.0 if v is None else v

    def high(v: float | None) -> float:
        return 1.0 if v is None else v

    lowest, highest = difference_bounds([low(b) for b, _ in pairs], [high(b) for b, _ in pairs],
                                        [low(c) for _, c in pairs], [high(c) for _, c in pairs])
    result = paired_difference_interval(lowest, highest, level)
    assert result.method == "betting"
    assert result.lower is not None and result.upper is not None
    assert -1.0 <= result.lower <= result.upper <= 1.0
    both = [c - b for b, c in pairs if b is not None and c is not None]
    if both:
        assert result.estimate == pytest.approx(sum(both) / len(both), abs=1e-12)
        assert result.lower <= result.estimate <= result.upper
    else:
        assert result.estimate is None
    # A missing side is resolved the worst way for each bound: any completion of the missing
    # verdicts gives an interval inside the reported one.
    for fill in (0.0, 1.0):
        done = [(fill if b is None else b, fill if c is None else c) for b, c in pairs]
        d = [c - b for b, c in done]
        complete = paired_difference_interval(d, d, level)
        assert complete.lower is not None and complete.upper is not None
        assert result.lower <= complete.lower + 1e-12
        assert result.upper >= complete.upper - 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=100))
def test_the_mapping_to_zero_one_and_back(d: list[float]) -> None:
    result = paired_difference_interval(d, d, 0.95)
    shifted = bounded_mean_interval([(x + 1) / 2 for x in d], [(x + 1) / 2 for x in d], 0.95)
    assert shifted.lower is not None and shifted.upper is not None
    assert result.lower == pytest.approx(2 * shifted.lower - 1, abs=1e-15)
    assert result.upper == pytest.approx(2 * shifted.upper - 1, abs=1e-15)
    # Swapping baseline and candidate turns the interval around zero.
    swapped = paired_difference_interval([-x for x in d], [-x for x in d], 0.95)
    assert swapped.lower == pytest.approx(-result.upper, abs=2e-12)  # type: ignore[operator]
    assert swapped.upper == pytest.approx(-result.lower, abs=2e-12)  # type: ignore[operator]


def test_edges_and_bad_input() -> None:
    assert paired_difference_interval([], [], 0.95) == MeanInterval(None, None, None, "betting")
    unknown = paired_difference_interval([-1.0] * 4, [1.0] * 4, 0.95)
    assert (unknown.estimate, unknown.lower, unknown.upper) == (None, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        paired_difference_interval([2.0], [2.0], 0.95)
    with pytest.raises(ValueError, match="exceeds"):
        paired_difference_interval([1.0], [0.0], 0.95)
    with pytest.raises(ValueError, match="one entry per pair"):
        difference_bounds([0.0], [0.0], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="exceeds"):
        difference_bounds([1.0], [0.0], [1.0], [1.0])
    lowest, highest = difference_bounds([0.25, 1.0], [0.5, 1.0], [0.0, 0.0], [1.0, 0.0])
    assert list(lowest) == [-0.5, -1.0] and list(highest) == [0.75, -1.0]


# ---- coverage: paired differences in {−1, 0, 1} ------------------------------------------------
#
# The claim is "coverage ≥ the nominal level", so a test of it passes only on evidence for it:
# over R simulated suites the one-sided Clopper–Pearson lower bound of the coverage, at
# 1 − 10⁻³, must itself be ≥ the level. An interval that covered less than its level would pass
# with probability below 10⁻³ (the tolerance goes the other way from "observed ≥ level − slack",
# which an under-covering interval passes by chance). That needs R large enough that the worst
# case (the betting interval's coverage is about 0.965 at 95% for a balanced shape such as
# (0.5, 0, 0.5), measured on a grid of shapes) clears the bound: R = 8,000 fails it with
# probability about 10⁻⁴.
#
# R intervals of 400 pairs each are too slow to compute, so coverage is read from the interval's
# definition: the true difference is inside the reported interval exactly when the capital
# process, evaluated once at the truth, never reaches 2/α on either side (or the truth lies
# between the sample mean and the side that rejects it, where the report widens the paper's
# set to the mean). `_covered` computes that from the paper's formulas, independently of
# `stats.betting`, and every example checks it against `paired_difference_interval` itself on
# its first rows.

COVERAGE_REPETITIONS = 8_000
COVERAGE_TEST_ALPHA = 1e-3
_CHECKED_ROWS = 48


def _differences_drawn(p_broken: float, p_fixed: float, n: int, repetitions: int,
                       seed: int) -> npt.NDArray[np.float64]:
    """`repetitions` suites of `n` paired differences: −1 (broken) with p_broken, +1 (fixed)
    with p_fixed, else 0."""
    u = np.random.default_rng(seed).random((repetitions, n))
    d = (u >= 1.0 - p_fixed).astype(np.float64)
    d -= u < p_broken  # 1.0 or 0.0 off each
    return d


def _covered(d: npt.NDArray[np.float64], truth: float, level: float) -> npt.NDArray[np.bool_]:
    """Per row of differences, whether the reported interval holds `truth`: Waudby-Smith &
    Ramdas's hedged capital (predictable plug-in bets, c = 1/2) on (d + 1)/2 at m = (truth + 1)/2,
    each side rejecting at 2/α; the report widens the set to the sample mean."""
    # Computed in place, a few arrays reused (the same floats as the formulas written out:
    # each step is one elementwise operation, in the formulas' order).
    x = (d + 1.0) / 2.0
    m = (truth + 1.0) / 2.0
    n = x.shape[1]
    log_threshold = np.log(2.0 / (1.0 - level))
    rounds = np.arange(2, n + 2, dtype=np.float64)
    mean = np.cumsum(x, axis=1)
    mean += 0.5
    mean /= rounds  # (1/2 + Σx) / (t + 1)
    variance = np.subtract(x, mean, out=mean)
    variance *= variance
    np.cumsum(variance, axis=1, out=variance)
    variance += 0.25
    variance /= rounds  # (1/4 + Σ(x − mean)²) / (t + 1)
    bet = np.empty_like(variance)  # from the variance before each round: 1/4 before the first
    bet[:, 0] = 0.25
    bet[:, 1:] = variance[:, :-1]
    bet *= n
    np.divide(2.0 * log_threshold, bet, out=bet)
    np.sqrt(bet, out=bet)
    centred = x - m

    def rejects(cap: float | None, sign: float) -> npt.NDArray[np.bool_]:
        """Whether the capital with bets min(bet, cap) on sign × (x − m) reaches 2/α."""
        growth = bet if cap is None else np.minimum(bet, cap)
        growth = np.multiply(growth, centred, out=None if cap is None else growth)
        if sign < 0:
            np.negative(growth, out=growth)
        np.log1p(growth, out=growth)
        np.cumsum(growth, axis=1, out=growth)
        out: npt.NDArray[np.bool_] = growth.max(axis=1) >= log_threshold
        return out

    long_rejects = rejects(0.5 / m if m > 0.0 else None, 1.0)
    short_rejects = rejects(0.5 / (1.0 - m) if m < 1.0 else None, -1.0)
    sample = d.mean(axis=1)
    inside: npt.NDArray[np.bool_] = (~long_rejects | (truth >= sample)) & \
        (~short_rejects | (truth <= sample))
    return inside


def _coverage_shown(covered: int, repetitions: int, level: float) -> bool:
    """Whether `covered` of `repetitions` shows coverage ≥ `level`: the one-sided
    Clopper–Pearson lower bound at 1 − COVERAGE_TEST_ALPHA is at least `level`."""
    if covered == 0:
        return False
    return float(beta.ppf(COVERAGE_TEST_ALPHA, covered, repetitions - covered + 1)) >= level


def _paired_coverage(p_broken: float, p_fixed: float, n: int, level: float, seed: int,
                     repetitions: int = COVERAGE_REPETITIONS) -> int:
    """How many of `repetitions` simulated suites have the true difference in their interval,
    after checking `_covered` against `paired_difference_interval` on the first rows."""
    d = _differences_drawn(p_broken, p_fixed, n, repetitions, seed)
    truth = p_fixed - p_broken
    inside = np.concatenate([_covered(d[i:i + 1000], truth, level)
                             for i in range(0, repetitions, 1000)])
    for row in range(_CHECKED_ROWS):
        reported = paired_difference_interval(d[row], d[row], level)
        assert reported.lower is not None and reported.upper is not None
        assert (reported.lower <= truth <= reported.upper) == inside[row], (row, reported, truth)
    return int(inside.sum())


# (P(broken), P(fixed)); P(same) is the rest. The true difference is P(fixed) − P(broken).
_shapes = st.tuples(st.floats(0.0, 1.0), st.floats(0.0, 1.0)).map(
    lambda ab: (ab[0] * (1.0 - ab[1]), ab[1]) if ab[0] + ab[1] > 1.0 else ab)


@pytest.mark.parametrize(("n", "examples"), [(30, 12), (100, 6), (400, 3)])
def test_paired_coverage_at_least_nominal(n: int, examples: int) -> None:
    @settings(max_examples=examples, deadline=None, database=None)
    @given(_shapes, st.integers(0, 2**32 - 1))
    def coverage(shape: tuple[float, float], seed: int) -> None:
        p_broken, p_fixed = shape
        covered = _paired_coverage(p_broken, p_fixed, n, 0.95, seed)
        assert _coverage_shown(covered, COVERAGE_REPETITIONS, 0.95), (
            shape, n, covered / COVERAGE_REPETITIONS)

    coverage()


@pytest.mark.parametrize(("p_broken", "p_fixed"),
                         [(0.5, 0.5), (0.05, 0.05), (0.0, 0.05), (0.15, 0.05), (0.2, 0.5)])
@pytest.mark.parametrize("n", [30, 100, 400])
def test_paired_coverage_in_named_shapes(p_broken: float, p_fixed: float, n: int) -> None:
    """The balanced shape (the worst measured), rare changes, changes one way only."""
    covered = _paired_coverage(p_broken, p_fixed, n, 0.95, seed=1947 + n)
    assert _coverage_shown(covered, COVERAGE_REPETITIONS, 0.95), covered


def test_the_coverage_check_fails_an_interval_that_covers_less() -> None:
    """The same check on the normal-approximation (Wald) interval, whose coverage falls short
    when changes are rare: it must fail, and `_covered` must have the power to see it."""
    d = _differences_drawn(0.0, 0.05, 30, COVERAGE_REPETITIONS, seed=3)
    mean = d.mean(axis=1)
    half = 1.959964 * d.std(axis=1, ddof=1) / np.sqrt(30)
    wald = int(((mean - half <= 0.05) & (mean + half >= 0.05)).sum())
    assert not _coverage_shown(wald, COVERAGE_REPETITIONS, 0.95), wald
    # An interval at exactly its level is not shown to cover either: the check is one-sided
    # towards evidence.
    assert not _coverage_shown(int(0.95 * COVERAGE_REPETITIONS), COVERAGE_REPETITIONS, 0.95)
    assert _coverage_shown(int(0.965 * COVERAGE_REPETITIONS), COVERAGE_REPETITIONS, 0.95)


@pytest.mark.slow
@pytest.mark.parametrize("level", [0.8, 0.9, 0.99])
@pytest.mark.parametrize("n", [30, 100, 400])
def test_paired_coverage_at_other_levels(level: float, n: int) -> None:
    for p_broken, p_fixed in [(0.5, 0.5), (0.3, 0.3), (0.02, 0.10), (0.5, 0.1)]:
        covered = _paired_coverage(p_broken, p_fixed, n, level, seed=17 + n)
        assert _coverage_shown(covered, COVERAGE_REPETITIONS, level), (p_broken, p_fixed,
                                                                         covered)


# ---- over clusters: the pairs' mean difference -----------------------------------------------


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=80), st.sampled_from([0.9, 0.95]))
def test_the_ratio_with_every_scale_one_is_the_betting_interval(values: list[float],
                                                                 level: float) -> None:
    x = np.asarray(values)

    assert ratio_lower_bounds(x, np.ones_like(x), level)[0] == \
        betting_lower_bounds(x, level)[0]


def test_clusters_of_one_size_give_the_betting_interval_of_their_mean_differences() -> None:
    rng = np.random.default_rng(4)
    sums = rng.integers(-2, 3, 30).astype(float)
    sizes = np.full(30, 4.0)

    row = cluster_difference_interval(sums, sums, sizes, 0.95, observed_sum=float(sums.sum()),
                                      observed_pairs=120)
    means = paired_difference_interval(sums / 4.0, sums / 4.0, 0.95)

    assert (row.lower, row.upper) == (means.lower, means.upper)
    assert row.estimate == pytest.approx(sums.sum() / 120)


def _unequal_draws(sizes: npt.NDArray[np.float64], repetitions: int, seed: int
                   ) -> tuple[npt.NDArray[np.float64], float]:
    """The clusters above the median size break (each of their pairs with chance 0.8) with
    chance 0.2, the others are fixed likewise: the pairs' mean difference and the clusters'
    mean difference differ."""
    rng = np.random.default_rng(seed)
    big = sizes > np.median(sizes)
    broken = np.where(big, 0.2, 0.0)
    fixed = np.where(big, 0.0, 0.2)
    kind = rng.random((repetitions, sizes.size))
    sign = np.where(kind < broken, -1.0, np.where(kind > 1.0 - fixed, 1.0, 0.0))
    moved = rng.binomial(sizes.astype(np.int64), 0.8, (repetitions, sizes.size))
    truth = float(0.8 * ((fixed - broken) * sizes).sum() / sizes.sum())
    return sign * moved, truth


def test_over_unequal_clusters_the_interval_holds_the_pairs_mean_difference() -> None:
    sizes = np.asarray([1.0, 1, 1, 2, 2, 3, 3, 4] * 5 + [10.0, 12, 15, 20] * 2)
    sums, truth = _unequal_draws(sizes, 300, seed=11)
    shares = sums / sizes
    held = 0
    cluster_mean_held = 0
    for row in range(sums.shape[0]):
        interval = cluster_difference_interval(sums[row], sums[row], sizes, 0.95,
                                               observed_sum=float(sums[row].sum()),
                                               observed_pairs=int(sizes.sum()))
        assert interval.lower is not None and interval.upper is not None
        held += interval.lower <= truth <= interval.upper
        old = paired_difference_interval(shares[row], shares[row], 0.95)
        assert old.lower is not None and old.upper is not None
        cluster_mean_held += old.lower <= truth <= old.upper
    # Each side may miss 2.5%: 300 suites that hold at 95% miss more than 7% of the time
    # with a chance below 10⁻⁴.
    assert held >= 279
    # The clusters' mean difference (what compare took before) is another quantity here.
    assert cluster_mean_held < held


def test_a_cluster_difference_reads_its_sums_in_no_order_within_clusters() -> None:
    sizes = [1, 3, 7, 2] * 6
    rng = np.random.default_rng(2)
    sums = np.asarray([rng.integers(-s, s + 1) for s in sizes], dtype=float)
    low = sums - np.asarray([1.0 if i % 5 == 0 else 0.0 for i in range(len(sizes))])
    low = np.maximum(low, -np.asarray(sizes, dtype=float))

    row = cluster_difference_interval(low, sums, sizes, 0.95, observed_sum=1.0,
                                      observed_pairs=10)
    lowest = cluster_difference_interval(low, low, sizes, 0.95, observed_sum=1.0,
                                         observed_pairs=10)
    highest = cluster_difference_interval(sums, sums, sizes, 0.95, observed_sum=1.0,
                                          observed_pairs=10)

    assert row.estimate == 0.1
    assert row.lower == lowest.lower and row.upper == highest.upper


def test_cluster_difference_bad_input() -> None:
    nothing = cluster_difference_interval([], [], [], 0.95, observed_sum=0.0, observed_pairs=0)
    assert (nothing.estimate, nothing.lower, nothing.upper) == (None, None, None)
    with pytest.raises(ValueError, match="one entry per cluster"):
        cluster_difference_interval([0.0], [0.0, 1.0], [1, 1], 0.95, observed_sum=0.0,
                                    observed_pairs=1)
    with pytest.raises(ValueError, match="whole numbers of pairs"):
        cluster_difference_interval([0.0], [0.0], [0], 0.95, observed_sum=0.0,
                                    observed_pairs=0)
    with pytest.raises(ValueError, match="−size ≤ lower_sums ≤ upper_sums ≤ size"):
        cluster_difference_interval([3.0], [3.0], [2], 0.95, observed_sum=2.0,
                                    observed_pairs=2)
    with pytest.raises(ValueError, match="at least its value"):
        ratio_lower_bounds([0.6], [0.5], 0.95)
