"""The interval for the mean of values in [0, 1]: the binomial bound extended by convex order.

Method: Hoeffding (1963), "Probability inequalities for sums of bounded random variables",
JASA 58(301), and Bentkus (2004), "On Hoeffding's inequalities", Ann. Probab.
32(2). For independent values ``X_1 … X_n`` in [0, 1] whose means average ``m``, with
``S = Σ X_i`` and ``B ~ Binomial(n, m)``, every convex ``f`` has ``E f(S) ≤ E f(B)`` (of all
values in [0, 1] with a given mean, 0/1 values are the most spread); with ``f(x) = (x − h)₊``
and Markov's inequality,

    P(S ≥ s) ≤ β(m, s) = inf_{h < s} E(B − h)₊ / (s − h).

``m`` is rejected as too small for an observed sum ``s`` when ``β(m, s) ≤ α/2``; the lower
bound is the smallest ``m`` not rejected, and the upper bound the same on the mirrored values
``1 − x``. Each side spends ``α/2``, so the interval holds at ``1 − α`` for every ``n``,
whatever the values' distribution (cases need not share one: the bound is on the average of
their means). It depends on the values only through their sum, so it is deterministic and
independent of their order. It equals Clopper–Pearson when every value is 1 (``β = m^n``,
so the lower bound is ``(α/2)^{1/n}``) or every value is 0, and on 0/1 values it is a little
wider in between (at most 0.0165 at ``n = 40``, 0.008 at ``n = 400``; `benchmarks/betting.py`).

Computation. ``E(B − h)₊`` is piecewise linear and convex in ``h`` with kinks at the integers,
so the ratio is monotone between integers and the infimum is attained at an integer
``j < s`` (or is 1, as ``h → −∞``): ``β = min(1, min_j E(B − j)₊ / (s − j))`` with
``E(B − j)₊ = Σ_{b > j} P(B ≥ b)``, two reverse cumulative sums of the binomial
probabilities (no cancellation). Only the binomial's bulk is summed: ``b`` within
``nm ± t`` where Bernstein's inequality puts less than ``e⁻⁵⁰`` beyond; the mass left out
is added back as ``n·e⁻⁵⁰`` to every ``E(B − j)₊`` and ``j`` below the window is not tried,
so the computed ``β`` is never below the true one (the interval can only widen, by about
1e-20). ``β`` is nondecreasing in ``m`` (``B`` grows stochastically with ``m``), so the lower
bound is a root of ``log β(m, s) − log(α/2)``, found by a bracketed search (regula falsi with
the Anderson–Björck correction) to 2⁻⁴⁰ and reported on the rejected side: outward, never
inward. Everything is vectorised with NumPy over rows of sums (which the simulations use).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special
from oloproof.stats._roots import increasing_root
from oloproof.stats._values import check_case_bounds
from oloproof.stats.betting import MeanInterval
from oloproof.stats.binomial import clopper_pearson

__all__ = [
    "BENTKUS_METHOD",
    "bentkus_bounds",
    "bentkus_critical_sum",
    "bentkus_interval",
    "bentkus_lower_bounds",
    "bentkus_tail_bound",
    "bentkus_tail_bounds",
]

BENTKUS_METHOD = "bentkus"

# Bracket width at which the root search stops: 2⁻⁴⁰ ≈ 9.1e-13.
BOUND_TOLERANCE = 2.0**-40
# The binomial's mass outside the window summed is below e^-TAIL_EXPONENT.
TAIL_EXPONENT = 50.0
# Where log β is clipped below, so the root search's interpolation stays finite.
LOG_FLOOR = -200.0
# Rows × window cells evaluated at once.
_CHUNK = 1 << 20

FloatArray = npt.NDArray[np.float64]


def _log_choose(n: int, lo: int, hi: int) -> FloatArray:
    """``log C(n, b)`` for b = lo … hi, as ``−log(n + 1) − log B(b + 1, n − b + 1)`` (the
    beta function's logarithm keeps its precision where three log-gammas of n ≈ 10⁹ would
    cancel), computed for the window only: a plan may ask about a billion cases. Up to
    `_WHOLE_TABLE` cases the whole row ``b = 0 … n`` is computed once and sliced: each entry
    is computed alone, so a slice of it is the same floats as the window computed anew."""
    if n <= _WHOLE_TABLE:
        table: FloatArray = _whole_log_choose(n)[lo:hi + 1]
        return table
    return _window_log_choose(n, lo, hi)


#: The largest ``n`` whose whole row of ``log C(n, b)`` is kept (80 kB).
_WHOLE_TABLE = 10_000


@lru_cache(maxsize=32)
def _whole_log_choose(n: int) -> FloatArray:
    table = _window_log_choose(n, 0, n)
    table.flags.writeable = False  # shared by every call with this n
    return table


def _window_log_choose(n: int, lo: int, hi: int) -> FloatArray:
    betaln = _scipy_special().betaln
    b = np.arange(lo, hi + 1, dtype=np.float64)
    table: FloatArray = -math.log1p(n) - betaln(b + 1.0, n - b + 1.0)
    return table


def _window(n: int, m: FloatArray) -> tuple[int, int]:
    """The range of ``b`` outside which ``Binomial(n, m)`` has less than ``e^-50`` on each
    side, for every row's ``m`` (Bernstein: ``P(|B − nm| ≥ t) ≤ 2 exp(−t²/(2(σ² + t/3)))``)."""
    e = TAIL_EXPONENT
    nm = n * m
    var = nm * (1.0 - m)
    t = e / 3.0 + np.sqrt((e / 3.0) ** 2 + 2.0 * e * var) + 1.0
    # (np.minimum.reduce is np.min without its wrapper, which costs more than 2 rows' work.)
    lo = int(max(0.0, math.floor(float(np.minimum.reduce(nm - t)))))
    hi = int(min(float(n), math.ceil(float(np.maximum.reduce(nm + t)))))
    return lo, max(lo, hi)


