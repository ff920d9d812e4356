"""One side of the judge-based interval of a judged rate: the least (or greatest) rate
``π q₁ + (1 − π) q₀`` over the ``θ = (π, q₁, q₀)`` that three exact one-sided tests, combined by
a positive-part weighted inverse-normal sum, keep, found by branch and bound on a grid. The
construction and why it holds its level are in `stats.verdict_strata`'s text
(docs/judges.md#the-corrected-interval-in-a-users-words)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import tail_probabilities
from oloproof.stats._lazy import scipy_special
from oloproof.stats.bentkus import bentkus_lower_bounds
from oloproof.stats.positive_part import critical_value

__all__ = ["stratified_bounds"]

#: Share of each side's error spent on the two-sided scores' χ²₃ bound.
_BALL_SHARE = 0.05
#: Grid intervals per parameter in the branch-and-bound search (its spacing bounds how far
#: below the set's least value the bound returned can be: about 2e-4 with 30 labels, 5e-5
#: with 400).
_GRID = 4096
#: Regularisation of the weights' variances (``θ(1 − θ) + κ/size``), so no weight vanishes.
_KAPPA = 1.0
#: Boxes split per round of the search, and the rounds allowed before it returns what it has.
_SPLIT = 2048
_ROUNDS = 400
#: The search stops when its certified bound is this close to a point known to be in the set.
_TOLERANCE = 1e-6
#: Where the positive-part scores are capped (far beyond any critical value): a cap only lowers
#: a score, so only keeps more of θ.
_SCORE_CAP = 40.0

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]


@dataclass(frozen=True)
class _Stratum:
    size: int  # sampled cases in the stratum (labelled or not)
    low: float  # sum of the lowest possible person values (unlabelled: 0)
    high: float  # sum of the highest possible person values (unlabelled: 1)


def _tail_up(x: float, size: int, theta: FloatArray, binary: bool) -> FloatArray:
    """A valid p-value of ``x`` (a sum over ``size`` cases) against means above ``theta``:
    ``P_θ(X ≥ x)`` (exact binomial) or the Bentkus bound on it."""
    if size == 0 or x <= 0.0:
        return np.ones(theta.shape)
    if binary:
        out: FloatArray = scipy_special().betainc(x, size - x + 1.0, theta)
        return out
    from oloproof.stats.bentkus import bentkus_tail_bounds

    return bentkus_tail_bounds(x, size, theta)


def _tail_down(x: float, size: int, theta: FloatArray, binary: bool) -> FloatArray:
    """The same against means below ``theta``: ``P_θ(X ≤ x)`` or its bound (mirrored)."""
    if size == 0 or x >= size:
        return np.ones(theta.shape)
    return _tail_up(size - x, size, 1.0 - theta, binary)


def _score(p: FloatArray) -> FloatArray:
    """``max(0, Φ⁻¹(1 − p))``, capped."""
    with np.errstate(divide="ignore"):
        z = -scipy_special().ndtri(np.clip(p, 0.0, 1.0))
    out: FloatArray = np.clip(z, 0.0, _SCORE_CAP)
    return out


def _span(x_low: float, x_high: float, size: int, tail: float, binary: bool
          ) -> tuple[float, float]:
    """The means not ruled out by one one-sided test at error ``tail`` on each side."""
    if size == 0:
        return 0.0, 1.0
    if binary:
        betaincinv = scipy_special().betaincinv
        low = 0.0 if x_low <= 0 else float(betaincinv(x_low, size - x_low + 1.0, tail))
        high = 1.0 if x_high >= size else float(betaincinv(x_high + 1.0, size - x_high,
                                                            1.0 - tail))
        return low, high
    level = 1.0 - 2.0 * tail
    low = float(bentkus_lower_bounds([x_low], size, level)[0])
    high = 1.0 - float(bentkus_lower_bounds([size - x_high], size, level)[0])
    return low, high


def _root_range(lo: FloatArray, hi: FloatArray) -> tuple[FloatArray, FloatArray]:
    """Least and greatest ``√(t(1 − t))`` over ``[lo, hi]``."""
    f_lo = np.sqrt(np.clip(lo * (1.0 - lo), 0.0, None))
    f_hi = np.sqrt(np.clip(hi * (1.0 - hi), 0.0, None))
    least = np.minimum(f_lo, f_hi)
    most = np.where((lo <= 0.5) & (hi >= 0.5), 0.5, np.maximum(f_lo, f_hi))
    return least, most


def _estimand(p: FloatArray, a1: FloatArray, a0: FloatArray) -> FloatArray:
    out: FloatArray = a0 + p * (a1 - a0)
    return out


class _Side:
    """One side's search (module docstring): the data, the critical values, and the score
    tables on a grid of points per parameter (π, q₁, q₀)."""

    def __init__(self, passed: int, cases: int, one: _Stratum, zero: _Stratum, error: float,
                 binary: bool) -> None:
        special = scipy_special()
        ball_error = error * _BALL_SHARE
        self.c = critical_value(error - ball_error)
        self.chi2 = float(2.0 * special.gammainccinv(1.5, ball_error))
        # A point whose score alone passes √χ² is rejected: the grids need go no further.
        self.edge = float(special.ndtr(-math.sqrt(self.chi2)))
        self.passed, self.cases, self.one, self.zero, self.binary = (passed, cases, one, zero,
                                                                     binary)
        sampled = max(one.size + zero.size, 1)
        self.kappa_pi = _KAPPA / cases
        self.kappa_q = _KAPPA / sampled
        self.n = float(sampled)

    def spans(self) -> list[tuple[float, float]]:
        """Each parameter's values not rejected by its own two-sided score alone."""
        return [_span(self.passed, self.passed, self.cases, self.edge, True),
                _span(self.one.low, self.one.high, self.one.size, self.edge, self.binary),
                _span(self.zero.low, self.zero.high, self.zero.size, self.edge, self.binary)]

    def tables(self, spans: list[tuple[float, float]]) -> None:
        """The grids over ``spans`` and the one-sided scores on them: "up" is evidence the mean
        is above the point (what a lower bound tests), "down" below it. The up-scores read the
        sums with every unlabelled case a fail, the down-scores with every one a pass: the
        least each could be, so no resolution of the missing labels keeps a point this
        rejects."""
        grids = []
        for low, high in spans:
            if high - low < 1e-12:
                high, low = min(1.0, low + 1e-12), max(0.0, min(1.0, low + 1e-12) - 1e-12)
            grids.append(np.linspace(low, high, _GRID + 1))
        self.pi, self.q1, self.q0 = grids
        one, zero, binary = self.one, self.zero, self.binary
        self.pi_up = _score(_tail_up(self.passed, self.cases, self.pi, True))
        self.pi_down = _score(_tail_down(self.passed, self.cases, self.pi, True))
        self.q1_up = _score(_tail_up(one.low, one.size, self.q1, binary))
        self.q1_down = _score(_tail_down(one.high, one.size, self.q1, binary))
        self.q0_up = _score(_tail_up(zero.low, zero.size, self.q0, binary))
        self.q0_down = _score(_tail_down(zero.high, zero.size, self.q0, binary))

    def kept(self, ip: IntArray, i1: IntArray, i0: IntArray) -> npt.NDArray[np.bool_]:
        """Whether grid points are not rejected."""
        p, a1, a0 = self.pi[ip], self.q1[i1], self.q0[i0]
        v_pi = (a1 - a0) ** 2 * (p * (1.0 - p) + self.kappa_pi) / self.cases
        v_1 = p * (a1 * (1.0 - a1) + self.kappa_q) / self.n
        v_0 = (1.0 - p) * (a0 * (1.0 - a0) + self.kappa_q) / self.n
        total = v_pi + v_1 + v_0
        z_pi = np.where(a1 >= a0, self.pi_up[ip], self.pi_down[ip])
        s = (np.sqrt(v_pi / total) * z_pi + np.sqrt(v_1 / total) * self.q1_up[i1]
             + np.sqrt(v_0 / total) * self.q0_up[i0])
        ball = (np.maximum(self.pi_up[ip], self.pi_down[ip]) ** 2
                + np.maximum(self.q1_up[i1], self.q1_down[i1]) ** 2
                + np.maximum(self.q0_up[i0], self.q0_down[i0]) ** 2)
        out: npt.NDArray[np.bool_] = (s < self.c) & (ball <= self.chi2)
        return out

    def possible(self, lo: IntArray, hi: IntArray) -> tuple[npt.NDArray[np.bool_], FloatArray,
                                                            npt.NDArray[np.bool_]]:
        """Per box: whether some point of it could be kept (False only where a bound over the
        whole box rules it out), the estimand's least value on it, and whether that is at the
        box's greatest π. The estimand rises with q₁ and q₀ (weights π and 1 − π), so its least
        on a box is at their least, and at one end of π."""
        pa, pb = self.pi[lo[:, 0]], self.pi[hi[:, 0]]
        a1a, a1b = self.q1[lo[:, 1]], self.q1[hi[:, 1]]
        a0a, a0b = self.q0[lo[:, 2]], self.q0[hi[:, 2]]
        at_a, at_b = _estimand(pa, a1a, a0a), _estimand(pb, a1a, a0a)
        at_top = at_b < at_a
        # The least the weighted sum can be over the box: each score at its least, each
        # weight at its least (its own variance least, the others' most).
        d_low, d_high = a1a - a0b, a1b - a0a
        straddles = (d_low <= 0.0) & (d_high >= 0.0)
        d_min = np.where(straddles, 0.0, np.minimum(np.abs(d_low), np.abs(d_high)))
        d_max = np.maximum(np.abs(d_low), np.abs(d_high))
        r_pi, r_1, r_0 = _root_range(pa, pb), _root_range(a1a, a1b), _root_range(a0a, a0b)
        v_pi = (d_min ** 2 * (r_pi[0] ** 2 + self.kappa_pi) / self.cases,
                d_max ** 2 * (r_pi[1] ** 2 + self.kappa_pi) / self.cases)
        v_1 = (pa * (r_1[0] ** 2 + self.kappa_q) / self.n,
               pb * (r_1[1] ** 2 + self.kappa_q) / self.n)
        v_0 = ((1.0 - pb) * (r_0[0] ** 2 + self.kappa_q) / self.n,
               (1.0 - pa) * (r_0[1] ** 2 + self.kappa_q) / self.n)
        most = v_pi[1] + v_1[1] + v_0[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            w_pi = np.nan_to_num(np.sqrt(v_pi[0] / (v_pi[0] + most - v_pi[1])))
            w_1 = np.nan_to_num(np.sqrt(v_1[0] / (v_1[0] + most - v_1[1])))
            w_0 = np.nan_to_num(np.sqrt(v_0[0] / (v_0[0] + most - v_0[1])))
        z_pi = np.minimum(np.where(d_high >= 0.0, self.pi_up[hi[:, 0]], np.inf),
                          np.where(d_low < 0.0, self.pi_down[lo[:, 0]], np.inf))
        s_low = w_pi * z_pi + w_1 * self.q1_up[hi[:, 1]] + w_0 * self.q0_up[hi[:, 2]]
        ball_low = (np.maximum(self.pi_up[hi[:, 0]], self.pi_down[lo[:, 0]]) ** 2
                    + np.maximum(self.q1_up[hi[:, 1]], self.q1_down[lo[:, 1]]) ** 2
                    + np.maximum(self.q0_up[hi[:, 2]], self.q0_down[lo[:, 2]]) ** 2)
        return (s_low < self.c) & (ball_low <= self.chi2), np.minimum(at_a, at_b), at_top

    def search(self) -> tuple[float, float]:
        """Branch and bound on the grids: ``(certified, best)`` — the least estimand over the
        boxes that could not be ruled out (``inf`` when none), and the least at a grid point
        known to be kept (``inf`` when none was found)."""
        best = math.inf
        step = _GRID // 16
        coarse = np.arange(0, _GRID + 1, step)
        ip, i1, i0 = (a.ravel() for a in np.meshgrid(coarse, coarse, coarse, indexing="ij"))
        inside = self.kept(ip, i1, i0)
        if inside.any():
            best = min(best, float(_estimand(self.pi[ip[inside]], self.q1[i1[inside]],
                                             self.q0[i0[inside]]).min()))
        lo: IntArray = np.zeros((1, 3), dtype=np.int64)
        hi: IntArray = np.full((1, 3), _GRID, dtype=np.int64)
        for _ in range(_ROUNDS):
            possible, least, at_top = self.possible(lo, hi)
            # Each box's least corner: a point known to be kept bounds the search.
            ip = np.where(at_top, hi[:, 0], lo[:, 0])
            inside = possible & self.kept(ip, lo[:, 1], lo[:, 2])
            if inside.any():
                best = min(best, float(least[inside].min()))
            keep = possible & (least < best)
            lo, hi, least = lo[keep], hi[keep], least[keep]
            splittable = (hi - lo).max(axis=1) > 1
            if least.size == 0 or not splittable.any() or \
                    best - float(least.min()) <= _TOLERANCE:
                break
            order = np.argsort(np.where(splittable, least, np.inf), kind="stable")
            chosen = np.zeros(least.size, dtype=bool)
            chosen[order[:_SPLIT]] = True
            chosen &= splittable
            parts_lo, parts_hi = [lo[chosen]], [hi[chosen]]
            for axis in range(3):
                next_lo, next_hi = [], []
                for box_lo, box_hi in zip(parts_lo, parts_hi, strict=True):
                    mid = (box_lo[:, axis] + box_hi[:, axis]) // 2
                    wide = box_hi[:, axis] - box_lo[:, axis] > 1
                    first_lo, first_hi = box_lo.copy(), box_hi.copy()
                    first_hi[wide, axis] = mid[wide]
                    second_lo, second_hi = box_lo[wide].copy(), box_hi[wide].copy()
                    second_lo[:, axis] = mid[wide]
                    next_lo += [first_lo, second_lo]
                    next_hi += [first_hi, second_hi]
                parts_lo, parts_hi = next_lo, next_hi
            lo = np.concatenate([lo[~chosen], *parts_lo])
            hi = np.concatenate([hi[~chosen], *parts_hi])
        certified = float(least.min()) if least.size else math.inf
        return certified, best


@lru_cache(maxsize=4096)
def _lower_end(passed: int, cases: int, one: _Stratum, zero: _Stratum, error: float,
               binary: bool) -> float | None:
    """The least ``π q₁ + (1 − π) q₀`` not rejected at ``error`` (module docstring), or None
    when every ``θ`` is rejected."""
    side = _Side(passed, cases, one, zero, error, binary)
    side.tables(side.spans())
    certified, best = side.search()
    if math.isinf(certified):
        return None if math.isinf(best) else best
    return certified


def stratified_bounds(passed: int, cases: int, pass_stratum: tuple[int, float, float],
                      fail_stratum: tuple[int, float, float], level: float,
                      binary: bool = True) -> tuple[float, float] | None:
    """The judge-based interval alone (module docstring) at ``level``, each side at half its
    error: ``passed`` of ``cases`` judged pass (the pass stratum's share), and for each stratum
    ``(sampled cases, sum of the lowest person values, sum of the highest)`` — equal sums when
    every sampled case is labelled. ``binary``: every person value is 0 or 1 (exact binomial
    tests; else Bentkus). None when the data rule out every ``θ`` at this level."""
    half = tail_probabilities(level)[1]
    one, zero = _Stratum(*pass_stratum), _Stratum(*fail_stratum)
    lower = _lower_end(passed, cases, one, zero, half, binary)
    mirror_one = _Stratum(one.size, one.size - one.high, one.size - one.low)
    mirror_zero = _Stratum(zero.size, zero.size - zero.high, zero.size - zero.low)
    upper = _lower_end(passed, cases, mirror_one, mirror_zero, half, binary)
    if lower is None or upper is None:
        return None
    return max(0.0, lower), min(1.0, 1.0 - upper)
