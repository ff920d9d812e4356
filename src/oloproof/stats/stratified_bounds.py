"""One side of the judge-based interval of a judged rate: the least (or greatest) rate
``π q₁ + (1 − π) q₀`` over the ``θ = (π, q₁, q₀)`` that three exact one-sided tests, combined by
a positive-part weighted inverse-normal sum, keep, found by branch and bound on a grid. The
construction and why it holds its level are in `stats.verdict_strata`'s text
(docs/judges.md#the-corrected-interval-in-a-users-words)."""

from __future__ import annotations

import itertools
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


def _estimand(p: FloatArray, a1: FloatArray, a0: FloatArray) -> FloatArray:
    out: FloatArray = a0 + p * (a1 - a0)
    return out


def _finite_root(ratio: FloatArray) -> FloatArray:
    """``√ratio`` with NaN (``0/0``) read as 0 and ∞ as the largest float — NumPy's
    ``nan_to_num`` of it, in place: the ratios are never negative, so the square roots are
    NaN, ∞ or at least +0, which ``fmax`` against 0 leaves alone."""
    np.sqrt(ratio, out=ratio)
    np.minimum(ratio, _LARGEST, out=ratio)
    np.fmax(ratio, 0.0, out=ratio)
    return ratio


_LARGEST = float(np.finfo(np.float64).max)
#: Which half of a box each of its eight parts takes on each axis (True: the second), first
#: halves before second, the last axis varying fastest: axis × part.
_HALVES = np.array(list(itertools.product((False, True), repeat=3))).T


def _halves(boxes: IntArray) -> IntArray:
    """Boxes (the corners' grid indices, lo then hi: 6 × box) each split in two along every
    axis on which it is more than one grid step wide (into up to eight): the parts grouped by
    which half they take on each axis (``_HALVES``' order), within a group in the boxes'
    order. A box one step wide on an axis keeps its extent there and has no second half on
    it."""
    count = boxes.shape[1]
    lo, hi = boxes[:3], boxes[3:]
    mid = (lo + hi) // 2
    wide = hi - lo > 1
    # Part p of box b exists when the box is wide on every axis where p takes the second half.
    exists = np.ones((8, count), dtype=bool)
    for axis in range(3):
        exists[_HALVES[axis]] &= wide[axis]
    part, box = np.nonzero(exists)  # part-major, then the boxes' order
    # Each corner read from a table of [first half's, second half's] per axis and box, by flat
    # index (a gather: no branch per element, as np.where would take).
    at = _HALVES[:, part] * (3 * count) + (np.arange(3)[:, None] * count + box)
    lows = np.concatenate([lo, mid], axis=None)
    highs = np.concatenate([mid + (hi - mid) * ~wide, hi], axis=None)
    out: IntArray = np.concatenate([lows.take(at), highs.take(at)])
    return out


def _first(values: FloatArray, count: int) -> npt.NDArray[np.bool_]:
    """Which of ``values`` are the ``count`` least, ties taken in their order (the first
    ``count`` of a stable sort), in linear time: all below the ``count``-th least value and
    the first of those equal to it."""
    if values.size <= count:
        return np.ones(values.size, dtype=bool)
    threshold = np.partition(values, count - 1)[count - 1]
    chosen: npt.NDArray[np.bool_] = values < threshold
    ties = np.flatnonzero(values == threshold)
    chosen[ties[:count - int(chosen.sum())]] = True
    return chosen


@dataclass(frozen=True)
class _Points:
    """One parameter's grid and what the search reads at its points: the one-sided scores
    (``up``, ``down``), the variance of the weights at a point (``t(1 − t) + κ``, ``var``)
    and its bound on a box (``√(t(1 − t))`` squared back, plus κ: ``root``, with ``middle``
    for a box around ½), the two-sided score squared (``two``, and each side's, ``up_sq`` and
    ``down_sq``), whether a point is at most (``below``) or at least (``above``) ½, and one
    minus it (``against``; for π, the fail stratum's share). Each is the elementwise
    arithmetic the search did on the points' values, done once per point rather than once per
    box: the same floats (squaring, adding and rounding keep order on numbers ≥ 0, so the
    least or most of the squares is the square of the least or most)."""

    values: FloatArray
    up: FloatArray
    down: FloatArray
    var: FloatArray
    root: FloatArray
    middle: float
    two: FloatArray
    up_sq: FloatArray
    down_sq: FloatArray
    below: npt.NDArray[np.bool_]
    above: npt.NDArray[np.bool_]
    against: FloatArray  # 1 − the value


