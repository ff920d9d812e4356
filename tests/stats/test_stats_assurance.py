"""The chance a continued run decides, averaged over the run's confidence distribution
(`oloproof.stats.assurance`): held to scipy's beta-binomial summed over every count with the
exact interval's decisions, to its limit, and to a simulation of the Bayesian bootstrap it
stands for; the total for an 80% chance against those sums."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from scipy.stats import beta, betabinom

from oloproof.stats import (
    EXACT_ASSURANCE_METHOD,
    SIMULATED_ASSURANCE_METHOD,
    assured_projection,
    bentkus_critical_sum,
    clopper_pearson,
    continued_chance,
    rate_projection,
)
from oloproof.stats.assurance import (
    count_chance,
    reachable_chance,
    values_chance,
    values_reachable_chance,
)


def _mixture_tail(passed: int, observed: int, more: int, at_least: int) -> float:
    """P(at least `at_least` of `more` pass), the rate from the even mixture of Beta(k, n−k+1)
    and Beta(k+1, n−k), each part scipy's beta-binomial (a point mass at k = 0 or n)."""
    total = 0.0
    for a, b in ((passed, observed - passed + 1), (passed + 1, observed - passed)):
        if a == 0:
            total += 0.5 * (at_least <= 0)
        elif b == 0:
            total += 0.5 * (at_least <= more)
        else:
            total += 0.5 * float(betabinom.sf(at_least - 1, more, a, b))
    return total


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 120), st.floats(0.0, 1.0), st.integers(1, 3000), st.floats(-0.1, 1.1))
def test_the_chance_is_the_beta_binomial_tail_of_the_confidence_distribution(
        observed: int, share: float, more: int, where: float) -> None:
    passed = round(share * observed)
    at_least = round(where * more)

    got = count_chance(passed, observed, more, at_least=at_least)
    most = count_chance(passed, observed, more, at_most=at_least - 1)

    assert got == pytest.approx(_mixture_tail(passed, observed, more, at_least), abs=1e-9)
    assert got + most == pytest.approx(1.0, abs=1e-9)


def test_a_billion_cases_to_come_reach_the_share_beyond_the_threshold() -> None:
    # 26 of 40 near a 0.70 threshold: however many cases come, a rate drawn above 0.70 never
    # brings the FAIL the estimate points to.
    limit = reachable_chance(26, 40, 0.7, above=False)
    huge = 10**9

    chance = count_chance(26, 40, huge, at_most=int(0.7 * (huge + 40)) - 26 - 1)

    assert 0.0 < limit < 1.0
    assert chance == pytest.approx(limit, abs=1e-4)
    assert reachable_chance(26, 40, 0.7, above=True) == pytest.approx(1.0 - limit)


def test_every_case_passing_keeps_half_the_distribution_at_one() -> None:
    # k = n: half the distribution is Beta(n, 1), half a point mass at 1.
    assert count_chance(40, 40, 10, at_least=10) == pytest.approx(
        0.5 + 0.5 * float(betabinom.pmf(10, 10, 40, 1)), abs=1e-9)
    assert count_chance(0, 40, 10, at_least=1) == pytest.approx(
        0.5 * float(betabinom.sf(0, 10, 1, 40)), abs=1e-9)
    assert reachable_chance(40, 40, 0.9, above=True) == pytest.approx(
        0.5 + 0.5 * (1 - 0.9**40))


def test_fractions_are_continued_by_the_bayesian_bootstrap() -> None:
    values = [0.2, 0.6, 0.8, 1.0, 1.0] * 12  # mean 0.72 over 60 cases
    more = 200
    rng = np.random.default_rng(7)
    distinct, counts = np.unique(values, return_counts=True)
    weights = rng.dirichlet(counts.astype(float), size=40_000)
    sums = sum(values) + rng.multinomial(more, weights) @ distinct
    # The sum at which the Bentkus lower bound of the 260 cases reaches 0.70: a PASS.
    cut = bentkus_critical_sum(len(values) + more, 0.70, 0.95)

    chance = values_chance(values, more, cut, above=True)

    assert chance == pytest.approx(float((sums >= cut).mean()), abs=0.02)
    assert chance == values_chance(list(reversed(values)), more, cut, above=True)
    # A PASS needs the rate above 0.70 (and a margin): never likelier than the share of the
    # bootstrap's means above 0.70.
    assert 0.05 < chance < values_reachable_chance(values, 0.70, above=True)
    assert values_chance(values, 0, sum(values) - 1e-9, above=True) == 1.0
    assert values_chance(values, 0, sum(values) + 1e-9, above=True) == 0.0


def test_bad_input() -> None:
    with pytest.raises(ValueError, match="exactly one"):
        count_chance(3, 5, 10)
    with pytest.raises(ValueError, match="must not exceed"):
        count_chance(6, 5, 10, at_least=3)
    with pytest.raises(ValueError, match="at least one"):
        values_chance([], 3, 1.0, above=True)
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        values_chance([1.5], 3, 1.0, above=True)


