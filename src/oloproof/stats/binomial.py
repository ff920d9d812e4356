"""Exact binomial intervals for pass rates
(docs/concepts.md#pass-rates-exact-intervals-with-missing-cases).

The interval for ``k`` passes among ``n`` observed cases with ``m`` missing cases is the
Clopper–Pearson (exact) interval widened by the worst case on each side: the lower bound is the
exact lower bound of ``k`` of ``n + m`` (every missing case failed) and the upper bound is the
exact upper bound of ``k + m`` of ``n + m`` (every missing case passed).
"""

from __future__ import annotations

from dataclasses import dataclass

from oloproof.stats._checks import check_level, count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["RATE_METHOD", "RateInterval", "clopper_pearson", "rate_interval"]

RATE_METHOD = "clopper_pearson"


@dataclass(frozen=True)
class RateInterval:
    """A pass-rate estimate with its interval; ``None`` means "not computable" (no cases)."""

    estimate: float | None
    lower: float | None
    upper: float | None
    method: str


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    """Two-sided Clopper–Pearson (exact) interval for ``k`` successes in ``n`` trials.

    Method: Clopper & Pearson (1934), via the beta-quantile form
    ``lower = Beta(α/2; k, n−k+1)``, ``upper = Beta(1−α/2; k+1, n−k)`` with ``α = 1 − level``
    computed exactly from the level's decimal text (so 1 of 1 at 90% has lower bound 0.05,
    not 0.04999999999999999); the lower bound is 0 when ``k = 0`` and the upper bound is 1 when
    ``k = n``.
    With ``n = 0`` nothing is known and the interval is ``(0.0, 1.0)``.

    Example: 33 passes of 40 at 95%, and the edge case above.

    >>> from oloproof.stats import clopper_pearson
    >>> lower, upper = clopper_pearson(33, 40, 0.95)
    >>> round(lower, 3), round(upper, 3)
    (0.672, 0.927)
    >>> clopper_pearson(1, 1, 0.90)
    (0.05, 1.0)
    """
    k = count("k", k)
    n = count("n", n)
    check_level(level)
    if k > n:
        raise ValueError(f"k ({k}) must not exceed n ({n})")
    if n == 0:
        return (0.0, 1.0)
    _, half_alpha, upper_tail = tail_probabilities(level)
    # beta.ppf(y; a, b) is the inverse regularised incomplete beta function betaincinv(a, b, y)
    betaincinv = _scipy_special().betaincinv
    lower = 0.0 if k == 0 else float(betaincinv(k, n - k + 1, half_alpha))
    upper = 1.0 if k == n else float(betaincinv(k + 1, n - k, upper_tail))
    return (lower, upper)


def rate_interval(passed: int, observed: int, missing: int, level: float) -> RateInterval:
    """Pass rate with the exact interval widened for missing cases
    (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases).

    Method: Clopper–Pearson exact interval with worst-case missingness bounds. The estimate is
    ``passed / observed`` (``None`` when nothing was observed); the lower bound is the exact
    lower bound of ``passed`` of ``observed + missing``; the upper bound is the exact upper bound
    of ``passed + missing`` of ``observed + missing``. With no case at all every field is
    ``None``. Bounds are unrounded; see :mod:`oloproof.stats.display` for outward rounding.

    Example: 33 of 40 cases passed; two more cases missing widen the interval on both sides.

    >>> from oloproof.stats import rate_interval
    >>> rate = rate_interval(33, 40, 0, 0.95)
    >>> rate.estimate, round(rate.lower, 3), round(rate.upper, 3), rate.method
    (0.825, 0.672, 0.927, 'clopper_pearson')
    >>> wider = rate_interval(33, 40, 2, 0.95)
    >>> round(wider.lower, 3), round(wider.upper, 3)
    (0.632, 0.93)
    >>> rate_interval(0, 0, 0, 0.95).estimate is None
    True
    """
    passed = count("passed", passed)
    observed = count("observed", observed)
    missing = count("missing", missing)
    level = check_level(level)
    if passed > observed:
        raise ValueError(f"passed ({passed}) must not exceed observed ({observed})")
    total = observed + missing
    if total == 0:
        return RateInterval(estimate=None, lower=None, upper=None, method=RATE_METHOD)
    estimate = passed / observed if observed > 0 else None
    lower = clopper_pearson(passed, total, level)[0]
    upper = clopper_pearson(passed + missing, total, level)[1]
    return RateInterval(estimate=estimate, lower=lower, upper=upper, method=RATE_METHOD)
