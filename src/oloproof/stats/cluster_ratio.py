"""The rate of the cases of a clustered suite: passes over cases, with an interval that takes
clusters as the sampling unit (docs/concepts.md#clusters).

What is estimated. Cluster ``c`` holds ``N_c`` cases whose values (a verdict 0/1, or a case's
share of its passing trials) add up to ``Y_c ∈ [0, N_c]``; clusters are independent, cases of
one cluster need not be. The rate is the cases' rate, ``R = Σ E Y_c / Σ N_c`` — what
"60 / 100 observed" beside it says — not the mean of the clusters' shares, which weighs a
one-case cluster like an 80-case one. The sizes are the suite's (the interval holds for every
set of sizes, given them).

The test. For a candidate rate ``p``, with ``K`` clusters, ``N = Σ N_c``, ``M = max N_c`` and
``L = Σ Y_c``: for any fixed ``A ∈ [0, KM − N]``, spread over the clusters as ``a_c ∈ [0, M −
N_c]``, the values ``X_c = (Y_c + a_c) / M`` lie in [0, 1] and their means average
``m_A(p) = (pN + A) / (KM)`` when ``R = p``, so the Bentkus bound (`oloproof.stats.bentkus`:
Hoeffding 1963, Thm 3; Bentkus 2004) gives ``P(ΣX ≥ (L + A)/M) ≤ β(m_A(p), (L + A)/M)`` — and
``ΣX ≥ (L + A)/M`` is the event ``ΣY ≥ L`` whatever ``A`` is. So every ``A`` bounds the same
tail probability, and so does Hoeffding's inequality with each cluster's own range
(``exp(−2(L − pN)²/Σ N_c²)``, Hoeffding 1963, Thm 2); the smallest of these bounds is still a
bound, and ``p`` is rejected as too small when it is at most ``α/2``. Two values of ``A`` are
used: ``0`` (``m = p·N/(KM)``) and ``KM − N`` (``m = 1 − (1 − p)·N/(KM)``), the two ends of the
range — a binomial far from one half spreads least, and ``A = p(KM − N)``, the mapping
``(Y_c − p N_c)/M`` shifted to [0, 1], lies between them. With equal sizes every ``A`` gives the
Bentkus interval over the clusters' shares (and Hoeffding's bound is never smaller: Bentkus's
is at most Chernoff's, which is at most Hoeffding's), so that interval is used as it is.

A few clusters larger than the rest would make ``M`` every cluster's range: one 4-case
cluster among 39 of three widened the interval by a fifth. So the bounds are also taken with
the clusters cut at a size ``T`` (no cut, and up to four of the sizes' quantiles, where the
cut leaves out at most a quarter of the cases): only ``min(N_c, T)`` fixed cases of each
cluster count, their sum ``S'`` is at least ``ΣY − r`` (``r = Σ (N_c − T)₊``, the cases cut)
and its mean at most ``pN``, so ``P(ΣY ≥ L) ≤ P(S' ≥ L − r)``, bounded as above over the cut
sizes at the rate ``pN / Σ min(N_c, T)``. Every one of these bounds the same tail, so the
smallest is used. (The one 4-case cluster now costs 4–5% of width, where the cases cut are
counted the worst way.)

Each bound is nondecreasing in ``p`` (``m_A`` and the cut rate grow with ``p`` at a fixed
sum; Hoeffding's grows as ``L − pN`` shrinks), so the smallest is too: the rejected ``p`` are
an interval ``[0, lower)``, and ``lower`` is found by a bracketed search
(`_roots.increasing_root`) to 2⁻⁴⁰, reported on the rejected side. The upper bound is the
same on the failures (``N_c − Y_c``), mirrored. Each side spends ``α/2``.

Missing cases bound each side the worst way (docs/reliability.md#how-missing-trials-count):
``Y_c`` is the sum of the lower values (a missing case failed) for the lower bound and of the
upper values (it passed) for the upper; a missing case still counts in ``N_c``. The estimate is
the observed cases' rate (their values' sum over their number); the interval always contains
it. Everything reads the clusters only through their sums and sizes, each sum taken in sorted
order: no order of clusters or cases matters, and identical runs give identical intervals.

What it costs. When one cluster holds most cases, the suite is about one draw of that cluster,
and the interval says so: 20 one-case clusters that pass beside an 80-case cluster with 40
passes read [1.5%, 99.0%]: a test that reads the suite through its passing cases cannot do
better, since one-case clusters that always fail beside an 80-case cluster that passes 60 of
its cases 1.9% of the time (and none otherwise) have a rate of 1.5% and reach 60 passes 2.5%
of the time. `benchmarks/validity/cluster_rate.py` measures coverage and width by shape, and
`tests/stats/test_stats_cluster_ratio.py` the level exactly, by enumerating every outcome of
small suites of unequal clusters.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import tail_probabilities
from oloproof.stats._roots import increasing_root
from oloproof.stats.bentkus import LOG_FLOOR, bentkus_interval, log_beta
from oloproof.stats.betting import MeanInterval

__all__ = ["CLUSTER_RATIO_METHOD", "cluster_ratio_interval", "cluster_ratio_lower_bounds"]

#: The method's name in a row's `method` (a Bentkus interval over clusters of unequal size).
CLUSTER_RATIO_METHOD = "bentkus_ratio"

# Bracket width at which the root search stops: 2⁻⁴⁰ ≈ 9.1e-13.
BOUND_TOLERANCE = 2.0**-40

FloatArray = npt.NDArray[np.float64]
BoolArray = npt.NDArray[np.bool_]


def _sizes(sizes: Sequence[int] | npt.ArrayLike) -> FloatArray:
    array = np.asarray(sizes, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError("sizes must be one sequence of counts")
    if not np.all(np.isfinite(array)) or np.any(array < 1.0) or np.any(array != np.floor(array)):
        raise ValueError("sizes must be whole numbers of cases, at least 1 per cluster")
    return array


def _log_spread(totals: FloatArray, p: FloatArray, sizes: FloatArray) -> FloatArray:
    """``log`` of the smallest of the three bounds on ``P(ΣY ≥ L)`` at rate ``p`` over clusters
    of ``sizes`` (module docstring: the Bentkus bound at both ends of the shifts, and
    Hoeffding's with each cluster's range), per row: ``totals`` are the rows' ``L``, ``p``
    their candidate rates (at most 1)."""
    k = sizes.size
    n_total = float(np.sort(sizes).sum())
    top = float(sizes.max())
    share = n_total / (k * top)  # N / (KM)
    spare = k * top - n_total  # KM − N
    first = log_beta(totals / top, k, p * share)
    second = log_beta(np.minimum((totals + spare) / top, float(k)), k,
                       1.0 - (1.0 - p) * share)
    gap = np.maximum(totals - p * n_total, 0.0)
    squares = float(np.sort(sizes**2).sum())
    hoeffding = -2.0 * gap**2 / squares
    result: FloatArray = np.minimum(np.minimum(first, second), hoeffding)
    return result


def _caps(sizes: FloatArray) -> list[float]:
    """The sizes at which clusters are cut for the bound (module docstring): no cut (the
    largest size), and up to four of the sizes' quantiles whose cut leaves out at most a
    quarter of the cases."""
    n_total = float(sizes.sum())
    top = float(sizes.max())
    caps = [top]
    for q in (0.5, 0.75, 0.9, 0.97):
        cap = float(np.quantile(sizes, q, method="lower"))
        if cap < top and cap not in caps and \
                float(np.maximum(sizes - cap, 0.0).sum()) <= n_total / 4.0:
            caps.append(cap)
    return caps


def _log_bound(totals: FloatArray, p: FloatArray, sizes: FloatArray,
               caps: Sequence[float]) -> FloatArray:
    """``log`` of the smallest bound on ``P(ΣY ≥ L)`` at rate ``p`` over every cut in `caps`.

    Cut at ``T``: count only ``min(N_c, T)`` of each cluster's cases (any fixed ones). Their
    sum ``S'`` is at least ``ΣY − r`` with ``r = Σ (N_c − T)₊``, so ``ΣY ≥ L`` implies
    ``S' ≥ L − r``; and ``E S' ≤ pN``, a rate of at most ``pN / N'`` over the ``N' = Σ min(N_c,
    T)`` cases kept, where every bound of :func:`_log_spread` grows with the rate. So the
    bound over the cut clusters at ``L − r`` and that rate bounds the same tail — and when a
    few clusters are larger than the rest, the rest's equal sizes make it the narrower one.
    """
    n_total = float(sizes.sum())
    out: FloatArray | None = None
    for cap in caps:
        kept = np.minimum(sizes, cap)
        cut = float((sizes - kept).sum())
        rate = np.minimum(p * (n_total / float(kept.sum())), 1.0)
        left = totals - cut
        bound = np.zeros(totals.shape)  # log 1 where the cut cases alone could reach L
        able = left > 0.0
        if able.any():
            bound[able] = _log_spread(left[able], rate[able], kept)
        out = bound if out is None else np.minimum(out, bound)
    assert out is not None
    return out


def cluster_ratio_lower_bounds(totals: npt.ArrayLike, sizes: Sequence[int] | npt.ArrayLike,
                               level: float) -> FloatArray:
    """The lower bound of the cases' rate for each total ``L`` of values over clusters of the
    given ``sizes`` (module docstring), one float per total, to about 1e-12 and rounded down.

    A total of 0 gives 0. With every size equal this is the Bentkus lower bound of the
    clusters' shares (``oloproof.stats.bentkus_lower_bounds`` of ``L / M`` over ``K``).

    Example: the audit's sizes, with 0, 60 and 100 passing cases.

    >>> from oloproof.stats import cluster_ratio_lower_bounds
    >>> [round(float(b), 4) for b in cluster_ratio_lower_bounds([0, 60, 100], [1] * 20 + [80],
    ...                                                         0.95)]
    [0.0, 0.015, 0.0933]
    """
    size = _sizes(sizes)
    _, half_alpha, _ = tail_probabilities(level)
    s = np.atleast_1d(np.asarray(totals, dtype=np.float64))
    n_total = float(size.sum()) if size.size else 0.0
    if s.ndim != 1 or not np.all(np.isfinite(s)) or np.any(s < 0.0) or \
            np.any(s > n_total * (1.0 + 1e-12)):
        raise ValueError(f"totals must be numbers in [0, {n_total:g}] (the cases counted)")
    result = np.zeros(s.shape, dtype=np.float64)
    if size.size == 0:
        return result
    s = np.minimum(s, n_total)
    work = s > 0.0
    if not work.any():
        return result
    log_half = math.log(half_alpha)
    sw = s[work]
    caps = _caps(size)

    def g(p: FloatArray, rows: BoolArray) -> FloatArray:
        # Nondecreasing in p; ≤ 0 where p is rejected.
        return np.maximum(_log_bound(sw[rows], p, size, caps), LOG_FLOOR) - log_half

    # At p = 0 every positive total is rejected; at p = L/N every bound is 1.
    a = np.zeros(sw.shape)
    b = sw / n_total
    ga = np.full(sw.shape, LOG_FLOOR - log_half)
    gb = np.full(sw.shape, -log_half)
    a, _ = increasing_root(g, a, b, ga, gb, BOUND_TOLERANCE)
    result[work] = a
    return result


def _sorted_sum(values: FloatArray) -> float:
    return float(np.sort(values).sum())


def cluster_ratio_interval(
    lower_sums: Sequence[float] | npt.ArrayLike,
    upper_sums: Sequence[float] | npt.ArrayLike,
    sizes: Sequence[int] | npt.ArrayLike,
    level: float,
    *,
    observed_sum: float,
    observed_cases: int,
) -> MeanInterval:
    """The cases' rate over clusters, with its interval (``method: "bentkus_ratio"``; module
    docstring).

    Per cluster (any order): ``lower_sums[c] ≤ upper_sums[c]`` are the smallest and largest
    sum its cases' values could have (a missing case 0 and 1; equal when every case is
    observed), ``sizes[c]`` how many cases it counts (observed or missing). ``observed_sum``
    and ``observed_cases`` are the observed cases' values' sum and their number: the estimate
    is their ratio (``None`` when no case is observed). With every size equal the interval is
    the Bentkus interval over the clusters' shares (``method: "bentkus"``), as before sizes
    mattered. With no cluster every field is ``None``.

    Example: the audit's suite — 20 one-case clusters that pass, one 80-case cluster with 40
    passes — and 40 clusters of three that all pass.

    >>> from oloproof.stats import cluster_ratio_interval, percent_lower, percent_upper
    >>> passes, sizes = [1] * 20 + [40], [1] * 20 + [80]
    >>> row = cluster_ratio_interval(passes, passes, sizes, 0.95, observed_sum=60,
    ...                              observed_cases=100)
    >>> row.estimate, percent_lower(row.lower), percent_upper(row.upper), row.method
    (0.6, '1.5%', '99.0%', 'bentkus_ratio')
    >>> whole = cluster_ratio_interval([3] * 40, [3] * 40, [3] * 40, 0.95, observed_sum=120,
    ...                                observed_cases=120)
    >>> percent_lower(whole.lower), whole.method
    ('91.1%', 'bentkus')
    """
    size = _sizes(sizes)
    low = np.asarray(lower_sums, dtype=np.float64)
    high = np.asarray(upper_sums, dtype=np.float64)
    if not low.shape == high.shape == size.shape:
        raise ValueError("lower_sums, upper_sums and sizes need one entry per cluster each")
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))) or np.any(low < 0.0) or \
            np.any(low > high) or np.any(high > size * (1.0 + 1e-12)):
        raise ValueError("each cluster needs 0 ≤ lower_sums ≤ upper_sums ≤ its size")
    if isinstance(observed_cases, bool) or int(observed_cases) != observed_cases or \
            not 0 <= observed_cases <= float(size.sum()) or \
            not 0.0 <= observed_sum <= max(float(observed_cases), 0.0) * (1.0 + 1e-12):
        raise ValueError("observed_sum must lie in [0, observed_cases], and observed_cases "
                         "in [0, the cases counted]")
    if size.size == 0:
        return MeanInterval(None, None, None, CLUSTER_RATIO_METHOD)
    high = np.minimum(high, size)
    estimate = None if observed_cases == 0 else min(1.0, observed_sum / observed_cases)
    if np.all(size == size[0]):
        # Every cluster the same size: the rate of the cases is the mean of the clusters'
        # shares, and their Bentkus interval is the one this construction reduces to.
        same = bentkus_interval(low / size, high / size, level)
        lower, upper = float(same.lower or 0.0), float(same.upper or 1.0)
        method = same.method
    else:
        n_total = _sorted_sum(size)
        lows = cluster_ratio_lower_bounds(
            [min(_sorted_sum(low), n_total), min(_sorted_sum(size - high), n_total)],
            size, level)
        lower, upper = float(lows[0]), 1.0 - float(lows[1])
        method = CLUSTER_RATIO_METHOD
    if estimate is not None:
        lower, upper = min(lower, estimate), max(upper, estimate)
    return MeanInterval(estimate, max(0.0, lower), min(1.0, upper), method)
