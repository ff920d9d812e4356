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

- **spending.** By look ``n < N`` at most ``A(n) = α/2 · (0.8·n/N + 0.2·v/(2 + v))`` with
  ``v = n·m(1 − m)`` may have been spent; at ``N`` all of ``α/2``. Four fifths follow the
  trials run (the linear spending function of Lan & DeMets); one fifth follows a clock that does
  not depend on ``N`` (half spent after ``2/(m(1 − m))`` trials, 12.5 at ``m = 0.8``), so a
  test that keeps passing stops early however large ``trials`` is.
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
- **about N more trials** (INSUFFICIENT_EVIDENCE only): the smallest total ``T`` found by
  doubling and bisection — a total at which it decides and one fewer does not, as for
  `oloproof plan` — for which a run of ``T`` trials whose pass share stays at the share seen so
  far would decide the way that share points under this rule for ``T`` trials; ``more_trials =
  T − trials``. ``more_trials_chance`` is the exact chance that a run of ``T`` trials at that
  true rate crosses that side's boundary (the other side, which stops such a run first with
  chance at most ``α/2``, left out): a projection, not a promise.

A design for up to ``TRIALS_LIMIT`` trials takes ``O(N·√N)`` work, cached per
``(minimum, trials, level)``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count, tail_probabilities
from oloproof.stats._roots import increasing_root

__all__ = [
    "SEQUENTIAL_METHOD",
    "SEQUENTIAL_PROJECTION_METHOD",
    "TRIALS_LIMIT",
    "SequentialDecision",
    "SequentialDesign",
    "SequentialRate",
    "sequential_bounds",
    "sequential_design",
]

SEQUENTIAL_METHOD = "exact binomial error spending"
SEQUENTIAL_PROJECTION_METHOD = "sequential rule at the same pass share"

#: The largest ``trials`` a design is computed for.
TRIALS_LIMIT = 10_000
#: No projection beyond this many trials in all ("more than …").
PROJECTION_LIMIT = 20_000
#: The share of α/2 spent on the clock that does not depend on ``trials``.
EARLY_SHARE = 0.2
#: That clock, ``v/(EARLY_HALF + v)`` with ``v = n·m(1 − m)``, is half spent at ``v = 2``.
EARLY_HALF = 2.0
# Each look spends at most (1 − SAFETY) of its allowance: covers floating-point rounding of the
# dynamic program (about 1e-16 relative) with room to spare, and costs nothing measurable.
SAFETY = 1e-9
# Counts below this probability leave the carried distribution, charged as if they crossed.
NEGLIGIBLE = 1e-40
# Bracket width at which a bound's root search stops: 2⁻⁴⁰ ≈ 9.1e-13.
BOUND_TOLERANCE = 2.0**-40

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
    method: str = SEQUENTIAL_METHOD

    @property
    def first_pass(self) -> int | None:
        """The fewest trials after which a test that has passed every trial decides PASS
        (``None`` when ``trials`` is too few for any PASS)."""
        return next((n for n, c in enumerate(self.pass_at, 1) if c <= n), None)

    @property
    def first_fail(self) -> int | None:
        """The fewest trials after which a test that has failed every trial decides FAIL."""
        return next((n for n, f in enumerate(self.fail_at, 1) if f >= 0), None)


def _spending(n: int, trials: int, minimum: float, half_alpha: float) -> float:
    """``A(n)``: the error that may have been spent by look ``n`` (module docstring)."""
    if n >= trials:
        return half_alpha
    v = n * minimum * (1.0 - minimum)
    return half_alpha * ((1.0 - EARLY_SHARE) * n / trials + EARLY_SHARE * v / (EARLY_HALF + v))


class _Paths:
    """The distribution of the count of passes over the paths that have not crossed yet, at a
    pass rate ``p``: ``mass[k]`` for counts ``lo … hi`` (everything else is zero or was
    dropped below ``NEGLIGIBLE``, its total in ``dropped``)."""

    def __init__(self, p: float, size: int) -> None:
        self.p = p
        self.mass = np.zeros(size + 2)
        self.mass[0] = 1.0
        self.lo = 0
        self.hi = 0
        self.dropped = 0.0

    def step(self) -> None:
        lo, hi, p = self.lo, self.hi, self.p
        live = self.mass[lo : hi + 1].copy()
        self.mass[lo : hi + 1] = live * (1.0 - p)
        self.mass[lo + 1 : hi + 2] += live * p
        self.hi = hi + 1

    def tail(self) -> FloatArray:
        """``tail[i]``: the mass at counts ``lo + i`` and above."""
        live = self.mass[self.lo : self.hi + 1]
        reversed_sums: FloatArray = np.cumsum(live[::-1])
        return reversed_sums[::-1]

    def cut(self, at: int) -> None:
        """Remove the paths at counts ``at`` and above (they crossed)."""
        if at <= self.hi:
            self.mass[max(at, self.lo) : self.hi + 1] = 0.0
            self.hi = max(at - 1, self.lo)

    def prune(self) -> None:
        live = self.mass[self.lo : self.hi + 1]
        first = int(np.argmax(live >= NEGLIGIBLE))
        if first > 0 and live[first] >= NEGLIGIBLE:
            self.dropped += float(live[:first].sum())
            live[:first] = 0.0
            self.lo += first


