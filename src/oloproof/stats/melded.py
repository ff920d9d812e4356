"""The difference of two matched proportions with an interval compatible with exact McNemar.

Method: Fay & Lumbard (2021), "Confidence intervals for difference in proportions for matched
pairs compatible with exact McNemar's or sign tests", Stat. Med. 40(5), 1147–1159, which melds
(Fay, Proschan & Brittain, 2015, "Combining one-sample confidence procedures for inference in
the two-sample case", Biometrics 71(1)) two exact one-sample intervals.

Of ``n`` matched pairs of 0/1 values, ``m`` are discordant and ``x`` of those favour the
candidate (fixed: 0 → 1; the other ``m − x`` are broken: 1 → 0). The difference in proportions
is ``Δ = P(fixed) − P(broken) = ψ (2θ − 1)`` with ``ψ`` the chance a pair is discordant and
``θ`` the chance a discordant pair is a fixed one. Each has an exact (Clopper–Pearson) one-sample
procedure, and its confidence distributions are Beta distributions: for the lower bound of
``θ`` from ``x`` of ``m``, ``B_L ~ Beta(x, m − x + 1)``; for ``ψ`` from ``m`` of ``n``,
``T_L ~ Beta(m, n − m + 1)`` and ``T_U ~ Beta(m + 1, n − m)`` (their ``α/2`` and ``1 − α/2``
quantiles are the exact bounds). The melded lower bound for ``Δ`` is the ``α/2`` quantile of
``T (2 B_L − 1)`` with ``T`` and ``B_L`` independent, taking whichever of ``T_L`` and ``T_U``
gives the smaller value (``Δ`` rises with ``ψ`` when ``θ > ½`` and falls when ``θ < ½``). The
upper bound is the lower bound of the mirrored table (fixed and broken swapped), mirrored.

Three properties make it the interval for a candidate against its baseline with one trial:

- it is built on the discordant pairs, so pairs that agree narrow it: with every one of 400
  pairs concordant it is ±0.0092 — the exact bound on the discordant share itself;
- its lower bound is above 0 exactly when the exact (central) McNemar test rejects at ``α``
  (``P(B_L ≤ ½)`` is the exact binomial tail ``P(X ≥ x)``, ``X ~ Binomial(m, ½)``), whatever
  ``n``;
- its coverage is at least nominal — checked exactly, summing over every table, on grids of
  ``(P(broken), P(fixed))`` (``tests/stats/test_stats_melded.py``, ``benchmarks/paired.py``),
  as Fay & Lumbard report it — and its lower bound never rises when a pair's difference falls
  (checked on every table up to 60 pairs), so a missing side resolved the worst way keeps it
  valid.

The quantile is found from the distribution function ``P(T (2B − 1) ≤ d) = E_T[F_B((1 +
d/T)/2)]`` (for ``d < 0``; ``1 − E_T[1 − F_B((1 + d/T)/2)]`` over ``T > d`` for ``d > 0``):
the expectation is integrated in ``t`` from ``|d|`` to 1 by 16-point Gauss–Legendre rules on
pieces cut at fixed quantiles of ``T`` (so each piece holds a smooth part of its density;
about 1e-15 in probability), and the root in ``d`` is found by regula falsi (Illinois) to
2⁻⁴⁰, returned on the side below the root (outward).
"""

from __future__ import annotations

from bisect import bisect_right
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["MELDED_METHOD", "melded_bounds", "melded_lower_bound"]

MELDED_METHOD = "melded_mcnemar"

#: Bracket width at which the root search stops: 2⁻⁴⁰ ≈ 9.1e-13.
BOUND_TOLERANCE = 2.0**-40
#: Quantiles of T at which the integral is cut into pieces (each a 16-point Gauss–Legendre rule).
_CUTS = (1e-13, 1e-9, 1e-6, 1e-4, 1e-3, 0.01, 0.03, 0.1, 0.2, 0.35, 0.5, 0.65, 0.8, 0.9, 0.97,
         0.99, 0.999, 1 - 1e-4, 1 - 1e-6, 1 - 1e-9, 1 - 1e-13)
_NODES = 16

FloatArray = npt.NDArray[np.float64]


@lru_cache(maxsize=1)
def _rule() -> tuple[FloatArray, FloatArray]:
    from numpy.polynomial.legendre import leggauss

    nodes, weights = leggauss(_NODES)
    return nodes, weights


