"""Cluster bootstrap interval for a pass rate (SPEC §5.4).

Cases of one cluster are not independent, so clusters — not cases — are resampled with
replacement. The interval is the percentile interval of the resampled rates, with missing cases
handled as in §5.1: the lower bound comes from the rate with every missing case counted as a
failure, the upper bound from the rate with every missing case counted as a pass.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count
from oloproof.stats.binomial import RateInterval

__all__ = ["DEFAULT_RESAMPLES", "bootstrap_method", "cluster_bootstrap_rate"]

DEFAULT_RESAMPLES = 10_000

# Upper limit on the number of cluster indices drawn at once (resamples × clusters per chunk),
# so memory stays around 8 bytes × this many whatever the suite size.
_CHUNK_CELLS = 2_000_000


def bootstrap_method(resamples: int, seed: int) -> str:
    """The ``method`` string carried by :func:`cluster_bootstrap_rate` results."""
    return f"cluster bootstrap (percentile, {resamples} resamples, seed {seed})"


def _counts(name: str, values: Sequence[int]) -> npt.NDArray[np.int64]:
    checked = [count(f"{name}[{i}]", v) for i, v in enumerate(values)]
    return np.asarray(checked, dtype=np.int64).reshape(-1)


def cluster_bootstrap_rate(
    passed: Sequence[int],
    observed: Sequence[int],
    missing: Sequence[int],
    level: float,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
) -> RateInterval:
    """Pass rate with a cluster-bootstrap percentile interval and missingness bounds.

    Method: nonparametric cluster (block) bootstrap with the percentile interval (Efron &
    Tibshirani, *An Introduction to the Bootstrap*, 1993, ch. 13; Davison & Hinkley, 1997,
    §3.8). One entry per cluster in each sequence. Clusters with no observed and no missing
    case carry no information for this metric and are dropped before resampling. Each resample
    draws as many clusters as remain, with replacement, from ``numpy.random.Generator(PCG64(
    seed))``; per resample ``L = Σpassed / Σ(observed+missing)`` and ``U = Σ(passed+missing) /
    Σ(observed+missing)``. The lower bound is the ``α/2`` empirical quantile of ``L`` and the
    upper bound the ``1−α/2`` empirical quantile of ``U``, each taken as an actual resampled
    value (``numpy.quantile`` methods ``"lower"`` and ``"higher"``: rounded outward, never
    interpolated). The estimate is ``Σpassed / Σobserved`` (``None`` if nothing was observed).
    Approximate; the same inputs and seed always give the same result.
    """
    level = check_level(level)
    resamples = count("resamples", resamples)
    seed = count("seed", seed)
    if resamples < 1:
        raise ValueError("resamples must be at least 1")
    p = _counts("passed", passed)
    o = _counts("observed", observed)
    m = _counts("missing", missing)
    if not p.size == o.size == m.size:
        raise ValueError("passed, observed and missing need one entry per cluster each")
    if np.any(p > o):
        raise ValueError("passed must not exceed observed in any cluster")
    method = bootstrap_method(resamples, seed)
    total_observed = int(o.sum())
    estimate = int(p.sum()) / total_observed if total_observed > 0 else None
    keep = (o + m) > 0
    p, o, m = p[keep], o[keep], m[keep]
    clusters = int(p.size)
    if clusters == 0:
        return RateInterval(estimate=None, lower=None, upper=None, method=method)

    rng = np.random.Generator(np.random.PCG64(seed))
    low_rates = np.empty(resamples, dtype=np.float64)
    high_rates = np.empty(resamples, dtype=np.float64)
    rows_per_chunk = max(1, _CHUNK_CELLS // clusters)
    size = o + m
    for start in range(0, resamples, rows_per_chunk):
        rows = min(rows_per_chunk, resamples - start)
        index = rng.integers(0, clusters, size=(rows, clusters))
        sum_p = p[index].sum(axis=1)
        sum_m = m[index].sum(axis=1)
        sum_n = size[index].sum(axis=1)  # every cluster kept has size ≥ 1, so sum_n ≥ 1
        low_rates[start : start + rows] = sum_p / sum_n
        high_rates[start : start + rows] = (sum_p + sum_m) / sum_n

    alpha = 1.0 - level
    lower = float(np.quantile(low_rates, alpha / 2.0, method="lower"))
    upper = float(np.quantile(high_rates, 1.0 - alpha / 2.0, method="higher"))
    return RateInterval(estimate=estimate, lower=lower, upper=upper, method=method)