@lru_cache(maxsize=128)
def _pass_boundary(minimum: float, trials: int, half_alpha: float) -> tuple[tuple[int, ...], float]:
    """``(c_1 … c_N, error)``: the PASS boundary by the spending recursion, and the exact
    probability at ``minimum`` of ever crossing it (dropped mass counted as crossed)."""
    paths = _Paths(minimum, trials)
    spent = 0.0
    boundary = []
    for n in range(1, trials + 1):
        paths.step()
        allowance = _spending(n, trials, minimum, half_alpha) * (1.0 - SAFETY) - spent
        tail = paths.tail()
        fits = np.nonzero(tail <= allowance)[0]
        if fits.size:
            c = paths.lo + int(fits[0])
            spent += float(tail[fits[0]])
            paths.cut(c)
        else:
            c = n + 1
        boundary.append(c)
        before = paths.dropped
        paths.prune()
        spent += paths.dropped - before
    return tuple(boundary), spent


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
    pass_at, pass_error = _pass_boundary(minimum, trials, half_alpha)
    mirrored, fail_error = _pass_boundary(1.0 - minimum, trials, half_alpha)
    fail_at = tuple(n - c for n, c in enumerate(mirrored, 1))
    return SequentialDesign(minimum, trials, level, pass_at, fail_at, pass_error, fail_error)


