"""A rate as people would judge it, from a judge's verdicts on every case and people's labels
on a uniform sample (docs/judges.md#the-corrected-interval-in-a-users-words): prediction-powered
inference.

Method: Angelopoulos, Bates, Fannjiang, Jordan & Zrnic (2023), "Prediction-powered
inference", Science 382(6671). For `N` cases with judge values `J_i` (1 pass, 0 fail) and `n`
of them drawn uniformly and labelled by people (`Y_j`), the person rate is

    p = E[J] + E[Y − J],

so the estimate is the judge's pass rate over all `N` plus the mean of the *rectifier*
`Δ_j = Y_j − J_j` over the labelled sampled cases. The interval is the sum of two intervals
each at `α/2` (a union bound, valid for every `n` and `N`, with no normal approximation):

- the judge's pass rate over the `N` cases: the exact (Clopper–Pearson) interval of
  `stats.binomial`, missing judgments as missing cases (each resolved the worst way on its
  side); with per-case fractions (repeated trials) the interval rates over fractions take,
  `stats.bentkus`;
- the rectifier's mean: `Δ ∈ {−1, 0, 1}` mapped to `(Δ + 1) / 2 ∈ [0, 1]`, the bounded-mean
  interval of `stats.betting` (Waudby-Smith & Ramdas 2023) over the sampled cases in a fixed
  order (the callers': case digest), a sampled case without a label for this run's text
  counted missing (its lowest and highest possible value). The betting interval, not the
  order-free Bentkus bound rates use: a rectifier is mostly ties (0, where judge and person
  agree), where betting's adaptivity to a small variance pays — for 23 agreements and 7
  judge-only passes of 30 at α/2 = 0.025 it reads Δ ∈ [−0.298, 0.089] where Bentkus reads
  [−0.635, 0.238]; for 200 agreements of 200, ±0.043 against ±0.182 (as for the paired
  differences of docs/compare.md#the-interval, whose values are mostly ties too);

then clipped to [0, 1]. Method name: `prediction_powered`. A judge that agrees with people on
every labelled case has a rectifier of 0 everywhere, and the interval is then the judge's own
exact interval at `α/2` widened by the rectifier's (which shrinks as `n` grows).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import tail_probabilities
from oloproof.stats._lazy import scipy_special
from oloproof.stats.bentkus import bentkus_interval
from oloproof.stats.betting import BETTING_METHOD, betting_lower_bounds
from oloproof.stats.binomial import RATE_METHOD, rate_interval

__all__ = ["PREDICTION_POWERED_METHOD", "PredictionPowered", "half_level",
           "prediction_powered_bounds", "prediction_powered_interval"]

PREDICTION_POWERED_METHOD = "prediction_powered"

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class PredictionPowered:
    """The corrected rate with its interval, and the two parts it is the sum of.

    `judge_*` is the judge's pass rate over all cases (at `α/2`), `rectifier_*` the mean of
    person − judge over the sampled cases (at `α/2`, in [−1, 1]); `labelled` counts the
    sampled cases that carry a label (and a judge verdict), `sampled` all sampled cases.
    """

    estimate: float | None
    lower: float
    upper: float
    method: str
    judge_estimate: float | None
    judge_lower: float
    judge_upper: float
    judge_method: str
    rectifier_estimate: float | None
    rectifier_lower: float
    rectifier_upper: float
    rectifier_method: str
    labelled: int
    sampled: int


def half_level(level: float) -> float:
    """The confidence level of each of the two parts: `1 − α/2` (0.975 for 0.95), from the
    level's decimal text.

    >>> from oloproof.stats import half_level
    >>> half_level(0.95)
    0.975
    """
    return tail_probabilities(level)[2]


def _values(name: str, values: Sequence[float] | npt.ArrayLike, low: float, high: float
            ) -> FloatArray:
    array = np.asarray(values, dtype=np.float64)
    if array.ndim != 1:
        raise ValueError(f"{name} must be one sequence of numbers")
    if not np.all(np.isfinite(array)) or np.any(array < low) or np.any(array > high):
        raise ValueError(f"{name} must be numbers in [{low:g}, {high:g}]")
    return array


def _exact_rows(passed: FloatArray, total: FloatArray, part: float
                ) -> tuple[FloatArray, FloatArray]:
    """Clopper–Pearson at level `part` for each row's `passed` of `total` (rows of counts)."""
    _, half_alpha, upper_tail = tail_probabilities(part)
    betaincinv = scipy_special().betaincinv
    with np.errstate(divide="ignore", invalid="ignore"):
        lower = np.where(passed <= 0, 0.0,
                         betaincinv(np.maximum(passed, 1), total - passed + 1, half_alpha))
        upper = np.where(passed >= total, 1.0,
                         betaincinv(passed + 1, np.maximum(total - passed, 1), upper_tail))
    return np.asarray(lower, dtype=np.float64), np.asarray(upper, dtype=np.float64)