@lru_cache(maxsize=4)
def _points(low: float, high: float, x_up: float, x_down: float, size: int, binary: bool,
            kappa: float) -> _Points:
    """The grid over ``[low, high]`` for a mean tested by ``x_up`` and ``x_down`` (sums over
    ``size`` cases), and what the search reads on it (``_Side.tables``). The last four are
    kept (about 0.3 MB each): the two sides of an interval share π's (its data are not
    mirrored)."""
    if high - low < 1e-12:
        high, low = min(1.0, low + 1e-12), max(0.0, min(1.0, low + 1e-12) - 1e-12)
    values = np.linspace(low, high, _GRID + 1)
    up = _score(_tail_up(x_up, size, values, binary))
    down = _score(_tail_down(x_down, size, values, binary))
    square = values * (1.0 - values)
    points = _Points(values=values, up=up, down=down, var=square + kappa,
                     root=np.sqrt(np.clip(square, 0.0, None)) ** 2 + kappa,
                     middle=0.5 ** 2 + kappa, two=np.maximum(up, down) ** 2, up_sq=up ** 2,
                     down_sq=down ** 2, below=values <= 0.5, above=values >= 0.5,
                     against=1.0 - values)
    for table in (values, up, down, points.var, points.root, points.two, points.up_sq,
                  points.down_sq, points.below, points.above, points.against):
        table.flags.writeable = False
    return points


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
        one, zero, binary = self.one, self.zero, self.binary
        self.pi = _points(*spans[0], self.passed, self.passed, self.cases, True, self.kappa_pi)
        self.q1 = _points(*spans[1], one.low, one.high, one.size, binary, self.kappa_q)
        self.q0 = _points(*spans[2], zero.low, zero.high, zero.size, binary, self.kappa_q)

    def kept(self, ip: IntArray, i1: IntArray, i0: IntArray) -> npt.NDArray[np.bool_]:
        """Whether grid points are not rejected."""
        pi, q1, q0 = self.pi, self.q1, self.q0
        p, a1, a0 = pi.values[ip], q1.values[i1], q0.values[i0]
        gap = a1 - a0
        v_pi = gap * gap * pi.var[ip] / self.cases
        v_1 = p * q1.var[i1] / self.n
        v_0 = self.pi.against[ip] * q0.var[i0] / self.n
        total = v_pi + v_1 + v_0
        z_pi = np.where(a1 >= a0, pi.up[ip], pi.down[ip])
        s = (np.sqrt(v_pi / total) * z_pi + np.sqrt(v_1 / total) * q1.up[i1]
             + np.sqrt(v_0 / total) * q0.up[i0])
        ball = pi.two[ip] + q1.two[i1] + q0.two[i0]
        out: npt.NDArray[np.bool_] = (s < self.c) & (ball <= self.chi2)
        return out

    def least(self, boxes: IntArray) -> tuple[FloatArray, npt.NDArray[np.bool_]]:
        """Per box, the estimand's least value on it, and whether that is at the box's
        greatest π. The estimand rises with q₁ and q₀ (weights π and 1 − π), so its least on a
        box is at their least, and at one end of π."""
        pa, pb = self.pi.values[boxes[0]], self.pi.values[boxes[3]]
        a1a, a0a = self.q1.values[boxes[1]], self.q0.values[boxes[2]]
        at_a, at_b = _estimand(pa, a1a, a0a), _estimand(pb, a1a, a0a)
        return np.minimum(at_a, at_b), at_b < at_a

    def possible(self, boxes: IntArray) -> npt.NDArray[np.bool_]:
        """Per box, whether some point of it could be kept: False only where a bound over the
        whole box rules it out."""
        pi, q1, q0 = self.pi, self.q1, self.q0
        l0, l1, l2, h0, h1, h2 = boxes
        pa, pb = pi.values[l0], pi.values[h0]
        a1a, a1b = q1.values[l1], q1.values[h1]
        a0a, a0b = q0.values[l2], q0.values[h2]
        # The least the weighted sum can be over the box: each score at its least, each
        # weight at its least (its own variance least, the others' most). The gap q₁ − q₀
        # squared is least at 0 when the box holds q₁ = q₀, else at the nearer end.
        d_low, d_high = a1a - a0b, a1b - a0a
        low_sq, high_sq = d_low * d_low, d_high * d_high
        gap_least = np.where((d_low <= 0.0) & (d_high >= 0.0), 0.0,
                             np.minimum(low_sq, high_sq))
        gap_most = np.maximum(low_sq, high_sq)

        def root_range(points: _Points, a: IntArray, b: IntArray) -> tuple[FloatArray,
                                                                           FloatArray]:
            at_a, at_b = points.root[a], points.root[b]
            most = np.where(points.below[a] & points.above[b], points.middle,
                            np.maximum(at_a, at_b))
            return np.minimum(at_a, at_b), most

        r_pi, r_1, r_0 = root_range(pi, l0, h0), root_range(q1, l1, h1), root_range(q0, l2, h2)
        v_pi = (gap_least * r_pi[0] / self.cases, gap_most * r_pi[1] / self.cases)
        v_1 = (pa * r_1[0] / self.n, pb * r_1[1] / self.n)
        v_0 = (self.pi.against[h0] * r_0[0] / self.n, self.pi.against[l0] * r_0[1] / self.n)
        most = v_pi[1] + v_1[1] + v_0[1]
        with np.errstate(invalid="ignore", divide="ignore"):
            w_pi = _finite_root(v_pi[0] / (v_pi[0] + most - v_pi[1]))
            w_1 = _finite_root(v_1[0] / (v_1[0] + most - v_1[1]))
            w_0 = _finite_root(v_0[0] / (v_0[0] + most - v_0[1]))
        z_pi = np.minimum(np.where(d_high >= 0.0, pi.up[h0], np.inf),
                          np.where(d_low < 0.0, pi.down[l0], np.inf))
        s_low = w_pi * z_pi + w_1 * q1.up[h1] + w_0 * q0.up[h2]
        ball_low = (np.maximum(pi.up_sq[h0], pi.down_sq[l0])
                    + np.maximum(q1.up_sq[h1], q1.down_sq[l1])
                    + np.maximum(q0.up_sq[h2], q0.down_sq[l2]))
        out: npt.NDArray[np.bool_] = (s_low < self.c) & (ball_low <= self.chi2)
        return out

    def search(self) -> tuple[float, float]:
        """Branch and bound on the grids: ``(certified, best)`` — the least estimand over the
        boxes that could not be ruled out (``inf`` when none), and the least at a grid point
        known to be kept (``inf`` when none was found).

        Each round bounds the boxes made by the last round's splits; a box carried over
        unsplit was bounded when it was made and is not bounded again (its bounds depend on
        the box alone): it could hold a kept point, and its least corner is not kept (were it,
        the box's least value would have become the best, and the box dropped)."""
        pi, q1, q0 = self.pi.values, self.q1.values, self.q0.values
        best = math.inf
        step = _GRID // 16
        coarse = np.arange(0, _GRID + 1, step)
        ip, i1, i0 = (a.ravel() for a in np.meshgrid(coarse, coarse, coarse, indexing="ij"))
        inside = self.kept(ip, i1, i0)
        if inside.any():
            best = min(best, float(_estimand(pi[ip[inside]], q1[i1[inside]],
                                             q0[i0[inside]]).min()))
        # The boxes carried from round to round (the corners' grid indices, lo then hi: 6 ×
        # box), which of them were not split last round, and the boxes the last round made.
        boxes: IntArray = np.zeros((6, 0), dtype=np.int64)
        rest = np.zeros(0, dtype=bool)
        least: FloatArray = np.zeros(0)
        splittable = np.zeros(0, dtype=bool)
        made: IntArray = np.repeat(np.array([[0], [_GRID]], dtype=np.int64), 3, axis=0)
        for _ in range(_ROUNDS):
            made_least, at_top = self.least(made)
            # A box whose least value is not below the best known is dropped without more ado:
            # it could neither lower the best nor stay.
            which = np.flatnonzero(made_least < best)
            made, made_least, at_top = made[:, which], made_least[which], at_top[which]
            possible = self.possible(made)
            # Each box's least corner: a point known to be kept bounds the search.
            which = np.flatnonzero(possible)
            ip = np.where(at_top[which], made[3, which], made[0, which])
            inside = self.kept(ip, made[1, which], made[2, which])
            if inside.any():
                best = min(best, float(made_least[which[inside]].min()))
            old = rest & (least < best)
            new = possible & (made_least < best)
            made = made[:, new]
            boxes = np.concatenate([boxes[:, old], made], axis=1)
            least = np.concatenate([least[old], made_least[new]])
            splittable = np.concatenate([splittable[old],
                                         (made[3:] - made[:3]).max(axis=0) > 1])
            if least.size == 0 or not splittable.any() or \
                    best - float(least.min()) <= _TOLERANCE:
                break
            # The _SPLIT splittable boxes of least value (ties in the boxes' order) are split.
            chosen = splittable.copy()
            chosen[splittable] = _first(least[splittable], _SPLIT)
            made = _halves(boxes[:, chosen])
            rest = ~chosen
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
