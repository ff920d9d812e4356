"""The chance that a run, continued to more observed cases, reaches the decision its estimate
points to — averaged over what the run says about the rate (assurance), not at the estimate
alone (docs/compare.md#what-it-would-take-to-decide-oloproof-plan).

Why. A chance computed as if the true rate were the estimate is a chance about a rate the run
does not know: an audit drew 40-case runs near a 0.70 threshold and the total `plan` gave for
"an 80% chance" reached its decision 46% of the time at a true rate of 0.65 and 19% at 0.68.
Here the rate is drawn from the run's own confidence distribution, and the run is continued —
its observed cases stay, and the cases still to come are drawn at that rate.

The confidence distribution of ``k`` passes in ``n`` observed cases (0/1 values) is the even
mixture of ``Beta(k, n − k + 1)`` and ``Beta(k + 1, n − k)`` — the two Beta distributions whose
``α/2`` and ``1 − α/2`` quantiles are the exact (Clopper–Pearson) bounds, at every level (the
first is a point mass at 0 when ``k = 0``, the second at 1 when ``k = n``). So the chance that
the ``m`` cases still to come bring at least ``j`` passes is ``E P(Bin(m, p) ≥ j)`` with ``p``
drawn from it: a beta-binomial tail for each part, integrated over ``p`` by Gauss–Legendre
pieces cut at the Beta's quantiles and around the binomial's step (``m`` up to a billion);
the mass beyond the Beta's ``10⁻¹³`` quantiles is left out (each figure is within about
``10⁻¹²``). Exact otherwise: no simulation.

For fractions (a case's share of its trials) no Beta describes the values: the run's
confidence distribution is Rubin's (1981) Bayesian bootstrap — weights over the observed
values drawn from a flat Dirichlet — and the cases to come are drawn from the values with
those weights: 4,000 continuations with a fixed seed, so a plan is the same every time.

What it is not. Averaged over the rate, the chance is calibrated only in that average: over
runs whose true rates are spread as widely as the run's own uncertainty, the printed chance
and the share of continued runs that decide agree (`benchmarks/validity/plan_assurance.py`).
For one true rate it cannot be: at a true rate equal to the threshold a continued run almost
never decides, whatever the run looked like, and no figure computed from the run can know that
it is there. And no number of cases can bring the chance above the share of the confidence
distribution on the estimate's side of the threshold (:func:`reachable_chance`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special
from oloproof.stats.projection import rule_threshold, smallest_deciding

__all__ = ["ASSURANCE", "ASSURED_CHANCE", "EXACT_ASSURANCE_METHOD",
           "SIMULATED_ASSURANCE_METHOD", "AssuredProjection", "assured_projection",
           "continued_chance", "count_chance", "reachable_chance", "values_chance",
           "values_reachable_chance"]

#: The chance the second total of `oloproof plan` is for.
ASSURED_CHANCE = 0.8
#: The assumption every chance here rests on, in words (the plan prints it).
ASSURANCE = ("the rate drawn from this run's confidence distribution, the run continued with "
             "its observed cases kept")
EXACT_ASSURANCE_METHOD = "exact: beta-binomial over the run's confidence distribution"
SIMULATED_DRAWS = 4_000
SIMULATED_ASSURANCE_METHOD = (f"simulated: {SIMULATED_DRAWS:,} continuations, the rate drawn "
                              "by the Bayesian bootstrap of this run's per-case values")
# The simulations' seed: a plan of a stored run is the same every time it is asked for.
_SEED = 20_26
# The Beta's mass left out on each side of the integral.
_EDGE = 1e-13
# Gauss–Legendre nodes per piece.
_NODES = 24
# Where the integral over a Beta is cut: these quantiles, and around the binomial's step.
_QUANTILES = (0.001, 0.02, 0.1, 0.3, 0.5, 0.7, 0.9, 0.98, 0.999)
_STEP_WIDTHS = (-40.0, -10.0, -3.0, 0.0, 3.0, 10.0, 40.0)
_CUTS = np.asarray((_EDGE, *_QUANTILES, 1.0 - _EDGE))
_STEPS = np.asarray(_STEP_WIDTHS)
_RULE = np.polynomial.legendre.leggauss(_NODES)

FloatArray = npt.NDArray[np.float64]


def _components(passed: int, observed: int) -> list[tuple[float, float, float]]:
    """The confidence distribution of ``passed`` of ``observed`` as (weight, a, b) Beta parts;
    ``a = 0`` is a point mass at 0 and ``b = 0`` one at 1."""
    return [(0.5, float(passed), float(observed - passed + 1)),
            (0.5, float(passed + 1), float(observed - passed))]


def _beta_expectation(tail: Callable[[FloatArray], FloatArray], a: float, b: float,
                      step: float | None, width: float) -> float:
    """``E tail(p)`` for ``p ~ Beta(a, b)``: Gauss–Legendre pieces between the Beta's quantiles
    and, where the integrand steps (a binomial tail in ``p``), at ``step ± c·width``."""
    special = _scipy_special()
    if a == 0.0:
        return float(tail(np.zeros(1))[0])
    if b == 0.0:
        return float(tail(np.ones(1))[0])
    quantiles = np.asarray(special.betaincinv(a, b, _CUTS), dtype=np.float64)
    lo, hi = float(quantiles[0]), float(quantiles[-1])
    cuts = quantiles
    if step is not None:
        cuts = np.concatenate([cuts, step + width * _STEPS])
    edges = np.unique(cuts[(cuts >= lo) & (cuts <= hi)])
    nodes, weights = _RULE
    left, right = edges[:-1], edges[1:]
    half = (right - left)[:, None] / 2.0
    p = ((left + right)[:, None] / 2.0 + half * nodes[None, :]).ravel()
    log_density = ((a - 1.0) * np.log(p) + (b - 1.0) * np.log1p(-p)
                   - float(special.betaln(a, b)))
    total = float(((half * weights[None, :]).ravel() * np.exp(log_density) * tail(p)).sum())
    return min(1.0, max(0.0, total))


def count_chance(passed: int, observed: int, more: int, *, at_least: int | None = None,
                 at_most: int | None = None) -> float:
    """The chance that ``more`` cases still to come bring at least ``at_least`` passes (or at
    most ``at_most``), the rate drawn from the confidence distribution of ``passed`` of
    ``observed`` (module docstring): exact, to about ``10⁻¹²``. Exactly one of ``at_least``
    and ``at_most`` is given."""
    passed, observed, more = count("passed", passed), count("observed", observed), \
        count("more", more)
    if passed > observed:
        raise ValueError(f"passed ({passed}) must not exceed observed ({observed})")
    if (at_least is None) == (at_most is None):
        raise ValueError("give exactly one of at_least and at_most")
    special = _scipy_special()
    if at_least is not None:
        if at_least <= 0:
            return 1.0
        if at_least > more:
            return 0.0
        need = int(at_least)

        def tail(p: FloatArray) -> FloatArray:
            result: FloatArray = np.asarray(special.bdtrc(need - 1, more, p), dtype=float)
            return result
        step = need / more
    else:
        assert at_most is not None
        if at_most < 0:
            return 0.0
        if at_most >= more:
            return 1.0
        most = int(at_most)

        def tail(p: FloatArray) -> FloatArray:
            result: FloatArray = np.asarray(special.bdtr(most, more, p), dtype=float)
            return result
        step = (most + 1) / more
    width = math.sqrt(max(step * (1.0 - step), 1.0 / more) / more)
    return math.fsum(weight * _beta_expectation(tail, a, b, step, width)
                     for weight, a, b in _components(passed, observed))


def reachable_chance(passed: int, observed: int, threshold: float, above: bool) -> float:
    """The share of the confidence distribution of ``passed`` of ``observed`` above the
    threshold (``above``) or below it: the chance no number of cases can exceed, since a true
    rate on the other side never reaches the decision the estimate points to."""
    passed, observed = count("passed", passed), count("observed", observed)
    special = _scipy_special()
    shares = []
    for weight, a, b in _components(passed, observed):
        if a == 0.0:
            below = 1.0
        elif b == 0.0:
            below = 0.0 if threshold < 1.0 else 1.0
        else:
            below = float(special.betainc(a, b, threshold))
        shares.append(weight * ((1.0 - below) if above else below))
    return min(1.0, math.fsum(shares))


def _bootstrap(values: Sequence[float] | npt.ArrayLike
               ) -> tuple[FloatArray, FloatArray, np.random.Generator]:
    sample = np.asarray(values, dtype=np.float64)
    if sample.ndim != 1 or sample.size == 0:
        raise ValueError("values must hold at least one observed per-case value")
    if not np.all(np.isfinite(sample)) or np.any(sample < 0.0) or np.any(sample > 1.0):
        raise ValueError("values must be numbers in [0, 1]")
    distinct, counts = np.unique(sample, return_counts=True)
    rng = np.random.default_rng(_SEED)
    # A flat Dirichlet over the n values, gathered by distinct value: Dirichlet(counts).
    weights = rng.dirichlet(counts.astype(np.float64), size=SIMULATED_DRAWS)
    return distinct, weights, rng


def values_chance(values: Sequence[float] | npt.ArrayLike, more: int, cut: float,
                  above: bool) -> float:
    """The chance that the observed per-case ``values`` plus ``more`` values still to come
    sum to at least ``cut`` (``above``) or at most ``cut``: weights over the values from the
    Bayesian bootstrap, the values to come drawn with them (module docstring), 4,000
    continuations with a fixed seed."""
    more = count("more", more)
    distinct, weights, rng = _bootstrap(values)
    known = float(np.sort(np.asarray(values, dtype=np.float64)).sum())
    drawn = rng.multinomial(more, weights) if more else np.zeros_like(weights)
    sums = known + drawn @ distinct
    decided = sums >= cut if above else sums <= cut
    return float(decided.mean())


def values_reachable_chance(values: Sequence[float] | npt.ArrayLike, threshold: float,
                            above: bool) -> float:
    """The share of the Bayesian bootstrap's means above (or below) the threshold: what no
    number of cases can bring the chance past (as :func:`reachable_chance`)."""
    distinct, weights, _ = _bootstrap(values)
    means = weights @ distinct
    return float((means > threshold).mean() if above else (means < threshold).mean())


# ---- the decision a continued run reaches ----------------------------------------------------


def _count_needed(total: int, threshold: float, half_alpha: float, upper_side: bool) -> int:
    """The smallest count ``k`` of ``total`` whose exact *lower* bound reaches ``threshold``
    (``upper_side`` False: ``P_t(B ≥ k) ≤ α/2``), or the largest whose *upper* bound stays
    below it (``upper_side``: ``P_t(B ≤ k) < α/2``; −1 when none): the interval's duality with
    the binomial test, by bisection on ``k`` (each tail is monotone in it)."""
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


@dataclass(frozen=True)
class _Run:
    """What a plan continues: the observed cases' count and passes (0/1 values) or values."""

    passed: float
    observed: int
    values: FloatArray | None
    threshold: float
    is_minimum: bool

    @property
    def rate(self) -> float:
        return self.passed / self.observed

    @property
    def state(self) -> str:
        """The state the estimate points to: PASS on the passing side of the threshold."""
        return "PASS" if (self.rate > self.threshold) == self.is_minimum else "FAIL"

    @property
    def above(self) -> bool:
        """Whether the decision needs the rate above the threshold (the lower bound reaching
        it: a PASS under ``min``, a FAIL under ``max``)."""
        return (self.state == "PASS") == self.is_minimum

    @property
    def counts(self) -> bool:
        """Whether every value is 0 or 1 (the chance is then exact)."""
        return self.values is None or bool(np.all((self.values == 0.0) | (self.values == 1.0)))


