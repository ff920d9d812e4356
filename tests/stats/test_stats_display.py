"""Outward display rounding (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oloproof.stats import percent, percent_lower, percent_upper
from oloproof.stats.display import SCALED_TOLERANCE

# The printed bound may pass the computed one by at most the documented float tolerance.
SLACK = SCALED_TOLERANCE / 1000 + 1e-15


def _parse(shown: str) -> float:
    assert shown.endswith("%")
    return float(shown[:-1]) / 100.0


def test_examples() -> None:
    assert percent_lower(0.6722098666) == "67.2%"
    assert percent_upper(0.9266172706) == "92.7%"
    assert percent_lower(0.86783) == "86.7%"
    assert percent_lower(0.8684141415) == "86.8%"
    assert percent_upper(0.99940) == "100.0%"
    assert percent_upper(0.9993672551) == "100.0%"
    assert percent_lower(0.0) == "0.0%"
    assert percent_upper(1.0) == "100.0%"
    assert percent_lower(1.0) == "100.0%"
    assert percent_upper(0.0) == "0.0%"
    assert percent(0.825) == "82.5%"
    assert percent(29 / 39) == "74.4%"
    assert percent(1.0) == "100.0%"
    assert percent(0.0625) == "6.3%"  # halves round up
    assert percent(0.06249) == "6.2%"


def test_float_noise_does_not_move_a_bound_by_a_step() -> None:
    noisy = 1 - 0.328  # 0.6719999999999999 in binary, 0.672 in intent
    assert noisy * 1000 < 672
    assert percent_lower(noisy) == "67.2%"
    assert percent_upper(0.672 + 1e-15) == "67.2%"
    assert percent_lower(0.672) == "67.2%"
    assert percent_upper(0.672) == "67.2%"
    # A real difference (well above float noise) still moves the bound.
    assert percent_lower(0.672 - 1e-9) == "67.1%"
    assert percent_upper(0.672 + 1e-9) == "67.3%"


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), True])
def test_rejects_non_finite(bad: float) -> None:
    with pytest.raises(ValueError):
        percent_lower(bad)


@settings(max_examples=500, deadline=None)
@given(st.floats(0.0, 1.0))
def test_outward_rounding_never_narrows(x: float) -> None:
    low, high, mid = _parse(percent_lower(x)), _parse(percent_upper(x)), _parse(percent(x))
    assert low <= x + SLACK
    assert high >= x - SLACK
    # ... and never widens by more than one display step.
    assert x - low < 0.001 + SLACK
    assert high - x < 0.001 + SLACK
    assert abs(mid - x) <= 0.0005 + SLACK
    assert low <= mid <= high
