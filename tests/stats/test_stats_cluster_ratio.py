"""The cases' rate over clusters (`oloproof.stats.cluster_ratio`): the audit's example, the
reduction to the Bentkus interval on equal sizes, the lower bound held to the definition of its
test by an independent computation, and its level by exact enumeration of every outcome of
small clustered suites (clusters whose cases always agree, and clusters of independent cases),
sizes unequal."""

from __future__ import annotations

import itertools
import math

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from oloproof.stats import (
    CLUSTER_RATIO_METHOD,
    bentkus_interval,
    bentkus_tail_bound,
    cluster_ratio_interval,
    cluster_ratio_lower_bounds,
)

FloatArray = npt.NDArray[np.float64]


def _interval(passes: list[float], sizes: list[int], level: float = 0.95):
    return cluster_ratio_interval(passes, passes, sizes, level, observed_sum=sum(passes),
                                  observed_cases=sum(sizes))


def test_the_audits_example_is_the_rate_of_its_cases_and_cannot_pass_a_floor_of_80() -> None:
    # 20 one-case clusters that pass and one 80-case cluster with 40 passes: the clusters'
    # mean share read 97.6% [81.2%, 99.9%] beside "60 / 100 observed".
    passes = [1.0] * 20 + [40.0]
    sizes = [1] * 20 + [80]

    row = _interval(passes, sizes)

    assert row.estimate == 0.6
    assert row.method == CLUSTER_RATIO_METHOD == "bentkus_ratio"
    assert row.lower is not None and row.upper is not None
    assert row.lower < 0.6 < row.upper
    assert row.lower < 0.8  # a `min: 0.80` rule cannot PASS on it
    # One cluster holds 80 of the 100 cases: its cases could all have agreed and landed
    # either way, so the suite says little — the interval is wide, not wrong.
    assert row.upper - row.lower > 0.9


@pytest.mark.parametrize("size", [1, 3, 5])
def test_equal_sizes_give_the_bentkus_interval_of_the_clusters_shares(size: int) -> None:
    rng = np.random.default_rng(size)
    passes = rng.integers(0, size + 1, 40).astype(float)
    missing = np.where(rng.random(40) < 0.1, 1.0, 0.0)
    high = np.minimum(passes + missing, size)
    sizes = [size] * 40

    row = cluster_ratio_interval(passes, high, sizes, 0.95,
                                 observed_sum=float(passes[missing == 0].sum()),
                                 observed_cases=int(size * (missing == 0).sum()))
    shares = bentkus_interval(passes / size, high / size, 0.95)

    assert (row.lower, row.upper, row.method) == (shares.lower, shares.upper, shares.method)


def _reference_log_bound(total: float, p: float, sizes: FloatArray) -> float:
    """The smallest bound on P(ΣY ≥ L) at rate p, from the module's definition and the public
    Bentkus tail bound: every cut of the sizes' quantiles (and none), both ends of the shifts,
    Hoeffding's bound with each cluster's range."""
    n_total = sizes.sum()
    best = 0.0
    cuts = {float(sizes.max())} | {float(np.quantile(sizes, q, method="lower"))
                                   for q in (0.5, 0.75, 0.9, 0.97)}
    for cut in cuts:
        kept = np.minimum(sizes, cut)
        dropped = float((sizes - kept).sum())
        if dropped > n_total / 4.0:
            continue
        left = total - dropped
        if left <= 0.0:
            continue
        rate = min(1.0, p * n_total / kept.sum())
        k, top, n_kept = kept.size, kept.max(), kept.sum()
        share = n_kept / (k * top)
        bounds = [
            float(bentkus_tail_bound([left / top], k, rate * share)[0]),
            float(bentkus_tail_bound([min(k, (left + k * top - n_kept) / top)], k,
                                     min(1.0, 1.0 - (1.0 - rate) * share))[0]),
            math.exp(-2.0 * max(0.0, left - rate * n_kept) ** 2 / float((kept**2).sum())),
        ]
        best = min(best, math.log(max(min(bounds), 1e-300)))
    return best


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 30), min_size=2, max_size=40), st.floats(0.0, 1.0),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_the_lower_bound_is_the_smallest_rate_its_test_does_not_reject(
        sizes: list[int], share: float, level: float) -> None:
    size = np.asarray(sizes, dtype=float)
    total = round(share * size.sum())
    half_alpha = (1.0 - level) / 2.0

    lower = float(cluster_ratio_lower_bounds([total], sizes, level)[0])

    if lower > 0.0:
        assert _reference_log_bound(total, lower, size) <= math.log(half_alpha) + 1e-9
    above = min(1.0, lower + 1e-8)
    assert _reference_log_bound(total, above, size) > math.log(half_alpha)


