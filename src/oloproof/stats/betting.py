"""The betting confidence interval for the mean of values in [0, 1]
(docs/concepts.md#the-betting-interval).

Method: Waudby-Smith & Ramdas (2023), "Estimating means of bounded random variables by
betting", J. R. Stat. Soc. B 86(1) (arXiv:2010.09686): the *hedged capital process* with the
*predictable plug-in* bet tuned for a fixed sample size, two-sided, with the running
intersection over time. For a candidate mean ``m`` and values ``x_1 … x_n`` taken in the
order given:

- running estimates (one pseudo-observation of mean 1/2 and variance 1/4):
  ``μ̂_t = (1/2 + Σ_{i≤t} x_i) / (t + 1)``, ``σ̂²_t = (1/4 + Σ_{i≤t} (x_i − μ̂_i)²) / (t + 1)``;
- the bet on round ``t`` uses only the rounds before it (predictable):
  ``λ_t = √(2 log(2/α) / (n σ̂²_{t−1}))`` (``σ̂²_0 = 1/4``), truncated per side,
  ``λ⁺_t(m) = min(λ_t, c/m)`` and ``λ⁻_t(m) = min(λ_t, c/(1 − m))`` with ``c = 1/2``, so every
  factor below stays at least ``1 − c > 0``;
- the two capitals ``K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)(x_i − m))`` (grows when the values sit
  above ``m``) and ``K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)(x_i − m))`` (grows when they sit below);
- the hedged capital with ``θ = 1/2``: ``K_t(m) = max(½ K⁺_t(m), ½ K⁻_t(m))``; at the true
  mean it is a nonnegative martingale started at 1, so by Ville's inequality it ever reaches
  ``1/α`` with probability at most ``α``. The interval is the set of ``m`` at which it never
  does for ``t = 1 … n`` (the running intersection of the paper's sets ``C_t``): both capitals
  stay below ``2/α`` throughout.

Each factor of ``K⁺_t`` is nonincreasing in ``m`` (and of ``K⁻_t`` nondecreasing), so
``sup_t K⁺_t(m) < 2/α`` holds on an interval ``(L, 1]`` and ``sup_t K⁻_t(m) < 2/α`` on
``[0, U)``: each end is the root of one monotone, continuous function of ``m`` and is found by
a bracketed search (regula falsi with the Anderson–Björck correction, safeguarded by
bisection: `_roots.increasing_root`) to 2⁻⁴⁰ (about 1e-12), reported on the rejected side of
the final bracket — outward, never inward. The upper end is
the lower end of the mirrored values ``1 − x`` mirrored back (the bets are symmetric), so one
routine serves both. Everything is vectorised with NumPy over the values (and over rows of
independent samples, which the simulations use).

The interval depends on the order of the values: callers pass them in a fixed order (by case
digest, by cluster id) so that the same suite always gets the same interval.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import tail_probabilities
from oloproof.stats._roots import increasing_root
from oloproof.stats._values import check_case_bounds

__all__ = [
    "BETTING_METHOD",
    "MeanInterval",
    "betting_bounds",
    "betting_lower_bounds",
    "bounded_mean_interval",
    "bounded_mean_intervals",
    "ratio_lower_bounds",
]

BETTING_METHOD = "betting"

# c in λ⁺(m) = min(λ, c/m): the paper recommends 1/2 or 3/4; 1/2 is the authors' default.
BET_TRUNCATION = 0.5
# Bracket width at which the root search stops: 2⁻⁴⁰ ≈ 9.1e-13.
BOUND_TOLERANCE = 2.0**-40

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class MeanInterval:
    """A mean's estimate with its interval; ``None`` means "not computable" (no values)."""

    estimate: float | None
    lower: float | None
    upper: float | None
    method: str


def _predictable_bets(x: FloatArray, log_threshold: float,
                      scales: FloatArray | None = None) -> FloatArray:
    """``λ_t`` per row, each from the rows' earlier values only (the paper's predictable
    plug-in for a fixed ``n``). With ``scales`` (a ratio's values: :func:`ratio_lower_bounds`)
    the running mean is the running ratio ``(1/2 + Σ x_i) / (1 + Σ s_i)`` and the running
    variance that of ``x_i − μ̂_i s_i``; with every scale 1 both are the paper's."""
    n = x.shape[1]
    rounds = np.arange(2, n + 2, dtype=np.float64)  # t + 1 for t = 1 … n
    if scales is None:
        mean = (0.5 + np.cumsum(x, axis=1)) / rounds
        variance = (0.25 + np.cumsum((x - mean) ** 2, axis=1)) / rounds
    else:
        mean = (0.5 + np.cumsum(x, axis=1)) / (1.0 + np.cumsum(scales, axis=1))
        variance = (0.25 + np.cumsum((x - mean * scales) ** 2, axis=1)) / rounds
    previous = np.empty_like(variance)
    previous[:, 0] = 0.25
    previous[:, 1:] = variance[:, :-1]
    bets: FloatArray = np.sqrt((2.0 * log_threshold / n) / previous)
    return bets


