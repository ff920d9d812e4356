"""The sequential rule that decides a pass rate trial by trial
(docs/pytest.md#how-a-marked-test-decides): run up to ``trials`` trials, stop as soon as the
rate's bound decides against ``minimum``, with a type I error of at most ``α/2`` on each side
under that stopping.

Method: an exact binomial **error-spending** test with a look after every trial (Lan & DeMets
1983, "Discrete sequential boundaries for clinical trials", *Biometrika* 70(3); boundaries on
binomial counts computed exactly by recursion over the paths, as in Jennison & Turnbull 2000,
*Group Sequential Methods with Applications to Clinical Trials*, the chapters on error spending
and on binary data), and bounds by the **stagewise ordering** of the outcomes (Jennison &
Turnbull 1983, "Confidence intervals for a binomial parameter following a multistage test",
*Technometrics* 25(1); Fairbanks & Madsen 1982, *Biometrika* 69(1)).

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
- **the decision** after ``n`` trials with ``k`` passes and ``e`` errored: PASS when the path
  will cross the PASS boundary whatever comes next — when ``k ≥ c_j`` for some ``j`` in
  ``n … N`` (at ``j = n`` the boundary itself; later, if every remaining trial failed:
  deterministic curtailment, which changes no outcome, only when it is known); FAIL when
  ``k + e + (j − n) ≤ f_j`` for some ``j`` (every remaining trial passing); INSUFFICIENT_EVIDENCE
  when neither side can be reached any more (at ``N``, or earlier when even all-passing cannot
  reach PASS and all-failing cannot reach FAIL); else CONTINUE. A path cannot meet both
  boundaries (each sits on its side of the median at ``m``).
- **bounds.** The outcome of the PASS side alone is where it crosses (look ``t``, count ``s``),
  or ``(N, S_N)``; outcomes are ordered stagewise (an earlier crossing is more extreme, at the
  same look a larger count). The lower bound is the largest ``p`` with
  ``P_p(an outcome at least as extreme) ≤ α/2``, evaluated for the outcome this run reaches if
  every remaining trial fails — valid at every look, since it never exceeds the bound of the
  outcome the run actually reaches. The upper bound is the mirror. By construction the
  decision is PASS exactly when ``lower ≥ m`` and FAIL exactly when ``upper < m``.
- **about N more trials** (INSUFFICIENT_EVIDENCE only): ``T`` is the total at which the exact
  (Clopper–Pearson) interval at the pass share seen so far would decide
  (:func:`oloproof.stats.projection.rate_projection`, the projection of `oloproof plan`), at least
  ``trials + 1``; ``more_trials = T − trials``. ``more_trials_chance`` is the exact chance that
  this rule with ``trials = T`` decides that way when the true rate is that share (the
  dynamic program above; the other side, which could stop such a run first with chance at most
  ``α/2``, left out) — a projection, not a promise; ``None`` when ``T`` exceeds
  ``TRIALS_LIMIT``.

A design takes ``O(N·√N)`` work (counts further than about ``13·√(n·m(1 − m))`` below the
mean are dropped), cached per ``(minimum, trials, level)``; ``trials`` is at most
``TRIALS_LIMIT``.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count, tail_probabilities

__all__ = [
    "PROJECTION_LIMIT",
    "SEQUENTIAL_METHOD",
    "TRIALS_LIMIT",
    "SequentialDecision",
    "SequentialDesign",
    "SequentialRate",
    "sequential_bounds",
    "sequential_design",
    "sequential_interval",
]

SEQUENTIAL_METHOD = "exact binomial error spending"

#: The largest ``trials`` a design is computed for.
TRIALS_LIMIT = 10_000
#: No projection beyond this many trials in all ("more than …").
PROJECTION_LIMIT = 20_000
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
# Bracket width at which a bound's root search stops: 2⁻⁴⁰ ≈ 9.1e-13.
BOUND_TOLERANCE = 2.0**-40
# Rates evaluated per pass of that search (together, one dynamic program): 2⁶ cells a pass.
GRID = 63

PASSED, FAILED, ERRORED = "passed", "failed", "errored"
OUTCOMES = (PASSED, FAILED, ERRORED)
PASS, FAIL, CONTINUE = "PASS", "FAIL", "CONTINUE"
INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"

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


class _Paths:
    """For each row (a pass rate ``p`` and a boundary), the distribution of the count of passes
    over the paths that have not crossed yet: ``mass[row, k]`` for counts ``lo … hi``
    (everything else is zero, or was dropped below ``NEGLIGIBLE``: its total in ``dropped``)."""

    def __init__(self, p: FloatArray, size: int) -> None:
        self.p = p[:, None]
        self.mass = np.zeros((p.shape[0], size + 2))
        self.mass[:, 0] = 1.0
        self.lo = 0
        self.hi = 0
        self.dropped = np.zeros(p.shape[0])

    def step(self) -> None:
        """One more trial."""
        window = self.mass[:, self.lo : self.hi + 2]
        window[:, 1:] = window[:, 1:] * (1.0 - self.p) + window[:, :-1] * self.p
        window[:, :1] *= 1.0 - self.p
        self.hi += 1

    def tail(self) -> FloatArray:
        """``tail[row, i]``: the row's mass at counts ``lo + i`` and above."""
        live = self.mass[:, self.lo : self.hi + 1]
        sums: FloatArray = np.cumsum(live[:, ::-1], axis=1)[:, ::-1]
        return sums

    def mass_from(self, at: IntArray, tail: FloatArray | None = None) -> FloatArray:
        """Each row's mass at counts ``at[row]`` and above (``tail``: this step's, if known)."""
        if tail is None and int(at.max()) == int(at.min()):
            summed: FloatArray = self.mass[:, max(int(at[0]), self.lo) : self.hi + 1].sum(axis=1)
            return summed
        tail = self.tail() if tail is None else tail
        index = np.minimum(np.maximum(at - self.lo, 0), tail.shape[1] - 1)
        taken: FloatArray = tail[np.arange(tail.shape[0]), index]
        return np.where(at > self.hi, 0.0, taken)

    def cut(self, at: IntArray, tail: FloatArray | None = None) -> FloatArray:
        """Remove each row's paths at counts ``at[row]`` and above (they crossed); returns the
        mass removed."""
        top = int(at.max())
        if tail is None and top == int(at.min()):  # one count for every row: a slice
            start = max(top, self.lo)
            removed: FloatArray = self.mass[:, start : self.hi + 1].sum(axis=1)
            self.mass[:, start : self.hi + 1] = 0.0
            self.hi = max(self.lo, min(self.hi, top - 1))
            return removed
        removed = self.mass_from(at, tail)
        if int(at.min()) <= self.hi:
            counts = np.arange(self.lo, self.hi + 1)
            window = self.mass[:, self.lo : self.hi + 1]
            window[counts[None, :] >= at[:, None]] = 0.0
            self.hi = max(self.lo, min(self.hi, top - 1))
        return removed

    def prune(self) -> FloatArray:
        """Drop the low counts below ``NEGLIGIBLE`` in every row; returns each row's mass
        dropped."""
        live = self.mass[:, self.lo : self.hi + 1]
        keep: npt.NDArray[np.bool_] = np.any(live >= NEGLIGIBLE, axis=0)
        first = int(np.argmax(keep))
        if first == 0 or not keep[first]:
            return np.zeros(live.shape[0])
        dropped: FloatArray = live[:, :first].sum(axis=1)
        live[:, :first] = 0.0
        self.lo += first
        self.dropped += dropped
        return dropped