@lru_cache(maxsize=512)
def _pieces(a: int, b: int) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
    """The integral's fixed pieces for ``T ~ Beta(a, b)``: the edges where it is cut (the
    fixed quantiles of Beta(a, b), then 1), and for each piece between two edges its nodes
    ``t``, the density of ``T`` there and its half-width. Only the first piece of an
    integral, from ``|d|`` to the next edge, depends on ``d``; the others are these rows."""
    cuts = np.asarray(_scipy_special().betaincinv(a, b, np.asarray(_CUTS)))
    edges: FloatArray = np.unique(np.concatenate((cuts, [1.0])))
    t, half = _nodes(edges[:-1], edges[1:])
    return edges, t, _density(t, a, b), half


def _nodes(left: FloatArray, right: FloatArray) -> tuple[FloatArray, FloatArray]:
    """The Gauss–Legendre nodes of each piece ``[left, right]`` (a row each), and its
    half-width."""
    nodes, _ = _rule()
    half = (right - left) / 2.0
    t: FloatArray = (left + right)[:, None] / 2.0 + half[:, None] * nodes[None, :]
    return t, half


def _density(t: FloatArray, a: int, b: int) -> FloatArray:
    special = _scipy_special()
    log_density = special.xlogy(a - 1, t) + special.xlog1py(b - 1, -t) - _log_beta(a, b)
    density: FloatArray = np.exp(log_density)
    return density


@lru_cache(maxsize=512)
def _log_beta(a: int, b: int) -> float:
    """``log B(a, b)``, the density's normaliser."""
    return float(_scipy_special().betaln(a, b))


@lru_cache(maxsize=512)
def _lead(a: int, b: int) -> tuple[list[float], FloatArray, FloatArray, FloatArray]:
    """What `_tail` reads for ``T ~ Beta(a, b)``, in one lookup: `_pieces`'s edges as Python
    floats (for `bisect`), and its nodes, densities and half-widths each with one row in
    front (a copy of the first), where a call writes its own first piece.
    A call takes the rows from ``k`` on (the one before the ``k``-th fixed piece, then the
    ``k``-th on), so it builds no table by concatenating."""
    edges, t, density, half = _pieces(a, b)
    return ([float(e) for e in edges], np.concatenate((t[:1], t)),
            np.concatenate((density[:1], density)), np.concatenate((half[:1], half)))


def _tail(d: float, a: int, b: int, x: int, y: int) -> float:
    """For ``T ~ Beta(a, b)``, ``B ~ Beta(x, y)`` independent and ``D = T (2B − 1)``:
    ``P(D ≤ d)`` when ``d < 0``, ``P(D > d)`` when ``d > 0`` (both are 0 below ``T = |d|``).

    The integral's rows are the first piece, ``[|d|, edges[k]]``, then `_pieces`'s fixed rows
    from ``k`` on: each table is `_lead`'s from row ``k`` with its row 0 computed for this
    ``d`` (row by row the same floats as tables built by concatenating)."""
    special = _scipy_special()
    c = abs(d)
    edges, lead_t, lead_density, lead_half = _lead(a, b)
    k = bisect_right(edges, c)  # the first edge above c
    if k == len(edges):
        return 0.0  # nothing of T lies above |d| (|d| ≥ 1)
    # The first piece, [|d|, edges[k]], as `_nodes` makes it (the same arithmetic, on floats).
    nodes, weights = _rule()
    right = edges[k]
    first_half = (right - c) / 2.0
    first_t = (c + right) / 2.0 + first_half * nodes
    # (1 + d/t)/2 clipped to [0, 1], in place: np.minimum(np.maximum((1 + d/t)/2, 0), 1).
    at = np.divide(d, lead_t[k:])
    np.divide(d, first_t, out=at[0])
    at += 1.0
    at /= 2.0
    np.minimum(np.maximum(at, 0.0, out=at), 1.0, out=at)
    # F_B((1 + d/t)/2), or for d > 0 its complement, read from the other tail for accuracy.
    if d < 0:
        share = special.betainc(x, y, at)
    else:
        share = special.betainc(y, x, np.subtract(1.0, at, out=at))
    # Times the density of T.
    share[0] *= _density(first_t, a, b)
    share[1:] *= lead_density[k + 1:]
    half = lead_half[k:].copy()
    half[0] = first_half
    return float(half @ (share @ weights))