def _run(passed: float | None, observed: int | None, values: Sequence[float] | None,
         minimum: float | None, maximum: float | None) -> _Run:
    threshold, is_minimum = rule_threshold(minimum, maximum)
    if values is not None:
        array = np.asarray(values, dtype=np.float64)
        if array.ndim != 1 or array.size == 0 or not np.all(np.isfinite(array)) or \
                np.any(array < 0.0) or np.any(array > 1.0):
            raise ValueError("values must be at least one observed per-case value in [0, 1]")
        return _Run(float(np.sort(array).sum()), int(array.size), array, threshold,
                    is_minimum)
    if passed is None or observed is None:
        raise ValueError("give passed and observed, or values")
    k, n = count("passed", int(passed)), count("observed", observed)
    if k > n or n == 0:
        raise ValueError(f"passed ({k}) must not exceed observed ({n}), which must be positive")
    return _Run(float(k), n, None, threshold, is_minimum)


def _chance(run: _Run, total: int, level: float) -> float:
    """The chance the run continued to ``total`` observed cases decides its way."""
    from oloproof.stats.bentkus import bentkus_critical_sum
    _, half_alpha, _ = tail_probabilities(level)
    more = max(total - run.observed, 0)
    total = run.observed + more
    if run.values is None:  # the exact interval: a count decides
        if run.above:
            need = _count_needed(total, run.threshold, half_alpha, upper_side=False)
            return count_chance(int(run.passed), run.observed, more,
                                at_least=need - int(run.passed))
        most = _count_needed(total, run.threshold, half_alpha, upper_side=True)
        return count_chance(int(run.passed), run.observed, more, at_most=most - int(run.passed))
    # The Bentkus interval: the sum decides, at or above the critical sum for a lower bound at
    # t, at or below total − (the critical sum at 1 − t) for an upper bound below t.
    if run.above:
        cut = bentkus_critical_sum(total, run.threshold, level)
    else:
        cut = total - bentkus_critical_sum(total, 1.0 - run.threshold, level)
    if not math.isfinite(cut):
        return 0.0
    if run.counts:
        k = round(run.passed)
        if run.above:
            return count_chance(k, run.observed, more, at_least=math.ceil(cut - 1e-9) - k)
        return count_chance(k, run.observed, more, at_most=math.floor(cut + 1e-9) - k)
    return values_chance(run.values, more, cut, run.above)


