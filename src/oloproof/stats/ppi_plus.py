"""PPI++: the power-tuned prediction-powered mean with its normal-approximation interval — a
judged rate's approximate method (docs/judges.md#an-approximate-interval-ppi).

Method: Angelopoulos, Duchi & Zrnic (2023), "PPI++: Efficient prediction-powered inference"
(arXiv:2311.01453), for a mean. With ``n`` labelled cases (people's value ``Y``, the judge's
value ``J``) and ``M`` cases no one labelled (the judge's value only),

    θ̂(λ) = mean_n(Y) − λ (mean_n(J) − mean_M(J)),

unbiased for every fixed ``λ`` (``λ = 0`` is the labels alone, ``λ = 1`` prediction-powered
inference). Its variance is estimated by ``V(λ) = Var_n(Y − λJ)/n + λ² Var_M(J)/M`` and ``λ̂``
is the ``λ`` that minimises that estimate, ``Cov_n(Y, J) / (Var_n(J) + (n/M) Var_M(J))`` (so
``V(λ̂) ≤ V(0)``, the labels' own). The interval is ``θ̂(λ̂) ± z_{1−α/2} √V(λ̂)``, clipped to
[0, 1]: valid only as ``n`` grows (a normal approximation, with ``λ̂`` estimated from the same
labels), so it is named approximate and used only where the policy allows approximate methods
and the labels are many (``MIN_LABELLED``) with enough disagreements (``MIN_DISAGREEMENTS``) for
the variances to be read. Sampled cases without a label are resolved the worst way: the lower
bound is computed with each as a fail, the upper with each as a pass; the estimate reads the
labelled ones.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import tail_probabilities
from oloproof.stats._lazy import scipy_special

__all__ = ["MIN_DISAGREEMENTS", "MIN_LABELLED", "PPI_PLUS_METHOD", "PPIPlus",
           "ppi_plus_applies", "ppi_plus_interval"]

PPI_PLUS_METHOD = "ppi_plus_plus"
#: The least labelled sampled cases, and of those the least where judge and person differ,
#: before the approximate interval is used.
MIN_LABELLED = 100
MIN_DISAGREEMENTS = 10

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PPIPlus:
    """The power-tuned estimate, its approximate interval, and the ``λ̂`` it took."""

    estimate: float | None
    lower: float
    upper: float
    tuning: float | None
    method: str = PPI_PLUS_METHOD


def ppi_plus_applies(labelled: int, disagreements: int) -> bool:
    """Whether there are enough labels, and disagreements among them, for PPI++."""
    return labelled >= MIN_LABELLED and disagreements >= MIN_DISAGREEMENTS


def _one(y: FloatArray, j: FloatArray, rest: tuple[int, float, float]
         ) -> tuple[float, float, float]:
    """``(θ̂, √V, λ̂)`` for labelled ``(y, j)`` and the unlabelled judge values' count, mean
    and variance ``rest``."""
    n, (m, rest_mean, var_rest) = y.size, rest
    var_j = float(np.var(j, ddof=1)) if n > 1 else 0.0
    cov = float(np.cov(y, j, ddof=1)[0, 1]) if n > 1 else 0.0
    denominator = var_j + (n / m) * var_rest if m > 0 else 0.0
    tuning = cov / denominator if denominator > 0.0 else 0.0
    shift = float(np.mean(j)) - rest_mean if m > 0 else 0.0
    estimate = float(np.mean(y)) - tuning * shift
    residual = y - tuning * j
    variance = (float(np.var(residual, ddof=1)) / n if n > 1 else 0.25 / max(n, 1))
    if m > 1:
        variance += tuning * tuning * var_rest / m
    return estimate, variance ** 0.5, tuning


def ppi_plus_interval(judge_values: Sequence[float] | npt.ArrayLike,
                      sampled_judge: Sequence[float] | npt.ArrayLike,
                      person_lower: Sequence[float] | npt.ArrayLike,
                      person_upper: Sequence[float] | npt.ArrayLike,
                      level: float) -> PPIPlus:
    """PPI++ (module docstring) from the judge's values on every case counted (the sampled
    ones included), and per sampled case the judge's value and the person's lowest and
    highest value (equal when labelled). The cases no one labelled are the others: their
    count, mean and variance are those of every case less the sampled ones'. Raises
    ValueError with no labelled sampled case.

    200 cases, 160 judged pass; 100 of them labelled — of the 80 judged pass people pass 76,
    of the 20 judged fail 2:

    >>> sampled = [1.0] * 80 + [0.0] * 20
    >>> people = [1.0] * 76 + [0.0] * 4 + [1.0] * 2 + [0.0] * 18
    >>> tuned = ppi_plus_interval([1.0] * 160 + [0.0] * 40, sampled, people, people, 0.95)
    >>> round(tuned.estimate, 3), round(tuned.lower, 3), round(tuned.upper, 3)
    (0.78, 0.714, 0.846)
    >>> round(tuned.tuning, 2)
    0.43
    """
    every = np.asarray(judge_values, dtype=np.float64).reshape(-1)
    judge = np.asarray(sampled_judge, dtype=np.float64).reshape(-1)
    low = np.asarray(person_lower, dtype=np.float64).reshape(-1)
    high = np.asarray(person_upper, dtype=np.float64).reshape(-1)
    observed = low == high
    if not observed.any():
        raise ValueError("PPI++ needs at least one labelled sampled case")
    m = every.size - judge.size
    total = float(np.sort(every).sum()) - float(np.sort(judge).sum())
    squares = float(np.sort(every * every).sum()) - float(np.sort(judge * judge).sum())
    mean = total / m if m > 0 else 0.0
    rest = (m, mean, max(0.0, (squares - m * mean * mean) / (m - 1)) if m > 1 else 0.0)
    z = -float(scipy_special().ndtri(tail_probabilities(level)[1]))
    estimate, _, tuning = _one(low[observed], judge[observed], rest)
    lows, _, _ = _one(low, judge, rest)
    low_se = _one(low, judge, rest)[1]
    highs, high_se, _ = _one(high, judge, rest)
    return PPIPlus(estimate=min(1.0, max(0.0, estimate)),
                   lower=min(1.0, max(0.0, lows - z * low_se)),
                   upper=min(1.0, max(0.0, highs + z * high_se)), tuning=tuning)
