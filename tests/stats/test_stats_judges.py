"""The statistics of a judged criterion (docs/judges.md): the prediction-powered interval, its
coverage by simulation with biased judges, and the agreement counts, rate and κ."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import scipy.stats
from hypothesis import given, settings
from hypothesis import strategies as st

from oloproof.stats import (
    agreement,
    bentkus_interval,
    bounded_mean_interval,
    clopper_pearson,
    cohen_kappa,
    half_level,
    prediction_powered_bounds,
    prediction_powered_interval,
    rate_interval,
)

FloatArray = npt.NDArray[np.float64]


# ---- coverage by simulation ------------------------------------------------------------------


def simulate_intervals(rng: np.random.Generator, bias: str, n: int, big_n: int, reps: int,
              unlabelled: float) -> tuple[FloatArray, FloatArray, float]:
    """`reps` suites of `big_n` cases judged by a biased judge, `n` of them sampled (the first
    `n`: cases are independent draws) and labelled by people, a share `unlabelled` of the
    sampled ones left without a label; the intervals and the true person rate."""
    p = 0.7
    person = rng.random((reps, big_n)) < p
    noise = rng.random((reps, big_n))
    if bias == "lenient":  # passes 35% of what people fail
        judge = person | (noise < 0.35)
    elif bias == "harsh":  # fails 30% of what people pass
        judge = person & (noise >= 0.30)
    else:  # how wrong the judge is depends on the case: lenient on hard cases, harsh on easy
        hardness = rng.random((reps, big_n))
        flip = noise < 0.6 * np.abs(hardness - 0.5)
        judge = np.where(hardness > 0.5, person | flip, person & ~flip)
    judge_f = judge.astype(np.float64)
    delta = person[:, :n].astype(np.float64) - judge_f[:, :n]
    low, high = delta.copy(), delta.copy()
    if unlabelled:
        gone = rng.random((reps, n)) < unlabelled
        low = np.where(gone, -judge_f[:, :n], low)  # the person would have said fail
        high = np.where(gone, 1.0 - judge_f[:, :n], high)  # … or pass
    passed = judge_f.sum(axis=1)
    lower, upper = prediction_powered_bounds(passed, np.full(reps, big_n), np.zeros(reps),
                                             low, high, 0.95)
    return lower, upper, p


SETTINGS = [(n, big_n) for n, big_n in ((10, 40), (30, 40), (40, 400), (200, 2000))]


@pytest.mark.parametrize("bias", ["lenient", "harsh", "case_dependent"])
@pytest.mark.parametrize(("n", "big_n"), SETTINGS)
@pytest.mark.parametrize("unlabelled", [0.0, 0.2])
def test_coverage_at_least_nominal_with_a_biased_judge(bias: str, n: int, big_n: int,
                                                       unlabelled: float) -> None:
    # 200 suites per setting here; benchmarks/judges_coverage.py runs 5,000 over a wider grid.
    rng = np.random.default_rng([n, big_n, int(unlabelled * 10), len(bias)])
    lower, upper, truth = simulate_intervals(rng, bias, n, big_n, 200, unlabelled)
    covered = float(np.mean((lower <= truth) & (truth <= upper)))
    assert covered >= 0.95, (bias, n, big_n, unlabelled, covered)


def test_the_batch_bounds_are_the_single_interval() -> None:
    rng = np.random.default_rng(5)
    judge = (rng.random(60) < 0.8).astype(float)
    delta = np.clip(rng.integers(-1, 2, 25).astype(float), -judge[:25], 1 - judge[:25])
    high = delta.copy()
    high[:3] = 1 - judge[:3]  # three sampled cases unlabelled
    one = prediction_powered_interval(judge, judge, np.minimum(delta, high), high, 0.95)
    lower, upper = prediction_powered_bounds(judge.sum(), 60, 0, np.minimum(delta, high)[None],
                                             high[None], 0.95)
    assert one.lower == pytest.approx(float(lower[0]), abs=1e-12)
    assert one.upper == pytest.approx(float(upper[0]), abs=1e-12)


def test_a_correct_judge_pays_only_the_two_halves() -> None:
    """Agreement 1.0: the rectifier is 0 on every sampled case, and the interval is no wider
    than the judge's raw exact interval at α/2 plus the rectifier's."""
    for passed, big_n, n in ((33, 40, 30), (150, 200, 50), (1900, 2000, 200)):
        judge = np.array([1.0] * passed + [0.0] * (big_n - passed))
        zeros = np.zeros(n)
        ppi = prediction_powered_interval(judge, judge, zeros, zeros, 0.95)
        raw_low, raw_high = clopper_pearson(passed, big_n, half_level(0.95))
        rect = bounded_mean_interval(np.full(n, 0.5), np.full(n, 0.5), half_level(0.95))
        assert rect.lower is not None and rect.upper is not None
        rect_width = 2 * (rect.upper - rect.lower)
        assert ppi.upper - ppi.lower <= raw_high - raw_low + rect_width + 1e-12
        assert ppi.judge_lower == pytest.approx(raw_low)
        assert ppi.estimate == pytest.approx(passed / big_n)
        assert ppi.rectifier_estimate == 0.0
        # and the rectifier's part narrows as more cases are labelled
    widths = [prediction_powered_interval(np.ones(400), np.ones(400), np.zeros(n), np.zeros(n),
                                          0.95).rectifier_upper for n in (10, 50, 200)]
    assert widths == sorted(widths, reverse=True)


def test_the_estimate_and_the_two_parts() -> None:
    # 32 of 40 judged pass; of 30 sampled, people fail 5 the judge passed: 0.8 − 5/30.
    judge = np.array([1.0] * 32 + [0.0] * 8)
    delta = np.array([0.0] * 25 + [-1.0] * 5)
    ppi = prediction_powered_interval(judge, judge, delta, delta, 0.95)
    assert ppi.method == "prediction_powered"
    assert ppi.estimate == pytest.approx(0.8 - 5 / 30)
    exact = rate_interval(32, 40, 0, 0.975)
    assert (ppi.judge_lower, ppi.judge_upper) == (exact.lower, exact.upper)
    assert ppi.lower == pytest.approx(max(0.0, ppi.judge_lower + ppi.rectifier_lower))
    assert ppi.upper == pytest.approx(min(1.0, ppi.judge_upper + ppi.rectifier_upper))
    assert ppi.labelled == 30 and ppi.sampled == 30


def test_unlabelled_sampled_cases_only_widen() -> None:
    judge = np.array([1.0] * 30 + [0.0] * 10)
    delta = np.array([0.0] * 18 + [-1.0] * 2)
    full = prediction_powered_interval(judge, judge, delta, delta, 0.95)
    low, high = np.append(delta, [-1.0] * 5), np.append(delta, [0.0] * 5)
    partial = prediction_powered_interval(judge, judge, low, high, 0.95)
    assert partial.lower <= full.lower and partial.upper >= full.upper
    assert partial.labelled == 20 and partial.sampled == 25


def test_missing_judgments_widen_the_judge_part() -> None:
    judge = np.array([1.0] * 30 + [0.0] * 10)
    zeros = np.zeros(20)
    whole = prediction_powered_interval(judge, judge, zeros, zeros, 0.95)
    low, high = judge.copy(), judge.copy()
    low[:4], high[:4] = 0.0, 1.0
    gaps = prediction_powered_interval(low, high, zeros, zeros, 0.95)
    assert gaps.judge_lower < whole.judge_lower and gaps.judge_upper >= whole.judge_upper


def test_fractions_of_trials_use_the_rates_interval_for_the_judge_part() -> None:
    judge = np.array([1.0, 2 / 3, 1 / 3, 1.0] * 10)
    zeros = np.zeros(15)
    ppi = prediction_powered_interval(judge, judge, zeros, zeros, 0.95)
    assert ppi.judge_method == "bentkus"
    exact = bentkus_interval(judge, judge, half_level(0.95))
    assert (ppi.judge_lower, ppi.judge_upper) == (exact.lower, exact.upper)
    assert ppi.judge_estimate == pytest.approx(judge.mean())


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError):
        prediction_powered_interval([1.0], [1.0], [], [], 0.95)
    with pytest.raises(ValueError):
        prediction_powered_interval([1.0], [1.0], [2.0], [2.0], 0.95)
    with pytest.raises(ValueError):
        prediction_powered_interval([1.0], [0.0], [0.0], [0.0], 0.95)


# ---- agreement and κ -------------------------------------------------------------------------


def _kappa_by_brute_force(pairs: list[tuple[bool, bool]]) -> float | None:
    """κ from the raters' label arrays, through a form of its own: 2(ad − bc) over the sum of
    the products of the margins (Cohen 1960, rearranged)."""
    judge = np.array([j for j, _ in pairs])
    person = np.array([p for _, p in pairs])
    a = int(np.sum(judge & person))
    b = int(np.sum(judge & ~person))
    c = int(np.sum(~judge & person))
    d = int(np.sum(~judge & ~person))
    denominator = (a + b) * (b + d) + (a + c) * (c + d)
    return None if denominator == 0 else 2 * (a * d - b * c) / denominator


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60),
       st.integers(0, 10))
def test_agreement_against_scipy_and_brute_force(pairs: list[tuple[bool, bool]],
                                                 missing: int) -> None:
    found = agreement(pairs, missing, 0.95)
    agreed = sum(1 for j, p in pairs if j == p)
    assert found.labelled == len(pairs)
    assert found.both_pass + found.both_fail == agreed
    brute = _kappa_by_brute_force(pairs)
    if brute is None:
        assert found.kappa is None
    else:
        assert found.kappa == pytest.approx(brute, abs=1e-12)
        # and by its definition, chance agreement enumerated: how often the judge's verdict
        # on one case and a person's on any case (independently drawn) agree
        judge = np.array([j for j, _ in pairs])
        person = np.array([p for _, p in pairs])
        p_o = float(np.mean(judge == person))
        p_e = float(np.mean(judge[:, None] == person[None, :]))
        assert found.kappa == pytest.approx((p_o - p_e) / (1 - p_e), abs=1e-9)
    # the agreement rate's interval: scipy's exact interval, every missing case counted the
    # worst way on each side
    total = len(pairs) + missing
    low = scipy.stats.binomtest(agreed, total).proportion_ci(0.95, method="exact").low
    high = scipy.stats.binomtest(agreed + missing, total).proportion_ci(0.95,
                                                                         method="exact").high
    assert found.rate.lower == pytest.approx(low, abs=1e-9)
    assert found.rate.upper == pytest.approx(high, abs=1e-9)


def test_kappa_of_known_tables() -> None:
    assert cohen_kappa(20, 5, 0, 5) == pytest.approx(4 / 7)  # p_o 5/6, p_e 11/18
    assert cohen_kappa(10, 0, 0, 10) == 1.0
    assert cohen_kappa(30, 0, 0, 0) is None  # both always pass: chance agreement is 1
    assert cohen_kappa(0, 0, 0, 0) is None
    assert cohen_kappa(0, 10, 10, 0) == -1.0


def test_the_rectifier_takes_the_betting_interval_where_ties_dominate() -> None:
    """Person − judge is mostly 0 (they agree): the betting interval adapts to the small
    variance, the order-free Bentkus bound rates use does not (the module's figures)."""
    judge = np.ones(40)
    delta = np.array([0.0] * 23 + [-1.0] * 7)
    ppi = prediction_powered_interval(judge, judge, delta, delta, 0.95)
    assert ppi.rectifier_method == "betting"
    assert (round(ppi.rectifier_lower, 3), round(ppi.rectifier_upper, 3)) == (-0.298, 0.089)
    mapped = (delta + 1) / 2
    other = bentkus_interval(mapped, mapped, half_level(0.95))
    assert other.lower is not None and other.upper is not None
    assert (round(2 * other.lower - 1, 3), round(2 * other.upper - 1, 3)) == (-0.635, 0.238)
