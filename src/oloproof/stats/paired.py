"""A candidate against its baseline, case by case (docs/compare.md#the-interval): the difference in
pass rate with its interval, and the exact McNemar test on the discordant pairs.

Cases are paired by id; a pair's difference is candidate − baseline of the per-case values
(0/1 verdicts, or with trials the shares of passing trials), so it lies in [−1, 1]. Two
intervals, each valid at every sample size (docs/compare.md#the-interval):

- 0/1 values on both sides (one trial; pass^k with k = trials): the melded interval of Fay &
  Lumbard (2021), compatible with exact McNemar (`binary_difference_interval`,
  :mod:`oloproof.stats.melded`): built on the discordant pairs, so pairs that agree narrow it;
- fractions (trials): the betting interval of Waudby-Smith & Ramdas (2023) on the differences
  mapped to [0, 1] (`paired_difference_interval`), in an order the caller fixes;
- over clusters: the cases' mean difference (every pair weighs the same, whatever its
  cluster's size), with the betting interval of that ratio over clusters
  (`cluster_difference_interval`; on clusters of one size, the betting interval of the
  clusters' mean differences).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import count
from oloproof.stats.betting import (
    BETTING_METHOD,
    MeanInterval,
    bounded_mean_interval,
    ratio_lower_bounds,
)
from oloproof.stats.melded import MELDED_METHOD, melded_lower_bound

__all__ = [
    "MCNEMAR_METHOD",
    "McNemarTest",
    "binary_difference_interval",
    "cluster_difference_interval",
    "difference_bounds",
    "mcnemar_exact",
    "paired_difference_interval",
]

MCNEMAR_METHOD = "exact mcnemar"
#: Discordant pairs up to which the binomial tail starts from an exact integer term.
EXACT_TERM_UP_TO = 20_000

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class McNemarTest:
    """The exact McNemar test of two discordant counts; a description, never a decision."""

    b: int
    c: int
    p_value: float
    method: str


def mcnemar_exact(b: int, c: int) -> McNemarTest:
    """Two-sided exact McNemar p-value for discordant pair counts ``b`` and ``c``.

    Method: McNemar (1947), exact form: conditional on the ``n = b + c`` discordant pairs, ``b``
    is Binomial(n, 1/2) when the two runs pass at the same rate, and the p-value is the
    two-sided exact binomial test of ``b`` — the sum of the probabilities of the outcomes no
    likelier than ``b``, which by symmetry is ``min(1, 2·P(X ≤ min(b, c)))`` (and 1 when
    ``b = c``). Equals ``scipy.stats.binomtest(b, b + c, 0.5).pvalue``. The tail is summed
    here (:func:`_binomial_half_tail`) rather than taken from scipy.special, whose import
    would cost a comparison more than its arithmetic. With no discordant pair (``n = 0``)
    nothing speaks against equal rates: 1.0. Symmetric in ``b`` and ``c`` (e.g. the fixed and
    the broken cases, in either order).

    Example: 2 cases broken and 9 fixed between two runs.

    >>> from oloproof.stats import mcnemar_exact
    >>> mcnemar_exact(2, 9)
    McNemarTest(b=2, c=9, p_value=0.0654296875, method='exact mcnemar')
    """
    b = count("b", b)
    c = count("c", c)
    n = b + c
    low = min(b, c)
    if n == 0 or 2 * low == n:
        p_value = 1.0
    else:
        p_value = min(1.0, 2.0 * _binomial_half_tail(low, n))
    return McNemarTest(b=b, c=c, p_value=p_value, method=MCNEMAR_METHOD)


def _binomial_half_tail(k: int, n: int) -> float:
    """``P(X ≤ k)`` for ``X ~ Binomial(n, 1/2)`` and ``k < n/2``.

    The largest term ``C(n, k) / 2ⁿ`` is exact and correctly rounded (Python divides integers
    exactly) up to ``n = EXACT_TERM_UP_TO``; above, where the integers take longer than the
    rest of a comparison, it is ``exp`` of log-gamma differences (relative error about
    ``n · log n · 2⁻⁵³``, 1e-9 at a million pairs — a description shown to three digits). The
    smaller terms follow by ``P(X = i − 1) = P(X = i) · i / (n − i + 1)``, summed stopping
    once a term no longer changes the sum; each step adds about one rounding error. A tail
    below the smallest double is 0.0, as scipy's is.
    """
    if n <= EXACT_TERM_UP_TO:
        term = math.comb(n, k) / (1 << n)
    else:
        term = math.exp(math.lgamma(n + 1) - math.lgamma(k + 1) - math.lgamma(n - k + 1)
                        - n * math.log(2.0))
    terms = [term]
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)
        if term < terms[0] * 1e-17 or term == 0.0:
            break
        terms.append(term)
    return math.fsum(terms)


def _differences(name: str, values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one sequence of numbers")
    if not np.all(np.isfinite(array)) or np.any(array < -1.0) or np.any(array > 1.0):
        raise ValueError(f"{name} must be numbers in [-1, 1]")
    return array


def _pair_bounds(lower_differences: Sequence[float] | npt.ArrayLike,
                 upper_differences: Sequence[float] | npt.ArrayLike
                 ) -> tuple[FloatArray, FloatArray]:
    """Both sequences checked: numbers in [−1, 1], one each per pair, lower ≤ upper."""
    low = _differences("lower_differences", lower_differences)
    high = _differences("upper_differences", upper_differences)
    if low.size != high.size:
        raise ValueError(
            f"lower_differences and upper_differences need one entry per pair each "
            f"({low.size} and {high.size} given)"
        )
    if np.any(low > high):
        first = int(np.flatnonzero(low > high)[0])
        raise ValueError(
            f"lower_differences[{first}] ({low[first]!r}) exceeds upper_differences[{first}] "
            f"({high[first]!r})"
        )
    return low, high


def difference_bounds(
    baseline_lower: Sequence[float] | npt.ArrayLike,
    baseline_upper: Sequence[float] | npt.ArrayLike,
    candidate_lower: Sequence[float] | npt.ArrayLike,
    candidate_upper: Sequence[float] | npt.ArrayLike,
) -> tuple[FloatArray, FloatArray]:
    """Per pair, the lowest and highest possible difference candidate − baseline.

    Each side's value lies between its lower and upper value (equal when observed; 0 and 1 for
    a missing 0/1 verdict; docs/reliability.md#what-passk-means with trials). A side missing is
    resolved the worst way for each bound: the lowest difference is ``candidate_lower −
    baseline_upper`` and the highest ``candidate_upper − baseline_lower``. All four in [0, 1], one
    entry per pair.

    Example: three pairs; the second's baseline is missing (0 to 1), so its difference is 0 to 1.

    >>> from oloproof.stats import difference_bounds
    >>> low, high = difference_bounds([1, 0, 1], [1, 1, 1], [1, 1, 0], [1, 1, 0])
    >>> low.tolist(), high.tolist()
    ([0.0, 0.0, -1.0], [0.0, 1.0, -1.0])
    """
    arrays = []
    for name, values in (("baseline_lower", baseline_lower), ("baseline_upper", baseline_upper),
                         ("candidate_lower", candidate_lower),
                         ("candidate_upper", candidate_upper)):
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 1:
            raise ValueError(f"{name} must be one sequence of numbers")
        if not np.all(np.isfinite(array)) or np.any(array < 0.0) or np.any(array > 1.0):
            raise ValueError(f"{name} must be numbers in [0, 1]")
        arrays.append(array)
    base_low, base_high, cand_low, cand_high = arrays
    if not base_low.size == base_high.size == cand_low.size == cand_high.size:
        raise ValueError("the four sequences need one entry per pair each")
    if np.any(base_low > base_high) or np.any(cand_low > cand_high):
        raise ValueError("a lower value exceeds its upper value")
    return cand_low - base_high, cand_high - base_low


def paired_difference_interval(
    lower_differences: Sequence[float] | npt.ArrayLike,
    upper_differences: Sequence[float] | npt.ArrayLike,
    level: float,
) -> MeanInterval:
    """Mean paired difference (candidate − baseline) with its interval
    (docs/compare.md#the-interval).

    ``lower_differences[i] ≤ upper_differences[i]`` in [−1, 1] are pair ``i``'s lowest and
    highest possible difference (equal when both sides are observed; see
    :func:`difference_bounds`), in the fixed order the caller chose (by case digest). Method:
    each difference ``d`` is mapped to ``(d + 1) / 2`` in [0, 1], the betting interval of
    Waudby-Smith & Ramdas (2023) is taken over those values with missingness bounds
    (:func:`~oloproof.stats.betting.bounded_mean_interval`: the lower bound from the lowest
    differences, the upper from the highest), and estimate and bounds are mapped back by
    ``2y − 1``. The estimate is the mean difference of the pairs with both sides observed
    (``None`` if none), and the interval contains it. With no pair every field is ``None``.

    Example: 40 pairs whose candidate gained 0.3 on average (shares of trials).

    >>> from oloproof.stats import paired_difference_interval
    >>> gains = [0, 0.5, 1, 0, -0.5, 0.5, 0, 1, 0.5, 0] * 4
    >>> found = paired_difference_interval(gains, gains, 0.95)
    >>> round(found.estimate, 3), round(found.lower, 3), round(found.upper, 3), found.method
    (0.3, 0.053, 0.499, 'betting')
    """
    low, high = _pair_bounds(lower_differences, upper_differences)
    shifted = bounded_mean_interval((low + 1.0) / 2.0, (high + 1.0) / 2.0, level)
    if shifted.lower is None or shifted.upper is None:
        return MeanInterval(None, None, None, shifted.method)
    observed = low == high
    # The mean of the differences themselves (not mapped there and back, which could move it
    # by a rounding step); the bounds are kept around it.
    estimate = float(low[observed].mean()) if observed.any() else None
    lower = max(-1.0, 2.0 * shifted.lower - 1.0)
    upper = min(1.0, 2.0 * shifted.upper - 1.0)
    if estimate is not None:
        lower, upper = min(lower, estimate), max(upper, estimate)
    return MeanInterval(estimate, lower, upper, shifted.method)


def binary_difference_interval(
    lower_differences: Sequence[float] | npt.ArrayLike,
    upper_differences: Sequence[float] | npt.ArrayLike,
    level: float,
) -> MeanInterval:
    """Mean paired difference of 0/1 values (candidate − baseline) with the melded interval.

    ``lower_differences[i] ≤ upper_differences[i]``, each −1, 0 or 1, are pair ``i``'s lowest
    and highest possible difference (equal when both sides are observed; a missing side makes
    them differ: :func:`difference_bounds`). Method: Fay & Lumbard (2021), the melded interval
    compatible with exact McNemar (:func:`oloproof.stats.melded.melded_lower_bound`), a missing
    side resolved the worst way for each bound: the lower bound is the melded lower bound of
    the table of lowest differences (``m`` of them nonzero, ``x`` of those +1), the upper bound
    minus the lower bound of the table of highest differences mirrored. That stays valid
    because the melded lower bound never rises when one pair's difference falls. The order of
    the pairs does not matter. The estimate is the mean difference of the pairs with both sides
    observed (``None`` if none), and the interval contains it. With no pair every field is
    ``None``.

    Example: 40 matched 0/1 pairs, 9 fixed and 2 broken: the interval still holds zero.

    >>> from oloproof.stats import binary_difference_interval
    >>> moves = [0] * 29 + [1] * 9 + [-1] * 2
    >>> found = binary_difference_interval(moves, moves, 0.95)
    >>> found.estimate, round(found.lower, 3), round(found.upper, 3), found.method
    (0.175, -0.01, 0.352, 'melded_mcnemar')
    """
    low, high = _pair_bounds(lower_differences, upper_differences)
    if not (np.all(np.isin(low, (-1.0, 0.0, 1.0))) and np.all(np.isin(high, (-1.0, 0.0, 1.0)))):
        raise ValueError("differences of 0/1 values are -1, 0 or 1")
    n = int(low.size)
    if n == 0:
        return MeanInterval(None, None, None, MELDED_METHOD)
    lower = melded_lower_bound(n, int(np.count_nonzero(low)), int(np.count_nonzero(low > 0)),
                               level)
    upper = -melded_lower_bound(n, int(np.count_nonzero(high)), int(np.count_nonzero(high < 0)),
                                level)
    observed = low == high
    estimate = float(low[observed].mean()) if observed.any() else None
    if estimate is not None:
        lower, upper = min(lower, estimate), max(upper, estimate)
    return MeanInterval(estimate, lower, upper, MELDED_METHOD)


def cluster_difference_interval(
    lower_sums: Sequence[float] | npt.ArrayLike,
    upper_sums: Sequence[float] | npt.ArrayLike,
    sizes: Sequence[int] | npt.ArrayLike,
    level: float,
    *,
    observed_sum: float,
    observed_pairs: int,
) -> MeanInterval:
    """The paired difference over clusters: the mean difference of the pairs (candidate −
    baseline), each cluster one draw (docs/compare.md#a-clustered-comparison).

    Per cluster, in the fixed order the caller chose (by its id's digest): ``lower_sums[c] ≤
    upper_sums[c]`` are the lowest and highest possible sum of its pairs' differences (each in
    [−1, 1]; a missing side resolved the worst way, :func:`difference_bounds`) and
    ``sizes[c]`` its number of pairs. The estimate is ``observed_sum / observed_pairs``, the
    mean difference of the pairs with both sides observed — every pair weighs the same, so a
    one-pair cluster does not count like a forty-pair one. Method: each cluster's sum is mapped
    to ``V_c = (D_c + N_c) / 2 ∈ [0, N_c]`` and the betting interval of the ratio ``Σ V / Σ N``
    is taken over clusters (:func:`~oloproof.stats.betting.ratio_lower_bounds`, values
    ``V_c / M`` and scales ``N_c / M`` for the largest size ``M``), the lower bound from the
    lowest sums and the upper from the highest, mapped back by ``2y − 1``. With every size
    equal that is :func:`paired_difference_interval` of the clusters' mean differences
    exactly. The interval contains the estimate and the ratios of the lowest and highest sums.
    With no cluster every field is ``None``.

    Example: 24 clusters of 1 to 5 pairs, 64 pairs whose differences add up to −12.

    >>> from oloproof.stats import cluster_difference_interval
    >>> sums, sizes = [-3, 0, 1, 0, 0, -1] * 4, [5, 1, 2, 3, 1, 4] * 4
    >>> row = cluster_difference_interval(sums, sums, sizes, 0.95, observed_sum=-12,
    ...                                   observed_pairs=64)
    >>> row.estimate, round(row.lower, 3), round(row.upper, 3), row.method
    (-0.1875, -0.501, 0.302, 'betting')
    """
    low = np.asarray(lower_sums, dtype=np.float64)
    high = np.asarray(upper_sums, dtype=np.float64)
    size = np.asarray(sizes, dtype=np.float64)
    if not (low.ndim == high.ndim == size.ndim == 1 and low.shape == high.shape == size.shape):
        raise ValueError("lower_sums, upper_sums and sizes need one entry per cluster each")
    if np.any(size < 1.0) or np.any(size != np.floor(size)) or not np.all(np.isfinite(size)):
        raise ValueError("sizes must be whole numbers of pairs, at least 1 per cluster")
    if not (np.all(np.isfinite(low)) and np.all(np.isfinite(high))) or np.any(low > high) or \
            np.any(low < -size * (1 + 1e-12)) or np.any(high > size * (1 + 1e-12)):
        raise ValueError("each cluster needs −size ≤ lower_sums ≤ upper_sums ≤ size")
    if size.size == 0:
        return MeanInterval(None, None, None, BETTING_METHOD)
    low, high = np.clip(low, -size, size), np.clip(high, -size, size)
    estimate = None if observed_pairs <= 0 else \
        min(1.0, max(-1.0, observed_sum / observed_pairs))
    if np.all(size == size[0]):
        same = paired_difference_interval(low / size, high / size, level)
        lower, upper = same.lower, same.upper
    else:
        top = float(size.max())
        scales = size / top
        values = np.vstack([(low + size) / (2.0 * top), (size - high) / (2.0 * top)])
        lows = ratio_lower_bounds(np.minimum(values, scales), np.vstack([scales, scales]),
                                  level)
        n_total = float(np.sort(size).sum())
        lower = min(2.0 * float(lows[0]) - 1.0, float(np.sort(low).sum()) / n_total)
        upper = max(1.0 - 2.0 * float(lows[1]), float(np.sort(high).sum()) / n_total)
    assert lower is not None and upper is not None
    if estimate is not None:
        lower, upper = min(lower, estimate), max(upper, estimate)
    return MeanInterval(estimate, max(-1.0, lower), min(1.0, upper), BETTING_METHOD)
