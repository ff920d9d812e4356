"""A rate as people would judge it, from a judge's verdicts on every case and people's labels on
a uniform sample: stratified by the judge's verdict, and never much wider than the labels alone
(docs/judges.md#the-corrected-interval-in-a-users-words).

The estimand is the rate people would give over the population the cases are drawn from, as for
every other rate. The judge is a covariate: each case falls in the *pass* stratum when the judge
passed it (with repeated trials, at least half its trials; a case without a verdict falls in
the *fail* stratum), so with ``π`` the share of the pass stratum and ``q₁``, ``q₀`` the rate
people would give within each stratum,

    p = π q₁ + (1 − π) q₀.

Nothing here assumes the judge is right: a stratum is only a set of cases, and a poor judge
only makes the strata less useful. The estimate reads ``π`` from all ``N`` cases and ``q₁``,
``q₀`` from the labelled sampled cases of each stratum (the post-stratified estimate: for a
judge that says pass or fail it is the difference estimate ``mean(Y − λJ) + λ·mean_N(J)`` with
the best ``λ`` for the data).

**The judge-based interval** (each side at an error ``a``). Three exact one-sided tests, one per
parameter: the judge's pass count over the ``N`` cases (``Binomial(N, π)``), and within each
stratum the people's passes among its sampled cases (``Binomial(m_s, q_s)``; with repeated
trials, per-case shares and the bound of ``stats.bentkus``). Given the judge's verdicts the
strata's tests are independent of each other, and the judge's count test is a function of those
verdicts, so at the true ``θ = (π, q₁, q₀)`` the three p-values are super-uniform, the strata's
independent given the count's. For the lower bound they are combined by a weighted
inverse-normal (Stouffer–Liptak) sum in which each test counts only its evidence on the tested
side, ``S = Σ w_s max(0, Φ⁻¹(1 − P_s))``, with weights ``w_s(θ)`` proportional to each
parameter's share of the estimate's standard error at ``θ`` (unit length; fixed by ``θ``, ``N``
and the sample's size, never by the data, so the sequence of conditional bounds below holds);
``c`` is the largest ``1 − a'`` quantile of ``Σ w_s max(0, Z_s)`` for independent standard
normals over every unit weight vector (computed by quadrature, ``critical_value``). ``θ`` is kept
when ``S < c`` and the three tests' two-sided scores ``max(0, Φ⁻¹(1 − P_s⁺), Φ⁻¹(1 − P_s⁻))``
have a sum of squares at most the ``χ²₃`` quantile at a twentieth of ``a`` (so the search
below cannot trade one test's evidence against another's far from the data). The true ``θ`` is
kept with probability at least ``1 − a``: each ``max(0, Φ⁻¹(1 − P))`` of a super-uniform ``P``
is stochastically below ``max(0, Z)`` (and the two-sided score below ``|Z|``). The lower bound
is the least ``π q₁ + (1 − π) q₀`` over the ``θ`` kept, found by a branch-and-bound search
over boxes of ``θ`` on a grid of 4,097 points per parameter spanning what the two-sided scores
allow: a box is dropped only where a bound that holds over the whole box rules it out, and the
figure returned is the least value of the estimand over the boxes left — so the search never
reports a bound above the set's least value (it is below it by at most the grid's spacing,
about 2e-4 with 30 labels, 5e-5 with 400). The upper bound is the lower bound of the mirrored
labels (``1 − Y``). The result depends on the cases only through the counts (or sums) per
stratum: deterministic, and independent of the cases' order. A sampled case without a label
counts as a fail in the one-sided tests and as a pass in the two-sided scores' other side —
the least each score could be — so a box is kept if any resolution of the missing labels could
keep it.

**The safeguard.** The interval reported is the intersection of the labels' own interval (the
exact interval of the labelled sampled cases, the worst way for those unlabelled —
Clopper–Pearson, or Bentkus with repeated trials) at error ``α(1 − ε)`` and the judge-based
interval at error ``αε`` (each split evenly between its sides): by the union bound both hold
together with probability at least ``1 − α``. Where they do not meet (both cannot hold) the
labels' interval is reported. ``ε`` is fixed by the level (``safeguard_share``) so that the
labels' interval at ``α(1 − ε)`` is at most 1.05× as wide as at ``α``: the reported interval is
never more than 1.05× the width of the labels alone, in any setting
(docs/judges.md#never-much-wider-than-the-labels-alone); where the judge helps it is narrower.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, tail_probabilities
from oloproof.stats._lazy import scipy_special
from oloproof.stats._roots import increasing_root
from oloproof.stats.bentkus import BENTKUS_METHOD, bentkus_interval, bentkus_lower_bounds
from oloproof.stats.binomial import RATE_METHOD, rate_interval
from oloproof.stats.ppi_plus import ppi_plus_applies, ppi_plus_interval

__all__ = [
    "STRATIFIED_METHOD",
    "JudgedRate",
    "judged_rate_interval",
    "safeguard_share",
    "stratified_bounds",
]

STRATIFIED_METHOD = "stratified_by_verdict"

#: The most the reported interval may be wider than the labels' own (the safeguard's bound).
WIDTH_BOUND = 1.05
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


def safeguard_share(level: float) -> float:
    """``ε``: the share of the error the judge-based interval gets, ``1 − (α/2)^{1/20}`` —
    0.168 at 95% (docs/judges.md#never-much-wider-than-the-labels-alone).

    With it, each end of the labels' exact interval at error ``α(1 − ε)`` lies at most 1.05×
    as far from the labels' estimate as at ``α``: where the labels are all passes (or all
    fails) the far end is ``1 − (α/2)^{1/n}``, whose distance grows with the log of the tail,
    and ``log(α(1 − ε)/2) / log(α/2) = 1.05`` exactly; elsewhere the tails are lighter. Where
    the normal approximation holds the ratio is that of the normal quantiles, which is below
    1.05 for every level from about 80.6%: below that level ``ε`` is lowered until it holds.

    >>> round(safeguard_share(0.95), 4), round(safeguard_share(0.99), 4)
    (0.1684, 0.2327)
    """
    alpha = tail_probabilities(level)[0]
    share = 1.0 - float((alpha / 2.0) ** (1.0 / 20.0))
    return min(share, _normal_share(alpha))


@lru_cache(maxsize=64)
def _normal_share(alpha: float) -> float:
    """The largest ``ε`` with ``Φ⁻¹(1 − α(1 − ε)/2) ≤ 1.05 Φ⁻¹(1 − α/2)`` (1 when any)."""
    special = scipy_special()
    z = -float(special.ndtri(alpha / 2.0))
    if z <= 0.0:
        return 1.0
    tail = float(special.ndtr(-WIDTH_BOUND * z))
    return max(0.0, 1.0 - 2.0 * tail / alpha)


# ---- the critical value of the positive-part inverse-normal sum ----------------------------

_NODES = 48


@lru_cache(maxsize=1)
def _rule() -> tuple[FloatArray, FloatArray]:
    from numpy.polynomial.legendre import leggauss

    nodes, weights = leggauss(_NODES)
    return nodes, weights


def _phi(x: FloatArray) -> FloatArray:
    out: FloatArray = np.exp(-0.5 * x * x) / math.sqrt(2.0 * math.pi)
    return out


def _pair_tail(t: FloatArray, a: FloatArray, b: FloatArray) -> FloatArray:
    """``P(X > 0, Y > 0, aX + bY ≥ t)`` for independent standard normals, elementwise over
    arrays of one shape (``a``, ``b`` > 0): ``∫₀^{t/a} φ(x) Φ̄((t − ax)/b) dx + ½ Φ̄(t/a)``,
    by a Gauss–Legendre rule (beyond ``x = 9`` the normal density is below 1e-17)."""
    ndtr = scipy_special().ndtr
    nodes, weights = _rule()
    t, a, b = np.broadcast_arrays(t, a, b)
    out = np.full(t.shape, 0.25)
    positive = t > 0.0
    if positive.any():
        tt, aa, bb = t[positive][..., None], a[positive][..., None], b[positive][..., None]
        top = np.minimum(tt / aa, 9.0)
        x = top / 2.0 * (nodes + 1.0)
        inner = _phi(x) * ndtr(-(tt - aa * x) / bb)
        out[positive] = (top[..., 0] / 2.0 * (inner * weights).sum(axis=-1)
                         + 0.5 * ndtr(-tt[..., 0] / aa[..., 0]))
    return out


def positive_tail_chances(c: float, w: FloatArray) -> FloatArray:
    """``P(Σ w_s max(0, Z_s) ≥ c)`` for three independent standard normals and each row of
    positive weights ``w`` (k × 3), ``c > 0``: summed over which ``Z_s`` are positive (each
    pattern has chance 1/8; the sum is over the positive ones, half-normal)."""
    ndtr = scipy_special().ndtr
    nodes, weights = _rule()
    w1, w2, w3 = w[:, 0], w[:, 1], w[:, 2]
    single = 0.25 * (ndtr(-c / w1) + ndtr(-c / w2) + ndtr(-c / w3))
    cc = np.full(w1.shape, c)
    pairs = 0.5 * (_pair_tail(cc, w1, w2) + _pair_tail(cc, w1, w3) + _pair_tail(cc, w2, w3))
    top = np.minimum(c / w1, 9.0)[:, None]
    x = top / 2.0 * (nodes + 1.0)
    inner = _pair_tail(c - w1[:, None] * x, w2[:, None], w3[:, None])
    triple = top[:, 0] / 2.0 * (weights * _phi(x) * inner).sum(axis=1) + 0.25 * ndtr(-c / w1)
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


# ---- one side of the judge-based interval ---------------------------------------------------


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


# ---- the reported rate ----------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedRate:
    """The rate as people would judge it, with the labels' own interval beside it.

    ``estimate``/``lower``/``upper``/``method`` are what the criterion reports;
    ``people_*`` the labels alone at the same level (Clopper–Pearson, or Bentkus with
    repeated trials); ``judge_lower``/``judge_upper`` the judge-based interval at the
    safeguard's share ``share`` of the error (None where it ruled out everything);
    ``passed``/``cases`` the pass stratum over all cases, and per stratum the sampled cases
    and those labelled.
    """

    estimate: float | None
    lower: float
    upper: float
    method: str
    approximate: bool
    people_estimate: float | None
    people_lower: float
    people_upper: float
    people_method: str
    judge_lower: float | None
    judge_upper: float | None
    share: float
    passed: int
    cases: int
    pass_sampled: int
    pass_labelled: int
    fail_sampled: int
    fail_labelled: int


def _array(name: str, values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)) or np.any(array < 0.0) or np.any(array > 1.0):
        raise ValueError(f"{name} must be numbers in [0, 1]")
    return array


def _people(low: FloatArray, high: FloatArray, binary: bool, level: float
            ) -> tuple[float | None, float, float, str]:
    if binary:
        observed = low == high
        rate = rate_interval(int(low[observed].sum()), int(observed.sum()),
                             int((~observed).sum()), level)
        assert rate.lower is not None and rate.upper is not None
        return rate.estimate, rate.lower, rate.upper, RATE_METHOD
    mean = bentkus_interval(low, high, level)
    assert mean.lower is not None and mean.upper is not None
    return mean.estimate, mean.lower, mean.upper, BENTKUS_METHOD


def _sorted_sum(values: FloatArray) -> float:
    return float(np.sort(values).sum())


def judged_rate_interval(judge_values: Sequence[float] | npt.ArrayLike,
                         sampled_judge: Sequence[float] | npt.ArrayLike,
                         person_lower: Sequence[float] | npt.ArrayLike,
                         person_upper: Sequence[float] | npt.ArrayLike,
                         level: float, approximate: bool = False) -> JudgedRate:
    """The rate as people would judge it (module docstring): exact, or with ``approximate``
    and enough labels and disagreements (``stats.ppi_plus.ppi_plus_applies``) PPI++'s
    normal-approximation interval (``approximate`` true on the result).

    ``judge_values`` holds the judge's value for every case the rate counts, the sampled ones
    included (1 pass, 0 fail or no verdict, a share of trials with repeated trials);
    ``sampled_judge`` the same for each sampled case, and ``person_lower``/``person_upper`` its
    people's value (equal when labelled; 0 and 1 when not). A case is in the pass stratum when
    its judge value is at least ½. Raises ValueError when no case was sampled, or more cases
    were sampled than counted.

    The judged_agent example: 36 of 40 replies judged pass; of 30 sampled, the 27 judged pass
    hold 20 people pass, the 3 judged fail none — 0.9 × 20/27 + 0.1 × 0/3:

    >>> judge = [1.0] * 27 + [0.0] * 3
    >>> people = [1.0] * 20 + [0.0] * 10
    >>> rate = judged_rate_interval(judge + [1.0] * 9 + [0.0], judge, people, people, 0.95)
    >>> round(rate.estimate, 3), round(rate.lower, 3), round(rate.upper, 3)
    (0.667, 0.465, 0.832)
    >>> round(rate.people_lower, 3), round(rate.people_upper, 3), rate.people_method
    (0.472, 0.827, 'clopper_pearson')
    """
    level = check_level(level)
    every = _array("judge_values", judge_values)
    judge = _array("sampled_judge", sampled_judge)
    low = _array("person_lower", person_lower)
    high = _array("person_upper", person_upper)
    if not judge.size == low.size == high.size:
        raise ValueError("each sampled case needs its judge value and its person values")
    if np.any(low > high):
        raise ValueError("a person_lower value exceeds its person_upper value")
    if judge.size == 0:
        raise ValueError("the labels need at least one sampled case")
    passed = int(np.sum(every >= 0.5))
    cases = int(every.size)
    in_pass = judge >= 0.5
    if judge.size > cases or int(in_pass.sum()) > passed or \
            int((~in_pass).sum()) > cases - passed:
        raise ValueError("the sampled cases must be among the cases counted (judge_values)")
    binary = bool(np.all((low == 0.0) | (low == 1.0)) and np.all((high == 0.0) | (high == 1.0)))
    people = _people(low, high, binary, level)
    observed = low == high
    labelled = [int((members & observed).sum()) for members in (in_pass, ~in_pass)]
    sampled = [int(in_pass.sum()), int((~in_pass).sum())]
    disagreements = int(np.sum(observed & (in_pass != (low >= 0.5))))
    if approximate and ppi_plus_applies(sum(labelled), disagreements):
        tuned = ppi_plus_interval(every, judge, low, high, level)
        return JudgedRate(
            estimate=tuned.estimate, lower=tuned.lower, upper=tuned.upper,
            method=tuned.method, approximate=True, people_estimate=people[0],
            people_lower=people[1], people_upper=people[2], people_method=people[3],
            judge_lower=None, judge_upper=None, share=0.0, passed=passed, cases=cases,
            pass_sampled=sampled[0], pass_labelled=labelled[0], fail_sampled=sampled[1],
            fail_labelled=labelled[1])
    share = safeguard_share(level)
    alpha = tail_probabilities(level)[0]
    strata = []
    for members in (in_pass, ~in_pass):
        strata.append((int(members.sum()), _sorted_sum(low[members]),
                       _sorted_sum(high[members])))
    judged = stratified_bounds(passed, cases, strata[0], strata[1], 1.0 - alpha * share,
                               binary)
    guarded = _people(low, high, binary, 1.0 - alpha * (1.0 - share))
    lower, upper = guarded[1], guarded[2]
    if judged is not None and max(lower, judged[0]) <= min(upper, judged[1]):
        lower, upper = max(lower, judged[0]), min(upper, judged[1])
    estimate = people[0]
    if all(labelled):
        share_pass = passed / cases
        means = [float(np.sort(low[members & observed]).sum()) / count
                 for members, count in zip((in_pass, ~in_pass), labelled, strict=True)]
        estimate = share_pass * means[0] + (1.0 - share_pass) * means[1]
    if estimate is not None:
        estimate = min(upper, max(lower, estimate))
    return JudgedRate(
        estimate=estimate, lower=lower, upper=upper, method=STRATIFIED_METHOD,
        approximate=False, people_estimate=people[0], people_lower=people[1],
        people_upper=people[2], people_method=people[3],
        judge_lower=None if judged is None else judged[0],
        judge_upper=None if judged is None else judged[1], share=share, passed=passed,
        cases=cases, pass_sampled=strata[0][0], pass_labelled=labelled[0],
        fail_sampled=strata[1][0], fail_labelled=labelled[1])
