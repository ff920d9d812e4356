"""Distribution-free order-statistic intervals for quantiles
(docs/concepts.md#quantiles-order-statistic-intervals).

For ``n`` observed values, ``m`` missing ones, ``N = n + m`` and ``B ~ Binomial(N, q)``, the
interval for the ``q``-quantile runs from the order statistic of rank ``l`` (largest ``l`` with
``P(B ≤ l−1) ≤ α/2``) to the order statistic of rank ``u`` (smallest ``u`` with
``P(B ≥ u) ≤ α/2``), in the ``N``-element sample where the missing values are placed at −∞ for
the lower bound and at +∞ for the upper bound. A bound that falls on a placed value, or for
which no rank qualifies, is ``None`` ("no bound").
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["QUANTILE_METHOD", "QuantileInterval", "quantile_interval"]

QUANTILE_METHOD = "order-statistic (distribution-free) with missingness bounds"

# ``q * n`` is computed in floating point: 0.95 * 20 may come out a hair above 19 and would then
# give rank 20 instead of 19. A relative slack of 1e-12 is far larger than the rounding error
# of one multiplication (about 1e-16 relative) and far smaller than any meaningful change of q.
_RANK_RELATIVE_SLACK = 1e-12

# Binomial tail probabilities come from scipy with rounding error around 1e-16; a tail that
# equals α/2 exactly (e.g. 1/4 for N = 2, q = 1/2, level 0.5) must still satisfy "≤ α/2" as the
# spec states it. The slack is negligible next to any α/2 used in practice.
_PROBABILITY_SLACK = 1e-12


@dataclass(frozen=True)
class QuantileInterval:
    """A quantile estimate with its interval; a ``None`` bound means "no bound"."""

    quantile: float
    estimate: float | None
    lower: float | None
    upper: float | None
    method: str


def estimate_rank(q: float, n: int) -> int:
    """1-based rank of the quantile estimate among ``n`` sorted values: ``max(1, ceil(q·n))``.

    This is the smallest observed value with at least a fraction ``q`` of observed values at or
    below it (the inverse of the empirical distribution function). ``n`` must be positive.

    Example: the median of 20 values is the 10th smallest, the 90th percentile the 18th.

    >>> from oloproof.stats import estimate_rank
    >>> estimate_rank(0.5, 20), estimate_rank(0.9, 20)
    (10, 18)
    """
    scaled = q * n
    rank = math.ceil(scaled - abs(scaled) * _RANK_RELATIVE_SLACK)
    return min(n, max(1, rank))


_WINDOW = 32


def _first_index(
    tail: Callable[[npt.NDArray[np.int64]], npt.NDArray[np.float64]],
    size: int,
    guess: float,
    threshold: float,
    *,
    last_at_most: bool,
) -> int | None:
    """Index in ``0..size-1`` where a monotone tail crosses ``threshold``.

    With ``last_at_most`` (``tail`` nondecreasing) this is the last index with
    ``tail ≤ threshold``; otherwise (``tail`` nonincreasing) the first such index. Only a window
    around ``guess`` is evaluated; if the window does not bracket the crossing, the whole range
    is evaluated instead, so the answer never depends on the guess.
    """
    centre = int(min(max(guess, 0.0), float(size - 1))) if math.isfinite(guess) else 0
    start = max(0, centre - _WINDOW)
    stop = min(size, centre + _WINDOW + 1)
    window = tail(np.arange(start, stop))
    ok = window <= threshold
    if last_at_most:
        bracketed = (start == 0 or bool(ok[0])) and (stop == size or not bool(ok[-1]))
    else:
        bracketed = (start == 0 or not bool(ok[0])) and (stop == size or bool(ok[-1]))
    if not bracketed:
        start = 0
        ok = tail(np.arange(size)) <= threshold
    hits = np.flatnonzero(ok)
    if hits.size == 0:
        return None
    return start + int(hits[-1] if last_at_most else hits[0])


def order_statistic_ranks(big_n: int, q: float, level: float) -> tuple[int | None, int | None]:
    """Ranks ``(l, u)`` of the distribution-free interval in a sample of ``big_n`` values.

    Method: the classical order-statistic confidence interval for a quantile (e.g. David &
    Nagaraja, *Order Statistics*, §7.1): ``l`` is the largest rank in ``1..N`` with
    ``P(B ≤ l−1) ≤ α/2`` and ``u`` the smallest rank in ``1..N`` with ``P(B ≥ u) ≤ α/2``,
    ``B ~ Binomial(N, q)``, ``α = 1 − level`` (computed exactly from the level's decimal
    text); ``None`` when no rank qualifies. The tails are
    scipy.special's ``bdtr`` / ``bdtrc`` (binomial CDF and survival function), evaluated near
    the normal approximation's crossing (O(1) typically, O(N) at worst).

    Example: the median of 20 values lies between the 6th and the 15th smallest at 95%.

    >>> from oloproof.stats import order_statistic_ranks
    >>> order_statistic_ranks(20, 0.5, 0.95)
    (6, 15)
    """
    big_n = count("big_n", big_n)
    level = check_level(level)
    if big_n == 0:
        return (None, None)
    _, half_alpha, _ = tail_probabilities(level)
    threshold = half_alpha + _PROBABILITY_SLACK

    special = _scipy_special()

    def at_most(ks: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:  # P(B ≤ k)
        return np.where(ks < 0, 0.0, special.bdtr(np.maximum(ks, 0), big_n, q))

    def above(ks: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:  # P(B > k)
        return np.where(ks < 0, 1.0, special.bdtrc(np.maximum(ks, 0), big_n, q))

    # Where the tails cross α/2, by the normal approximation: only a starting point for the
    # search (a wrong guess costs a full scan, never a wrong rank).
    spread = float(special.ndtri(half_alpha)) * math.sqrt(big_n * q * (1.0 - q))
    # Index k = rank − 1: P(B ≤ l−1) is at_most(l−1) and P(B ≥ u) is above(u−1).
    lower_index = _first_index(at_most, big_n, big_n * q + spread, threshold, last_at_most=True)
    upper_index = _first_index(above, big_n, big_n * q - spread, threshold, last_at_most=False)
    lower_rank = None if lower_index is None else lower_index + 1
    upper_rank = None if upper_index is None else upper_index + 1
    return (lower_rank, upper_rank)


def _sorted_finite(values: Sequence[float]) -> npt.NDArray[np.float64]:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError("values must be a one-dimensional sequence of numbers")
    if not np.all(np.isfinite(array)):
        raise ValueError("values must be finite numbers (missing cases go in `missing`)")
    return np.sort(array, kind="stable")


def quantile_interval(
    values: Sequence[float], missing: int, q: float, level: float
) -> QuantileInterval:
    """Estimate and distribution-free interval for the ``q``-quantile
    (docs/concepts.md#quantiles-order-statistic-intervals).

    Method: order-statistic confidence interval with worst-case placement of missing values.
    The estimate is the observed value of rank ``max(1, ceil(q·n))`` (the smallest observed value
    with at least a fraction ``q`` of observed values at or below it), ``None`` with no
    observations. For the bounds see :func:`order_statistic_ranks`; with the ``m`` missing
    values at −∞ the lower rank ``l`` points to observed rank ``l − m`` (``None`` if
    ``l ≤ m``), and with them at +∞ the upper rank ``u`` points to observed rank ``u``
    (``None`` if ``u > n``). Bounds are observed values, returned exactly. Values are sorted
    once: O(N log N) overall.

    Example: the median number of steps of 20 cases; three cases more, missing, widen it.

    >>> from oloproof.stats import quantile_interval
    >>> steps = [3, 5, 4, 6, 8, 2, 7, 5, 6, 4, 9, 5, 6, 3, 5, 7, 4, 6, 5, 8]
    >>> median = quantile_interval(steps, 0, 0.5, 0.95)
    >>> median.estimate, median.lower, median.upper
    (5.0, 4.0, 6.0)
    >>> quantile_interval(steps, 3, 0.5, 0.95).upper
    7.0
    >>> quantile_interval(steps, 0, 0.9, 0.95).upper is None  # too few values for a bound
    True
    """
    missing = count("missing", missing)
    level = check_level(level)
    if isinstance(q, bool) or not isinstance(q, (int, float)) or not 0.0 <= q <= 1.0:
        raise ValueError(f"quantile q must be a number in [0, 1], got {q!r}")
    q = float(q)
    ordered = _sorted_finite(values)
    n = int(ordered.size)
    if n == 0:
        return QuantileInterval(q, None, None, None, QUANTILE_METHOD)
    estimate = float(ordered[estimate_rank(q, n) - 1])
    lower_rank, upper_rank = order_statistic_ranks(n + missing, q, level)
    lower: float | None = None
    if lower_rank is not None and lower_rank > missing:
        lower = float(ordered[lower_rank - missing - 1])
    upper: float | None = None
    if upper_rank is not None and upper_rank <= n:
        upper = float(ordered[upper_rank - 1])
    return QuantileInterval(q, estimate, lower, upper, QUANTILE_METHOD)
