"""Simultaneous intervals over a family of candidates, and the cost–success front
(docs/board.md#why-the-intervals-are-simultaneous).

The board (docs/board.md) compares many candidates at once: each one's rate per criterion,
its paired difference against the baseline per criterion, and its cost per case. With twenty
candidates, twenty intervals at 95 % each miss about one true value between them; the board's
intervals instead hold **together**, with probability at least the level, over the whole
family of intervals that decide anything (`can_ship`, `dominated_by`).

Method: Bonferroni. A family of ``F`` intervals at familywise level ``1 − α`` is made of
intervals each at ``1 − α/F`` (`each_level`); by the union bound, the chance that any of them
misses is at most ``F · α/F = α``, whatever the dependence between them (the candidates share
their cases and the baseline, so they are far from independent). Each interval is one of the
project's own, valid at every sample size, equal-tailed (each side spends half its error):

- a rate over 0/1 values: Clopper–Pearson (`rate_interval`); over fractions (shares of
  trials): Bentkus (`bentkus_interval`), order-free;
- a paired difference against the baseline: the melded interval (0/1 values on both sides,
  `binary_difference_interval`), else the betting interval of the differences in the order
  the caller fixed (`paired_difference_interval`);
- cost per case: the betting interval of the costs divided by a cap every case's cost is at
  most (`cost_interval`). No interval for the mean of unbounded values can be valid (Bahadur &
  Savage 1956), so the cap is required; the betting interval adapts to the costs' variance,
  which for skewed costs (most cases far below the cap, a few near it) is much smaller than the
  worst case the Bentkus bound assumes for values of that mean.

Derived intervals cost nothing: cost per successful case is cost per case over the success
rate, and its interval ``[cost lower / rate upper, cost upper / rate lower]`` holds whenever
both of its parts do, so it adds no member to the family.

Each side of each interval spends half its ``α/F``; so the chance that any candidate's
difference lower bound exceeds a true difference of exactly ``−margin`` (a candidate wrongly
shown non-inferior) is at most ``α/2`` over the whole family.

The front. Candidate B **dominates** A when B's success lower bound is above A's success upper
bound and B's cost-per-case upper bound is below A's cost-per-case lower bound — both on the
board's own simultaneous intervals, so a domination shown is real with the familywise
probability. A candidate no other dominates is on the front (`dominated_by`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, localcontext

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count
from oloproof.stats.bentkus import bentkus_interval
from oloproof.stats.betting import MeanInterval, bounded_mean_intervals
from oloproof.stats.binomial import rate_interval
from oloproof.stats.paired import (
    binary_difference_interval,
    difference_bounds,
    paired_difference_interval,
)

__all__ = [
    "SIMULTANEOUS_METHOD",
    "BoardCandidate",
    "CandidateFigures",
    "SimultaneousBoard",
    "board_family_size",
    "case_rate",
    "cost_interval",
    "dominated_by",
    "each_level",
    "paired_difference",
    "per_success",
    "simultaneous_board",
]

SIMULTANEOUS_METHOD = "bonferroni"
COST_METHOD = "betting_capped"

FloatArray = npt.NDArray[np.float64]


def each_level(level: float, family_size: int) -> float:
    """The level of each of ``family_size`` intervals that hold together at ``level``:
    ``1 − α/F``, computed from the level's decimal text and rounded up where a float cannot
    hold it exactly, so the family's error is never more than ``α``.

    >>> from oloproof.stats.simultaneous import each_level
    >>> each_level(0.95, 1), each_level(0.95, 10), each_level(0.9, 4)
    (0.95, 0.995, 0.975)
    """
    check_level(level)
    size = count("family_size", family_size)
    if size < 1:
        raise ValueError("a family holds at least one interval")
    with localcontext(prec=60):
        exact = Decimal(1) - (Decimal(1) - Decimal(repr(level))) / size
        value = float(exact)
        # Each interval takes its α from the level's decimal text (`tail_probabilities`): so
        # that text, not the float's binary value, is what must not fall below 1 − α/F.
        while Decimal(repr(value)) < exact:
            value = math.nextafter(value, 1.0)
    return value


def _values(name: str, values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    """`values` as an array: finite numbers, NaN where a case is missing."""
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one sequence of numbers")
    if np.any(np.isinf(array)):
        raise ValueError(f"{name} must be finite numbers (NaN for a missing case)")
    return array


def cost_interval(costs: Sequence[float] | npt.ArrayLike, cap: float, level: float
                  ) -> MeanInterval:
    """Mean cost per case with its interval, every case's cost in ``[0, cap]``
    (``method: "betting_capped"``).

    Method: the betting interval of Waudby-Smith & Ramdas (2023)
    (:func:`~oloproof.stats.betting.bounded_mean_interval`) over ``cost / cap``, in the order
    given, scaled back by ``cap``. Valid at ``1 − α`` for costs of a common mean anywhere in
    ``[0, cap]``, however skewed; a cost above the cap is an error (the interval would not
    hold). A missing case's cost (NaN) is 0 for the lower bound and the cap for the upper; the
    estimate is the observed costs' mean (``None`` if none). With no case every field is
    ``None``.

    >>> from oloproof.stats.simultaneous import cost_interval
    >>> found = cost_interval([0.01] * 36 + [0.5] * 4, 1.0, 0.95)
    >>> round(found.estimate, 4), round(found.lower, 4), round(found.upper, 4), found.method
    (0.059, 0.0113, 0.1857, 'betting_capped')
    """
    return _cost_intervals([costs], cap, level)[0]


def _cost_intervals(costs: Sequence[Sequence[float] | npt.ArrayLike], cap: float, level: float
                    ) -> list[MeanInterval]:
    """`cost_interval` of each of ``costs`` (sequences of one length): the same intervals,
    the betting bounds of all of them searched side by side (`bounded_mean_intervals`)."""
    rows = [_values("costs", c) for c in costs]
    if not (math.isfinite(cap) and cap > 0):
        raise ValueError(f"the cost cap must be a positive number, got {cap!r}")
    observed = [x[~np.isnan(x)] for x in rows]
    for seen in observed:
        if np.any(seen < 0) or np.any(seen > cap):
            worst = float(seen.max()) if np.any(seen > cap) else float(seen.min())
            raise ValueError(f"a case's cost ({worst:g}) is outside [0, cap={cap:g}]: the "
                             "interval holds only for costs within the cap; raise the cap")
    # A missing case's cost is anywhere in [0, cap]: nothing below, the cap above.
    shares = np.vstack(rows) / cap
    scaled = bounded_mean_intervals(_filled(shares, 0.0), _filled(shares, 1.0), level)
    found = []
    for one, seen in zip(scaled, observed, strict=True):
        if one.lower is None or one.upper is None:
            found.append(MeanInterval(None, None, None, COST_METHOD))
            continue
        estimate = float(seen.mean()) if seen.size else None
        lower, upper = one.lower * cap, min(cap, one.upper * cap)
        if estimate is not None:
            lower, upper = min(lower, estimate), max(upper, estimate)
        found.append(MeanInterval(estimate, lower, upper, COST_METHOD))
    return found


def _filled(x: FloatArray, fill: float) -> FloatArray:
    """``x`` with each NaN (a missing case) replaced by ``fill``: ``np.nan_to_num(x, nan=fill)``
    for the arrays `_values` admits (finite or NaN), without its wrapper's cost — a board asks
    for a few hundred of them."""
    filled: FloatArray = np.where(np.isnan(x), fill, x)
    return filled


def _is_binary(x: FloatArray) -> bool:
    """Every observed value 0 or 1 (a missing one, NaN, is either)."""
    return bool(np.all((x == 0.0) | (x == 1.0) | np.isnan(x)))


def case_rate(values: Sequence[float] | npt.ArrayLike, level: float) -> MeanInterval:
    """A rate over per-case values in [0, 1] (NaN for a missing case, bounded the worst way
    on each side): Clopper–Pearson over 0/1 values, Bentkus over fractions — one member of a
    board's family, at the level `each_level` gives it.

    >>> from oloproof.stats.simultaneous import case_rate
    >>> found = case_rate([1.0] * 18 + [0.0, float("nan")], 0.95)
    >>> round(found.estimate, 4), round(found.lower, 4), round(found.upper, 4)
    (0.9474, 0.683, 0.9987)
    """
    return _rate(_values("values", values), level)


def paired_difference(candidate: Sequence[float] | npt.ArrayLike,
                      baseline: Sequence[float] | npt.ArrayLike, level: float) -> MeanInterval:
    """The paired difference candidate − baseline of per-case values in one case order (NaN
    where a side is missing, bounded the worst way): melded over 0/1 values on both sides,
    else the betting interval in the order given."""
    return _difference(_values("candidate", candidate), _values("baseline", baseline), level)


def _rate(x: FloatArray, level: float) -> MeanInterval:
    """The rate with missing cases (NaN) bounded the worst way on each side."""
    if _is_binary(x):
        missing = int(np.isnan(x).sum())
        found = rate_interval(int(np.nansum(x)), int(x.size) - missing, missing, level)
        return MeanInterval(found.estimate, found.lower, found.upper, found.method)
    return bentkus_interval(_filled(x, 0.0), _filled(x, 1.0), level)


def _difference(candidate: FloatArray, baseline: FloatArray, level: float) -> MeanInterval:
    """The paired difference, a pair with a side missing (NaN) bounded the worst way."""
    low, high = difference_bounds(_filled(baseline, 0.0), _filled(baseline, 1.0),
                                  _filled(candidate, 0.0), _filled(candidate, 1.0))
    if _is_binary(candidate) and _is_binary(baseline):
        return binary_difference_interval(low, high, level)
    return paired_difference_interval(low, high, level)


@dataclass(frozen=True)
class BoardCandidate:
    """One candidate's per-case figures, every sequence in the board's one case order (the
    cases paired by id with the baseline's): per criterion a value in [0, 1] per case (a 0/1
    verdict, or the case's share of passing trials), and its own cost per case; NaN where the
    case is missing (errored, excluded), which every interval bounds the worst way — a rate's
    missing case 0 for its lower bound and 1 for its upper, a cost 0 and the cap."""

    name: str
    values: Mapping[str, Sequence[float]]
    costs: Sequence[float]


@dataclass(frozen=True)
class CandidateFigures:
    """What the board shows of one candidate, every interval simultaneous with the others.
    `difference` is empty for the baseline; `cost_per_success`'s bounds are `None` where the
    success rate's lower bound is 0 (no upper bound) or it has no estimate."""

    name: str
    metrics: dict[str, MeanInterval]
    difference: dict[str, MeanInterval]
    cost_per_case: MeanInterval
    cost_per_success: MeanInterval
    dominated_by: tuple[str, ...] = field(default=())


@dataclass(frozen=True)
class SimultaneousBoard:
    """The board's figures: `level` is familywise over the `family_size` intervals that decide
    (every rate, every difference, every cost per case), each at `each_level`."""

    level: float
    each_level: float
    family_size: int
    method: str
    baseline: str
    success: str
    candidates: tuple[CandidateFigures, ...]


def board_family_size(candidates: int, criteria: int) -> int:
    """How many intervals a board of ``candidates`` (the baseline among them) and ``criteria``
    holds: each candidate's rate per criterion and its cost per case, and each other
    candidate's difference per criterion against the baseline.

    >>> from oloproof.stats.simultaneous import board_family_size
    >>> board_family_size(6, 1)
    17
    """
    k, c = count("candidates", candidates), count("criteria", criteria)
    if k < 1 or c < 1:
        raise ValueError("a board holds at least one candidate and one criterion")
    return k * (c + 1) + (k - 1) * c


def per_success(cost: MeanInterval, success: MeanInterval) -> MeanInterval:
    """Cost per successful case: cost per case over the success rate, its interval
    ``[cost lower / rate upper, cost upper / rate lower]`` (no member of the family: it holds
    whenever both parts do); a bound is `None` where the rate's bound it divides by is 0."""
    method = f"{cost.method}/{success.method}"
    if cost.estimate is None or success.estimate is None or cost.lower is None \
            or cost.upper is None or success.lower is None or success.upper is None:
        return MeanInterval(None, None, None, method)
    estimate = cost.estimate / success.estimate if success.estimate > 0 else None
    lower = cost.lower / success.upper if success.upper > 0 else None
    upper = cost.upper / success.lower if success.lower > 0 else None
    return MeanInterval(estimate, lower, upper, method)


def dominated_by(points: Sequence[tuple[str, MeanInterval, MeanInterval]]
                 ) -> dict[str, tuple[str, ...]]:
    """For each ``(name, success, cost per case)``, the names of the candidates that dominate
    it, in the order given: B dominates A iff B's success lower bound > A's success upper bound
    and B's cost upper bound < A's cost lower bound. A bound that is `None` dominates nothing
    and is dominated by nothing. The front is the candidates with an empty tuple.

    >>> from oloproof.stats import MeanInterval
    >>> from oloproof.stats.simultaneous import dominated_by
    >>> good = ("good", MeanInterval(0.9, 0.85, 0.95, ""), MeanInterval(1.0, 0.9, 1.1, ""))
    >>> poor = ("poor", MeanInterval(0.6, 0.5, 0.7, ""), MeanInterval(2.0, 1.8, 2.2, ""))
    >>> dominated_by([good, poor])
    {'good': (), 'poor': ('good',)}
    """
    names = [p[0] for p in points]
    if len(set(names)) != len(names):
        raise ValueError("two candidates share a name")
    found: dict[str, tuple[str, ...]] = {}
    for name, success, cost in points:
        beaten = []
        for other, other_success, other_cost in points:
            if other == name or None in (success.upper, cost.lower, other_success.lower,
                                         other_cost.upper):
                continue
            assert success.upper is not None and cost.lower is not None
            assert other_success.lower is not None and other_cost.upper is not None
            if other_success.lower > success.upper and other_cost.upper < cost.lower:
                beaten.append(other)
        found[name] = tuple(beaten)
    return found


def simultaneous_board(candidates: Sequence[BoardCandidate], baseline: str, success: str,
                       cost_cap: float, level: float) -> SimultaneousBoard:
    """Every candidate's rates, differences against `baseline`, cost per case and per success,
    with intervals that hold together at `level` (the module's text), and each candidate's
    `dominated_by` on the front of `success` against cost per case.

    Every candidate has the same criteria, and every sequence the same length (the cases the
    candidates share, in one order); `baseline` names one of them. A difference of fractions
    depends on that order (the betting interval), so the caller fixes it (by case digest).

    Raises:
        ValueError: no candidate; names repeated; `baseline` or `success` not among them;
            criteria or case counts that differ; a value outside [0, 1]; a cost outside
            ``[0, cost_cap]``.
    """
    if not candidates:
        raise ValueError("a board needs at least one candidate")
    names = [c.name for c in candidates]
    if len(set(names)) != len(names):
        raise ValueError("two candidates share a name")
    if baseline not in names:
        raise ValueError(f"the baseline {baseline!r} is not among the candidates")
    criteria = list(candidates[0].values)
    if success not in criteria:
        raise ValueError(f"the success criterion {success!r} is not among the criteria "
                         f"({', '.join(criteria) or 'none'})")
    n = len(candidates[0].costs)
    arrays: dict[str, dict[str, FloatArray]] = {}
    for c in candidates:
        if list(c.values) != criteria:
            raise ValueError(f"candidate {c.name!r} has criteria {list(c.values)}, the first "
                             f"has {criteria}: every candidate is measured by the same ones")
        arrays[c.name] = {}
        for criterion, values in c.values.items():
            x = _values(f"{c.name}'s {criterion}", values)
            if x.size != n or len(c.costs) != n:
                raise ValueError(f"candidate {c.name!r} has another number of cases than "
                                 f"{candidates[0].name!r} ({n}): pair the cases first")
            if np.any(x < 0) or np.any(x > 1):  # (NaN, a missing case, is neither)
                raise ValueError(f"{c.name}'s {criterion} values must lie in [0, 1]")
            arrays[c.name][criterion] = x
    size = board_family_size(len(candidates), len(criteria))
    each = each_level(level, size)
    base = arrays[baseline]
    costs = _cost_intervals([c.costs for c in candidates], cost_cap, each)
    figures = []
    for c, cost in zip(candidates, costs, strict=True):
        mine = arrays[c.name]
        metrics = {k: _rate(mine[k], each) for k in criteria}
        difference = {} if c.name == baseline else \
            {k: _difference(mine[k], base[k], each) for k in criteria}
        figures.append(CandidateFigures(c.name, metrics, difference, cost,
                                        per_success(cost, metrics[success])))
    beaten = dominated_by([(f.name, f.metrics[success], f.cost_per_case) for f in figures])
    done = tuple(CandidateFigures(f.name, f.metrics, f.difference, f.cost_per_case,
                                  f.cost_per_success, beaten[f.name]) for f in figures)
    return SimultaneousBoard(float(level), each, size, SIMULTANEOUS_METHOD, baseline, success,
                             done)
