"""The critical value of a positive-part inverse-normal sum: the largest ``1 − a`` quantile of
``Σ w_s max(0, Z_s)`` for three independent standard normals over every unit weight vector
``w``, computed by quadrature; what the judge-based interval of a judged rate compares its
combined evidence with (`stats.verdict_strata`,
docs/judges.md#the-corrected-interval-in-a-users-words)."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._lazy import scipy_special
from oloproof.stats._roots import increasing_root

__all__ = ["critical_value", "positive_tail_chances", "worst_weights"]

FloatArray = npt.NDArray[np.float64]

_NODES = 48


@lru_cache(maxsize=1)
def _rule() -> tuple[FloatArray, FloatArray]:
    from numpy.polynomial.legendre import leggauss

    nodes, weights = leggauss(_NODES)
    return nodes, weights


_ROOT_TWO_PI = math.sqrt(2.0 * math.pi)
# Rows of the quadrature done at once: a block's few arrays stay in the processor's cache.
_BLOCK = 256


def _phi(x: FloatArray, out: FloatArray | None = None) -> FloatArray:
    """The standard normal density at ``x``, into ``out`` if given (not ``x`` itself)."""
    y: FloatArray = np.multiply(x, -0.5, out=out)
    y *= x
    np.exp(y, out=y)
    y /= _ROOT_TWO_PI
    return y


def _pair_tail(t: FloatArray, a: FloatArray, b: FloatArray) -> FloatArray:
    """``P(X > 0, Y > 0, aX + bY ≥ t)`` for independent standard normals, elementwise over
    arrays of one shape (``a``, ``b`` > 0): ``∫₀^{t/a} φ(x) Φ̄((t − ax)/b) dx + ½ Φ̄(t/a)``,
    by a Gauss–Legendre rule (beyond ``x = 9`` the normal density is below 1e-17)."""
    ndtr = scipy_special().ndtr
    nodes, weights = _rule()
    t, a, b = np.broadcast_arrays(t, a, b)
    out = np.full(t.shape, 0.25)
    positive = t > 0.0
    every = bool(positive.all())
    if every:
        tt, aa, bb = t.reshape(-1, 1), a.reshape(-1, 1), b.reshape(-1, 1)
    elif positive.any():
        tt, aa, bb = t[positive][:, None], a[positive][:, None], b[positive][:, None]
    else:
        return out
    top = np.minimum(tt / aa, 9.0)
    half = top / 2.0
    ends = 0.5 * ndtr(-tt[:, 0] / aa[:, 0])
    shifted = nodes + 1.0
    sums = np.empty(len(tt))
    rows = min(len(tt), _BLOCK)
    x, y, z = (np.empty((rows, len(nodes))) for _ in range(3))
    # A block of rows at a time, into the same three arrays: each row's sum is its own, so the
    # floats are those of all rows at once.
    for start in range(0, len(tt), _BLOCK):
        block = slice(start, start + _BLOCK)
        n = len(tt[block])
        xb, yb, zb = x[:n], y[:n], z[:n]
        np.multiply(half[block], shifted, out=xb)
        # Φ̄((t − ax)/b) as Φ((ax − t)/b): the same floats, as negation is exact.
        np.multiply(aa[block], xb, out=zb)
        zb -= tt[block]
        zb /= bb[block]
        ndtr(zb, out=zb)
        zb *= _phi(xb, out=yb)
        zb *= weights
        zb.sum(axis=-1, out=sums[block])
    if every:
        whole: FloatArray = (half[:, 0] * sums + ends).reshape(t.shape)
        return whole
    out[positive] = half[:, 0] * sums + ends
    return out


def positive_tail_chances(c: float, w: FloatArray) -> FloatArray:
    """``P(Σ w_s max(0, Z_s) ≥ c)`` for three independent standard normals and each row of
    positive weights ``w`` (k × 3), ``c > 0``: summed over which ``Z_s`` are positive (each
    pattern has chance 1/8; the sum is over the positive ones, half-normal)."""
    ndtr = scipy_special().ndtr
    nodes, weights = _rule()
    w1, w2, w3 = w[:, 0], w[:, 1], w[:, 2]
    first = ndtr(-c / w1)
    single = 0.25 * (first + ndtr(-c / w2) + ndtr(-c / w3))
    # The three pairs' tails in one call (each element's tail is its own).
    pair = _pair_tail(np.full((3,) + w1.shape, c), np.stack([w1, w1, w2]), np.stack([w2, w3, w3]))
    pairs = 0.5 * (pair[0] + pair[1] + pair[2])
    top = np.minimum(c / w1, 9.0)[:, None]
    x = top / 2.0 * (nodes + 1.0)
    inner = _pair_tail(c - w1[:, None] * x, w2[:, None], w3[:, None])
    triple = top[:, 0] / 2.0 * (weights * _phi(x) * inner).sum(axis=1) + 0.25 * first
    out: FloatArray = single + pairs + triple
    return out


_FLOOR = 1e-6  # the least weight tried: one below it moves the sum by less than 1e-5


def _units(t1: FloatArray, t2: FloatArray) -> FloatArray:
    t1 = np.clip(t1, _FLOOR, math.pi / 2 - _FLOOR)
    t2 = np.clip(t2, _FLOOR, math.pi / 2 - _FLOOR)
    out: FloatArray = np.stack([np.cos(t1), np.sin(t1) * np.cos(t2), np.sin(t1) * np.sin(t2)],
                               axis=-1)
    return out


def worst_weights(c: float) -> tuple[FloatArray, float]:
    """The unit weights (in the positive octant) with the largest tail at ``c``: a grid of
    angles, then three rounds of a finer grid around the largest."""
    centre, half = np.array([math.pi / 4, math.pi / 4]), math.pi / 4
    best_w, best = _units(np.array([centre[0]]), np.array([centre[1]]))[0], 0.0
    for _ in range(7):
        steps = np.linspace(-half, half, 9)
        t1, t2 = np.meshgrid(centre[0] + steps, centre[1] + steps, indexing="ij")
        w = _units(t1.ravel(), t2.ravel())
        tails = positive_tail_chances(c, w)
        i = int(np.argmax(tails))
        if tails[i] > best:
            best, best_w = float(tails[i]), w[i]
        centre = np.array([t1.ravel()[i], t2.ravel()[i]])
        half /= 3.0
    return best_w, best


@lru_cache(maxsize=64)
def critical_value(error: float) -> float:
    """The least ``c`` (to about 1e-9) with ``P(Σ w_s max(0, Z_s) ≥ c) ≤ error`` for every
    unit weight vector ``w ≥ 0`` of three: the weights with the largest tail at ``c`` are found
    (``worst_weights``; a grid of 25 × 25 angles checks them), ``c`` is solved for them at a
    thousandth below ``error`` (a margin for the search's error), and the two alternate until
    ``c`` settles."""
    target = error * (1.0 - 1e-3)
    c = -float(scipy_special().ndtri(error))
    t1, t2 = np.meshgrid(np.linspace(0.0, math.pi / 2, 25), np.linspace(0.0, math.pi / 2, 25))
    check = _units(t1.ravel(), t2.ravel())
    for _ in range(20):
        w, tail = worst_weights(c)
        if abs(tail - target) <= 1e-6 * target:
            tails = positive_tail_chances(c, check)
            if float(tails.max()) <= tail:
                break
            w = check[int(np.argmax(tails))]
        c = _solve(w, target, c)
    return c


def _solve(w: FloatArray, target: float, start: float) -> float:
    """The ``c`` at which the tail for weights ``w`` is ``target`` (to 1e-12, the side where
    it is below)."""
    row = np.ones(1, dtype=bool)

    def g(x: FloatArray, rows: npt.NDArray[np.bool_]) -> FloatArray:
        del rows  # one row
        out: FloatArray = target - positive_tail_chances(float(x[0]), w[None, :])
        return out

    a, b = np.array([0.5 * start]), np.array([2.0 * start + 1.0])
    _, high = increasing_root(g, a, b, g(a, row), g(b, row), 1e-12)
    return float(high[0])
