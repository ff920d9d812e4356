"""Projections: what it would take to decide a rule
(docs/compare.md#what-it-would-take-to-decide-oloproof-plan) — a projection, not a promise.

Two totals per undecided interval rule (``min: t`` or ``max: t``) on a rate with estimate ``p̂``:

- **at the same rate** (:func:`rate_projection`, :func:`mean_projection`): the smallest total
  of observed cases ``N`` for which the interval *at the same rate* would decide the rule —
  PASS when ``p̂`` is on the passing side of ``t``, FAIL when it is on the failing side — or none
  when ``p̂ = t`` (no number of cases at that rate ever leaves the threshold) or no ``N`` up to
  the search limit would. A suite whose true rate is ``p̂`` reaches that total's decision only
  about half the time: its estimate falls short as often as not.
- **for an 80% chance** (:func:`likely_projection`): a total at which a suite whose true rate
  is ``p̂`` would decide the rule the same way with probability at least 0.8.

"The interval at the same rate" for the exact interval of 0/1 values (``N`` cases) is the
Clopper–Pearson interval of ``k = p̂·N`` successes in its beta-quantile form, with ``k`` allowed
to be fractional: ``lower(N) = Beta⁻¹(α/2; p̂N, (1 − p̂)N + 1)`` (0 when ``p̂ = 0``) and
``upper(N) = Beta⁻¹(1 − α/2; p̂N + 1, (1 − p̂)N)`` (1 when ``p̂ = 1``). At every ``N`` where
``p̂N`` is a whole number — every multiple of ``observed`` — it *is* the exact interval of
docs/concepts.md#pass-rates-exact-intervals-with-missing-cases
(``k`` of ``N``). Why not round ``k``: ``round(p̂N)`` moves the rate up and down with ``N`` (33
of 40 at N = 41 becomes 34/41 = 0.829, then 0.810 at N = 42), so which ``N`` first clears would
depend on rounding luck and a bigger ``N`` could un-clear; the continuous form keeps the rate
exactly ``p̂`` and its bounds move monotonically towards it as ``N`` grows, so "the smallest ``N``"
is well defined and found by galloping and bisection in ``O(log N)`` evaluations. For values in
[0, 1] (shares of trials) the interval is the Bentkus interval (`oloproof.stats.bentkus`),
which depends on the values only through their sum: at the same rate it is the interval of a
sum ``p̂·N`` over ``N`` cases, equally well defined.

The chance of deciding at ``N`` if the true rate is ``p̂``:

- 0/1 values (the exact interval; or the Bentkus interval when every observed value is 0 or
  1): **exact**. The decision is a threshold on the count of passing cases ``K ~ Binomial(N,
  p̂)`` — the exact lower bound reaches ``t`` exactly when ``P_t(B ≥ k) ≤ α/2`` (the interval's
  duality with the binomial test), the Bentkus one when the sum reaches the critical sum of
  `bentkus_critical_sum` — so the chance is one binomial tail.
- fractional values: **simulated**. 4,000 suites of ``N`` cases drawn from this run's observed
  per-case values (with a fixed seed, so a plan is reproducible), each deciding when its sum
  passes the critical sum.

The chance is not monotone in ``N`` — it saw-tooths as the critical count steps up — so the
total reported is found by doubling until the chance reaches 0.8 and bisecting: a total at which
the chance is at least 0.8 and one case fewer falls short, not necessarily the smallest such.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from oloproof.stats._checks import check_level, count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["BENTKUS_PROJECTION_METHOD", "EXACT_CHANCE_METHOD", "LIKELY_CHANCE",
           "PROJECTION_LIMIT", "PROJECTION_METHOD", "SIMULATED_CHANCE_METHOD",
           "LikelyProjection", "RateProjection", "decision_chance", "exact_bounds_at_rate",
           "likely_projection", "mean_projection", "rate_projection"]

PROJECTION_METHOD = "clopper-pearson at the same rate"
BENTKUS_PROJECTION_METHOD = "bentkus at the same rate"
EXACT_CHANCE_METHOD = "exact, binomial"
SIMULATED_CHANCE = 4_000
SIMULATED_CHANCE_METHOD = (f"simulated, {SIMULATED_CHANCE:,} suites of cases drawn from this "
                           "run's per-case values")
#: The chance of deciding the second total is for.
LIKELY_CHANCE = 0.8
# The simulations' seed: a plan of a stored run is the same every time it is asked for.
_SEED = 20_26
# No projection beyond a billion cases: the threshold is then within rounding of the estimate.
PROJECTION_LIMIT = 1_000_000_000


@dataclass(frozen=True)
class RateProjection:
    """The smallest total that would decide a rule at the current rate, and how it would decide.

    ``total`` and ``state`` are ``None`` when no number of cases would (``reason`` says why:
    ``"estimate_equals_threshold"``, ``"beyond_limit"``, ``"no_observations"``).
    """

    total: int | None
    state: str | None
    reason: str | None
    method: str


def exact_bounds_at_rate(rate: float, total: int, level: float) -> tuple[float, float]:
    """The exact interval of ``rate·total`` successes in ``total`` cases, successes fractional.

    Method: the Clopper–Pearson beta-quantile form, ``lower = Beta⁻¹(α/2; k, N − k + 1)`` and
    ``upper = Beta⁻¹(1 − α/2; k + 1, N − k)`` with ``k = rate·N`` (``lower = 0`` when
    ``k = 0``, ``upper = 1`` when ``k = N``; ``α`` exact from the level's decimal text). Equal
    to :func:`~oloproof.stats.binomial.clopper_pearson` whenever ``rate·N`` is a whole number.

    Example: at a whole number of successes it is Clopper–Pearson's interval.

    >>> from oloproof.stats import clopper_pearson, exact_bounds_at_rate
    >>> exact_bounds_at_rate(0.825, 1000, 0.95) == clopper_pearson(825, 1000, 0.95)
    True
    """
    total = count("total", total)
    check_level(level)
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0.0 <= rate <= 1.0:
        raise ValueError(f"rate must be a number in [0, 1], got {rate!r}")
    if total == 0:
        return (0.0, 1.0)
    _, half_alpha, upper_tail = tail_probabilities(level)
    betaincinv = _scipy_special().betaincinv
    k = rate * total
    lower = 0.0 if rate == 0.0 else float(betaincinv(k, total - k + 1.0, half_alpha))
    upper = 1.0 if rate == 1.0 else float(betaincinv(k + 1.0, total - k, upper_tail))
    return (lower, upper)


def _clears(lower: float, upper: float, threshold: float, is_minimum: bool,
            state: str) -> bool:
    # The rule states of docs/configuration.md#states-reasons-and-exit-codes, as decisions/rules.py
    # applies them to a rate row.
    if is_minimum:
        return lower >= threshold if state == "PASS" else upper < threshold
    return upper <= threshold if state == "PASS" else lower > threshold


def _threshold(minimum: float | None, maximum: float | None) -> tuple[float, bool]:
    if (minimum is None) == (maximum is None):
        raise ValueError("give exactly one of minimum and maximum")
    threshold = float(minimum if minimum is not None else maximum)  # type: ignore[arg-type]
    if not (math.isfinite(threshold) and 0.0 <= threshold <= 1.0):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    return threshold, minimum is not None


def _rate(rate: float) -> float:
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or \
            not 0.0 <= float(rate) <= 1.0:
        raise ValueError(f"rate must be a number in [0, 1], got {rate!r}")
    return float(rate)


def _sought(rate: float, threshold: float, is_minimum: bool) -> str:
    """The state the estimate points to: PASS on the passing side of the threshold."""
    return "PASS" if (rate > threshold) == is_minimum else "FAIL"


def _smallest(decides: Callable[[int], bool], limit: int) -> int | None:
    """The smallest ``N ≥ 1`` with ``decides(N)``, for a ``decides`` that stays true once true
    (doubling, then bisection); None when even ``limit`` does not."""
    known_not, candidate = 0, 1
    while not decides(candidate):
        if candidate >= limit:
            return None
        known_not, candidate = candidate, min(2 * candidate, limit)
    # Bisect (known_not, candidate]: known_not does not decide (or is 0), candidate does.
    while candidate - known_not > 1:
        middle = (known_not + candidate) // 2
        if decides(middle):
            candidate = middle
        else:
            known_not = middle
    return candidate


def rate_projection(
    passed: int,
    observed: int,
    level: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    limit: int = PROJECTION_LIMIT,
) -> RateProjection:
    """The smallest total of observed cases that would decide a ``min``/``max`` rule at the
    current rate ``passed / observed`` (docs/compare.md#what-it-would-take-to-decide-oloproof-plan),
    and the state it would reach.

    Method: see the module docstring — the exact (Clopper–Pearson) interval at the same rate
    with fractional successes, which is the exact interval of
    docs/concepts.md#pass-rates-exact-intervals-with-missing-cases at every multiple
    of ``observed``;
    the rule decides PASS when, for ``min: t``, ``lower ≥ t`` (for ``max: t``,
    ``upper ≤ t``) and FAIL when ``upper < t`` (``lower > t``). The state sought is the one
    the estimate points to (PASS for ``p̂ > t`` under ``min``, FAIL for ``p̂ < t``; the mirror
    under ``max``); ``p̂ = t`` gives no total. The smallest ``N ≥ 1`` is found by doubling
    ``N`` until the rule decides, then bisecting: the bounds approach ``p̂`` monotonically in
    ``N``, as the tests check against a linear scan. Exactly one of ``minimum`` and
    ``maximum`` must be given.

    Example: 33 of 40 passed under `min: 0.7`; at the same rate, 56 cases would pass the rule.

    >>> from oloproof.stats import rate_projection
    >>> rate_projection(33, 40, 0.95, minimum=0.7)
    RateProjection(total=56, state='PASS', reason=None, method='clopper-pearson at the same rate')
    >>> rate_projection(33, 40, 0.95, minimum=0.825).reason
    'estimate_equals_threshold'
    """
    passed = count("passed", passed)
    observed = count("observed", observed)
    limit = count("limit", limit)
    check_level(level)
    threshold, is_minimum = _threshold(minimum, maximum)
    if passed > observed:
        raise ValueError(f"passed ({passed}) must not exceed observed ({observed})")
    if observed == 0:
        return RateProjection(None, None, "no_observations", PROJECTION_METHOD)
    rate = passed / observed
    if rate == threshold:
        return RateProjection(None, None, "estimate_equals_threshold", PROJECTION_METHOD)
    state = _sought(rate, threshold, is_minimum)

    def decides(total: int) -> bool:
        return _clears(*exact_bounds_at_rate(rate, total, level), threshold, is_minimum,
                       state)

    total = _smallest(decides, limit)
    if total is None:
        return RateProjection(None, None, "beyond_limit", PROJECTION_METHOD)
    return RateProjection(total, state, None, PROJECTION_METHOD)


def _bentkus_at_rate(rate: float, total: int, level: float) -> tuple[float, float]:
    """The Bentkus interval of ``total`` values whose mean is ``rate``."""
    from oloproof.stats.bentkus import bentkus_lower_bounds
    s = rate * total
    lows = bentkus_lower_bounds([s, total - s], total, level)
    return float(lows[0]), 1.0 - float(lows[1])


def mean_projection(
    rate: float,
    level: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    limit: int = PROJECTION_LIMIT,
) -> RateProjection:
    """The smallest total of observed cases whose *Bentkus* interval at the current mean
    ``rate`` of per-case values in [0, 1] would decide a ``min``/``max`` rule (`oloproof plan`,
    docs/compare.md).

    Method: as :func:`rate_projection`, with the Bentkus interval (Hoeffding 1963 / Bentkus
    2004, `oloproof.stats.bentkus`) of a sum ``rate·N`` over ``N`` values in place of the exact
    one — it reads the values only through their sum, so the interval at a rate and a total is
    well defined; its bounds approach the rate as ``N`` grows (the tests check this against a
    linear scan).
    """
    rate = _rate(rate)
    limit = count("limit", limit)
    check_level(level)
    threshold, is_minimum = _threshold(minimum, maximum)
    if rate == threshold:
        return RateProjection(None, None, "estimate_equals_threshold",
                              BENTKUS_PROJECTION_METHOD)
    state = _sought(rate, threshold, is_minimum)

    def decides(total: int) -> bool:
        return _clears(*_bentkus_at_rate(rate, total, level), threshold, is_minimum, state)

    total = _smallest(decides, limit)
    if total is None:
        return RateProjection(None, None, "beyond_limit", BENTKUS_PROJECTION_METHOD)
    return RateProjection(total, state, None, BENTKUS_PROJECTION_METHOD)


@dataclass(frozen=True)
class LikelyProjection:
    """A total at which a suite whose true rate is the estimate would decide a rule the way
    the estimate points with at least ``LIKELY_CHANCE`` (0.8), and that chance.

    ``total``, ``chance`` and ``state`` are ``None`` when no total up to the limit would
    (``reason`` as in :class:`RateProjection`). ``method`` says how the chance was computed:
    ``EXACT_CHANCE_METHOD`` or ``SIMULATED_CHANCE_METHOD``.
    """

    total: int | None
    chance: float | None
    state: str | None
    reason: str | None
    method: str


def _count_needed(total: int, threshold: float, half_alpha: float, upper_side: bool) -> int:
    """The smallest count ``k`` of ``total`` whose exact *lower* bound reaches ``threshold``
    (``upper_side`` False: ``P_t(B ≥ k) ≤ α/2``), or the largest whose *upper* bound stays
    below it (``upper_side``: ``P_t(B ≤ k) < α/2``; −1 when none); by bisection on ``k``, each
    tail monotone in it."""
    special = _scipy_special()
    if not upper_side:
        if threshold <= 0.0:
            return 0  # the lower bound is never below 0
        low, high = 0, total + 1  # k = 0 never qualifies, total + 1 always does
        while high - low > 1:
            middle = (low + high) // 2
            if float(special.bdtrc(middle - 1, total, threshold)) <= half_alpha:
                high = middle
            else:
                low = middle
        return high
    low, high = -1, total  # k = −1 always qualifies, k = total never does
    while high - low > 1:
        middle = (low + high) // 2
        if float(special.bdtr(middle, total, threshold)) < half_alpha:
            low = middle
        else:
            high = middle
    return low


def decision_chance(
    rate: float,
    total: int,
    level: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    values: Sequence[float] | None = None,
) -> tuple[float, str]:
    """The chance that ``total`` observed cases decide a ``min``/``max`` rule the way the rate
    points, if the true rate is ``rate``; and how it was computed.

    ``values`` None: each case is 0 or 1 and the interval is the exact one — the decision is a
    threshold on the count ``K ~ Binomial(total, rate)`` found from the interval's duality with
    the binomial test (the lower bound reaches ``t`` iff ``P_t(B ≥ k) ≤ α/2``; the upper bound
    is below ``t`` iff ``P_t(B ≤ k) < α/2``): exact. ``values`` given: the interval is the
    Bentkus one, which decides when the sum of the values passes
    :func:`~oloproof.stats.bentkus.bentkus_critical_sum`; with every value 0 or 1 the sum is
    ``Binomial(total, rate)`` (exact), else suites of ``total`` cases are drawn from the values
    (4,000 of them, multinomial counts of the distinct values, a fixed seed): simulated.
    """
    import numpy as np

    from oloproof.stats.bentkus import bentkus_critical_sum
    rate = _rate(rate)
    total = count("total", total)
    threshold, is_minimum = _threshold(minimum, maximum)
    _, half_alpha, _ = tail_probabilities(level)
    state = _sought(rate, threshold, is_minimum)
    # Which bound decides: the lower one for a PASS under min or a FAIL under max.
    on_lower = (state == "PASS") == is_minimum
    special = _scipy_special()
    if values is None:
        if on_lower:
            needed = _count_needed(total, threshold, half_alpha, upper_side=False)
            chance = 1.0 if needed <= 0 else float(special.bdtrc(needed - 1, total, rate))
        else:
            most = _count_needed(total, threshold, half_alpha, upper_side=True)
            chance = 0.0 if most < 0 else float(special.bdtr(most, total, rate))
        return chance, EXACT_CHANCE_METHOD
    sample = np.asarray(values, dtype=np.float64)
    if sample.size == 0:
        raise ValueError("values must hold at least one observed per-case value")
    # The sums that decide: at or above the critical sum for a lower bound at t; at or below
    # total − (the critical sum at 1 − t) for an upper bound below t (mirrored).
    if on_lower:
        cut = bentkus_critical_sum(total, threshold, level)
    else:
        cut = total - bentkus_critical_sum(total, 1.0 - threshold, level)
    distinct, counts = np.unique(sample, return_counts=True)
    if np.all((distinct == 0.0) | (distinct == 1.0)):
        if on_lower:
            needed = math.ceil(cut) if math.isfinite(cut) else total + 1
            chance = 1.0 if needed <= 0 else float(special.bdtrc(needed - 1, total, rate))
        else:
            most = math.floor(cut) if math.isfinite(cut) else -1
            chance = 0.0 if most < 0 else float(special.bdtr(most, total, rate))
        return chance, EXACT_CHANCE_METHOD
    rng = np.random.default_rng(_SEED)
    drawn = rng.multinomial(total, counts / counts.sum(), size=SIMULATED_CHANCE)
    sums = drawn @ distinct
    decided = sums >= cut if on_lower else sums <= cut
    return float(decided.mean()), SIMULATED_CHANCE_METHOD


def likely_projection(
    rate: float,
    level: float,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    values: Sequence[float] | None = None,
    chance: float = LIKELY_CHANCE,
    limit: int = PROJECTION_LIMIT,
) -> LikelyProjection:
    """A total of observed cases at which a suite whose true rate is ``rate`` decides a
    ``min``/``max`` rule the way the rate points with probability at least ``chance`` (0.8).

    Method: :func:`decision_chance` (exact for 0/1 values, simulated from ``values`` for
    fractions), searched by doubling the total until the chance reaches ``chance`` and
    bisecting. The chance saw-tooths in the total, so the result is a total where it is at
    least ``chance`` and one case fewer falls short — not necessarily the smallest such.

    Example: with a true rate of 0.825, 102 cases pass `min: 0.7` 83% of the time.

    >>> from oloproof.stats import likely_projection
    >>> found = likely_projection(0.825, 0.95, minimum=0.7)
    >>> found.total, round(found.chance, 3), found.state, found.method
    (102, 0.83, 'PASS', 'exact, binomial')
    """
    rate = _rate(rate)
    limit = count("limit", limit)
    threshold, is_minimum = _threshold(minimum, maximum)
    bound = {"minimum": minimum, "maximum": maximum}
    method = EXACT_CHANCE_METHOD if values is None else SIMULATED_CHANCE_METHOD
    if rate == threshold:
        return LikelyProjection(None, None, None, "estimate_equals_threshold", method)
    state = _sought(rate, threshold, is_minimum)
    seen: dict[int, tuple[float, str]] = {}

    def reaches(total: int) -> bool:
        if total not in seen:
            seen[total] = decision_chance(rate, total, level, values=values, **bound)
        return seen[total][0] >= chance

    total = _smallest(reaches, limit)
    if total is None:
        return LikelyProjection(None, None, None, "beyond_limit", method)
    found, method = seen[total]
    return LikelyProjection(total, found, state, None, method)
