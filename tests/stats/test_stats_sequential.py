"""The sequential rule of a marked test (oloproof.stats.sequential): its type I error at exactly
the minimum, with the run stopped at the first look that decides, computed exactly over every
path and simulated through the public API; errored trials; symmetry; bounds that agree with the
decision and cover the true rate; the curtailed decisions; the projection of an undecided run.

The exact computations here walk the public decision (`SequentialRate.state`) over the paths of
counts, independently of the module's own dynamic program."""

from __future__ import annotations

import doctest
import itertools
import math
import random
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import oloproof.stats.sequential as sequential
from oloproof.stats import (
    SequentialRate,
    sequential_bounds,
    sequential_design,
)

HALF = {0.8: 0.1, 0.9: 0.05, 0.95: 0.025, 0.99: 0.005}


def procedure_outcomes(minimum: float, trials: int, level: float, rate: object,
                       errored: object = 0) -> dict[str, object]:
    """The exact probabilities of PASS, FAIL and INSUFFICIENT_EVIDENCE for a run whose trials
    pass with probability ``rate × (1 − errored)``, error with ``errored`` and fail otherwise,
    stopped at its first decision. ``rate`` and ``errored`` may be Fractions (exact) or floats."""
    one = Fraction(1) if isinstance(rate, Fraction) else 1.0
    passes = rate * (one - errored)  # type: ignore[operator]
    fails = (one - rate) * (one - errored)  # type: ignore[operator]
    alive: dict[tuple[int, int], object] = {(0, 0): one}
    out: dict[str, object] = {"PASS": 0 * one, "FAIL": 0 * one, "INSUFFICIENT_EVIDENCE": 0 * one}
    for n in range(trials + 1):
        following: dict[tuple[int, int], object] = {}
        for (k, e), weight in alive.items():
            state = SequentialRate(minimum, trials, level, passed=k, failed=n - k - e,
                                   errored=e).state
            if state != "CONTINUE":
                out[state] += weight  # type: ignore[operator]
                continue
            for key, chance in (((k + 1, e), passes), ((k, e), fails), ((k, e + 1), errored)):
                if chance:
                    following[key] = following.get(key, 0 * one) + weight * chance  # type: ignore[operator]
        alive = following
    assert not alive, "a run must be decided by its last trial"
    return out


def test_the_module_examples_run() -> None:
    failures, attempted = doctest.testmod(sequential, optionflags=doctest.ELLIPSIS)
    assert attempted >= 10 and failures == 0


@pytest.mark.parametrize(("minimum", "trials", "level"), [
    (0.8, 50, 0.95), (0.8, 17, 0.95), (0.8, 100, 0.95), (0.5, 40, 0.95), (0.9, 60, 0.9),
    (0.95, 120, 0.95), (0.99, 80, 0.95), (0.3, 25, 0.99), (0.05, 60, 0.95), (0.7, 1, 0.95),
    (0.5, 2, 0.8), (0.999, 30, 0.95), (0.001, 30, 0.95),
])
def test_type_one_error_at_the_minimum_is_at_most_half_alpha_exactly(
        minimum: float, trials: int, level: float) -> None:
    """Exact rational arithmetic over every path at the float minimum itself."""
    at = Fraction(minimum)
    out = procedure_outcomes(minimum, trials, level, at)
    assert out["PASS"] <= Fraction(HALF[level])  # type: ignore[operator]
    assert out["FAIL"] <= Fraction(HALF[level])  # type: ignore[operator]
    design = sequential_design(minimum, trials, level)
    assert design.pass_error <= HALF[level] and design.fail_error <= HALF[level]
    # The whole procedure stops some paths at FAIL first, so it passes no more often than the
    # PASS boundary alone is crossed.
    assert float(out["PASS"]) <= design.pass_error * (1 + 1e-12)  # type: ignore[arg-type]


def test_the_error_is_used_not_wasted_at_the_marker_example() -> None:
    """Not vacuous: at min 0.8 over 50 trials the rule spends nearly all of α/2 (a fixed-n exact
    test of 50 trials reaches 0.0185)."""
    out = procedure_outcomes(0.8, 50, 0.95, Fraction(0.8))
    assert 0.024 < float(out["PASS"]) <= 0.025  # type: ignore[arg-type]


@settings(max_examples=25, deadline=None)
@given(minimum=st.floats(0.002, 0.998), trials=st.integers(1, 90),
       level=st.sampled_from([0.8, 0.9, 0.95, 0.99]))
def test_type_one_error_holds_for_any_minimum_and_cap(minimum: float, trials: int,
                                                      level: float) -> None:
    out = procedure_outcomes(minimum, trials, level, minimum)
    assert out["PASS"] <= HALF[level] * (1 + 1e-12)  # type: ignore[operator]
    assert out["FAIL"] <= HALF[level] * (1 + 1e-12)  # type: ignore[operator]