def _rectifier_rows(low: FloatArray, high: FloatArray, part: float
                    ) -> tuple[FloatArray, FloatArray]:
    """The rectifier's interval in [−1, 1] for each row of sampled cases' (lowest, highest)
    person − judge values: the bounded-mean interval of `stats.betting` over `(Δ + 1) / 2`,
    widened to contain the sample means as `bounded_mean_interval` reports it."""
    x_low, x_high = (low + 1.0) / 2.0, (high + 1.0) / 2.0
    lows = betting_lower_bounds(np.vstack([x_low, 1.0 - x_high]), part)
    rows = low.shape[0]
    lower = np.minimum(lows[:rows], x_low.mean(axis=1))
    upper = np.maximum(1.0 - lows[rows:], x_high.mean(axis=1))
    return 2.0 * np.maximum(0.0, lower) - 1.0, 2.0 * np.minimum(1.0, upper) - 1.0


def prediction_powered_bounds(
    judge_passed: npt.ArrayLike, judge_observed: npt.ArrayLike, judge_missing: npt.ArrayLike,
    rectifier_lower: npt.ArrayLike, rectifier_upper: npt.ArrayLike, level: float,
) -> tuple[FloatArray, FloatArray]:
    """The prediction-powered interval for each row (many simulated suites at once): a judge
    that passed `judge_passed` of `judge_observed` cases with `judge_missing` missing, and the
    sampled cases' rectifier values (rows × n, in [−1, 1], lowest and highest possible). The
    same numbers `prediction_powered_interval` reports for one suite with verdicts of 0 or 1.
    """
    part = half_level(level)
    passed = np.atleast_1d(np.asarray(judge_passed, dtype=np.float64))
    observed = np.atleast_1d(np.asarray(judge_observed, dtype=np.float64))
    missing = np.atleast_1d(np.asarray(judge_missing, dtype=np.float64))
    total = observed + missing
    j_low, _ = _exact_rows(passed, total, part)
    _, j_high = _exact_rows(passed + missing, total, part)
    r_low = np.atleast_2d(np.asarray(rectifier_lower, dtype=np.float64))
    r_high = np.atleast_2d(np.asarray(rectifier_upper, dtype=np.float64))
    rect_low, rect_high = _rectifier_rows(r_low, r_high, part)
    return (np.clip(j_low + rect_low, 0.0, 1.0), np.clip(j_high + rect_high, 0.0, 1.0))


