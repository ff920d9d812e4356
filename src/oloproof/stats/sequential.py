"""The sequential rule that decides a pass rate trial by trial
(docs/pytest.md#how-a-marked-test-decides): run up to ``trials`` trials, stop as soon as the
rate's bound decides against ``minimum``, with a type I error of at most ``α/2`` on each side
under that stopping. The rule's boundaries — the fewest passes ``c_n`` of ``n`` trials that
decide PASS, the most ``f_n`` that decide FAIL, errored trials counted against each side — are
`oloproof.stats.error_spending`'s; here is what the rule does with them after each trial.

Bounds by the **stagewise ordering** of the outcomes (Jennison & Turnbull 1983, "Confidence
intervals for a binomial parameter following a multistage test", *Technometrics* 25(1);
Fairbanks & Madsen 1982, *Biometrika* 69(1)). With ``m`` the minimum, ``N`` the trials and
``α = 1 − level``:

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
  error-spending module's dynamic program over the paths; the other side, which could stop
  such a run first with chance at most ``α/2``, left out) — a projection, not a promise;
  ``None`` when ``T`` exceeds ``TRIALS_LIMIT``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import count, tail_probabilities
from oloproof.stats.error_spending import (
    NEGLIGIBLE,
    PRUNE_EVERY,
    SEQUENTIAL_METHOD,
    TRIALS_LIMIT,
    BinomialPaths,
    SequentialDesign,
    design_of,
    pass_boundary,
    sequential_design,
)

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

#: No projection beyond this many trials in all ("more than …").
PROJECTION_LIMIT = 20_000
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
    design = design_of(minimum, trials, level)
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
    paths = BinomialPaths(np.clip(p, 0.0, 1.0), look)
    crossed = np.zeros(p.shape)
    for n in range(1, look):
        paths.step()
        crossed += paths.cut(boundary[n - 1])
        if n % PRUNE_EVERY == 0:
            paths.prune()
    paths.step()
    at_least = paths.mass_from(passes)
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
        return design_of(self.minimum, self.trials, self.level)  # checked in __post_init__

    @property
    def trials_run(self) -> int:
        return self.passed + self.failed + self.errored

    @property
    def state(self) -> str:
        """The decision's state alone (cheap: no bounds, no projection; `_state_of` keeps
        it, so the rule need not: a `cached_property` cost more, taking its lock, than the
        cache's lookup)."""
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
        # Everything was checked when this rule was made: skip __init__'s checks (one trial
        # must cost microseconds) and copy the fields, one count up, into the new object's
        # __dict__ — where a frozen dataclass's __init__ puts them too (object.__setattr__).
        fields = dict(self.__dict__)
        fields[outcome] += 1
        following = object.__new__(SequentialRate)
        following.__dict__.update(fields)
        return following

    def decision(self) -> SequentialDecision:
        """The state with its bounds, and for INSUFFICIENT_EVIDENCE how far it was."""
        design = self.design
        state, lower, upper, projected, chance, reason = _decided(
            self.minimum, self.trials, self.level, self.trials_run, self.passed,
            self.passed + self.errored)
        observed = self.passed + self.failed
        return SequentialDecision(
            state=state, trials_run=self.trials_run, passed=self.passed, failed=self.failed,
            errored=self.errored, minimum=design.minimum, trials=design.trials,
            level=design.level, estimate=self.passed / observed if observed else None,
            lower=lower, upper=upper, projected_trials=projected,
            more_trials=None if projected is None else projected - design.trials,
            more_trials_chance=chance, projection_reason=reason)


@lru_cache(maxsize=1024)
def _decided(minimum: float, trials: int, level: float, n: int, low: int, high: int
             ) -> tuple[str, float, float, int | None, float | None, str | None]:
    """The state, bounds and projection after ``n`` trials, ``low`` passes and ``high`` passes
    or errored: cached, as a pytest session decides each marked test when it ends and again
    when it stores the run (the projection of a long undecided run takes a second)."""
    design = design_of(minimum, trials, level)
    state = _state(design, n, low, high)
    lower, upper = _bounds(design, n, low, high)
    projected = chance = reason = None
    if state == INSUFFICIENT_EVIDENCE:
        projected, chance, reason = _projection(design, n, low, high)
    return state, lower, upper, projected, chance, reason


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
    (dropped mass counted as not reaching it): `BinomialPaths` stepped, cut at each look's
    count and pruned after each, for one rate, written out (the boundary can be thousands of
    looks long, and each look's calls cost more than its arithmetic)."""
    mass = np.zeros(len(boundary) + 2)
    mass[0] = 1.0
    q = 1.0 - p
    lo = hi = 0
    crossed = 0.0
    for c in boundary:
        window = mass[lo : hi + 2]
        moved = window[:-1] * p
        window *= q
        window[1:] += moved
        hi += 1
        if c <= hi:  # the paths at c and above cross
            start = max(c, lo)
            crossed += float(mass[start : hi + 1].sum())
            mass[start : hi + 1] = 0.0
            hi = max(lo, c - 1)
        if mass[lo] < NEGLIGIBLE:  # drop the low counts below NEGLIGIBLE
            kept = np.flatnonzero(mass[lo : hi + 1] >= NEGLIGIBLE)
            if kept.size:
                lo += int(kept[0])
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
    return total, _crossing_chance(share, pass_boundary(rate, total, half_alpha)[0]), None