def _outcomes_agreeing(sizes: list[int], chances: list[float]) -> tuple[FloatArray, FloatArray]:
    """Every outcome of clusters whose cases always agree (all pass with the cluster's chance):
    the total of passing cases and its probability."""
    totals, probs = [], []
    for passed in itertools.product([0, 1], repeat=len(sizes)):
        totals.append(sum(s for s, a in zip(sizes, passed, strict=True) if a))
        probs.append(math.prod(c if a else 1.0 - c
                               for c, a in zip(chances, passed, strict=True)))
    return np.asarray(totals, dtype=float), np.asarray(probs)


def _outcomes_independent(sizes: list[int], chances: list[float]
                          ) -> tuple[FloatArray, FloatArray]:
    """Every total of passing cases when cluster c's cases pass independently with its
    chance (the convolution of the clusters' binomials), with its probability."""
    pmf = np.ones(1)
    for size, chance in zip(sizes, chances, strict=True):
        pmf = np.convolve(pmf, binom.pmf(np.arange(size + 1), size, chance))
    return np.arange(pmf.size, dtype=float), pmf


_SHAPES = [[1, 1, 1, 1, 1, 1, 1, 12], [1, 2, 3, 4, 5, 6, 7, 8], [2, 2, 2, 2, 2, 3, 3, 9],
           [3, 3, 3, 3, 3, 3, 3, 3, 3, 4], [1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 40]]


@pytest.mark.parametrize("sizes", _SHAPES)
@pytest.mark.parametrize("level", [0.8, 0.95])
def test_each_side_holds_its_level_exactly_on_unequal_clusters(sizes: list[int],
                                                               level: float) -> None:
    rng = np.random.default_rng(len(sizes) * 100 + sum(sizes))
    half_alpha = (1.0 - level) / 2.0
    settings_tried = [[c] * len(sizes) for c in (0.05, 0.3, 0.5, 0.7, 0.95)]
    settings_tried += [list(rng.uniform(0.0, 1.0, len(sizes))) for _ in range(6)]
    # Rates that differ by size: the small clusters high, the largest low, and the reverse.
    top = max(sizes)
    settings_tried += [[0.2 if s == top else 0.97 for s in sizes],
                       [0.97 if s == top else 0.2 for s in sizes]]
    n_total = sum(sizes)
    worst = 0.0
    # The bounds depend on the totals alone, which are the same under every setting of the
    # chances (only their probabilities change): each set of totals is bounded once.
    bounded: dict[bytes, tuple[FloatArray, FloatArray]] = {}
    for chances in settings_tried:
        truth = sum(s * c for s, c in zip(sizes, chances, strict=True)) / n_total
        for outcomes in (_outcomes_agreeing, _outcomes_independent):
            totals, probs = outcomes(sizes, chances)
            if totals.tobytes() not in bounded:
                bounded[totals.tobytes()] = (
                    cluster_ratio_lower_bounds(totals, sizes, level),
                    1.0 - cluster_ratio_lower_bounds(n_total - totals, sizes, level))
            lower, upper = bounded[totals.tobytes()]
            low_miss = float(probs[lower > truth].sum())
            high_miss = float(probs[upper < truth].sum())
            worst = max(worst, low_miss, high_miss)
    assert worst <= half_alpha


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.floats(0.0, 1.0)), min_size=2, max_size=30),
       st.randoms())
