"""The rate as people would judge it, stratified by the judge's verdict with its safeguard
(docs/judges.md#the-corrected-interval-in-a-users-words), and PPI++ (approximate): the 1.05×
bound on the labels' own width, coverage on the audit's grid by simulation (benchmarks/validity/
judge_interval.py runs the whole grid), order-free results, missing labels, the critical value.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.special
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from judge_grid import JUDGES, MISSING, RATE, SIZES, draw

from oloproof.stats import bentkus_lower_bounds, clopper_pearson
from oloproof.stats.ppi_plus import MIN_DISAGREEMENTS, MIN_LABELLED, ppi_plus_interval
from oloproof.stats.verdict_strata import (
    STRATIFIED_METHOD,
    WIDTH_BOUND,
    judged_rate_interval,
    safeguard_share,
    stratified_bounds,
)

LEVELS = (0.8, 0.9, 0.95, 0.99)


# ---- the 1.05× bound ------------------------------------------------------------------------


@pytest.mark.parametrize("level", LEVELS)
def test_each_end_of_the_labels_interval_moves_at_most_five_percent(level: float) -> None:
    """The safeguard's share: at error α(1 − ε) each end of the exact interval lies at most
    1.05× as far from k/n as at α, for every n up to 300 and every k (the upper end; the
    lower end is the upper end of n − k mirrored). Where every label passes or fails the far
    end is 1 − (α/2)^{1/n}, whose ratio rises with n towards exactly 1.05."""
    alpha = 1.0 - level
    guarded = 1.0 - alpha * (1.0 - safeguard_share(level))
    worst = 0.0
    for n in range(1, 301):
        k = np.arange(0, n)
        ends = [scipy.special.betaincinv(k + 1, n - k, 1.0 - (1.0 - lv) / 2) - k / n
                for lv in (level, guarded)]
        worst = max(worst, float(np.max(ends[1] / ends[0])))
    assert 1.04 < worst <= WIDTH_BOUND


@pytest.mark.parametrize("level", LEVELS)
def test_the_bentkus_ends_move_at_most_five_percent_too(level: float) -> None:
    """With repeated trials the labels' interval is Bentkus's: the same bound, on sums of
    fractions."""
    guarded = 1.0 - (1.0 - level) * (1.0 - safeguard_share(level))
    worst = 0.0
    for n in (1, 2, 3, 5, 10, 40, 100):
        sums = np.linspace(0.0, n, 4 * n + 1)[1:]
        near = sums / n - bentkus_lower_bounds(sums, n, level)
        far = sums / n - bentkus_lower_bounds(sums, n, guarded)
        worst = max(worst, float(np.max(far / near)))
    assert worst <= WIDTH_BOUND


def test_the_share_is_the_log_bound_down_to_eighty_percent() -> None:
    for level in (0.9, 0.95, 0.99):
        assert safeguard_share(level) == pytest.approx(1 - ((1 - level) / 2) ** 0.05)
    assert safeguard_share(0.95) == pytest.approx(0.16843, abs=1e-5)
    # below about 80.6% the normal quantiles' ratio binds instead
    low = safeguard_share(0.6)
    z = -scipy.special.ndtri(0.2)
    assert -scipy.special.ndtri(0.4 * (1 - low) / 2) == pytest.approx(1.05 * z)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    big_n=st.integers(min_value=12, max_value=400),
    share=st.floats(min_value=0.2, max_value=1.0),
    judge_pass=st.floats(min_value=0.05, max_value=0.95),
    agree=st.floats(min_value=0.4, max_value=1.0),
    gone=st.floats(min_value=0.0, max_value=0.4),
    level=st.sampled_from(LEVELS),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
)
def test_never_more_than_five_percent_wider_than_the_labels(
        big_n: int, share: float, judge_pass: float, agree: float, gone: float,
        level: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = max(1, int(share * big_n))
    judge = (rng.random(big_n) < judge_pass).astype(float)
    person = np.where(rng.random(n) < agree, judge[:n], 1.0 - judge[:n])
    missing = rng.random(n) < gone
    low, high = np.where(missing, 0.0, person), np.where(missing, 1.0, person)
    rate = judged_rate_interval(judge, judge[:n], low, high, level)
    assert rate.upper - rate.lower <= WIDTH_BOUND * (rate.people_upper - rate.people_lower) \
        + 1e-12
    assert 0.0 <= rate.lower <= rate.upper <= 1.0
    if rate.estimate is not None:
        assert rate.lower <= rate.estimate <= rate.upper


# ---- coverage -------------------------------------------------------------------------------


@pytest.mark.parametrize(("pi", "q1", "q0"), [(0.8, 0.95, 0.3), (0.5, 0.7, 0.2), (0.9, 0.6, 0.9),
                                               (0.3, 0.99, 0.01)])
def test_the_judge_part_covers_exactly_summed_over_every_outcome(pi: float, q1: float,
                                                                 q0: float) -> None:
    """8 cases, 4 sampled, at 80%: the chance the judge-based interval holds π q₁ + (1 − π) q₀,
    summed over every outcome (the pass count, the sampled pass stratum's size given it, the
    people's passes in each stratum), is at least 80% — judges better and worse than chance,
    empty strata included."""
    from scipy.stats import binom, hypergeom

    big_n, n, rate = 8, 4, pi * q1 + (1 - pi) * q0
    held = 0.0
    for passed in range(big_n + 1):
        for n1 in range(max(0, n - (big_n - passed)), min(n, passed) + 1):
            chance = binom.pmf(passed, big_n, pi) * hypergeom.pmf(n1, big_n, passed, n)
            for k1 in range(n1 + 1):
                for k0 in range(n - n1 + 1):
                    bounds = stratified_bounds(passed, big_n, (n1, float(k1), float(k1)),
                                               (n - n1, float(k0), float(k0)), 0.8)
                    if bounds is not None and bounds[0] <= rate <= bounds[1]:
                        held += (chance * binom.pmf(k1, n1, q1)
                                 * binom.pmf(k0, n - n1, q0))
    assert held >= 0.8


@pytest.mark.parametrize("judge", ["excellent", "lenient", "case_dependent"])
def test_the_judge_part_covers_by_simulation(judge: str) -> None:
    """400 cases, 100 labelled, at 80% (where a miss is common enough to see): 60 suites, the
    share held is not below 80% beyond chance. The whole grid at 95%, with the safeguard, is
    benchmarks/validity/judge_interval.py's."""
    rng = np.random.default_rng(JUDGES.index(judge))
    suites = draw(rng, judge, 400, 100, 60, "none")
    held = 0
    for i in range(60):
        every, sampled, person, _ = (np.asarray(v) for v in suites.one(i))
        strata = [(int(m.sum()), float(person[m].sum()), float(person[m].sum()))
                  for m in (sampled >= 0.5, sampled < 0.5)]
        bounds = stratified_bounds(int((every >= 0.5).sum()), 400, strata[0], strata[1], 0.8)
        held += bounds is not None and bounds[0] <= RATE <= bounds[1]
    assert clopper_pearson(held, 60, 0.98)[1] >= 0.8, held


@pytest.mark.parametrize(("judge", "missing"), [(j, m) for j in JUDGES for m in MISSING])
def test_every_cell_of_the_grid_holds_the_rate_within_the_bound(judge: str,
                                                                missing: str) -> None:
    """The audit's grid for one judge and one way labels go missing: every size (N 40–2,000,
    n 10–400), two suites each, at 80% (where a miss is common enough to see). No suite's
    interval is more than 1.05× the labels' own, each holds its estimate, and the share of the
    22 suites holding the people's rate is not below 80% beyond chance (a labeller who skips
    every disagreement included: those cases count the worst way). The grid at 95% with 200
    suites a cell is benchmarks/validity/judge_interval.py's."""
    rng = np.random.default_rng(100 * JUDGES.index(judge) + MISSING.index(missing))
    held = 0
    for big_n, n in SIZES:
        suites = draw(rng, judge, big_n, n, 2, missing)
        for i in range(2):
            rate = judged_rate_interval(*suites.one(i), 0.8)
            people = rate.people_upper - rate.people_lower
            assert rate.upper - rate.lower <= WIDTH_BOUND * people + 1e-12, (big_n, n, i)
            if rate.estimate is not None:
                assert rate.lower <= rate.estimate <= rate.upper
            held += rate.lower <= RATE <= rate.upper
    assert clopper_pearson(held, 2 * len(SIZES), 0.98)[1] >= 0.8, held


def test_with_many_cases_and_a_good_judge_it_is_narrower_than_the_labels() -> None:
    """2,000 cases, 400 labelled, the excellent judge: 10 suites, each narrower than the
    labels' own interval (about 0.78× on average; the benchmark's 200 suites give the figure)."""
    rng = np.random.default_rng(39)
    suites = draw(rng, "excellent", 2000, 400, 10, "none")
    ratios = []
    for i in range(10):
        rate = judged_rate_interval(*suites.one(i), 0.95)
        ratios.append((rate.upper - rate.lower) / (rate.people_upper - rate.people_lower))
    assert max(ratios) < 1.0 and np.mean(ratios) < 0.85


# ---- what the interval depends on -----------------------------------------------------------


def test_the_order_of_the_cases_does_not_matter() -> None:
    rng = np.random.default_rng(7)
    judge = (rng.random(300) < 0.8).astype(float)
    person = np.where(rng.random(60) < 0.9, judge[:60], 1.0 - judge[:60])
    one = judged_rate_interval(judge, judge[:60], person, person, 0.95)
    order, every = rng.permutation(60), rng.permutation(300)
    other = judged_rate_interval(judge[every], judge[:60][order], person[order],
                                 person[order], 0.95)
    assert one == other


def test_a_missing_label_only_widens() -> None:
    rng = np.random.default_rng(11)
    judge = (rng.random(200) < 0.7).astype(float)
    person = np.where(rng.random(50) < 0.85, judge[:50], 1.0 - judge[:50])
    full = judged_rate_interval(judge, judge[:50], person, person, 0.95)
    low, high = person.copy(), person.copy()
    low[:6], high[:6] = 0.0, 1.0
    partial = judged_rate_interval(judge, judge[:50], low, high, 0.95)
    # the search's grid follows the data, so allow its spacing
    assert partial.lower <= full.lower + 1e-3 and partial.upper >= full.upper - 1e-3
    assert partial.pass_labelled + partial.fail_labelled == 44


def test_a_judge_that_always_agrees_narrows_towards_its_own_interval() -> None:
    """Every label agrees with the judge: the strata are pure, and with 2,000 cases and 400
    labels the interval is far narrower than the labels' own, near the judge's exact interval
    over all cases."""
    judge = np.array([1.0] * 1600 + [0.0] * 400)
    sampled = judge[::5]
    rate = judged_rate_interval(judge, sampled, sampled, sampled, 0.95)
    own = clopper_pearson(1600, 2000, 0.95)
    assert rate.estimate == pytest.approx(0.8)
    assert rate.upper - rate.lower < 0.7 * (rate.people_upper - rate.people_lower)
    assert rate.upper - rate.lower < 1.6 * (own[1] - own[0])
    assert rate.method == STRATIFIED_METHOD and not rate.approximate


def test_the_stratified_estimate_weights_each_stratum_by_its_share() -> None:
    # 36 of 40 judged pass; sampled 30: 27 pass (20 people-pass), 3 fail (none people-pass)
    judge = [1.0] * 27 + [0.0] * 3
    person = [1.0] * 20 + [0.0] * 10
    rate = judged_rate_interval([*judge, *[1.0] * 9, 0.0], judge, person, person, 0.95)
    assert rate.estimate == pytest.approx(0.9 * 20 / 27)
    assert (rate.passed, rate.cases) == (36, 40)
    assert (rate.pass_sampled, rate.fail_sampled) == (27, 3)
    people = clopper_pearson(20, 30, 0.95)
    assert (rate.people_lower, rate.people_upper) == people


def test_the_judge_part_alone_is_an_interval_around_the_estimate() -> None:
    bounds = stratified_bounds(1576, 2000, (315, 313.0, 313.0), (85, 6.0, 6.0), 0.95)
    assert bounds is not None
    estimate = 1576 / 2000 * 313 / 315 + 424 / 2000 * 6 / 85
    assert bounds[0] < estimate < bounds[1]
    assert bounds[1] - bounds[0] < 0.06  # the labels alone: 0.081


def test_fractions_of_trials_use_bentkus_for_the_labels() -> None:
    rng = np.random.default_rng(3)
    judge = rng.choice([0.0, 1 / 3, 2 / 3, 1.0], size=120)
    person = np.clip(judge[:40] + rng.choice([-1 / 3, 0.0, 1 / 3], size=40), 0.0, 1.0)
    rate = judged_rate_interval(judge, judge[:40], person, person, 0.95)
    assert rate.people_method == "bentkus"
    assert rate.upper - rate.lower <= WIDTH_BOUND * (rate.people_upper - rate.people_lower)


def test_bad_input_is_refused() -> None:
    with pytest.raises(ValueError, match="at least one sampled case"):
        judged_rate_interval([1.0], [], [], [], 0.95)
    with pytest.raises(ValueError, match="among the cases counted"):
        judged_rate_interval([0.0], [1.0], [1.0], [1.0], 0.95)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        judged_rate_interval([2.0], [1.0], [1.0], [1.0], 0.95)
    with pytest.raises(ValueError, match="exceeds"):
        judged_rate_interval([1.0], [1.0], [1.0], [0.0], 0.95)


# ---- the approximate interval ---------------------------------------------------------------


def test_ppi_plus_is_used_only_when_allowed_and_with_enough_labels() -> None:
    rng = np.random.default_rng(5)
    suites = draw(rng, "lenient", 2000, 400, 1, "none")
    every, judge, low, high = suites.one(0)
    exact = judged_rate_interval(every, judge, low, high, 0.95)
    tuned = judged_rate_interval(every, judge, low, high, 0.95, approximate=True)
    assert not exact.approximate and tuned.approximate
    assert tuned.method == "ppi_plus_plus"
    assert tuned.upper - tuned.lower < exact.upper - exact.lower
    few = judged_rate_interval(every, judge[: MIN_LABELLED - 1], low[: MIN_LABELLED - 1],
                               high[: MIN_LABELLED - 1], 0.95, approximate=True)
    assert not few.approximate
    agreeing = np.asarray(judge, dtype=float)
    almost = agreeing.copy()
    almost[: MIN_DISAGREEMENTS - 1] = 1.0 - almost[: MIN_DISAGREEMENTS - 1]
    assert not judged_rate_interval(every, judge, almost, almost, 0.95,
                                    approximate=True).approximate


def test_ppi_plus_tuning_never_does_worse_than_the_labels_alone_in_its_own_estimate() -> None:
    rng = np.random.default_rng(8)
    for kind in JUDGES:
        suites = draw(rng, kind, 1000, 200, 1, "none")
        every, judge, low, high = (np.asarray(v) for v in suites.one(0))
        tuned = ppi_plus_interval(every, judge, low, high, 0.95)
        alone = ppi_plus_interval(judge, judge, low, high, 0.95)  # no unlabelled case: λ = 0
        assert alone.tuning == 0.0
        assert tuned.upper - tuned.lower <= alone.upper - alone.lower + 1e-12


def test_ppi_plus_coverage_is_near_nominal_where_it_applies() -> None:
    rng = np.random.default_rng(21)
    suites = draw(rng, "lenient", 2000, 400, 300, "none")
    tuned = [ppi_plus_interval(*suites.one(i), 0.95) for i in range(300)]
    held = sum(t.lower <= RATE <= t.upper for t in tuned)
    assert held / 300 >= 0.92


# ---- the critical value ---------------------------------------------------------------------


def test_the_critical_value_holds_for_every_weighting() -> None:
    """P(Σ w_s max(0, Z_s) ≥ c) by simulation, for the weights with the largest tail and a
    few others, is at most the error (within the simulation's noise) and close to it for
    the worst."""
    from oloproof.stats.positive_part import critical_value, positive_tail_chances, worst_weights

    error = 0.01
    c = critical_value(error)
    worst, tail = worst_weights(c)
    assert tail == pytest.approx(error * (1 - 1e-3), rel=1e-4)
    rng = np.random.default_rng(0)
    z = np.maximum(rng.standard_normal((400_000, 3)), 0.0)
    for w in (worst, np.ones(3) / math.sqrt(3), np.array([1.0, 1e-6, 1e-6])):
        w = w / np.linalg.norm(w)
        simulated = float(np.mean(z @ w >= c))
        computed = float(positive_tail_chances(c, w[None, :])[0])
        assert computed <= error
        assert abs(simulated - computed) < 4 * math.sqrt(error / 400_000)