def _remaining_largest(scales: FloatArray) -> FloatArray:
    """Per row and round, the largest scale from that round on."""
    largest: FloatArray = np.maximum.accumulate(scales[:, ::-1], axis=1)[:, ::-1]
    return largest


def _log_capital_excess(
    x: FloatArray, bets: FloatArray, m: FloatArray, log_threshold: float,
    scales: FloatArray | None = None, work: tuple[FloatArray, FloatArray] | None = None,
) -> FloatArray:
    """``max_{t ≤ n} log K⁺_t(m) − log(2/α)`` per row, for that row's candidate ``m``; with
    ``scales`` each round's factor is ``1 + λ(x_t − m s_t)`` (a ratio, :func:`ratio_lower_bounds`).

    Nonincreasing in ``m``; ``m`` is rejected (outside the interval) where it is ``≥ 0``.
    ``work``: two scratch arrays of ``x``'s shape to compute in (a root search calls this
    some thirty times on the same rows: fresh tables each time cost page faults, not
    arithmetic). The figures are the same either way: the same operations on the same floats.
    """
    with np.errstate(divide="ignore"):
        cap = BET_TRUNCATION / m  # m = 0 → inf: no truncation on the long side
    lam, growth = work if work is not None else (np.empty_like(x), np.empty_like(x))
    if scales is None:
        np.minimum(bets, cap[:, None], out=lam)
        np.subtract(x, m[:, None], out=growth)
    else:
        # A round can lose at most m s_t: the cap is c / (m r_t), r_t the largest scale still
        # to come (known from the scales given, whatever order the rounds take).
        np.minimum(bets, cap[:, None] / _remaining_largest(scales), out=lam)
        np.subtract(x, np.multiply(m[:, None], scales, out=growth), out=growth)
    # log(1 + λ (x − m s)), summed over the rounds so far: its largest is the excess.
    np.log1p(np.multiply(lam, growth, out=growth), out=growth)
    running = growth.cumsum(axis=1, out=growth)
    excess: FloatArray = np.maximum.reduce(running, axis=1) - log_threshold
    return excess


def _lower_ends(x: FloatArray, bets: FloatArray, log_threshold: float,
                scales: FloatArray | None = None) -> FloatArray:
    """Per row, the lower end ``L`` of the interval: the root in ``[0, 1]`` of the excess,
    returned as the largest rejected candidate of the final bracket (so never above ``L``).

    Root search: `increasing_root` (regula falsi with the Anderson–Björck correction,
    safeguarded by bisection), vectorised over rows.
    """
    rows = x.shape[0]
    result = np.zeros(rows, dtype=np.float64)
    at_zero = _log_capital_excess(x, bets, np.zeros(rows), log_threshold, scales)
    rejected = at_zero >= 0.0
    if not rejected.any():
        return result  # m = 0 is not rejected: L = 0
    xs, bs = x[rejected], bets[rejected]
    ss = None if scales is None else scales[rejected]

    # The rows still searching, taken out of xs once per set of rows (the set only shrinks,
    # and stays the same for most steps), with two scratch tables of their shape.
    taken: list[tuple[bytes, FloatArray, FloatArray, FloatArray | None,
                      tuple[FloatArray, FloatArray]]] = []

    def g(m: FloatArray, rows: npt.NDArray[np.bool_]) -> FloatArray:
        # Increasing in m; ≤ 0 where m is rejected.
        mask = rows.tobytes()  # the rows' booleans, compared as bytes (cheaper than arrays)
        if not taken or taken[0][0] != mask:
            some_x = xs[rows]
            taken[:] = [(mask, some_x, bs[rows], None if ss is None else ss[rows],
                         (np.empty_like(some_x), np.empty_like(some_x)))]
        _, some_x, some_bets, some_scales, work = taken[0]
        return -_log_capital_excess(some_x, some_bets, m, log_threshold, some_scales, work)

    everyone = np.ones(xs.shape[0], dtype=bool)
    # At m = 1 every long-side factor is ≤ 1, so the capital never exceeds 1 < 2/α.
    a = np.zeros(xs.shape[0])
    b = np.ones(xs.shape[0])
    ga = -at_zero[rejected]
    gb = g(b.copy(), everyone)
    # Start from a bracket around the usual place of the bound (mean minus an empirical
    # Bernstein half-width) when it holds, so the search begins close to the root.
    mean = xs.mean(axis=1) if ss is None else xs.sum(axis=1) / ss.sum(axis=1)
    spread = np.sqrt(2.0 * log_threshold * np.maximum(xs.var(axis=1), 1e-12) / xs.shape[1])
    guesses = [np.clip(mean - spread, 0.0, 1.0), np.clip(mean - 2.0 * spread, 0.0, 1.0)]
    a, _ = increasing_root(g, a, b, ga, gb, BOUND_TOLERANCE, guesses)
    result[rejected] = a
    return result