def test_the_interval_depends_on_no_order(clusters: list[tuple[int, float]], random) -> None:
    sizes = [s for s, _ in clusters]
    passes = [round(s * f) for s, f in clusters]
    shuffled = list(zip(sizes, passes, strict=True))
    random.shuffle(shuffled)

    first = _interval([float(p) for p in passes], sizes)
    second = _interval([float(p) for _, p in shuffled], [s for s, _ in shuffled])

    assert first == second


@settings(max_examples=30, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 12), st.floats(0.0, 1.0)), min_size=2, max_size=30))
def test_one_more_passing_case_never_lowers_the_interval(clusters: list[tuple[int, float]]
                                                         ) -> None:
    sizes = [s for s, _ in clusters]
    passes = [float(min(s - 1, round(s * f))) if s > 1 else 0.0 for s, f in clusters]
    target = next((i for i, s in enumerate(sizes) if passes[i] < s), None)
    if target is None:
        return
    more = list(passes)
    more[target] += 1.0

    before, after = _interval(passes, sizes), _interval(more, sizes)

    assert before.lower is not None and after.lower is not None
    assert before.upper is not None and after.upper is not None
    assert after.lower >= before.lower - 1e-12 and after.upper >= before.upper - 1e-12


def test_missing_cases_bound_each_side_the_worst_way() -> None:
    sizes = [1] * 20 + [5] * 10
    known = [1.0] * 20 + [4.0] * 10
    # Two clusters of five each have one case missing (its value 0 or 1).
    low = list(known)
    high = list(known)
    low[20] -= 1.0
    low[21] -= 1.0

    row = cluster_ratio_interval(low, high, sizes, 0.95, observed_sum=sum(low),
                                 observed_cases=sum(sizes) - 2)
    all_failed = _interval(low, sizes)
    all_passed = _interval(high, sizes)

    assert row.estimate == pytest.approx(sum(low) / (sum(sizes) - 2))
    assert row.lower == all_failed.lower and row.upper == all_passed.upper


def test_edges_and_bad_input() -> None:
    nothing = cluster_ratio_interval([], [], [], 0.95, observed_sum=0.0, observed_cases=0)
    assert (nothing.estimate, nothing.lower, nothing.upper) == (None, None, None)
    unknown = cluster_ratio_interval([0.0, 0.0], [1.0, 3.0], [1, 3], 0.95, observed_sum=0.0,
                                     observed_cases=0)
    assert (unknown.estimate, unknown.lower, unknown.upper) == (None, 0.0, 1.0)
    assert list(cluster_ratio_lower_bounds([0.0], [1, 4], 0.95)) == [0.0]
    with pytest.raises(ValueError, match="whole numbers of cases"):
        _interval([1.0, 1.0], [0, 3])
    with pytest.raises(ValueError, match="lower_sums ≤ upper_sums ≤ its size"):
        cluster_ratio_interval([2.0], [1.0], [3], 0.95, observed_sum=1.0, observed_cases=3)
    with pytest.raises(ValueError, match="lower_sums ≤ upper_sums ≤ its size"):
        _interval([4.0, 1.0], [3, 1])
    with pytest.raises(ValueError, match="one entry per cluster"):
        cluster_ratio_interval([1.0], [1.0, 2.0], [3, 3], 0.95, observed_sum=1.0,
                               observed_cases=3)
    with pytest.raises(ValueError, match="observed_sum"):
        cluster_ratio_interval([1.0], [1.0], [3], 0.95, observed_sum=2.0, observed_cases=1)
    with pytest.raises(ValueError, match="totals must be numbers"):
        cluster_ratio_lower_bounds([5.0], [1, 3], 0.95)
    with pytest.raises(ValueError, match="confidence level"):
        _interval([1.0, 1.0], [1, 3], level=1.0)
