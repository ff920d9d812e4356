"""The boundaries of the sequential rule a marked pytest test decides by
(docs/pytest.md#how-a-marked-test-decides): for ``trials`` trials, a ``minimum`` and a level, the
fewest passes that decide PASS and the most that decide FAIL at each look, with a type I error
of at most ``α/2`` on each side. What the rule does with them — its decision after each trial,
its bounds, "about N more trials" — is `oloproof.stats.sequential`.

Method: an exact binomial **error-spending** test with a look after every trial (Lan & DeMets
1983, "Discrete sequential boundaries for clinical trials", *Biometrika* 70(3); boundaries on
binomial counts computed exactly by recursion over the paths, as in Jennison & Turnbull 2000,
*Group Sequential Methods with Applications to Clinical Trials*, the chapters on error spending
and on binary data).

With ``m`` the minimum, ``N`` the trials, ``α = 1 − level`` (its half computed exactly from the
level's decimal text) and ``S_n`` the passes among the first ``n`` trials:

- **spending.** By look ``n < N`` at most ``A(n) = α/2 · (1 − r) · (0.8·n/N + 0.2·v/(2 + v))``
  with ``v = n·m(1 − m)`` may have been spent; at ``N`` all of ``α/2``. Four fifths follow the
  trials run (the linear spending function of Lan & DeMets); one fifth follows a clock that
  does not depend on ``N`` (half spent after ``2/(m(1 − m))`` trials, 12.5 at ``m = 0.8``), so
  a test that keeps passing stops early however large ``trials`` is. ``r`` is the share left
  to the last look: of ``0, 0.05, … 0.5`` the design takes the one whose exact error below is
  largest (the smallest among equals) — the one that loses least of ``α/2`` to the binomial's
  steps, chosen from ``m``, ``N`` and the level alone, before any trial.
- **PASS boundary.** ``c_n`` is the fewest passes of ``n`` that decide PASS: the smallest count
  whose probability at ``m`` of being reached at ``n`` by a path that has not crossed before,
  added to the probability spent at earlier looks, stays within ``A(n)·(1 − 10⁻⁹)`` — computed
  by carrying the distribution of the paths that have not crossed from look to look (a
  dynamic program over the binomial paths, exact up to floating-point rounding, which the
  ``10⁻⁹`` margin covers; counts whose probability falls below ``10⁻⁴⁰`` are dropped from the
  carried distribution and charged to the error as if they had crossed). The probability that
  a path at ``m`` ever crosses, ``pass_error``, is at most ``α/2`` by construction.
- **FAIL boundary.** The mirror: the PASS boundary of ``1 − m`` applied to the failures, so
  ``f_n = n − c'_n`` is the most passes of ``n`` that decide FAIL.
- **errored trials** use a trial and count as a failure for the PASS side and as a pass for the
  FAIL side (docs/concepts.md#errored-cases). Each side's count is then stochastically no
  larger (no smaller) than a count at the true pass rate, and each boundary is a threshold on
  a count, so both error rates still hold.

A design takes ``O(N·√N)`` work (counts further than about ``13·√(n·m(1 − m))`` below the
mean are dropped), cached per ``(minimum, trials, level)``; ``trials`` is at most
``TRIALS_LIMIT``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count, tail_probabilities

__all__ = [
    "SEQUENTIAL_METHOD",
    "TRIALS_LIMIT",
    "BinomialPaths",
    "SequentialDesign",
    "design_of",
    "pass_boundary",
    "sequential_design",
]

SEQUENTIAL_METHOD = "exact binomial error spending"

#: The largest ``trials`` a design is computed for.
TRIALS_LIMIT = 10_000
#: The share of α/2 spent on the clock that does not depend on ``trials``.
EARLY_SHARE = 0.2
#: That clock, ``v/(EARLY_HALF + v)`` with ``v = n·m(1 − m)``, is half spent at ``v = 2``.
EARLY_HALF = 2.0
#: The shares of α/2 the earlier looks may leave to the last one; the design takes the one
#: whose exact error is largest.
RESERVES = tuple(i / 20 for i in range(11))
# Each look spends at most (1 − SAFETY) of its allowance: covers floating-point rounding of the
# dynamic program (about 1e-16 relative) with room to spare, and costs nothing measurable.
SAFETY = 1e-9
# Counts below this probability leave the carried distribution, charged as if they crossed.
NEGLIGIBLE = 1e-40
# Pruning every few looks is enough: the window grows by one count a look.
PRUNE_EVERY = 8
# The counts from the top a look sums first to find its boundary (`BinomialPaths.cut_within`).
TAIL_WINDOW = 16

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class SequentialDesign:
    """The boundaries of the rule for one ``(minimum, trials, level)``.

    ``pass_at[n − 1]`` is the fewest passes of ``n`` trials that decide PASS at look ``n``
    (``n + 1`` when none does); ``fail_at[n − 1]`` the most passes (errored trials counted as
    passes) that decide FAIL (``−1`` when none does). ``pass_error`` and ``fail_error`` are the
    exact probabilities, at a true pass rate of exactly ``minimum``, that a run ever reaches
    that boundary: each at most ``α/2``.
    """

    minimum: float
    trials: int
    level: float
    pass_at: tuple[int, ...] = field(repr=False)
    fail_at: tuple[int, ...] = field(repr=False)
    pass_error: float
    fail_error: float
    pass_reserve: float
    fail_reserve: float
    method: str = SEQUENTIAL_METHOD

    @property
    def first_pass(self) -> int | None:
        """The fewest trials after which a test that has passed every trial decides PASS
        (``None`` when ``trials`` is too few for any PASS): ``c_j`` passes, the fewest of any
        look ``j`` that can decide, decide it — at look ``j``, or sooner, curtailed."""
        return min((c for n, c in enumerate(self.pass_at, 1) if c <= n), default=None)

    @property
    def first_fail(self) -> int | None:
        """The fewest trials after which a test that has failed every trial decides FAIL
        (``None`` when ``trials`` is too few for any FAIL)."""
        return min((n - f for n, f in enumerate(self.fail_at, 1) if f >= 0), default=None)


def _spending(n: int, trials: int, minimum: float, half_alpha: float,
              reserve: FloatArray) -> FloatArray:
    """``A(n)`` for each reserve (module docstring)."""
    if n >= trials:
        return np.full(reserve.shape, half_alpha)
    v = n * minimum * (1.0 - minimum)
    share = (1.0 - EARLY_SHARE) * n / trials + EARLY_SHARE * v / (EARLY_HALF + v)
    spent: FloatArray = half_alpha * (1.0 - reserve) * share
    return spent


class BinomialPaths:
    """For each row (a pass rate ``p`` and a boundary), the distribution of the count of passes
    over the paths that have not crossed yet: ``mass[row, k]`` for counts ``lo … hi``
    (everything else is zero, or was dropped below ``NEGLIGIBLE``: its total in ``dropped``)."""

    def __init__(self, p: FloatArray, size: int) -> None:
        self.p = p[:, None]
        self.q = 1.0 - self.p
        self.mass = np.zeros((p.shape[0], size + 2))
        self.mass[:, 0] = 1.0
        self.lo = 0
        self.hi = 0
        self.dropped = np.zeros(p.shape[0])

    def step(self) -> None:
        """One more trial."""
        window = self.mass[:, self.lo : self.hi + 2]
        moved = window[:, :-1] * self.p
        window *= self.q
        window[:, 1:] += moved
        self.hi += 1

    def mass_from(self, at: int) -> FloatArray:
        """Each row's mass at counts ``at`` and above."""
        summed: FloatArray = self.mass[:, max(at, self.lo) : self.hi + 1].sum(axis=1)
        return summed

    def cut(self, at: int) -> FloatArray:
        """Remove each row's paths at counts ``at`` and above (they crossed); returns the mass
        removed."""
        removed = self.mass_from(at)
        self.mass[:, max(at, self.lo) : self.hi + 1] = 0.0
        self.hi = max(self.lo, min(self.hi, at - 1))
        return removed

    def cut_within(self, allowance: FloatArray, none: int) -> tuple[IntArray, FloatArray]:
        """For each row the fewest passes whose mass there and above is within the row's
        ``allowance`` (``none`` where even the top count's is not), those paths removed (they
        crossed); returns those counts and each row's mass removed.

        The mass is summed from the top count down, the top ``TAIL_WINDOW`` counts first: a
        look usually cuts a count or two, and where no row's top counts all fit, the counts
        below them cannot (the sum only grows going down)."""
        width = self.hi + 1 - self.lo
        top = min(width, TAIL_WINDOW)
        while True:
            downward = self.mass[:, self.hi + 1 - top : self.hi + 1][:, ::-1]
            sums = np.cumsum(downward, axis=1)
            fits = sums <= allowance[:, None]  # True for the top counts that fit, then False
            fitting = np.count_nonzero(fits, axis=1)
            if top == width or int(fitting.max()) < top:
                break
            top = min(width, 4 * top)
        found = fitting > 0
        at: IntArray = np.where(found, self.hi + 1 - fitting, none)
        removed: FloatArray = np.where(
            found, sums[np.arange(sums.shape[0]), np.maximum(fitting - 1, 0)], 0.0)
        downward[fits] = 0.0
        self.hi = max(self.lo, self.hi - int(fitting.min()))
        return at, removed

    def prune(self) -> FloatArray:
        """Drop the low counts below ``NEGLIGIBLE`` in every row; returns each row's mass
        dropped."""
        live = self.mass[:, self.lo : self.hi + 1]
        # The first count kept is almost always among the lowest few: look there first.
        keep: npt.NDArray[np.bool_] = np.any(live[:, :PRUNE_EVERY] >= NEGLIGIBLE, axis=0)
        if not keep.any():
            keep = np.any(live >= NEGLIGIBLE, axis=0)
        first = int(np.argmax(keep))
        if first == 0 or not keep[first]:
            return np.zeros(live.shape[0])
        dropped: FloatArray = live[:, :first].sum(axis=1)
        live[:, :first] = 0.0
        self.lo += first
        self.dropped += dropped
        return dropped