@lru_cache(maxsize=256)
def _pass_boundary(minimum: float, trials: int,
                   half_alpha: float) -> tuple[tuple[int, ...], float, float]:
    """``(c_1 … c_N, error, reserve)``: the PASS boundary by the spending recursion for the
    reserve (of ``RESERVES``) whose exact error at ``minimum`` is largest, that error, and the
    reserve. All reserves are computed side by side, one row each."""
    reserves = np.asarray(RESERVES)
    rows = np.arange(reserves.shape[0])
    paths = _Paths(np.full(reserves.shape, minimum), trials)
    spent = np.zeros(reserves.shape)
    boundary = np.empty((reserves.shape[0], trials), dtype=np.int64)
    for n in range(1, trials + 1):
        paths.step()
        allowance = _spending(n, trials, minimum, half_alpha, reserves) * (1.0 - SAFETY) - spent
        tail = paths.tail()
        fits = tail <= allowance[:, None]
        first = np.argmax(fits, axis=1)
        c = np.where(fits[rows, first], paths.lo + first, n + 1)
        spent += paths.cut(c, tail)
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
def _design(minimum: float, trials: int, level: float) -> SequentialDesign:
    _, half_alpha, _ = tail_probabilities(level)
    pass_at, pass_error, pass_reserve = _pass_boundary(minimum, trials, half_alpha)
    mirrored, fail_error, fail_reserve = _pass_boundary(1.0 - minimum, trials, half_alpha)
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
    return _design(_checked_minimum(minimum), _checked_trials(trials), check_level(level))


