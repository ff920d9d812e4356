"""The chance a continued run decides, averaged over the run's confidence distribution
(`oloproof.stats.assurance`): held to scipy's beta-binomial, to its limit, and to a simulation
of the Bayesian bootstrap it stands for."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.stats import betabinom

from oloproof.stats import bentkus_critical_sum
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
