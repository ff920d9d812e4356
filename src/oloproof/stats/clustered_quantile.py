"""A quantile of values that come in clusters: each trial of a case is a value, and the trials of
one case are not independent (docs/reliability.md#quantiles-and-slices-with-trials).

What is estimated: pick a cluster at random, then one of its values at random; ``F(v)`` is the
chance that value is at most ``v`` — the mean over clusters of each cluster's share of values
``≤ v`` — and the ``q``-quantile is ``Q = min{v : F(v) ≥ q}`` (as in
docs/concepts.md#quantiles-order-statistic-intervals, the smallest value with
at least a fraction ``q`` at or below it). Clusters are independent, so for each ``v`` the
cluster shares are independent values in [0, 1] with mean ``F(v)``, and the Bentkus test
(Hoeffding 1963 / Bentkus 2004, `oloproof.stats.bentkus`: the binomial bound extended to values
in [0, 1] by convex order) says whether a candidate mean is plausible. It reads the shares only
through their sum, so neither the clusters' order nor their number of values matters.

The interval inverts that test over the candidate values (every observed value, in order):

- **lower bound** ``L``: the first candidate ``v`` at which ``F(v) ≥ q`` is not rejected by the
  upper side of the test (``F(v)`` plausibly reaches ``q``), with missing values counted as
  ``≤ v`` (placed at −∞). Why it holds: if ``L > Q``, every candidate up to ``Q`` was rejected —
  in particular the largest one, whose shares are exactly the shares at ``Q`` (shares change
  only at observed values) — so the test rejected the true ``F(Q) ≥ q`` at the fixed point
  ``Q``: probability at most ``α/2``. If even ``v = −∞`` (the missing values alone) is not
  rejected, there is no lower bound.
- **upper bound** ``U``: the candidate just after the last one at which ``F(v) ≥ q`` is not
  established by the lower side of the test, with missing values counted as ``> v`` (placed at
  +∞). Why it holds: if ``U < Q``, every candidate from ``U`` on established ``F ≥ q`` — in
  particular the largest candidate below ``Q``, whose shares are the shares just below ``Q``,
  where the true ``F`` is below ``q``: a rejection of the truth at a fixed point, probability at
  most ``α/2``. If the last candidate is not established, there is no upper bound.

Each bound is read off at one point fixed by ``Q``, so neither argument needs more of the test
than its level. The test at a fixed mean ``m`` rejects exactly the sums at or above one critical
sum (`bentkus_critical_sum`: ``β(m, s)`` falls as ``s`` grows), computed once per side, so each
candidate costs one comparison. The estimate is the smallest observed value with ``F̂(v) ≥ q``,
``F̂`` the mean over clusters with an observed value of their share among observed values. Each
side spends ``α/2``. Valid for every number of clusters: a quantile over a case's own trials is
not approximate (docs/concepts.md#clusters).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level
from oloproof.stats.bentkus import bentkus_critical_sum
from oloproof.stats.quantile import QuantileInterval

__all__ = ["CLUSTERED_QUANTILE_METHOD", "clustered_quantile_interval"]

CLUSTERED_QUANTILE_METHOD = "bentkus over clusters (inverted at each observed value)"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Candidates tested at once (each is one row of cluster shares).
_BLOCK = 256


class _Test:
    """The long side of the Bentkus test of a mean ``m`` over ``n`` clusters: does a row of
    shares reject it (their sum at or above the critical sum)?"""

    def __init__(self, n: int, m: float, level: float) -> None:
        self.critical = bentkus_critical_sum(n, m, level)

    def rejects(self, values: FloatArray) -> npt.NDArray[np.bool_]:
        # Summed in sorted order: the same float whatever order the clusters came in.
        sums = np.sort(values, axis=1).sum(axis=1)
        rejected: npt.NDArray[np.bool_] = sums >= self.critical
        return rejected


def clustered_quantile_interval(
    values: Sequence[Sequence[float]], missing: Sequence[int], q: float, level: float
) -> QuantileInterval:
    """The ``q``-quantile of clustered values with its interval (see the module docstring).

    ``values[i]`` are cluster ``i``'s observed values and ``missing[i]`` how many of its values
    are missing; clusters come in the caller's fixed order (by case digest), clusters with no
    value at all are ignored. Bounds are observed values, or ``None`` for "no bound".

    Example: the median of the steps of 10 cases' trials, each case a cluster.

    >>> from oloproof.stats.clustered_quantile import clustered_quantile_interval
    >>> trials = [[3, 4, 5], [5, 6], [2, 3, 3], [7, 8, 6], [4, 5, 5], [6, 6, 7], [3, 5],
    ...           [4, 4, 6], [5, 7, 8], [2, 4, 4]]
    >>> median = clustered_quantile_interval(trials, [0] * 10, 0.5, 0.95)
    >>> median.estimate, median.lower, median.upper
    (5.0, 3.0, 7.0)
    """
    check_level(level)
    if not 0.0 < q < 1.0:
        raise ValueError(f"q must be strictly between 0 and 1, got {q!r}")
    if len(values) != len(missing):
        raise ValueError("values and missing need one entry per cluster each")
    sizes = np.asarray([len(v) + int(m) for v, m in zip(values, missing, strict=True)],
                       dtype=np.int64)
    keep = sizes > 0
    kept_values = [np.sort(np.asarray(v, dtype=np.float64))
                   for v, k in zip(values, keep, strict=True) if k]
    gaps = np.asarray(missing, dtype=np.int64)[keep]
    sizes = sizes[keep]
    method = CLUSTERED_QUANTILE_METHOD
    observed = [v for v in kept_values if v.size]
    if not observed:
        return QuantileInterval(q, None, None, None, method)
    candidates = np.unique(np.concatenate(observed))
    if not np.all(np.isfinite(candidates)):
        raise ValueError("values must be finite numbers")
    estimate = _estimate(kept_values, candidates, q)
    table = _Counts(kept_values, candidates)
    size = sizes.astype(np.float64)[:, None]
    gap = gaps.astype(np.float64)[:, None]

    def upper_shares(start: int, stop: int) -> FloatArray:  # missing placed at −∞
        return np.minimum((table.block(start, stop) + gap) / size, 1.0)

    def lower_shares(start: int, stop: int) -> FloatArray:  # missing placed at +∞
        return table.block(start, stop) / size

    clusters = int(sizes.size)
    lower = _lower_bound(upper_shares, gaps / sizes, candidates,
                         _Test(clusters, 1.0 - q, level))
    upper = _upper_bound(lower_shares, candidates, _Test(clusters, q, level))
    return QuantileInterval(q, estimate, lower, upper, method)


class _Counts:
    """How many of each cluster's observed values are ≤ each candidate, a block of candidates
    at a time (clusters × block).

    One sorted array of (cluster, rank of value) keys answers every query with one
    `searchsorted`: O(clusters × block × log values) per block, in NumPy, and never a
    clusters × candidates table (16,000 distinct latencies over 2,000 cases would be 256 MB).
    """

    def __init__(self, clusters: list[FloatArray], candidates: FloatArray) -> None:
        self.d = candidates.size
        self.offsets = np.arange(len(clusters), dtype=np.int64) * (self.d + 1)
        keys = np.concatenate([np.searchsorted(candidates, v) + off
                               for v, off in zip(clusters, self.offsets, strict=True)])
        keys.sort()
        self.keys = keys
        self.starts = np.searchsorted(keys, self.offsets, side="left")

    def block(self, start: int, stop: int) -> FloatArray:
        queries = self.offsets[:, None] + np.arange(start, stop, dtype=np.int64)[None, :]
        counts = np.searchsorted(self.keys, queries, side="right") - self.starts[:, None]
        return counts.astype(np.float64)


def _estimate(clusters: list[FloatArray], candidates: FloatArray, q: float) -> float:
    """The smallest candidate with F̂(v) ≥ q: a weighted empirical distribution in which each
    value weighs 1 / (its cluster's observed values × clusters with an observed value)."""
    observed = [v for v in clusters if v.size]
    weights = np.concatenate([np.full(v.size, 1.0 / v.size) for v in observed]) / len(observed)
    values = np.concatenate(observed)
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    at = np.searchsorted(values[order], candidates, side="right") - 1
    shares = cumulative[at]
    # The same slack as the estimate's rank of a quantile over cases (stats/quantile.py): q·n
    # computed in floating point.
    reached = np.flatnonzero(shares >= q * (1.0 - 1e-12))
    return float(candidates[reached[0]]) if reached.size else float(candidates[-1])


Shares = Callable[[int, int], FloatArray]


def _lower_bound(upper_shares: Shares, floor_shares: FloatArray, candidates: FloatArray,
                 test: _Test) -> float | None:
    """The first candidate at which the upper side does not reject ``F(v) ≥ q`` (`test` is
    the long side at ``1 − q``: the upper side rejects a mean of q when the long side over
    1 − shares rejects 1 − q)."""
    if not test.rejects(1.0 - floor_shares[None, :])[0]:
        return None  # the missing values alone (at −∞) could already hold a fraction q
    for start in range(0, candidates.size, _BLOCK):
        stop = min(candidates.size, start + _BLOCK)
        block = upper_shares(start, stop).T  # candidates × clusters
        plausible = ~test.rejects(1.0 - block)
        hits = np.flatnonzero(plausible)
        if hits.size:
            return float(candidates[start + hits[0]])
    return None  # pragma: no cover - at the last candidate every upper share is 1


def _upper_bound(lower_shares: Shares, candidates: FloatArray, test: _Test) -> float | None:
    """The candidate after the last one at which the lower side (`test`, the long side at q)
    does not establish ``F(v) ≥ q`` (None when that is the last candidate)."""
    d = candidates.size
    for stop in range(d, 0, -_BLOCK):
        start = max(0, stop - _BLOCK)
        established = test.rejects(lower_shares(start, stop).T)
        misses = np.flatnonzero(~established)
        if misses.size:
            last = start + int(misses[-1])
            return None if last + 1 >= d else float(candidates[last + 1])
    return float(candidates[0])