def log_beta(s: FloatArray, n: int, m: FloatArray) -> FloatArray:
    """``log β(m, s)`` per row (see the module docstring), never below the true value.

    Rows with ``m ≤ 0`` (``β = 0`` when ``s > 0``), ``m ≥ 1`` or ``s ≤ nm`` (``β = 1``) are
    answered directly; the others from the binomial's bulk.
    """
    out = np.zeros(s.shape, dtype=np.float64)  # log 1
    zero = m <= 0.0
    out[zero & (s > 0.0)] = -np.inf
    work = ~zero & (m < 1.0) & (s > n * m)
    if not work.any():
        return out
    sw, mw = s[work], m[work]
    lo, hi = _window(n, mw)
    b = np.arange(lo, hi + 1, dtype=np.float64)
    # The tables are rows × window: each step writes into the one before where it can.
    pmf = b[None, :] * np.log(mw)[:, None]
    np.add(_log_choose(n, lo, hi)[None, :], pmf, out=pmf)
    excess = np.multiply((n - b)[None, :], np.log1p(-mw)[:, None])
    pmf += excess
    np.exp(pmf, out=pmf)
    # P(B ≥ b) within the window (summed in place, from the top), then
    # E(B − j)₊ = Σ_{b > j} P(B ≥ b), in the table the last step left free.
    at_least = np.cumsum(pmf[:, ::-1], axis=1, out=pmf[:, ::-1])[:, ::-1]
    excess[:, -1] = 0.0
    np.cumsum(at_least[:, :0:-1], axis=1, out=excess[:, -2::-1])
    excess += n * math.exp(-TAIL_EXPONENT)  # the mass left out, added back
    gap = sw[:, None] - b[None, :]
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.divide(excess, gap, out=excess)
    ratio[gap <= 0.0] = np.inf
    best = np.minimum(np.minimum.reduce(ratio, axis=1), 1.0)
    out[work] = np.log(best)
    return out