@lru_cache(maxsize=256)
def pass_boundary(minimum: float, trials: int,
                   half_alpha: float) -> tuple[tuple[int, ...], float, float]:
    """``(c_1 … c_N, error, reserve)``: the PASS boundary by the spending recursion for the
    reserve (of ``RESERVES``) whose exact error at ``minimum`` is largest, that error, and the
    reserve. All reserves are computed side by side, one row each."""
    reserves = np.asarray(RESERVES)
    paths = BinomialPaths(np.full(reserves.shape, minimum), trials)
    spent = np.zeros(reserves.shape)
    boundary = np.empty((reserves.shape[0], trials), dtype=np.int64)
    for n in range(1, trials + 1):
        paths.step()
        allowance = _spending(n, trials, minimum, half_alpha, reserves) * (1.0 - SAFETY) - spent
        c, removed = paths.cut_within(allowance, n + 1)
        spent += removed
        if n % PRUNE_EVERY == 0:
            spent += paths.prune()
        boundary[:, n - 1] = c
    # The largest error, the smallest reserve among equals (rounding-level differences aside).
    best = int(np.argmax(spent >= spent.max() * (1.0 - 1e-12)))
    return tuple(int(c) for c in boundary[best]), float(spent[best]), float(reserves[best])


def _checked_minimum(minimum: float) -> float:
    if isinstance(minimum, bool) or not isinstance(minimum, (int, float)) or not (
        math.isfinite(minimum) and 0.0 < minimum < 1.0
    ):
        raise ValueError(f"minimum must be a number strictly between 0 and 1, got {minimum!r}")
    return float(minimum)