def _as_rows(values: Sequence[float] | npt.ArrayLike, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim == 1:
        array = array[None, :]
    if array.ndim != 2:
        raise ValueError(f"{name} must be a sequence of numbers (or rows of them)")
    if not np.all(np.isfinite(array)) or np.any(array < 0.0) or np.any(array > 1.0):
        raise ValueError(f"{name} must be numbers in [0, 1]")
    return array


def betting_lower_bounds(values: npt.ArrayLike, level: float) -> FloatArray:
    """The lower end of the betting interval for each row of ``values`` (rows × n, in [0, 1]).

    Method: Waudby-Smith & Ramdas (2023), hedged capital, predictable plug-in bet, θ = 1/2
    (see the module docstring): ``L = inf{m : K⁺_t(m) < 2/α for every t ≤ n}``, computed to
    about 1e-12 and rounded down. A 1-D input is one row. With ``n = 0`` every bound is 0.
    Returns one float per row.
    """
    x = _as_rows(values, "values")
    _, half_alpha, _ = tail_probabilities(level)
    if x.shape[1] == 0:
        return np.zeros(x.shape[0])
    log_threshold = math.log(1.0 / half_alpha)  # log(2/α)
    return _lower_ends(x, _predictable_bets(x, log_threshold), log_threshold)


def ratio_lower_bounds(values: npt.ArrayLike, scales: npt.ArrayLike, level: float
                       ) -> FloatArray:
    """The lower end of the betting interval for a ratio ``Σ E x_t / Σ s_t``, per row.

    ``values`` (rows × n) in [0, 1] are each round's ``x_t`` and ``scales`` (the same shape,
    in (0, 1]) its ``s_t``, with ``x_t ≤ s_t``: a cluster's sum of per-case values and its
    number of cases, both over the largest cluster's size. For a candidate ratio ``m`` the
    capital is ``K⁺_t(m) = Π (1 + λ⁺_i(m)(x_i − m s_i))``: at the true ratio each factor's
    mean is 1 when the rounds are exchangeable draws of (value, scale) pairs, as clusters
    taken in the order of their ids' digests are. The bet is capped at ``c / (m r_t)``, ``r_t``
    the largest scale still to come — known in advance, since the scales are the clusters'
    sizes: so every factor stays at least ``1 − c`` (``x ≥ 0``, ``s_t ≤ r_t``), and once the
    largest cluster is past, the rest are bet on at their own scale. Each factor is
    nonincreasing in ``m``, so the lower end is the root found as in
    :func:`betting_lower_bounds`, with the bets of :func:`_predictable_bets` on the running
    ratio. With every scale 1 it is :func:`betting_lower_bounds` exactly.

    Example: with every scale 1, the betting lower bound.

    >>> import numpy as np
    >>> from oloproof.stats import betting_lower_bounds, ratio_lower_bounds
    >>> x = np.linspace(0.6, 1.0, 30)
    >>> bool(ratio_lower_bounds(x, np.ones(30), 0.95)[0] == betting_lower_bounds(x, 0.95)[0])
    True
    """
    x = _as_rows(values, "values")
    s = _as_rows(scales, "scales")
    if x.shape != s.shape:
        raise ValueError("values and scales need the same shape")
    if np.any(s <= 0.0) or np.any(x > s):
        raise ValueError("each scale must be positive and at least its value")
    _, half_alpha, _ = tail_probabilities(level)
    if x.shape[1] == 0:
        return np.zeros(x.shape[0])
    log_threshold = math.log(1.0 / half_alpha)
    if np.all(s == 1.0):
        return _lower_ends(x, _predictable_bets(x, log_threshold), log_threshold)
    return _lower_ends(x, _predictable_bets(x, log_threshold, s), log_threshold, s)


def betting_bounds(values: Sequence[float] | npt.ArrayLike, level: float) -> tuple[float, float]:
    """The betting interval ``(L, U)`` for the mean of ``values`` in [0, 1], in the given order.

    Method: Waudby-Smith & Ramdas (2023), "Estimating means of bounded random variables by
    betting": the hedged capital process ``max(½K⁺_t(m), ½K⁻_t(m))`` with the predictable
    plug-in bets ``λ_t = √(2 log(2/α)/(n σ̂²_{t−1}))`` truncated at ``c/m`` and ``c/(1 − m)``,
    ``c = 1/2``; the interval is the set of candidate means at which the hedged capital stays
    below ``1/α`` for every ``t ≤ n`` (running intersection), valid at level ``1 − α`` for
    values with a common mean (e.g. independent cases), whatever their distribution on [0, 1].
    ``α`` comes exactly from the level's decimal text. Bounds are accurate to about 1e-12 and
    rounded outward. Exactly as the paper defines it — so, rarely, in an order where early
    values are far from the later ones, ``L`` can exceed the sample mean (or ``U`` fall below
    it), and in principle ``L > U`` (an empty set); :func:`bounded_mean_interval` is the
    function that reports an interval. With no values it returns ``(0.0, 1.0)``.

    Example: 40 cases' shares of passed trials, in their fixed order.

    >>> from oloproof.stats import betting_bounds
    >>> lower, upper = betting_bounds([1, 0.5, 1, 1, 0.75, 1, 0.5, 1, 1, 1] * 4, 0.95)
    >>> round(lower, 3), round(upper, 3)
    (0.721, 0.951)
    """
    x = _as_rows(values, "values")
    if x.shape[0] != 1:
        raise ValueError("values must be one sequence of numbers")
    lows = betting_lower_bounds(np.vstack([x, 1.0 - x]), level)
    return (float(lows[0]), float(1.0 - lows[1]))


def bounded_mean_interval(
    lower_values: Sequence[float] | npt.ArrayLike,
    upper_values: Sequence[float] | npt.ArrayLike,
    level: float,
) -> MeanInterval:
    """Mean of per-case values in [0, 1] with the betting interval, missing values bounded.

    ``lower_values[i] ≤ upper_values[i]`` are the smallest and largest value case ``i`` could
    have (equal when it is observed; e.g. 0 and 1 for a case with nothing known), in the
    fixed order the caller chose (by case digest, by cluster id). Method: the betting interval
    of Waudby-Smith & Ramdas (2023) (:func:`betting_bounds`), with missingness bounds as in
    docs/reliability.md#how-missing-trials-count: the lower bound is the betting lower bound over
    the lower values, the upper bound the betting upper bound over the upper values. This stays
    valid at ``1 − α``: the long-side capital over the lower values is at most the one over the
    true values (each factor grows with its value), likewise the short side over the upper
    values, and each side spends ``α/2``.

    The estimate is the mean of the observed cases' values (those with lower = upper), ``None``
    if none is observed. The interval reported always contains the estimate and the means of
    the lower and of the upper values: where the paper's set does not (an order with early
    values far from the later ones can leave the sample mean outside it), it is widened to
    them — a superset of a valid interval is valid, so this only adds coverage. With no
    case at all every field is ``None``.

    Example: the same 40 shares, all observed.

    >>> from oloproof.stats import bounded_mean_interval
    >>> shares = [1, 0.5, 1, 1, 0.75, 1, 0.5, 1, 1, 1] * 4
    >>> mean = bounded_mean_interval(shares, shares, 0.95)
    >>> mean.estimate, round(mean.lower, 3), round(mean.upper, 3), mean.method
    (0.875, 0.721, 0.951, 'betting')
    """
    low = _as_rows(lower_values, "lower_values")
    high = _as_rows(upper_values, "upper_values")
    if low.shape[0] != 1 or high.shape[0] != 1:
        raise ValueError("lower_values and upper_values must each be one sequence of numbers")
    return bounded_mean_intervals(low, high, level)[0]


def bounded_mean_intervals(lower_values: npt.ArrayLike, upper_values: npt.ArrayLike,
                           level: float) -> list[MeanInterval]:
    """:func:`bounded_mean_interval` of each row of ``lower_values`` and ``upper_values``
    (rows × n, one sample of n cases each): the same intervals, their bounds searched side by
    side (each row's search is its own: batching saves the search's per-step work, nothing
    else)."""
    low = _as_rows(lower_values, "lower_values")
    high = _as_rows(upper_values, "upper_values")
    for row_low, row_high in zip(low, high, strict=False):
        check_case_bounds(row_low, row_high)
    if low.shape[0] != high.shape[0]:
        raise ValueError("lower_values and upper_values need one row per sample each")
    rows = low.shape[0]
    if low.shape[1] == 0:
        return [MeanInterval(None, None, None, BETTING_METHOD)] * rows
    lows = betting_lower_bounds(np.vstack([low, 1.0 - high]), level)
    found = []
    for row in range(rows):
        row_low, row_high = low[row], high[row]
        observed = row_low == row_high
        estimate = float(row_low[observed].mean()) if observed.any() else None
        lower = min(float(lows[row]), float(row_low.mean()))
        upper = max(1.0 - float(lows[rows + row]), float(row_high.mean()))
        if estimate is not None:
            lower, upper = min(lower, estimate), max(upper, estimate)
        found.append(MeanInterval(estimate, max(0.0, lower), min(1.0, upper), BETTING_METHOD))
    return found