def prediction_powered_interval(
    judge_lower: Sequence[float] | npt.ArrayLike, judge_upper: Sequence[float] | npt.ArrayLike,
    rectifier_lower: Sequence[float] | npt.ArrayLike,
    rectifier_upper: Sequence[float] | npt.ArrayLike, level: float,
) -> PredictionPowered:
    """The prediction-powered rate (see the module docstring).

    `judge_lower[i] ≤ judge_upper[i]` are case `i`'s lowest and highest possible judge value in
    [0, 1] (equal when the judge gave a verdict; 0 and 1 when its judgment is missing; a share
    of trials with repeated trials), over all `N` cases. `rectifier_lower[j] ≤
    rectifier_upper[j]` are sampled case `j`'s lowest and highest possible person − judge value
    in [−1, 1] (equal when it is labelled and judged), in a fixed order (case digest): the
    bounded-mean interval depends on the order of its values. Every judge value in {0, 1}
    gives the exact interval for the judge part, otherwise the Bentkus interval.
    Raises ValueError when there is no case or no sampled case.

    Example: a judge passed 80 of 100 cases; people labelled 20 of them and failed 2 it passed.

    >>> from oloproof.stats import prediction_powered_interval
    >>> judged = [1] * 80 + [0] * 20
    >>> corrections = [0] * 18 + [-1] * 2
    >>> rate = prediction_powered_interval(judged, judged, corrections, corrections, 0.95)
    >>> round(rate.estimate, 3), round(rate.lower, 3), rate.upper, rate.method
    (0.7, 0.338, 1.0, 'prediction_powered')
    >>> rate.judge_estimate, rate.rectifier_estimate
    (0.8, -0.1)
    """
    j_low = _values("judge_lower", judge_lower, 0.0, 1.0)
    j_high = _values("judge_upper", judge_upper, 0.0, 1.0)
    r_low = _values("rectifier_lower", rectifier_lower, -1.0, 1.0)
    r_high = _values("rectifier_upper", rectifier_upper, -1.0, 1.0)
    if j_low.size != j_high.size or r_low.size != r_high.size:
        raise ValueError("each lower value needs its upper value")
    if np.any(j_low > j_high) or np.any(r_low > r_high):
        raise ValueError("a lower value exceeds its upper value")
    if j_low.size == 0 or r_low.size == 0:
        raise ValueError("the judge part needs at least one case and the rectifier one "
                         "sampled case")
    part = half_level(level)
    binary = bool(np.all((j_low == 0) | (j_low == 1)) and np.all((j_high == 0) | (j_high == 1)))
    if binary:
        observed = j_low == j_high
        judge = rate_interval(int(j_low[observed].sum()), int(observed.sum()),
                              int((~observed).sum()), part)
        judge_estimate, judge_low, judge_high = judge.estimate, judge.lower, judge.upper
        judge_method = RATE_METHOD
    else:
        mean = bentkus_interval(j_low, j_high, part)
        judge_estimate, judge_low, judge_high = mean.estimate, mean.lower, mean.upper
        judge_method = mean.method
    assert judge_low is not None and judge_high is not None
    lows, highs = _rectifier_rows(r_low[None, :], r_high[None, :], part)
    rect_low, rect_high = float(lows[0]), float(highs[0])
    observed_rect = r_low == r_high
    rect_estimate = float(r_low[observed_rect].mean()) if observed_rect.any() else None
    if rect_estimate is not None:
        rect_low, rect_high = min(rect_low, rect_estimate), max(rect_high, rect_estimate)
    estimate = None
    if judge_estimate is not None and rect_estimate is not None:
        estimate = min(1.0, max(0.0, judge_estimate + rect_estimate))
    labelled = int(np.sum(r_low == r_high))
    return PredictionPowered(
        estimate=estimate,
        lower=min(1.0, max(0.0, judge_low + rect_low)),
        upper=min(1.0, max(0.0, judge_high + rect_high)),
        method=PREDICTION_POWERED_METHOD,
        judge_estimate=judge_estimate, judge_lower=judge_low, judge_upper=judge_high,
        judge_method=judge_method,
        rectifier_estimate=rect_estimate, rectifier_lower=rect_low, rectifier_upper=rect_high,
        rectifier_method=BETTING_METHOD, labelled=labelled, sampled=int(r_low.size),
    )