def sequential_design(minimum: float, trials: int, level: float = 0.95) -> SequentialDesign:
    """The boundaries of the sequential rule for ``minimum``, ``trials`` and ``level``
    (module docstring; cached).

    >>> design = sequential_design(0.8, 50)
    >>> design.first_pass, design.first_fail
    (21, 3)
    >>> design.pass_at[20], design.pass_at[49], design.fail_at[49]
    (21, 46, 33)
    >>> round(design.pass_error, 4), round(design.fail_error, 4)
    (0.0248, 0.0248)
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


def _at_least_as_extreme(p: float, boundary: tuple[int, ...], look: int, passes: int) -> float:
    """``P_p(the PASS side's outcome is at least as extreme as (look, passes))`` in the
    stagewise order: a crossing before ``look``, or no crossing before it and at least
    ``passes`` passes at it. Dropped mass counts as at least as extreme (the bound moves
    outward)."""
    if p <= 0.0:
        return 1.0 if passes <= 0 else 0.0
    if p >= 1.0:
        return 1.0
    paths = _Paths(p, look)
    crossed = 0.0
    for n in range(1, look + 1):
        paths.step()
        if n == look:
            break
        tail = paths.tail()
        c = boundary[n - 1]
        if c <= paths.hi:
            crossed += float(tail[max(c - paths.lo, 0)])
            paths.cut(c)
        paths.prune()
    tail = paths.tail()
    if passes > paths.hi:
        at_least = 0.0
    else:
        at_least = float(tail[max(passes - paths.lo, 0)])
    return min(1.0, crossed + at_least + paths.dropped)


def _lower_bound(design_boundary: tuple[int, ...], trials: int, n: int, passes: int,
                 minimum: float, half_alpha: float) -> float:
    """The stagewise lower bound for the outcome reached if every remaining trial fails; in
    ``[minimum, 1]`` when the side decided, in ``[0, minimum]`` when it did not."""
    c = np.asarray(design_boundary, dtype=np.int64)
    crossing = _first_at_or_after(c <= passes, max(n, 1)) if n > 0 else None
    look = crossing if crossing is not None else trials
    decided = crossing is not None  # the side's state: PASS (FAIL for the mirrored side)
    if passes == 0 and crossing is None:
        return 0.0

    def g(x: FloatArray, rows: npt.NDArray[np.bool_]) -> FloatArray:
        return np.array([_at_least_as_extreme(float(p), design_boundary, look, passes)
                         - half_alpha for p in x])

    if decided:
        a, b = np.array([minimum]), np.array([1.0])
    else:
        a, b = np.array([0.0]), np.array([minimum])
    ga = g(a, np.ones(1, dtype=bool))
    gb = g(b, np.ones(1, dtype=bool))
    if decided:
        if ga[0] > 0.0:
            raise RuntimeError("sequential bound: the decided side's outcome is not extreme "
                               "enough at the minimum (please report this)")
    else:
        if ga[0] > 0.0:
            return 0.0
        gb = np.maximum(gb, np.array([np.finfo(float).tiny]))  # the minimum is not excluded
    if gb[0] <= 0.0:
        return float(b[0])
    low, _ = increasing_root(g, a, b, ga, gb, BOUND_TOLERANCE)
    return float(low[0])


def sequential_bounds(passed: int, failed: int, errored: int, *, minimum: float, trials: int,
                      level: float = 0.95) -> tuple[float, float]:
    """``(lower, upper)``: the stagewise bounds of the pass rate after these trials of a run
    the rule has not stopped before (module docstring), each side at ``α/2``.

    >>> lower, upper = sequential_bounds(21, 0, 0, minimum=0.8, trials=50)
    >>> round(lower, 4), upper
    (0.8005, 1.0)
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
    return lower, upper


@dataclass(frozen=True)
class SequentialDecision:
    """Where the rule stands after ``trials_run`` trials.

    ``state`` is ``"PASS"``, ``"FAIL"``, ``"CONTINUE"`` or ``"INSUFFICIENT_EVIDENCE"``;
    ``estimate`` is ``passed / (passed + failed)`` (``None`` before a trial that did not error);
    ``lower``/``upper`` the stagewise bounds (PASS exactly when ``lower ≥ minimum``, FAIL
    exactly when ``upper < minimum``). For INSUFFICIENT_EVIDENCE, ``projected_trials`` is the
    total a run at the pass share seen so far would need, ``more_trials`` that total minus
    ``trials`` and ``more_trials_chance`` the exact chance such a run decides (module
    docstring); ``None`` with ``projection_reason`` when no total would
    (``"no_trials"``, ``"share_equals_minimum"``, ``"errored_trials"`` when the errored trials
    leave the minimum between the two shares, ``"beyond_limit"``).
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
    ('PASS', 21, 0.8005)

    Errored trials count against both sides; an undecided run says how far it was:

    >>> rule = SequentialRate(minimum=0.8, trials=20)
    >>> for outcome in ["passed"] * 17 + ["errored"] + ["passed"] * 2:
    ...     rule = rule.add(outcome)
    >>> decision = rule.decision()
    >>> decision.state, decision.passed, decision.errored
    ('INSUFFICIENT_EVIDENCE', 19, 1)
    >>> decision.projected_trials, decision.more_trials, round(decision.more_trials_chance, 2)
    (29, 9, 0.61)
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
        return sequential_design(self.minimum, self.trials, self.level)

    @property
    def trials_run(self) -> int:
        return self.passed + self.failed + self.errored

    @property
    def state(self) -> str:
        """The decision's state alone (cheap: no bounds, no projection)."""
        return _state(self.design, self.trials_run, self.passed, self.passed + self.errored)

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
        return dataclasses.replace(self, **{outcome: getattr(self, outcome) + 1})

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


def _crossing_chance(p: float, boundary: tuple[int, ...]) -> float:
    """The exact chance at a true rate ``p`` that a run ever reaches this PASS boundary
    (dropped mass counted as not reaching it)."""
    paths = _Paths(p, len(boundary))
    crossed = 0.0
    for n in range(1, len(boundary) + 1):
        paths.step()
        c = boundary[n - 1]
        if c <= paths.hi:
            crossed += float(paths.tail()[max(c - paths.lo, 0)])
            paths.cut(c)
        paths.prune()
    return min(1.0, crossed)


def _projection(design: SequentialDesign, n: int, low: int,
                high: int) -> tuple[int | None, float | None, str | None]:
    """``(T, chance, reason)`` for an undecided run (module docstring, "about N more")."""
    m = design.minimum
    if n == 0:
        return None, None, "no_trials"
    if low / n > m:
        share, rate = low / n, m
    elif high / n < m:
        share, rate = 1.0 - high / n, 1.0 - m  # the FAIL side: the mirrored PASS side
    elif high > low:
        return None, None, "errored_trials"
    else:
        return None, None, "share_equals_minimum"
    _, half_alpha, _ = tail_probabilities(design.level)

    def decides(total: int) -> bool:
        boundary = np.asarray(_pass_boundary(rate, total, half_alpha)[0], dtype=np.float64)
        looks = np.arange(1, total + 1, dtype=np.float64)
        return bool(np.any(share * looks >= boundary - 1e-9))

    known_not, candidate = design.trials, design.trials + 1
    while not decides(candidate):
        if candidate >= PROJECTION_LIMIT:
            return None, None, "beyond_limit"
        known_not, candidate = candidate, min(2 * candidate, PROJECTION_LIMIT)
    while candidate - known_not > 1:
        middle = (known_not + candidate) // 2
        if decides(middle):
            candidate = middle
        else:
            known_not = middle
    chance = _crossing_chance(share, _pass_boundary(rate, candidate, half_alpha)[0])
    return candidate, chance, None