def _first_at_or_after(condition: npt.NDArray[np.bool_], n: int) -> int | None:
    """The first look ``j ≥ n`` (1-based, ``condition[j − 1]``) where ``condition`` holds."""
    hits = np.nonzero(condition[max(n, 1) - 1 :])[0]
    return None if hits.size == 0 else max(n, 1) + int(hits[0])


@lru_cache(maxsize=128)
def _arrays(design: SequentialDesign) -> tuple[IntArray, IntArray]:
    return (np.asarray(design.pass_at, dtype=np.int64),
            np.asarray(design.fail_at, dtype=np.int64))


def _state(design: SequentialDesign, n: int, low: int, high: int) -> str:
    """The decision after ``n`` trials, ``low`` passes and ``high`` passes or errored."""
    return _state_of(design.minimum, design.trials, design.level, n, low, high)


@lru_cache(maxsize=65_536)
def _state_of(minimum: float, trials: int, level: float, n: int, low: int, high: int) -> str:
    design = _design(minimum, trials, level)
    c, f = _arrays(design)
    looks = np.arange(1, design.trials + 1)
    ahead = looks >= max(n, 1)
    if n > 0 and _first_at_or_after(c <= low, n) is not None:
        return PASS  # crossed, or will cross even if every remaining trial fails
    if n > 0 and _first_at_or_after(high + (looks - n) <= f, n) is not None:
        return FAIL  # crossed, or will cross even if every remaining trial passes
    # n = 0 counts as "before the first look": every look is ahead.
    reach_pass = bool(np.any(ahead & (low + (looks - n) >= c)))
    reach_fail = bool(np.any(ahead & (high <= f)))
    return CONTINUE if reach_pass or reach_fail else INSUFFICIENT_EVIDENCE


def _at_least_as_extreme(p: FloatArray, boundary: tuple[int, ...], look: int,
                         passes: int) -> FloatArray:
    """For each rate in ``p``, the probability that the PASS side's outcome is at least as
    extreme as ``(look, passes)`` in the stagewise order: a crossing before ``look``, or none
    before it and at least ``passes`` passes at it. Dropped mass counts as at least as
    extreme (the bound moves outward)."""
    paths = _Paths(np.clip(p, 0.0, 1.0), look)
    crossed = np.zeros(p.shape)
    for n in range(1, look):
        paths.step()
        crossed += paths.cut(np.full(p.shape, boundary[n - 1]))
        if n % PRUNE_EVERY == 0:
            paths.prune()
    paths.step()
    at_least = paths.mass_from(np.full(p.shape, passes))
    total: FloatArray = np.minimum(1.0, crossed + at_least + paths.dropped)
    return total


