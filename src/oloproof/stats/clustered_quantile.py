"""A quantile of values that come in clusters (SPEC §5.4, §15.2): each trial of a case is a value,
and the trials of one case are not independent.

What is estimated: pick a cluster at random, then one of its values at random; ``F(v)`` is the
chance that value is at most ``v`` — the mean over clusters of each cluster's share of values
``≤ v`` — and the ``q``-quantile is ``Q = min{v : F(v) ≥ q}`` (as in §5.2, the smallest value with
at least a fraction ``q`` at or below it). Clusters are independent, so for each ``v`` the
cluster shares are independent values in [0, 1] with mean ``F(v)``, and the betting test of
Waudby-Smith & Ramdas (2023) (`oloproof.stats.betting`, taken over the clusters in the caller's
fixed order) says whether a candidate mean is plausible.

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

Neither argument needs the test to be monotone in ``v`` (the betting capital's bets depend on
the values, so it need not be): each bound is read off at one point fixed by ``Q``. The
estimate is the smallest observed value with ``F̂(v) ≥ q``, ``F̂`` the mean over clusters with an
observed value of their share among observed values. Each side spends ``α/2``.

The result is *approximate* in SPEC §5.4's sense (a clustered metric): a rule on it needs
``allow_approximate_methods`` and at least 20 clusters.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, tail_probabilities
from oloproof.stats.betting import _log_capital_excess, _predictable_bets
from oloproof.stats.quantile import QuantileInterval

__all__ = ["CLUSTERED_QUANTILE_METHOD", "clustered_quantile_interval"]

CLUSTERED_QUANTILE_METHOD = "betting over clusters (inverted at each observed value)"

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Candidates tested at once (each is one row of cluster shares).
_BLOCK = 256


def _rejects(values: FloatArray, m: float, log_threshold: float) -> npt.NDArray[np.bool_]:
    """Per row of ``values`` (rows × clusters): does the long side of the betting test reject
    the mean ``m`` (the capital reaches ``2/α``)?"""
    bets = _predictable_bets(values, log_threshold)
    excess = _log_capital_excess(values, bets, np.full(values.shape[0], m), log_threshold)
    return excess >= 0.0


def clustered_quantile_interval(
    values: Sequence[Sequence[float]], missing: Sequence[int], q: float, level: float
) -> QuantileInterval:
    """The ``q``-quantile of clustered values with its interval (see the module docstring).

    ``values[i]`` are cluster ``i``'s observed values and ``missing[i]`` how many of its values
    are missing; clusters come in the caller's fixed order (by case digest), clusters with no
    value at all are ignored. Bounds are observed values, or ``None`` for "no bound".
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
    _, half_alpha, _ = tail_probabilities(level)
    log_threshold = math.log(1.0 / half_alpha)
    table = _Counts(kept_values, candidates)
    size = sizes.astype(np.float64)[:, None]
    gap = gaps.astype(np.float64)[:, None]

    def upper_shares(start: int, stop: int) -> FloatArray:  # missing placed at −∞
        return np.minimum((table.block(start, stop) + gap) / size, 1.0)

    def lower_shares(start: int, stop: int) -> FloatArray:  # missing placed at +∞
        return table.block(start, stop) / size

    lower = _lower_bound(upper_shares, gaps / sizes, candidates, q, log_threshold)
    upper = _upper_bound(lower_shares, candidates, q, log_threshold)
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
    # The same slack as the §5.2 estimate's rank: q·n computed in floating point.
    reached = np.flatnonzero(shares >= q * (1.0 - 1e-12))
    return float(candidates[reached[0]]) if reached.size else float(candidates[-1])


Shares = Callable[[int, int], FloatArray]


def _lower_bound(upper_shares: Shares, floor_shares: FloatArray, candidates: FloatArray,
                 q: float, log_threshold: float) -> float | None:
    """The first candidate at which the upper side does not reject ``F(v) ≥ q``."""
    # The upper side rejects a mean of q when the long side over 1 − shares rejects 1 − q.
    if not _rejects(1.0 - floor_shares[None, :], 1.0 - q, log_threshold)[0]:
        return None  # the missing values alone (at −∞) could already hold a fraction q
    for start in range(0, candidates.size, _BLOCK):
        stop = min(candidates.size, start + _BLOCK)
        block = upper_shares(start, stop).T  # candidates × clusters
        plausible = ~_rejects(1.0 - block, 1.0 - q, log_threshold)
        hits = np.flatnonzero(plausible)
        if hits.size:
            return float(candidates[start + hits[0]])
    return None  # pragma: no cover - at the last candidate every upper share is 1


def _upper_bound(lower_shares: Shares, candidates: FloatArray, q: float,
                 log_threshold: float) -> float | None:
    """The candidate after the last one at which the lower side does not establish
    ``F(v) ≥ q`` (None when that is the last candidate)."""
    d = candidates.size
    for stop in range(d, 0, -_BLOCK):
        start = max(0, stop - _BLOCK)
        established = _rejects(lower_shares(start, stop).T, q, log_threshold)
        misses = np.flatnonzero(~established)
        if misses.size:
            last = start + int(misses[-1])
            return None if last + 1 >= d else float(candidates[last + 1])
    return float(candidates[0])
