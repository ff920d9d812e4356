"""What it would take to decide a rule (SPEC §18): a projection, not a promise.

For an interval rule (``min: t`` or ``max: t``) on a pass rate whose estimate is
``p̂ = passed / observed``: the smallest total number of observed cases ``N`` for which the exact
interval *at the same rate* would decide the rule — PASS when ``p̂`` is on the passing side of
``t``, FAIL when it is on the failing side — or none when ``p̂ = t`` (no number of cases at that
rate ever leaves the threshold) or no ``N`` up to the search limit would.

"The exact interval at the same rate" for ``N`` cases is the Clopper–Pearson interval of
``k = p̂·N`` successes in its beta-quantile form, with ``k`` allowed to be fractional:
``lower(N) = Beta⁻¹(α/2; p̂N, (1 − p̂)N + 1)`` (0 when ``p̂ = 0``) and
``upper(N) = Beta⁻¹(1 − α/2; p̂N + 1, (1 − p̂)N)`` (1 when ``p̂ = 1``). At every ``N`` where
``p̂N`` is a whole number — every multiple of ``observed`` — it *is* the exact interval of §5.1
(``k`` of ``N``). Why not round ``k``: ``round(p̂N)`` moves the rate up and down with ``N`` (33
of 40 at N = 41 becomes 34/41 = 0.829, then 0.810 at N = 42), so which ``N`` first clears would
depend on rounding luck and a bigger ``N`` could un-clear; the continuous form keeps the rate
exactly ``p̂`` and its bounds move monotonically towards it as ``N`` grows, so "the smallest ``N``"
is well defined and found by galloping and bisection in ``O(log N)`` evaluations.

Only the exact (0/1) case is projected. The betting interval of §15.2 (fractional per-case
values, clustered metrics) is not a function of the estimate and ``N``: it depends on every
value and the order they come in (their spread, their runs), so "the interval at that
estimate" for a larger suite has no single meaning. Any choice — the observed values repeated,
resampled from their empirical distribution — would add a modelling assumption the plan would
then present as a figure, and cost a full interval per candidate ``N``. ``plan`` says that no
projection is made for such a metric instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from oloproof.stats._checks import check_level, count, tail_probabilities
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["PROJECTION_LIMIT", "PROJECTION_METHOD", "RateProjection", "exact_interval_at_rate",
           "rate_projection"]

PROJECTION_METHOD = "clopper-pearson at the same rate"
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


def exact_interval_at_rate(rate: float, total: int, level: float) -> tuple[float, float]:
    """The exact interval of ``rate·total`` successes in ``total`` cases, successes fractional.

    Method: the Clopper–Pearson beta-quantile form, ``lower = Beta⁻¹(α/2; k, N − k + 1)`` and
    ``upper = Beta⁻¹(1 − α/2; k + 1, N − k)`` with ``k = rate·N`` (``lower = 0`` when
    ``k = 0``, ``upper = 1`` when ``k = N``; ``α`` exact from the level's decimal text). Equal
    to :func:`~oloproof.stats.binomial.clopper_pearson` whenever ``rate·N`` is a whole number.
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


def _decides(rate: float, total: int, level: float, threshold: float, is_minimum: bool,
             state: str) -> bool:
    lower, upper = exact_interval_at_rate(rate, total, level)
    # The rule states of SPEC §10.1, as decisions/rules.py applies them to a rate row.
    if is_minimum:
        return lower >= threshold if state == "PASS" else upper < threshold
    return upper <= threshold if state == "PASS" else lower > threshold


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
    current rate ``passed / observed`` (SPEC §18), and the state it would reach.

    Method: see the module docstring — the exact (Clopper–Pearson) interval at the same rate
    with fractional successes, which is the §5.1 interval at every multiple of ``observed``;
    the rule decides PASS when, for ``min: t``, ``lower ≥ t`` (for ``max: t``,
    ``upper ≤ t``) and FAIL when ``upper < t`` (``lower > t``). The state sought is the one
    the estimate points to (PASS for ``p̂ > t`` under ``min``, FAIL for ``p̂ < t``; the mirror
    under ``max``); ``p̂ = t`` gives no total. The smallest ``N ≥ 1`` is found by doubling
    ``N`` until the rule decides, then bisecting: the bounds approach ``p̂`` monotonically in
    ``N``, as the tests check against a linear scan. Exactly one of ``minimum`` and
    ``maximum`` must be given.
    """
    passed = count("passed", passed)
    observed = count("observed", observed)
    limit = count("limit", limit)
    check_level(level)
    if (minimum is None) == (maximum is None):
        raise ValueError("give exactly one of minimum and maximum")
    threshold = float(minimum if minimum is not None else maximum)  # type: ignore[arg-type]
    if not (math.isfinite(threshold) and 0.0 <= threshold <= 1.0):
        raise ValueError(f"threshold must be a number in [0, 1], got {threshold!r}")
    if passed > observed:
        raise ValueError(f"passed ({passed}) must not exceed observed ({observed})")
    if observed == 0:
        return RateProjection(None, None, "no_observations", PROJECTION_METHOD)
    rate = passed / observed
    is_minimum = minimum is not None
    if rate == threshold:
        return RateProjection(None, None, "estimate_equals_threshold", PROJECTION_METHOD)
    above = rate > threshold
    state = "PASS" if above == is_minimum else "FAIL"

    def decides(total: int) -> bool:
        return _decides(rate, total, level, threshold, is_minimum, state)

    # Gallop: 1, 2, 4, … until the rule decides (or the limit is passed).
    known_not, candidate = 0, 1
    while not decides(candidate):
        if candidate >= limit:
            return RateProjection(None, None, "beyond_limit", PROJECTION_METHOD)
        known_not, candidate = candidate, min(2 * candidate, limit)
    # Bisect (known_not, candidate]: known_not does not decide (or is 0), candidate does.
    while candidate - known_not > 1:
        middle = (known_not + candidate) // 2
        if decides(middle):
            candidate = middle
        else:
            known_not = middle
    return RateProjection(candidate, state, None, PROJECTION_METHOD)