def _lower_bound(design_boundary: tuple[int, ...], trials: int, n: int, passes: int,
                 minimum: float, half_alpha: float) -> float:
    """The stagewise lower bound for the outcome reached if every remaining trial fails,
    searched in ``[minimum, 1]`` when the side decided and in ``[0, minimum)`` when it did not
    (so the bound and the decision agree), reported on the excluded side of the final bracket:
    never above the exact bound."""
    c = np.asarray(design_boundary, dtype=np.int64)
    crossing = _first_at_or_after(c <= passes, max(n, 1)) if n > 0 else None
    look = crossing if crossing is not None else trials
    if passes == 0 and crossing is None:
        return 0.0

    def excess(p: FloatArray) -> FloatArray:
        """Nondecreasing in each rate; ≤ 0 where the rate is excluded."""
        return _at_least_as_extreme(p, design_boundary, look, passes) - half_alpha

    a, b = (minimum, 1.0) if crossing is not None else (0.0, minimum)
    at_a = float(excess(np.array([a]))[0])
    if crossing is not None and at_a > 0.0:
        raise RuntimeError("sequential bound: the decided side's outcome is not extreme "
                           "enough at the minimum (please report this)")
    if crossing is None and at_a > 0.0:
        return 0.0
    # Grid refinement: each pass evaluates GRID points inside the bracket in one vectorised
    # dynamic program and keeps the cell where the excess turns positive.
    while b - a > BOUND_TOLERANCE:
        points = np.linspace(a, b, GRID + 2)[1:-1]
        positive = excess(points) > 0.0
        if not positive.any():  # the excess turns positive in the last cell
            a = float(points[-1])
            continue
        first = int(np.argmax(positive))
        a, b = (float(points[first - 1]) if first else a), float(points[first])
    return a


def sequential_bounds(passed: int, failed: int, errored: int, *, minimum: float, trials: int,
                      level: float = 0.95) -> tuple[float, float]:
    """``(lower, upper)``: the stagewise bounds of the pass rate after these trials of a run
    the rule has not stopped before (module docstring), each side at ``α/2``.

    >>> lower, upper = sequential_bounds(23, 0, 0, minimum=0.8, trials=50)  # PASS
    >>> round(lower, 4), upper
    (0.8518, 1.0)

    A run that is still going gets bounds as if every remaining trial went against each side:

    >>> lower, upper = sequential_bounds(3, 1, 0, minimum=0.8, trials=50)
    >>> round(lower, 4), round(upper, 4)
    (0.0125, 0.9995)
    """
    design = sequential_design(minimum, trials, level)
    passed, failed, errored = (count("passed", passed), count("failed", failed),
                               count("errored", errored))
    n = passed + failed + errored
    if n > design.trials:
        raise ValueError(f"{n} trials is more than the design's {design.trials}")
    return _bounds(design, n, passed, passed + errored)


def _bounds(design: SequentialDesign, n: int, low: int, high: int) -> tuple[float, float]:
    _, half_alpha, _ = tail_probabilities(design.level)
    m = design.minimum
    lower = _lower_bound(design.pass_at, design.trials, n, low, m, half_alpha)
    mirrored = tuple(j - f for j, f in enumerate(design.fail_at, 1))
    upper = 1.0 - _lower_bound(mirrored, design.trials, n, n - high, 1.0 - m, half_alpha)
    if upper == m and _state(design, n, low, high) == FAIL:
        # The mirrored bound sat on 1 − m itself, which it excludes: FAIL means the upper
        # bound is below the minimum, so report the float just below it.
        upper = math.nextafter(m, 0.0)
    return lower, upper


