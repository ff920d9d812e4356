"""Order-statistic quantile intervals (docs/concepts.md#quantiles-order-statistic-intervals)."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binom

from oloproof.stats import (
    QUANTILE_METHOD,
    QuantileInterval,
    estimate_rank,
    order_statistic_ranks,
    quantile_interval,
)


def test_seed_steps_p95_ranks() -> None:
    # 39 observed values 1..39 and one missing: the p95 lower bound is the 34th observed value,
    # the estimate the 38th, and there is no upper bound.
    result = quantile_interval([float(v) for v in range(1, 40)], 1, 0.95, 0.95)
    assert result == QuantileInterval(0.95, 38.0, 34.0, None, QUANTILE_METHOD)
    assert order_statistic_ranks(40, 0.95, 0.95) == (35, None)


def test_seed_steps_p95_prints_10_no_bound() -> None:
    # At least six complete 10-step cases (ranks 34..39) give "10 steps [10, no bound]".
    values = [4.0] * 20 + [6.0] * 13 + [10.0] * 6
    result = quantile_interval(values, 1, 0.95, 0.95)
    assert (result.estimate, result.lower, result.upper) == (10.0, 10.0, None)
    # With only five, the lower bound drops below 10.
    fewer = quantile_interval([4.0] * 21 + [6.0] * 13 + [10.0] * 5, 1, 0.95, 0.95)
    assert fewer.lower == 6.0


def test_seed_tool_calls_p50() -> None:
    ranks = quantile_interval([float(v) for v in range(1, 40)], 1, 0.5, 0.95)
    assert (ranks.estimate, ranks.lower, ranks.upper) == (20.0, 13.0, 27.0)
    # The seed's assignment: 2 single calls, 24 clean (2 calls), 3 with delete_customer (3),
    # 4 triple lookups, 6 triple searches; the truncated case is missing.
    calls = [1] * 2 + [2] * 24 + [3] * 3 + [4] * 4 + [5] * 6
    result = quantile_interval(calls, 1, 0.5, 0.95)
    assert (result.estimate, result.lower, result.upper) == (2.0, 2.0, 3.0)


def test_estimate_rank_float_noise() -> None:
    assert estimate_rank(0.5, 40) == 20
    assert estimate_rank(0.95, 20) == 19
    assert estimate_rank(0.95, 40) == 38
    assert estimate_rank(0.95, 39) == 38
    assert estimate_rank(0.1, 10) == 1  # 0.1 is a hair above 1/10 in binary
    assert estimate_rank(0.7, 10) == 7
    assert estimate_rank(0.0, 5) == 1
    assert estimate_rank(1.0, 5) == 5
    assert estimate_rank(0.999, 200_000) == 199_800


def test_edges() -> None:
    assert quantile_interval([], 0, 0.5, 0.95) == QuantileInterval(
        0.5, None, None, None, QUANTILE_METHOD
    )
    assert quantile_interval([], 4, 0.5, 0.95).estimate is None
    # Too few values for any bound at 95%.
    assert quantile_interval([1.0, 2.0, 3.0], 0, 0.5, 0.95) == QuantileInterval(
        0.5, 2.0, None, None, QUANTILE_METHOD
    )
    # Many missing values push the lower bound onto a placed value.
    many_missing = quantile_interval([float(v) for v in range(30)], 30, 0.5, 0.95)
    assert many_missing.lower is None and many_missing.upper is None
    assert quantile_interval([5.0] * 10, 0, 0.0, 0.9).upper == 5.0
    assert quantile_interval([5.0] * 10, 0, 1.0, 0.9).lower == 5.0


@pytest.mark.parametrize(
    ("values", "missing", "q", "level"),
    [
        ([1.0, float("nan")], 0, 0.5, 0.95),
        ([1.0], -1, 0.5, 0.95),
        ([1.0], 0, 1.5, 0.95),
        ([1.0], 0, 0.5, 1.0),
        ([1.0, float("inf")], 0, 0.5, 0.95),
    ],
)
def test_rejects_bad_arguments(values: list[float], missing: int, q: float, level: float) -> None:
    with pytest.raises(ValueError):
        quantile_interval(values, missing, q, level)


def test_large_sample_is_fast_and_sane() -> None:
    values = np.random.default_rng(7).exponential(size=200_000)
    result = quantile_interval(values.tolist(), 25, 0.95, 0.95)
    assert result.lower is not None and result.upper is not None and result.estimate is not None
    assert result.lower <= result.estimate <= result.upper
    assert result.estimate == pytest.approx(math.log(20), rel=0.02)


# --- brute force -------------------------------------------------------------------------------

_SLACK = 1e-12  # the implementation's documented slack on "≤ α/2"


def _binom_at_most(k: int, n: int, q: Fraction) -> Fraction:
    return sum(
        (Fraction(math.comb(n, i)) * q**i * (1 - q) ** (n - i) for i in range(k + 1)), Fraction(0)
    )


def _brute_force(
    values: list[float], missing: int, q_text: str, level: float
) -> tuple[float | None, float | None, float | None]:
    q = Fraction(q_text)
    n = len(values)
    if n == 0:
        return (None, None, None)
    ordered = sorted(values)
    # Estimate: smallest observed value with at least a fraction q of observed values ≤ it.
    estimate = next(v for v in ordered if sum(1 for w in ordered if w <= v) >= q * n)
    big_n = n + missing
    threshold = (1.0 - level) / 2.0 + _SLACK
    low_sample = [-math.inf] * missing + ordered
    high_sample = ordered + [math.inf] * missing
    lower: float | None = None
    for rank in range(1, big_n + 1):  # keep the largest qualifying rank
        if float(_binom_at_most(rank - 1, big_n, q)) <= threshold:
            lower = low_sample[rank - 1]
    upper: float | None = None
    for rank in range(big_n, 0, -1):  # keep the smallest qualifying rank
        if float(1 - _binom_at_most(rank - 1, big_n, q)) <= threshold:
            upper = high_sample[rank - 1]
    lower = None if lower is None or math.isinf(lower) else lower
    upper = None if upper is None or math.isinf(upper) else upper
    return (estimate, lower, upper)


_values = st.lists(
    st.one_of(st.integers(0, 12).map(float), st.floats(-1e6, 1e6, allow_nan=False)),
    max_size=45,
)
# Quantiles and levels as people write them (p95, p50, p99.9; 90%, 95%, 99%): decimals.
_q_text = st.integers(0, 1000).map(lambda i: f"{i / 1000:.3f}")
_level = st.sampled_from([0.5, 0.8, 0.9, 0.95, 0.99]) | st.integers(500, 999).map(
    lambda i: i / 1000
)


@settings(max_examples=200, deadline=None)
@given(_values, st.integers(0, 12), _q_text, _level)
def test_quantile_interval_matches_brute_force(
    values: list[float], missing: int, q_text: str, level: float
) -> None:
    result = quantile_interval(values, missing, float(q_text), level)
    estimate, lower, upper = _brute_force(values, missing, q_text, level)
    assert (result.estimate, result.lower, result.upper) == (estimate, lower, upper)
    if result.lower is not None and result.estimate is not None:
        assert result.lower <= result.estimate
    if result.upper is not None and result.estimate is not None:
        assert result.estimate <= result.upper


def test_brute_force_reaches_every_kind_of_bound() -> None:
    kinds = set()
    for values, missing, q in [
        ([float(v) for v in range(40)], 0, "0.5"),
        ([float(v) for v in range(39)], 1, "0.95"),
        ([float(v) for v in range(39)], 1, "0.05"),
        ([float(v) for v in range(3)], 0, "0.5"),
    ]:
        _, lower, upper = _brute_force(values, missing, q, 0.95)
        kinds.add((lower is None, upper is None))
        result = quantile_interval(values, missing, float(q), 0.95)
        assert (result.lower, result.upper) == (lower, upper)
    assert kinds == {(False, False), (False, True), (True, False), (True, True)}


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 6000), st.integers(0, 1000), _level)
def test_windowed_rank_search_matches_full_scan(big_n: int, q_milli: int, level: float) -> None:
    q = q_milli / 1000
    threshold = (1.0 - level) / 2.0 + _SLACK
    ks = np.arange(big_n)
    low_ok = np.flatnonzero(binom.cdf(ks, big_n, q) <= threshold)
    high_ok = np.flatnonzero(binom.sf(ks, big_n, q) <= threshold)
    expected = (
        int(low_ok[-1]) + 1 if low_ok.size else None,
        int(high_ok[0]) + 1 if high_ok.size else None,
    )
    assert order_statistic_ranks(big_n, q, level) == expected