def _sums(sums: npt.ArrayLike, n: int) -> FloatArray:
    s = np.atleast_1d(np.asarray(sums, dtype=np.float64))
    if s.ndim != 1:
        raise ValueError("sums must be a number or a sequence of numbers")
    if not np.all(np.isfinite(s)) or np.any(s < 0.0) or np.any(s > n * (1.0 + 1e-12)):
        raise ValueError(f"sums must be numbers in [0, n] (n = {n})")
    clipped: FloatArray = np.minimum(s, float(n))
    return clipped


def bentkus_tail_bound(sums: npt.ArrayLike, n: int, mean: float) -> FloatArray:
    """``β(m, s) = inf_{h<s} E(B − h)₊ / (s − h)``, ``B ~ Binomial(n, m)``, for each sum ``s``.

    Method: Hoeffding (1963) / Bentkus (2004) (module docstring): a bound on ``P(S ≥ s)`` for a
    sum ``S`` of ``n`` independent values in [0, 1] whose means average ``m``. Computed from
    the binomial's bulk and never below the true value (by at most about ``n·e⁻⁵⁰``).
    """
    n = count("n", n)
    if not 0.0 <= float(mean) <= 1.0:
        raise ValueError(f"mean must be a number in [0, 1], got {mean!r}")
    s = _sums(sums, n)
    bound: FloatArray = np.exp(log_beta(s, n, np.full(s.shape, float(mean))))
    return bound


def bentkus_tail_bounds(total: float, n: int, means: npt.ArrayLike) -> FloatArray:
    """``min(1, β(m, s))`` for one sum ``s = total`` of ``n`` values at each mean ``m`` of
    ``means``: a valid p-value of ``s`` against each mean (``P(S ≥ s) ≤ β`` whatever the
    values' distribution), never below the true ``β``. Method as :func:`bentkus_tail_bound`."""
    n = count("n", n)
    m = np.clip(np.atleast_1d(np.asarray(means, dtype=np.float64)), 0.0, 1.0)
    s = np.full(m.shape, float(_sums([total], n)[0]))
    bound: FloatArray = np.exp(log_beta(s, n, m))
    return bound


def bentkus_lower_bounds(sums: npt.ArrayLike, n: int, level: float) -> FloatArray:
    """The lower bound of the mean for each sum ``s`` of ``n`` values in [0, 1].

    Method: Hoeffding (1963) / Bentkus (2004), see the module docstring: the smallest ``m``
    with ``β(m, s) > α/2``, to about 1e-12 and rounded down; ``α`` exact from the level's
    decimal text. ``s = 0`` gives 0 and ``s = n`` gives Clopper–Pearson's ``(α/2)^{1/n}``
    (exactly :func:`~oloproof.stats.binomial.clopper_pearson`'s figure). With ``n = 0`` every
    bound is 0. Returns one float per sum.

    Example: sums of 33 and 40 over 40 values.

    >>> from oloproof.stats import bentkus_lower_bounds
    >>> [round(b, 3) for b in bentkus_lower_bounds([33, 40], 40, 0.95).tolist()]
    [0.659, 0.912]
    """
    n = count("n", n)
    _, half_alpha, _ = tail_probabilities(level)
    s = _sums(sums, n)
    result = np.zeros(s.shape, dtype=np.float64)
    if n == 0:
        return result
    full = s >= n
    if full.any():
        result[full] = clopper_pearson(n, n, level)[0]
    work = (s > 0.0) & ~full
    if not work.any():
        return result
    # Only the sum counts: each distinct sum is solved once, in chunks that keep the
    # binomial tables (rows × window) to a few megabytes.
    distinct, where = np.unique(s[work], return_inverse=True)
    bounds = np.empty(distinct.shape)
    for chunk in _chunks(distinct, n):
        bounds[chunk] = _lower_ends(distinct[chunk], n, half_alpha)
    result[work] = bounds[where.reshape(-1)]
    return result


