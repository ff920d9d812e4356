"""A candidate against its baseline (SPEC §17): the paired difference and exact McNemar."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import binomtest

from oloproof.stats import (
    MCNEMAR_METHOD,
    MeanInterval,
    betting_lower_bounds,
    bounded_mean_interval,
    difference_bounds,
    mcnemar_exact,
    paired_difference_interval,
)

# ---- McNemar -----------------------------------------------------------------------------------


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 400), st.integers(0, 400))
def test_mcnemar_equals_scipys_exact_binomial_test(b: int, c: int) -> None:
    result = mcnemar_exact(b, c)
    assert result.method == MCNEMAR_METHOD == "exact mcnemar"
    assert (result.b, result.c) == (b, c)
    if b + c == 0:
        assert result.p_value == 1.0
        return
    expected = binomtest(b, b + c, 0.5).pvalue
    assert result.p_value == pytest.approx(expected, rel=1e-11, abs=1e-300)
    assert mcnemar_exact(c, b).p_value == result.p_value


@pytest.mark.parametrize(("b", "c"), [(0, 2), (2, 0), (1, 1), (0, 1), (5, 5), (12, 1), (0, 30),
                                      (2_000, 2_120), (9_000, 1)])
def test_mcnemar_worked_values(b: int, c: int) -> None:
    assert mcnemar_exact(b, c).p_value == pytest.approx(binomtest(b, b + c, 0.5).pvalue,
                                                        rel=1e-11, abs=1e-300)


def test_mcnemar_known_figures() -> None:
    assert mcnemar_exact(2, 0).p_value == 0.5  # SPEC §17's example: 2 fixed, 0 broken
    assert mcnemar_exact(1, 1).p_value == 1.0
    assert mcnemar_exact(0, 10).p_value == pytest.approx(2 / 1024)
    with pytest.raises(ValueError):
        mcnemar_exact(-1, 2)
    with pytest.raises(TypeError):
        mcnemar_exact(1.5, 2)  # type: ignore[arg-type]


# ---- the paired difference ---------------------------------------------------------------------


_verdict = st.sampled_from([0.0, 1.0, None])


@settings(max_examples=80, deadline=None)
@given(st.lists(st.tuples(_verdict, _verdict), min_size=1, max_size=150),
       st.sampled_from([0.8, 0.9, 0.95]))
def test_the_difference_lies_in_its_interval_and_missing_sides_widen_it(
    pairs: list[tuple[float | None, float | None]], level: float
) -> None:
    def low(v: float | None) -> float:
        return 0.0 if v is None else v

    def high(v: float | None) -> float:
        return 1.0 if v is None else v

    lowest, highest = difference_bounds([low(b) for b, _ in pairs], [high(b) for b, _ in pairs],
                                        [low(c) for _, c in pairs], [high(c) for _, c in pairs])
    result = paired_difference_interval(lowest, highest, level)
    assert result.method == "betting"
    assert result.lower is not None and result.upper is not None
    assert -1.0 <= result.lower <= result.upper <= 1.0
    both = [c - b for b, c in pairs if b is not None and c is not None]
    if both:
        assert result.estimate == pytest.approx(sum(both) / len(both), abs=1e-12)
        assert result.lower <= result.estimate <= result.upper
    else:
        assert result.estimate is None
    # A missing side is resolved the worst way for each bound: any completion of the missing
    # verdicts gives an interval inside the reported one.
    for fill in (0.0, 1.0):
        done = [(fill if b is None else b, fill if c is None else c) for b, c in pairs]
        d = [c - b for b, c in done]
        complete = paired_difference_interval(d, d, level)
        assert complete.lower is not None and complete.upper is not None
        assert result.lower <= complete.lower + 1e-12
        assert result.upper >= complete.upper - 1e-12


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([-1.0, 0.0, 1.0]), min_size=1, max_size=100))
def test_the_mapping_to_zero_one_and_back(d: list[float]) -> None:
    result = paired_difference_interval(d, d, 0.95)
    shifted = bounded_mean_interval([(x + 1) / 2 for x in d], [(x + 1) / 2 for x in d], 0.95)
    assert shifted.lower is not None and shifted.upper is not None
    assert result.lower == pytest.approx(2 * shifted.lower - 1, abs=1e-15)
    assert result.upper == pytest.approx(2 * shifted.upper - 1, abs=1e-15)
    # Swapping baseline and candidate turns the interval around zero.
    swapped = paired_difference_interval([-x for x in d], [-x for x in d], 0.95)
    assert swapped.lower == pytest.approx(-result.upper, abs=2e-12)  # type: ignore[operator]
    assert swapped.upper == pytest.approx(-result.lower, abs=2e-12)  # type: ignore[operator]


def test_edges_and_bad_input() -> None:
    assert paired_difference_interval([], [], 0.95) == MeanInterval(None, None, None, "betting")
    unknown = paired_difference_interval([-1.0] * 4, [1.0] * 4, 0.95)
    assert (unknown.estimate, unknown.lower, unknown.upper) == (None, -1.0, 1.0)
    with pytest.raises(ValueError, match=r"\[-1, 1\]"):
        paired_difference_interval([2.0], [2.0], 0.95)
    with pytest.raises(ValueError, match="exceeds"):
        paired_difference_interval([1.0], [0.0], 0.95)
    with pytest.raises(ValueError, match="one entry per pair"):
        difference_bounds([0.0], [0.0], [1.0, 1.0], [1.0, 1.0])
    with pytest.raises(ValueError, match="exceeds"):
        difference_bounds([1.0], [0.0], [1.0], [1.0])
    lowest, highest = difference_bounds([0.25, 1.0], [0.5, 1.0], [0.0, 0.0], [1.0, 0.0])
    assert list(lowest) == [-0.5, -1.0] and list(highest) == [0.75, -1.0]


# ---- coverage: paired differences in {−1, 0, 1} ------------------------------------------------

# (P(broken), P(same), P(fixed)): the true difference is P(fixed) − P(broken).
SHAPES = [(0.05, 0.90, 0.05), (0.02, 0.88, 0.10), (0.30, 0.40, 0.30), (0.0, 0.95, 0.05),
          (0.15, 0.80, 0.05)]


def _paired_coverage(shape: tuple[float, float, float], n: int, repetitions: int,
                     rng: np.random.Generator, level: float = 0.95) -> float:
    d: npt.NDArray[np.float64] = rng.choice([-1.0, 0.0, 1.0], p=shape, size=(repetitions, n))
    truth = shape[2] - shape[0]
    y = (d + 1.0) / 2.0
    means = y.mean(axis=1)
    lower = 2.0 * np.minimum(betting_lower_bounds(y, level), means) - 1.0
    upper = 2.0 * np.maximum(1.0 - betting_lower_bounds(1.0 - y, level), means) - 1.0
    one = paired_difference_interval(d[0], d[0], level)
    assert (one.lower, one.upper) == pytest.approx((lower[0], upper[0]), abs=1e-12)
    return float(np.mean((lower <= truth + 1e-12) & (truth - 1e-12 <= upper)))


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", [30, 100, 400])
def test_paired_coverage_at_least_nominal(shape: tuple[float, float, float], n: int) -> None:
    rng = np.random.default_rng(1947 + n)
    coverage = _paired_coverage(shape, n, 1000, rng)
    assert coverage >= 0.95, (shape, n, coverage)


@pytest.mark.slow
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("n", [30, 100, 400])
def test_paired_coverage_many_repetitions(shape: tuple[float, float, float], n: int) -> None:
    rng = np.random.default_rng(17 + n)
    assert _paired_coverage(shape, n, 3000, rng, level=0.9) >= 0.9