@pytest.mark.parametrize(("minimum", "trials", "errored"), [
    (0.8, 30, Fraction(1, 10)), (0.8, 24, Fraction(1, 2)), (0.5, 20, Fraction(1, 5)),
    (0.9, 30, Fraction(1, 20)),
])
def test_errored_trials_keep_both_errors_within_half_alpha(minimum: float, trials: int,
                                                           errored: Fraction) -> None:
    """An errored trial is a failure for PASS and a pass for FAIL: at a pass rate of exactly
    the minimum among the trials that did not error, neither side decides wrongly more often
    than α/2 (exact)."""
    out = procedure_outcomes(minimum, trials, 0.95, Fraction(minimum), errored)
    assert out["PASS"] <= Fraction(1, 40)  # type: ignore[operator]
    assert out["FAIL"] <= Fraction(1, 40)  # type: ignore[operator]


def test_simulated_type_one_error_through_the_public_api() -> None:
    """10,000 runs at a true pass rate of exactly 0.8 (a tenth of the trials erroring), each
    fed one trial at a time and stopped at its first decision."""
    rng = random.Random(20_260_41)
    runs = 10_000
    decided = {"PASS": 0, "FAIL": 0, "INSUFFICIENT_EVIDENCE": 0}
    for _ in range(runs):
        rule = SequentialRate(minimum=0.8, trials=50)
        while not rule.decided:
            draw = rng.random()
            rule = rule.add("errored" if draw < 0.1 else "passed" if draw < 0.1 + 0.72
                            else "failed")
        decided[rule.state] += 1
    slack = 3 * math.sqrt(0.025 * 0.975 / runs)
    assert decided["PASS"] / runs <= 0.025 + slack
    assert decided["FAIL"] / runs <= 0.025 + slack
    assert sum(decided.values()) == runs


@pytest.mark.parametrize("trials", [30, 50, 100, 400])
def test_an_always_passing_test_decides_within_30_trials_at_min_08(trials: int) -> None:
    rule = SequentialRate(minimum=0.8, trials=trials)
    while not rule.decided:
        rule = rule.add("passed")
    assert rule.state == "PASS"
    assert rule.trials_run <= 30
    assert sequential_design(0.8, trials).first_pass == rule.trials_run
    decision = rule.decision()
    assert decision.lower >= 0.8 and decision.upper == 1.0


@pytest.mark.parametrize("minimum", [0.1, 0.3, 0.5, 0.8, 0.95])
@pytest.mark.parametrize("trials", [5, 20, 60])
def test_the_design_says_when_an_unbroken_run_decides(minimum: float, trials: int) -> None:
    design = sequential_design(minimum, trials)
    for outcome, first, state in (("passed", design.first_pass, "PASS"),
                                  ("failed", design.first_fail, "FAIL")):
        rule = SequentialRate(minimum, trials)
        while not rule.decided:
            rule = rule.add(outcome)
        assert (rule.trials_run if rule.state == state else None) == first


def test_an_always_failing_test_decides_fail_at_once() -> None:
    rule = SequentialRate(minimum=0.8, trials=50)
    while not rule.decided:
        rule = rule.add("failed")
    assert (rule.state, rule.trials_run) == ("FAIL", 4)
    assert rule.decision().upper < 0.8


def test_too_few_trials_to_pass_is_known_before_the_first_trial() -> None:
    design = sequential_design(0.8, 10)
    assert design.first_pass is None
    # Ten passes of ten cannot decide PASS at 0.8, but ten failures can decide FAIL.
    assert SequentialRate(minimum=0.8, trials=10).state == "CONTINUE"
    assert SequentialRate(minimum=0.8, trials=1).state == "INSUFFICIENT_EVIDENCE"


def test_an_errored_trial_counts_as_a_failure_for_pass_and_a_pass_for_fail() -> None:
    with_error = SequentialRate(minimum=0.8, trials=50, passed=22, errored=1)
    with_failure = SequentialRate(minimum=0.8, trials=50, passed=22, failed=1)
    with_pass = SequentialRate(minimum=0.8, trials=50, passed=23)
    assert with_pass.state == "PASS"
    assert with_error.state == with_failure.state == "CONTINUE"
    assert with_error.trials_run == 23
    lower_e, upper_e = sequential_bounds(22, 0, 1, minimum=0.8, trials=50)
    lower_f, _ = sequential_bounds(22, 1, 0, minimum=0.8, trials=50)
    _, upper_p = sequential_bounds(23, 0, 0, minimum=0.8, trials=50)
    assert lower_e == lower_f
    assert upper_e == upper_p
    # On the FAIL side: errored trials are passes, so they keep a run from failing.
    failing = SequentialRate(minimum=0.8, trials=50, passed=2, failed=8)
    erroring = SequentialRate(minimum=0.8, trials=50, passed=2, failed=4, errored=4)
    assert failing.state == "FAIL"
    assert erroring.state == SequentialRate(minimum=0.8, trials=50, passed=6, failed=4).state
    assert erroring.state != "FAIL"