def _chunks(sums: FloatArray, n: int) -> list[slice]:
    """Runs of the sorted ``sums`` solved together: close enough that one window of the
    binomial serves them all (a window follows ``m``, which stays near ``s/n``; up to a few
    thousand values wide, one wide window costs less than a second search's NumPy calls), and
    few enough that the tables stay small."""
    rows = max(1, _CHUNK // (n + 1))
    spread = max(20.0 * math.sqrt(n) + 100.0, 4096.0)
    out: list[slice] = []
    start = 0
    for i in range(1, sums.size + 1):
        if i == sums.size or i - start >= rows or sums[i] - sums[start] > spread:
            out.append(slice(start, i))
            start = i
    return out


def _lower_ends(sw: FloatArray, n: int, half_alpha: float) -> FloatArray:
    """The lower bound for each sum in ``sw`` (all in (0, n)), rounded down."""
    log_half = math.log(half_alpha)

    def g(m: FloatArray, rows: npt.NDArray[np.bool_]) -> FloatArray:
        # Nondecreasing in m; ≤ 0 where m is rejected (β ≤ α/2).
        return np.maximum(log_beta(sw[rows], n, m), LOG_FLOOR) - log_half

    # At m = 0 every positive sum is rejected; at m = s/n, β = 1 (E(B − h)₊ ≥ nm − h).
    a = np.zeros(sw.shape)
    b = sw / n
    ga = np.full(sw.shape, LOG_FLOOR - log_half)
    gb = np.full(sw.shape, -log_half)
    # Start from a bracket around the usual place of the bound: Clopper–Pearson's beta form at
    # α/2 and at α/(2e) (Bentkus: β is at most e times the binomial's interpolated tail).
    betaincinv = _scipy_special().betaincinv
    guesses = [np.asarray(betaincinv(sw, n - sw + 1.0, tail), dtype=np.float64)
               for tail in (half_alpha, half_alpha / math.e)]
    a, _ = increasing_root(g, a, b, ga, gb, BOUND_TOLERANCE, guesses)
    return a


def bentkus_critical_sum(n: int, mean: float, level: float) -> float:
    """The smallest sum ``s`` of ``n`` values in [0, 1] at which the mean ``m`` is rejected as
    too small (``β(m, s) ≤ α/2``; ``inf`` when no sum up to ``n`` is).

    Method: Hoeffding (1963) / Bentkus (2004), module docstring; ``β`` is nonincreasing in
    ``s``, so the sums rejected are ``[s*, n]``: a bracketed search to 2⁻⁴⁰·n, reported on
    the rejected side (a sum at or above the figure returned is rejected).
    """
    n = count("n", n)
    _, half_alpha, _ = tail_probabilities(level)
    m = float(mean)
    if not 0.0 <= m <= 1.0:
        raise ValueError(f"mean must be a number in [0, 1], got {mean!r}")
    if n == 0 or m >= 1.0:
        return math.inf
    if m <= 0.0:
        return 0.0 if half_alpha < 1.0 else math.inf
    return _critical_sum(n, m, half_alpha)


@lru_cache(maxsize=1024)
def _critical_sum(n: int, m: float, half_alpha: float) -> float:
    """`bentkus_critical_sum` past its checks, kept per ``(n, m, α/2)``: a pure function of
    them that a clustered quantile asks for twice a call, and a report or a simulation with
    the same number of clusters asks for again (each search is a few dozen binomial tables)."""
    log_half = math.log(half_alpha)
    means = np.full(1, m)

    def g(s: FloatArray, rows: npt.NDArray[np.bool_]) -> FloatArray:
        # Nondecreasing in s; > 0 where s is rejected.
        return log_half - np.maximum(log_beta(s, n, means[rows]), LOG_FLOOR)

    top = g(np.full(1, float(n)), np.ones(1, dtype=bool))
    if top[0] <= 0.0:
        return math.inf
    a = np.full(1, n * m)
    _, b = increasing_root(g, a, np.full(1, float(n)), g(a, np.ones(1, dtype=bool)), top,
                           BOUND_TOLERANCE * n)
    return float(b[0])


def bentkus_bounds(values: Sequence[float] | npt.ArrayLike, level: float) -> tuple[float, float]:
    """The interval ``(L, U)`` for the mean of ``values`` in [0, 1] (any order: only their sum
    counts). Method: Hoeffding (1963) / Bentkus (2004), each side at ``α/2``: ``L`` from the
    sum, ``U`` as one minus the lower bound of the mirrored values ``1 − x``. With no values it
    returns ``(0.0, 1.0)``.

    Example: 33 ones and 7 zeros (the Clopper–Pearson interval of the same counts is
    [0.672, 0.927]).

    >>> from oloproof.stats import bentkus_bounds
    >>> lower, upper = bentkus_bounds([1] * 33 + [0] * 7, 0.95)
    >>> round(lower, 3), round(upper, 3)
    (0.659, 0.931)
    """
    x = _values(values, "values")
    n = int(x.size)
    if n == 0:
        return (0.0, 1.0)
    total = _sum(x)
    lows = bentkus_lower_bounds([total, n - total], n, level)
    upper = clopper_pearson(0, n, level)[1] if total <= 0.0 else 1.0 - float(lows[1])
    return (float(lows[0]), upper)


def _sum(values: FloatArray) -> float:
    """The sum of ``values`` taken in sorted order: the same float whatever order they came
    in (a sum in arrival order can differ in its last bits)."""
    return float(np.sort(values).sum())


def _values(values: Sequence[float] | npt.ArrayLike, name: str) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be a sequence of numbers")
    if not np.all(np.isfinite(array)) or np.any(array < 0.0) or np.any(array > 1.0):
        raise ValueError(f"{name} must be numbers in [0, 1]")
    return array


def bentkus_interval(
    lower_values: Sequence[float] | npt.ArrayLike,
    upper_values: Sequence[float] | npt.ArrayLike,
    level: float,
) -> MeanInterval:
    """Mean of per-case (or per-cluster) values in [0, 1] with its interval, missing values
    bounded (``method: "bentkus"``).

    ``lower_values[i] ≤ upper_values[i]`` are the smallest and largest value case ``i`` could
    have (equal when it is observed; 0 and 1 for a case with nothing known), in any order.
    Method: Hoeffding (1963) / Bentkus (2004) (module docstring), with the missingness bounds
    of docs/reliability.md: the lower bound is the lower bound over the lower values, the
    upper bound the upper bound over the upper values. This stays valid at ``1 − α``: the sum
    of the lower values is at most the true sum, so rejecting on it rejects no more often,
    likewise the upper side, and each side spends ``α/2``. Every case passing gives exactly
    the Clopper–Pearson interval of n of n, every case failing that of 0 of n.

    The estimate is the mean of the observed values (those with lower = upper), ``None`` if
    none is observed; the interval always contains it (widened to it where the missing cases'
    bounds would leave it out: a superset of a valid interval is valid). Sums are taken in
    sorted order, so the figures do not depend on the values' order even in the last bit.
    With no case at all every field is ``None``.

    Example: the 40 values above and one case more with nothing known (0 to 1).

    >>> from oloproof.stats import bentkus_interval
    >>> lows, highs = [1] * 33 + [0] * 7 + [0], [1] * 33 + [0] * 7 + [1]
    >>> mean = bentkus_interval(lows, highs, 0.95)
    >>> mean.estimate, round(mean.lower, 3), round(mean.upper, 3), mean.method
    (0.825, 0.637, 0.933, 'bentkus')
    """
    low = _values(lower_values, "lower_values")
    high = _values(upper_values, "upper_values")
    check_case_bounds(low, high)
    n = int(low.size)
    if n == 0:
        return MeanInterval(None, None, None, BENTKUS_METHOD)
    observed = low == high
    everything = bool(observed.all())
    low_sum = _sum(low)
    high_sum = low_sum if everything else _sum(high)
    if everything:
        estimate: float | None = low_sum / n
    else:
        estimate = _sum(low[observed]) / int(observed.sum()) if observed.any() else None
    lows = bentkus_lower_bounds([low_sum, n - high_sum], n, level)
    lower = float(lows[0])
    upper = clopper_pearson(0, n, level)[1] if high_sum <= 0.0 else 1.0 - float(lows[1])
    if estimate is not None:
        lower, upper = min(lower, estimate), max(upper, estimate)
    return MeanInterval(estimate, max(0.0, lower), min(1.0, upper), BENTKUS_METHOD)