def _quantile(p: float, a: int, b: int, x: int, y: int) -> float:
    """The ``p`` quantile of ``T (2B − 1)`` (``T ~ Beta(a, b)``, ``B ~ Beta(x, y)``, all
    parameters ≥ 1), rounded down: the largest ``d`` found with ``P(D ≤ d) ≤ p``."""
    at_zero = float(_scipy_special().betainc(x, y, 0.5))  # P(D ≤ 0) = P(B ≤ ½)

    def excess(d: float) -> float:  # P(D ≤ d) − p: increasing in d
        if d < 0.0:
            return _tail(d, a, b, x, y) - p
        if d == 0.0:
            return at_zero - p
        return 1.0 - _tail(d, a, b, x, y) - p

    if at_zero >= p:
        low, high = -1.0, 0.0
        f_low, f_high = -p, at_zero - p
    else:
        low, high = 0.0, 1.0
        f_low, f_high = at_zero - p, 1.0 - p
    kept = 0  # Illinois: the end kept twice in a row has its value halved
    for _ in range(200):
        if high - low <= BOUND_TOLERANCE:
            break
        probe = (low * f_high - high * f_low) / (f_high - f_low)
        if not low < probe < high:
            probe = 0.5 * (low + high)
        found = excess(probe)
        if found > 0.0:
            high, f_high = probe, found
            if kept == -1:
                f_low /= 2.0
            kept = -1
        else:
            low, f_low = probe, found
            if kept == 1:
                f_high /= 2.0
            kept = 1
    return low


@lru_cache(maxsize=65_536)
def _lower(n: int, m: int, x: int, half_alpha: float) -> float:
    special = _scipy_special()
    if x == 0:
        # Every discordant pair broke: 2B − 1 is −1, and the bound is −(upper bound of ψ).
        return -1.0 if m == n else -float(special.betaincinv(m + 1, n - m, 1.0 - half_alpha))
    bounds = [_quantile(half_alpha, m, n - m + 1, x, m - x + 1)]  # T_L
    if m < n:
        bounds.append(_quantile(half_alpha, m + 1, n - m, x, m - x + 1))  # T_U
    else:  # T_U is 1: the quantile of 2B − 1 itself
        bounds.append(2.0 * float(special.betaincinv(x, m - x + 1, half_alpha)) - 1.0)
    return max(-1.0, min(bounds))


def melded_lower_bound(n: int, discordant: int, favourable: int, level: float) -> float:
    """The lower bound of the difference in proportions ``(favourable − (discordant −
    favourable)) / n`` of ``n`` matched pairs of 0/1 values, at two-sided ``level``.

    Method: Fay & Lumbard (2021), the melded interval compatible with exact McNemar (see the
    module's text): the ``α/2`` quantile of ``T (2 B_L − 1)``, ``B_L ~ Beta(x, m − x + 1)``,
    the smaller over ``T ~ Beta(m, n − m + 1)`` and ``Beta(m + 1, n − m)``; with no favourable
    pair it is minus the exact upper bound of ``m`` of ``n`` (``−(1 − (α/2)^{1/n})`` with no
    discordant pair). ``α`` comes exactly from the level's decimal text; the bound is accurate
    to about 1e-12 and rounded down. With ``n = 0`` nothing is known: −1.
    """
    n = count("n", n)
    m = count("discordant", discordant)
    x = count("favourable", favourable)
    if m > n or x > m:
        raise ValueError(f"need favourable ≤ discordant ≤ n (got {x}, {m}, {n})")
    _, half_alpha, _ = tail_probabilities(level)
    if n == 0:
        return -1.0
    return _lower(n, m, x, half_alpha)


def melded_bounds(n: int, broken: int, fixed: int, level: float) -> tuple[float, float]:
    """The melded interval ``(L, U)`` for ``P(fixed) − P(broken)`` over ``n`` matched pairs of
    0/1 values of which ``broken`` went 1 → 0 and ``fixed`` 0 → 1 (Fay & Lumbard 2021; see
    :func:`melded_lower_bound`). ``U`` is minus the lower bound with fixed and broken swapped,
    so swapping them turns the interval around zero exactly.

    Example: 40 matched pairs, 2 broken and 9 fixed.

    >>> from oloproof.stats import melded_bounds
    >>> lower, upper = melded_bounds(40, 2, 9, 0.95)
    >>> round(lower, 3), round(upper, 3)
    (-0.01, 0.352)
    """
    m = count("broken", broken) + count("fixed", fixed)
    return (melded_lower_bound(n, m, fixed, level), -melded_lower_bound(n, m, broken, level))