def test_a_run_that_only_errors_never_decides() -> None:
    rule = SequentialRate(minimum=0.5, trials=12)
    while not rule.decided:
        rule = rule.add("errored")
    decision = rule.decision()
    assert decision.state == "INSUFFICIENT_EVIDENCE"
    assert (decision.lower, decision.upper) == (0.0, 1.0)
    assert decision.estimate is None
    assert decision.projected_trials is None and decision.projection_reason == "errored_trials"


@pytest.mark.parametrize("minimum", [0.25, 0.5, 0.8, 0.9, 0.7])
def test_fail_at_a_minimum_mirrors_pass_at_its_complement(minimum: float) -> None:
    mirror = 1.0 - minimum
    trials = 20
    swap = {"PASS": "FAIL", "FAIL": "PASS"}
    for n in range(trials + 1):
        for k in range(n + 1):
            for e in range(n - k + 1):
                here = SequentialRate(minimum, trials, passed=k, failed=n - k - e,
                                      errored=e).state
                there = SequentialRate(mirror, trials, passed=n - k - e, failed=k,
                                       errored=e).state
                assert swap.get(here, here) == there, (minimum, n, k, e)
    for k, f, e in [(15, 0, 0), (3, 6, 1), (9, 3, 2), (12, 2, 0), (0, 5, 0)]:
        lower, upper = sequential_bounds(k, f, e, minimum=minimum, trials=trials)
        m_lower, m_upper = sequential_bounds(f, k, e, minimum=mirror, trials=trials)
        assert lower == pytest.approx(1.0 - m_upper, abs=1e-12)
        assert upper == pytest.approx(1.0 - m_lower, abs=1e-12)


def test_the_decision_is_pass_exactly_when_the_lower_bound_reaches_the_minimum() -> None:
    minimum, trials = 0.65, 10
    seen = set()
    for n in range(trials + 1):
        for k in range(n + 1):
            for e in ([0, 1] if n - k and n in (5, 10) else [0]):
                decision = SequentialRate(minimum, trials, passed=k, failed=n - k - e,
                                          errored=e).decision()
                seen.add(decision.state)
                assert (decision.state == "PASS") == (decision.lower >= minimum)
                assert (decision.state == "FAIL") == (decision.upper < minimum)
                assert 0.0 <= decision.lower <= decision.upper <= 1.0
    assert seen == {"PASS", "FAIL", "CONTINUE", "INSUFFICIENT_EVIDENCE"}


@pytest.mark.parametrize("rate", [0.55, 0.7, 0.8, 0.9, 0.97])
def test_the_bounds_at_the_stop_cover_the_true_rate(rate: float) -> None:
    """Exact: the chance that the run stops with its lower bound above the true rate, or its
    upper bound below it, is at most α/2 each."""
    minimum, trials = 0.8, 16
    alive = {0: 1.0}
    above = below = 0.0
    for n in range(trials + 1):
        following: dict[int, float] = {}
        for k, weight in alive.items():
            rule = SequentialRate(minimum, trials, passed=k, failed=n - k)
            if rule.decided:
                lower, upper = _bounds(k, n - k, minimum, trials)
                above += weight if lower > rate else 0.0
                below += weight if upper < rate else 0.0
                continue
            following[k + 1] = following.get(k + 1, 0.0) + weight * rate
            following[k] = following.get(k, 0.0) + weight * (1 - rate)
        alive = following
    assert above <= 0.025 and below <= 0.025


_BOUNDS: dict[tuple[int, int, float, int], tuple[float, float]] = {}


def _bounds(k: int, f: int, minimum: float, trials: int) -> tuple[float, float]:
    key = (k, f, minimum, trials)
    if key not in _BOUNDS:
        _BOUNDS[key] = sequential_bounds(k, f, 0, minimum=minimum, trials=trials)
    return _BOUNDS[key]


def _uncurtailed(design: sequential.SequentialDesign, n: int, low: int, high: int,
                 rest: tuple[str, ...]) -> str:
    """The decision of the boundaries alone, look by look with no looking ahead, for a run at
    ``n`` trials (``low`` passes, ``high`` passes or errored, no boundary crossed before look
    ``n``) that goes on with ``rest``."""
    for look, outcome in enumerate((None, *rest), n):  # look n itself first
        low += outcome == "passed"
        high += outcome in ("passed", "errored")
        if low >= design.pass_at[look - 1]:
            return "PASS"
        if high <= design.fail_at[look - 1]:
            return "FAIL"
    return "INSUFFICIENT_EVIDENCE"


