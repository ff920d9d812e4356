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

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import count
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["ASSURANCE", "EXACT_ASSURANCE_METHOD", "SIMULATED_ASSURANCE_METHOD",
           "count_chance", "reachable_chance", "values_chance", "values_reachable_chance"]

#: The assumption every chance here rests on, in words (the plan prints it).
ASSURANCE = ("the rate drawn from what this run says about it (its confidence distribution), "
             "the run continued with its observed cases kept")
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