@dataclass(frozen=True)
class SequentialDecision:
    """Where the rule stands after ``trials_run`` trials.

    ``state`` is ``"PASS"``, ``"FAIL"``, ``"CONTINUE"`` or ``"INSUFFICIENT_EVIDENCE"``;
    ``estimate`` is ``passed / (passed + failed)`` (``None`` before a trial that did not error);
    ``lower``/``upper`` the stagewise bounds (PASS exactly when ``lower ≥ minimum``, FAIL
    exactly when ``upper < minimum``). For INSUFFICIENT_EVIDENCE, ``projected_trials`` is the
    total at which the exact interval at the pass share seen so far would decide (at least
    ``trials + 1``), ``more_trials`` that total minus ``trials`` and ``more_trials_chance`` the
    exact chance that this rule with that many trials decides when the true rate is that share
    (module docstring; ``None`` above ``TRIALS_LIMIT``). Both totals are ``None``, with
    ``projection_reason``, when there is none: ``"no_trials"``, ``"share_equals_minimum"``,
    ``"errored_trials"`` (the errored trials leave the minimum between the share of passes and
    the share of passes or errored), ``"beyond_limit"`` (over ``PROJECTION_LIMIT`` trials).
    """

    state: str
    trials_run: int
    passed: int
    failed: int
    errored: int
    minimum: float
    trials: int
    level: float
    estimate: float | None
    lower: float
    upper: float
    projected_trials: int | None
    more_trials: int | None
    more_trials_chance: float | None
    projection_reason: str | None
    method: str = SEQUENTIAL_METHOD


@dataclass(frozen=True)
class SequentialRate:
    """A marked test's trials so far under the sequential rule: feed each trial's outcome with
    :meth:`add` (a new object each time) until :attr:`decided`, then ask :meth:`decision`.

    >>> rule = SequentialRate(minimum=0.8, trials=50)
    >>> while not rule.decided:
    ...     rule = rule.add("passed")
    >>> decision = rule.decision()
    >>> decision.state, decision.trials_run, round(decision.lower, 4)
    ('PASS', 23, 0.8518)

    An errored trial counts as a failure for PASS; at ``trials=20`` PASS needs 20 of 20, so one
    errored trial settles the run as undecided, and the decision says how far it was:

    >>> rule = SequentialRate(minimum=0.8, trials=20)
    >>> for outcome in ["passed"] * 17 + ["errored"]:
    ...     rule = rule.add(outcome)
    >>> rule.state
    'INSUFFICIENT_EVIDENCE'
    >>> decision = rule.decision()
    >>> decision.projected_trials, decision.more_trials, round(decision.more_trials_chance, 2)
    (32, 12, 0.54)
    """

    minimum: float
    trials: int
    level: float = 0.95
    passed: int = 0
    failed: int = 0
    errored: int = 0

    def __post_init__(self) -> None:
        design = sequential_design(self.minimum, self.trials, self.level)
        for name in ("passed", "failed", "errored"):
            count(name, getattr(self, name))
        if self.trials_run > design.trials:
            raise ValueError(f"{self.trials_run} trials is more than trials={design.trials}")

    @property
    def design(self) -> SequentialDesign:
        return _design(self.minimum, self.trials, self.level)  # checked in __post_init__

    @property
    def trials_run(self) -> int:
        return self.passed + self.failed + self.errored

    @functools.cached_property
    def state(self) -> str:
        """The decision's state alone (cheap: no bounds, no projection)."""
        return _state_of(self.minimum, self.trials, self.level, self.trials_run, self.passed,
                         self.passed + self.errored)

    @property
    def decided(self) -> bool:
        """True once the state is anything but CONTINUE: run no more trials."""
        return self.state != CONTINUE

    def add(self, outcome: str) -> SequentialRate:
        """This rule after one more trial: ``"passed"`` (a clean return), ``"failed"`` (an
        ``AssertionError``) or ``"errored"`` (any other exception)."""
        if outcome not in OUTCOMES:
            raise ValueError(f"a trial's outcome must be one of {', '.join(OUTCOMES)}, "
                             f"got {outcome!r}")
        state = self.state
        if state != CONTINUE:
            raise ValueError(f"the rule already decided {state} after {self.trials_run} "
                             "trials: run no more trials")
        counts = {"passed": self.passed, "failed": self.failed, "errored": self.errored}
        counts[outcome] += 1
        # Everything was checked when this rule was made: skip __init__'s checks (one trial
        # must cost microseconds). A frozen dataclass's __init__ sets its fields this way too.
        following = object.__new__(SequentialRate)
        for name, value in (("minimum", self.minimum), ("trials", self.trials),
                            ("level", self.level), *counts.items()):
            object.__setattr__(following, name, value)
        return following

    def decision(self) -> SequentialDecision:
        """The state with its bounds, and for INSUFFICIENT_EVIDENCE how far it was."""
        design = self.design
        n, low, high = self.trials_run, self.passed, self.passed + self.errored
        state = _state(design, n, low, high)
        lower, upper = _bounds(design, n, low, high)
        observed = self.passed + self.failed
        projected = chance = reason = None
        if state == INSUFFICIENT_EVIDENCE:
            projected, chance, reason = _projection(design, n, low, high)
        return SequentialDecision(
            state=state, trials_run=n, passed=self.passed, failed=self.failed,
            errored=self.errored, minimum=design.minimum, trials=design.trials,
            level=design.level, estimate=self.passed / observed if observed else None,
            lower=lower, upper=upper, projected_trials=projected,
            more_trials=None if projected is None else projected - design.trials,
            more_trials_chance=chance, projection_reason=reason)