@pytest.mark.parametrize(("minimum", "trials"), [(0.8, 14), (0.6, 12), (0.9, 13)])
def test_an_early_decision_is_the_one_every_continuation_reaches(minimum: float,
                                                                  trials: int) -> None:
    """A run stopped before its last look (PASS or FAIL known in advance, or neither side
    reachable) gets the decision the boundaries alone give on every way the run could go on."""
    design = sequential_design(minimum, trials)
    running = {(0, 0)}  # (passes, errored) of the runs still going after n trials
    early = 0
    for n in range(1, trials):
        following = set()
        for k, e in running:
            for k2, e2 in ((k + 1, e), (k, e), (k, e + 1)):
                if e2 > 1:
                    continue
                rule = SequentialRate(minimum, trials, passed=k2, failed=n - k2 - e2,
                                      errored=e2)
                if not rule.decided:
                    following.add((k2, e2))
                elif trials - n <= 10:
                    early += 1
                    for rest in itertools.product(["passed", "failed"], repeat=trials - n):
                        assert _uncurtailed(design, n, k2, k2 + e2, rest) == rule.state, \
                            (n, k2, e2, rest)
        running = following
    assert early > 3


def test_an_undecided_run_says_about_how_many_more_trials_and_its_chance() -> None:
    rule = SequentialRate(minimum=0.8, trials=20)
    for outcome in ["passed"] * 9 + ["failed"] + ["passed"] * 8 + ["failed"] + ["passed"]:
        if rule.decided:
            break
        rule = rule.add(outcome)
    decision = rule.decision()
    assert decision.state == "INSUFFICIENT_EVIDENCE"
    assert decision.projected_trials is not None and decision.more_trials is not None
    assert decision.more_trials == decision.projected_trials - 20 >= 1
    assert decision.more_trials_chance is not None
    # The chance is exact for this rule with trials = projected_trials at the share seen so
    # far: a simulation of the public boundaries agrees.
    share = decision.passed / decision.trials_run
    design = sequential_design(0.8, decision.projected_trials)
    pass_at = np.asarray(design.pass_at)
    rng = np.random.default_rng(41)
    runs = 20_000
    counts = np.cumsum(rng.random((runs, design.trials)) < share, axis=1)
    crossed = (counts >= pass_at).any(axis=1).mean()
    assert abs(crossed - decision.more_trials_chance) < 4 * math.sqrt(0.25 / runs)


def test_a_share_on_the_minimum_has_no_projection() -> None:
    rule = SequentialRate(minimum=0.5, trials=4, passed=2, failed=2)
    decision = rule.decision()
    assert decision.state == "INSUFFICIENT_EVIDENCE"
    assert decision.projection_reason == "share_equals_minimum"
    assert decision.projected_trials is None and decision.more_trials is None


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"minimum": 0.0, "trials": 10}, "minimum must be a number strictly between 0 and 1"),
    ({"minimum": 1.0, "trials": 10}, "minimum must be a number strictly between 0 and 1"),
    ({"minimum": float("nan"), "trials": 10}, "strictly between 0 and 1"),
    ({"minimum": True, "trials": 10}, "strictly between 0 and 1"),
    ({"minimum": 0.8, "trials": 0}, "trials must be between 1 and 10,000"),
    ({"minimum": 0.8, "trials": 10_001}, "trials must be between 1 and 10,000"),
    ({"minimum": 0.8, "trials": 10, "level": 1.0}, "confidence level"),
    ({"minimum": 0.8, "trials": 10, "passed": 11}, "11 trials is more than trials=10"),
    ({"minimum": 0.8, "trials": 10, "failed": -1}, "failed must be non-negative"),
])
def test_bad_arguments_are_refused_with_what_to_change(kwargs: dict[str, object],
                                                       message: str) -> None:
    with pytest.raises(ValueError, match=message):
        SequentialRate(**kwargs)  # type: ignore[arg-type]


def test_no_trial_after_a_decision_and_no_unknown_outcome() -> None:
    rule = SequentialRate(minimum=0.8, trials=50, passed=23)
    with pytest.raises(ValueError, match="already decided PASS after 23 trials"):
        rule.add("passed")
    with pytest.raises(ValueError, match="one of passed, failed, errored, got 'skipped'"):
        SequentialRate(minimum=0.8, trials=50).add("skipped")
    with pytest.raises(ValueError, match="12 trials is more than the design's 10"):
        sequential_bounds(12, 0, 0, minimum=0.8, trials=10)