def _method(run: _Run) -> str:
    return EXACT_ASSURANCE_METHOD if run.counts else SIMULATED_ASSURANCE_METHOD


def _reachable(run: _Run) -> float:
    if run.values is None or run.counts:
        return reachable_chance(round(run.passed), run.observed, run.threshold, run.above)
    return values_reachable_chance(run.values, run.threshold, run.above)


def continued_chance(
    total: int,
    level: float,
    *,
    passed: int | None = None,
    observed: int | None = None,
    values: Sequence[float] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
) -> tuple[float, str]:
    """The chance that the run, continued to ``total`` observed cases (its own kept), decides a
    ``min``/``max`` rule the way its estimate points; and how it was computed.

    The run is ``passed`` of ``observed`` 0/1 values under the exact interval, or its observed
    per-case ``values`` under the Bentkus interval (a run with trials). The rate is drawn from
    the run's confidence distribution (module docstring): exact (a beta-binomial tail) for 0/1
    values, simulated by the Bayesian bootstrap for fractions. The decision at ``total`` is a
    threshold on the count of passes (the exact interval's duality with the binomial test) or
    on the sum of the values (the Bentkus critical sum).

    Example: 33 of 40 under ``min: 0.7``, continued to 136 cases.

    >>> from oloproof.stats import continued_chance
    >>> chance, method = continued_chance(136, 0.95, passed=33, observed=40, minimum=0.7)
    >>> round(chance, 4), method
    (0.8089, "exact: beta-binomial over the run's confidence distribution")
    """
    check_level(level)
    total = count("total", total)
    run = _run(passed, observed, values, minimum, maximum)
    return _chance(run, total, level), _method(run)


