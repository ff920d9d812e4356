"""The quantile of clustered values (each trial a value, clustered by case): the interval is the
Bentkus test inverted at each observed value (oloproof.stats.clustered_quantile)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from oloproof.stats import bentkus_bounds, quantile_interval
from oloproof.stats.clustered_quantile import clustered_quantile_interval

clusters = st.lists(
    st.tuples(st.lists(st.integers(1, 12), min_size=0, max_size=5), st.integers(0, 2)),
    min_size=1, max_size=25).filter(lambda cs: any(v for v, _ in cs))


def _shares(values, missing, v, *, missing_below):
    out = []
    for vals, gap in zip(values, missing, strict=True):
        size = len(vals) + gap
        if size == 0:
            continue
        at_most = sum(1 for x in vals if x <= v) + (gap if missing_below else 0)
        out.append(at_most / size)
    return out


@settings(max_examples=60)
@given(clusters, st.sampled_from([0.1, 0.5, 0.9]))
@example([([1, 1, 1], 2), ([1, 1, 1], 2)], 0.9)  # the floor's upper bound is q + 5e-13
def test_the_bounds_are_the_bentkus_test_inverted_at_each_observed_value(data, q):
    values = [v for v, _ in data]
    missing = [m for _, m in data]

    result = clustered_quantile_interval(values, missing, q, 0.9)

    candidates = sorted({x for v in values for x in v})
    # Lower: the first candidate whose upper Bentkus bound (missing at −∞) reaches q.
    floor = bentkus_bounds(_shares(values, missing, float("-inf"), missing_below=True), 0.9)[1]
    plausible = [v for v in candidates
                 if bentkus_bounds(_shares(values, missing, v, missing_below=True), 0.9)[1] >= q]
    expected_lower = None if floor >= q else plausible[0]
    # Upper: after the last candidate whose lower Bentkus bound (missing at +∞) is below q.
    short = [v for v in candidates
             if bentkus_bounds(_shares(values, missing, v, missing_below=False), 0.9)[0] < q]
    if not short:
        expected_upper = candidates[0]
    elif short[-1] == candidates[-1]:
        expected_upper = None
    else:
        expected_upper = candidates[candidates.index(short[-1]) + 1]
    # The test and the bounds agree except within the bounds' 1e-12 of q itself.
    # (the floor itself may sit within 1e-9 of q: then the bound may or may not exist)
    assert (result.lower == expected_lower
            or _near(values, missing, q, result.lower, expected_lower)
            or (expected_lower is None and abs(floor - q) < 1e-9
                and result.lower == candidates[0]))
    assert result.upper == expected_upper or _near(values, missing, q, result.upper,
                                                   expected_upper)


def _near(values, missing, q, a, b):
    if a is None or b is None:
        return False
    for v in (a, b):
        for below in (True, False):
            low, high = bentkus_bounds(_shares(values, missing, v, missing_below=below), 0.9)
            if abs(high - q) < 1e-9 or abs(low - q) < 1e-9:
                return True
    return False


def test_the_estimate_weighs_each_cluster_equally():
    # One cluster of ten 1s, four clusters of a single 9: the median of the clusters' values
    # (each cluster one fifth) is 9, though most values are 1.
    result = clustered_quantile_interval([[1] * 10, [9], [9], [9], [9]], [0] * 5, 0.5, 0.9)

    assert result.estimate == 9


def test_missing_values_widen_both_sides_and_can_leave_no_bound():
    values = [[5, 6, 7]] * 30

    full = clustered_quantile_interval(values, [0] * 30, 0.5, 0.95)
    gaps = clustered_quantile_interval(values, [1] * 30, 0.5, 0.95)
    mostly_missing = clustered_quantile_interval(values, [20] * 30, 0.5, 0.95)

    assert full.lower is not None and full.upper is not None
    assert gaps.lower <= full.lower and gaps.upper >= full.upper
    assert mostly_missing.lower is None and mostly_missing.upper is None


def test_with_one_value_per_cluster_it_is_no_narrower_than_needed_to_cover():
    rng = np.random.default_rng(3)
    values = rng.integers(1, 40, size=200).tolist()

    clustered = clustered_quantile_interval([[v] for v in values], [0] * 200, 0.5, 0.95)
    exact = quantile_interval(values, 0, 0.5, 0.95)

    assert clustered.estimate == exact.estimate
    assert clustered.lower <= clustered.estimate <= clustered.upper


def _simulate(rng, cases, trials, q, level, reps, spread):
    """Coverage of the true q-quantile of the case-mixture distribution."""
    centres = np.arange(cases)
    hits = 0
    # The population: a case's values are its centre + Poisson(spread)-ish integers; the
    # mixture's true quantile is computed from a large sample of the same model.
    population = (rng.permutation(np.repeat(centres % 7, 2000))
                  + rng.poisson(spread, size=cases * 2000))
    truth = np.sort(population)[int(np.ceil(q * population.size)) - 1]
    for _ in range(reps):
        draw = [(c % 7 + rng.poisson(spread, size=trials)).tolist() for c in
                rng.integers(0, cases, size=cases)]
        interval = clustered_quantile_interval(draw, [0] * cases, q, level)
        low = -np.inf if interval.lower is None else interval.lower
        high = np.inf if interval.upper is None else interval.upper
        hits += low <= truth <= high
    return hits / reps


@pytest.mark.slow
@pytest.mark.parametrize(("q", "spread"), [(0.5, 1.0), (0.9, 2.0), (0.95, 0.5)])
def test_coverage_is_at_least_nominal_by_simulation(q, spread):
    rng = np.random.default_rng(11)

    coverage = _simulate(rng, cases=40, trials=5, q=q, level=0.9, reps=400, spread=spread)

    # 400 repetitions: a true coverage of 0.9 falls below 0.87 with probability ~2%.
    assert coverage >= 0.87, coverage


@pytest.mark.slow
def test_coverage_is_at_least_nominal_with_continuous_values_and_a_case_effect():
    rng = np.random.default_rng(2)
    truth = np.quantile(rng.normal(0, 1, 400_000) + rng.normal(0, 1, 400_000), 0.5)
    hits = 0
    for _ in range(300):
        effects = rng.normal(0, 1, 40)  # trials of one case share its effect
        draw = [(e + rng.normal(0, 1, 5)).tolist() for e in effects]
        interval = clustered_quantile_interval(draw, [0] * 40, 0.5, 0.9)
        hits += interval.lower <= truth <= interval.upper

    assert hits / 300 >= 0.87, hits / 300


def test_the_interval_does_not_depend_on_the_order_of_the_clusters():
    rng = np.random.default_rng(8)
    values = [rng.integers(1, 30, size=int(rng.integers(1, 6))).tolist() for _ in range(60)]
    missing = rng.integers(0, 2, size=60).tolist()

    first = clustered_quantile_interval(values, missing, 0.9, 0.95)
    for seed in range(5):
        order = np.random.default_rng(seed).permutation(60)
        again = clustered_quantile_interval([values[i] for i in order],
                                            [missing[i] for i in order], 0.9, 0.95)
        assert again == first
