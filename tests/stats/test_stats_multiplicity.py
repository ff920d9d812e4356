"""Fisher exact test and Benjamini–Yekutieli adjustment
(docs/concepts.md#slices-are-exploratory-and-never-gate)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import false_discovery_control

from oloproof.stats import benjamini_yekutieli, fisher_two_sided


def test_fisher_lady_tasting_tea() -> None:
    # Fisher's tea-tasting table: P = (16 + 1 + 16 + 1) / 70 two-sided.
    assert fisher_two_sided(3, 1, 1, 3) == pytest.approx(34 / 70)


def test_fisher_extreme_and_degenerate() -> None:
    # 0/10 in the group against 10/10 in the rest: 2 / C(20, 10).
    assert fisher_two_sided(0, 10, 10, 0) == pytest.approx(2 / 184756)
    assert fisher_two_sided(0, 0, 5, 5) == 1.0  # empty group
    assert fisher_two_sided(4, 0, 6, 0) == 1.0  # nobody failed
    assert fisher_two_sided(2, 3, 4, 6) == pytest.approx(1.0)


def test_by_hand_computed_example() -> None:
    # m = 3, c(3) = 11/6; sorted 0.01, 0.03, 0.04 → 0.055, 0.0825, 0.07333…; step-up minimum.
    adjusted = benjamini_yekutieli([0.01, 0.04, 0.03])
    assert adjusted == pytest.approx([0.055, 0.22 / 3, 0.22 / 3])


def test_by_caps_at_one_and_handles_empty() -> None:
    assert benjamini_yekutieli([]) == []
    assert benjamini_yekutieli([0.9, 0.5]) == [1.0, 1.0]
    assert benjamini_yekutieli([0.02]) == [0.02]
    with pytest.raises(ValueError):
        benjamini_yekutieli([1.2])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=40))
def test_by_matches_scipy(pvalues: list[float]) -> None:
    expected = false_discovery_control(pvalues, method="by")
    assert benjamini_yekutieli(pvalues) == pytest.approx(list(expected), rel=1e-12, abs=1e-15)