def sequential_interval(passed: int, failed: int, errored: int, *, minimum: float,
                        trials: int, level: float = 0.95) -> SequentialDecision:
    """The decision, with its bounds and projection, for the counts of a run this rule stopped
    at its first decision (or has not stopped yet): :meth:`SequentialRate.decision` from counts.

    >>> decision = sequential_interval(45, 5, 0, minimum=0.8, trials=50)
    >>> decision.state, decision.estimate, round(decision.lower, 3), round(decision.upper, 3)
    ('INSUFFICIENT_EVIDENCE', 0.9, 0.779, 0.967)
    """
    return SequentialRate(minimum, trials, level, passed, failed, errored).decision()


def _crossing_chance(p: float, boundary: tuple[int, ...]) -> float:
    """The exact chance at a true rate ``p`` that a run ever reaches this PASS boundary
    (dropped mass counted as not reaching it)."""
    paths = _Paths(np.array([p]), len(boundary))
    crossed = 0.0
    for c in boundary:
        paths.step()
        crossed += float(paths.cut(np.array([c]))[0])
        paths.prune()
    return min(1.0, crossed)


def _projection(design: SequentialDesign, n: int, low: int,
                high: int) -> tuple[int | None, float | None, str | None]:
    """``(T, chance, reason)`` for an undecided run (module docstring, "about N more")."""
    from oloproof.stats.projection import rate_projection

    m = design.minimum
    if n == 0:
        return None, None, "no_trials"
    if low / n > m:
        passes, share, rate = low, low / n, m
    elif high / n < m:
        passes, share, rate = n - high, 1.0 - high / n, 1.0 - m  # FAIL: the mirrored PASS side
    elif high > low:
        return None, None, "errored_trials"
    else:
        return None, None, "share_equals_minimum"
    fixed = rate_projection(passes, n, design.level, minimum=rate, limit=PROJECTION_LIMIT)
    if fixed.total is None:
        return None, None, "beyond_limit"
    total = max(fixed.total, design.trials + 1)
    if total > TRIALS_LIMIT:
        return total, None, None
    _, half_alpha, _ = tail_probabilities(design.level)
    return total, _crossing_chance(share, _pass_boundary(rate, total, half_alpha)[0]), None