@dataclass(frozen=True)
class AssuredProjection:
    """A total of observed cases at which the run, continued, decides a rule the way its
    estimate points with a chance of at least ``ASSURED_CHANCE`` (0.8), averaged over what the
    run says about the rate; and that chance.

    ``reachable`` is the most any total could give — the share of the run's confidence
    distribution on the estimate's side of the threshold. ``total``, ``chance`` and ``state``
    are ``None`` when no total gives the chance (``reason``: ``"estimate_equals_threshold"``;
    ``"out_of_reach"`` when ``reachable`` is not above it; ``"beyond_limit"``). ``method`` says
    how the chance was computed.
    """

    total: int | None
    chance: float | None
    reachable: float | None
    state: str | None
    reason: str | None
    method: str


def assured_projection(
    level: float,
    *,
    passed: int | None = None,
    observed: int | None = None,
    values: Sequence[float] | None = None,
    minimum: float | None = None,
    maximum: float | None = None,
    chance: float = ASSURED_CHANCE,
    limit: int = 1_000_000_000,
) -> AssuredProjection:
    """A total of observed cases at which the run continued reaches the decision its estimate
    points to with at least ``chance`` (:func:`continued_chance`), or why there is none.

    Method: the chance saw-tooths in the total (the count that decides steps up by whole
    cases) and rises towards :func:`reachable_chance`; when that is above ``chance`` the total
    is found by doubling the cases to come until the chance reaches it and bisecting — a
    total where it holds and one case fewer falls short, not necessarily the smallest such.

    Example: 33 of 40 under ``min: 0.7`` gets a total; 26 of 40 leaves 24.5% of its
    distribution at or above 0.7, where no number of cases reaches the FAIL it points to.

    >>> from oloproof.stats import assured_projection
    >>> plan = assured_projection(0.95, passed=33, observed=40, minimum=0.7)
    >>> plan.total, round(plan.chance, 3), plan.state
    (136, 0.809, 'PASS')
    >>> none = assured_projection(0.95, passed=26, observed=40, minimum=0.7)
    >>> none.total, none.reason, round(none.reachable, 3)
    (None, 'out_of_reach', 0.755)
    """
    check_level(level)
    limit = count("limit", limit)
    run = _run(passed, observed, values, minimum, maximum)
    method = _method(run)
    if run.rate == run.threshold:
        return AssuredProjection(None, None, None, None, "estimate_equals_threshold", method)
    reachable = _reachable(run)
    if reachable <= chance:
        return AssuredProjection(None, None, reachable, run.state, "out_of_reach", method)
    seen: dict[int, float] = {}

    def reaches(more: int) -> bool:
        if more not in seen:
            seen[more] = _chance(run, run.observed + more, level)
        return seen[more] >= chance

    more = smallest_deciding(reaches, max(1, limit - run.observed))
    if more is None:
        return AssuredProjection(None, None, reachable, run.state, "beyond_limit", method)
    return AssuredProjection(run.observed + more, seen[more], reachable, run.state, None, method)