def _checked_trials(trials: int) -> int:
    trials = count("trials", trials)
    if not 1 <= trials <= TRIALS_LIMIT:
        raise ValueError(f"trials must be between 1 and {TRIALS_LIMIT:,}, got {trials}")
    return trials


@lru_cache(maxsize=128)
def design_of(minimum: float, trials: int, level: float) -> SequentialDesign:
    """`sequential_design` for arguments already checked (cached: a rule asks it every trial)."""
    _, half_alpha, _ = tail_probabilities(level)
    pass_at, pass_error, pass_reserve = pass_boundary(minimum, trials, half_alpha)
    mirrored, fail_error, fail_reserve = pass_boundary(1.0 - minimum, trials, half_alpha)
    fail_at = tuple(n - c for n, c in enumerate(mirrored, 1))
    return SequentialDesign(minimum, trials, level, pass_at, fail_at, pass_error, fail_error,
                            pass_reserve, fail_reserve)


def sequential_design(minimum: float, trials: int, level: float = 0.95) -> SequentialDesign:
    """The boundaries of the sequential rule for ``minimum``, ``trials`` and ``level``
    (module docstring; cached).

    >>> design = sequential_design(0.8, 50)
    >>> design.first_pass, design.first_fail  # every trial passing / failing
    (23, 4)
    >>> design.pass_at[49], design.fail_at[49]  # at the 50th trial: PASS at 46+, FAIL at 33-
    (46, 33)
    >>> round(design.pass_error, 4), round(design.fail_error, 4)  # exact, each ≤ 0.025
    (0.0245, 0.0247)
    """
    return design_of(_checked_minimum(minimum), _checked_trials(trials), check_level(level))