def _brute_continued(passed: int, observed: int, total: int, threshold: float,
                     is_minimum: bool, level: float) -> float:
    """The chance, summed over every count of the cases to come with scipy's beta-binomial,
    that `passed` of `observed` continued to `total` reaches the decision its estimate points
    to with the exact interval (scipy.stats' Clopper–Pearson bounds, not the code's)."""
    state = "PASS" if (passed / observed > threshold) == is_minimum else "FAIL"
    more = total - observed
    counts = np.arange(more + 1)
    bounds = np.asarray([clopper_pearson(int(passed + c), total, level) for c in counts])
    lower, upper = bounds[:, 0], bounds[:, 1]
    if is_minimum:
        decides = lower >= threshold if state == "PASS" else upper < threshold
    else:
        decides = upper <= threshold if state == "PASS" else lower > threshold
    chance = 0.0
    for a, b in ((passed, observed - passed + 1), (passed + 1, observed - passed)):
        if a == 0:
            pmf = (counts == 0).astype(float)
        elif b == 0:
            pmf = (counts == more).astype(float)
        else:
            pmf = betabinom.pmf(counts, more, a, b)
        chance += 0.5 * float(pmf[decides].sum())
    return chance


@settings(max_examples=30, deadline=None)
@given(st.integers(5, 60), st.floats(0.0, 1.0), st.floats(0.05, 0.95), st.booleans(),
       st.integers(0, 250), st.sampled_from([0.9, 0.95]))
def test_the_continued_chance_is_the_beta_binomial_sum_over_every_count(
        observed: int, share: float, threshold: float, is_minimum: bool, more: int,
        level: float) -> None:
    passed = round(share * observed)
    assume(passed / observed != threshold)
    side = {"minimum": threshold} if is_minimum else {"maximum": threshold}

    chance, method = continued_chance(observed + more, level, passed=passed,
                                      observed=observed, **side)

    assert method == EXACT_ASSURANCE_METHOD
    assert chance == pytest.approx(
        _brute_continued(passed, observed, observed + more, threshold, is_minimum, level),
        abs=1e-9)


def test_the_total_for_an_80_percent_chance_and_where_none_is_given() -> None:
    # 33 of 40: at the same rate 82.5% decides min 0.8 at some total, a coin flip continued;
    # but 36% of the distribution lies at or below 0.8, so no total gives 80%.
    first = rate_projection(33, 40, 0.95, minimum=0.8).total
    assert first is not None
    chance, _ = continued_chance(first, 0.95, passed=33, observed=40, minimum=0.8)
    assert 0.4 < chance < 0.6
    none = assured_projection(0.95, passed=33, observed=40, minimum=0.8)
    assert (none.total, none.reason, none.state) == (None, "out_of_reach", "PASS")
    assert none.reachable == pytest.approx(
        0.5 * (beta.sf(0.8, 33, 8) + beta.sf(0.8, 34, 7)), abs=1e-12)
    # Under min 0.7, 96% lies above: a total where the chance holds and one case fewer falls
    # short (summed exactly).
    likely = assured_projection(0.95, passed=33, observed=40, minimum=0.7)
    assert likely.total is not None and likely.method == EXACT_ASSURANCE_METHOD
    assert likely.chance == pytest.approx(
        _brute_continued(33, 40, likely.total, 0.7, True, 0.95), abs=1e-9)
    assert likely.chance >= 0.8 > _brute_continued(33, 40, likely.total - 1, 0.7, True, 0.95)
    same = assured_projection(0.95, passed=28, observed=40, minimum=0.7)
    assert same.reason == "estimate_equals_threshold"


def test_every_trial_passing_gets_an_exact_chance() -> None:
    # 18 cases, every trial passing, under min 0.9: the Bentkus interval's decisions, but the
    # values are 0/1, so the chance is a beta-binomial tail (the 18 of 18 run's distribution).
    likely = assured_projection(0.95, values=[1.0] * 18, minimum=0.9)
    assert likely.method == EXACT_ASSURANCE_METHOD and likely.state == "PASS"
    assert likely.total is not None and likely.total > 36  # rates below 100% are plausible


def test_the_simulated_chance_agrees_with_the_exact_one_on_two_valued_fractions() -> None:
    # Values 0.5 and 1 (a case passing one or both of its two trials), 7 of 10 of them 1: the
    # bootstrap's weight on the 1s is Beta(7, 3), and the cases to come add 0.5 each plus 0.5
    # for each 1 among them, a beta-binomial count: the chance is exact too.
    values = [1.0] * 7 + [0.5] * 3
    more, total = 110, 120
    cut = bentkus_critical_sum(total, 0.75, 0.95)
    counts = np.arange(more + 1)
    known = sum(values)
    exact = float(betabinom.pmf(counts, more, 7, 3)[known + 0.5 * more + 0.5 * counts >= cut]
                  .sum())

    chance, method = continued_chance(total, 0.95, values=values, minimum=0.75)

    assert method == SIMULATED_ASSURANCE_METHOD
    # 4,000 continuations: within 4 standard errors of the exact chance.
    assert abs(chance - exact) < 4 * np.sqrt(exact * (1 - exact) / 4000) + 1e-9
    again, _ = continued_chance(total, 0.95, values=values, minimum=0.75)
    assert again == chance, "seeded: a plan is the same every time"
