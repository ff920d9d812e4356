"""Per-case values of docs/reliability.md#what-passk-means, held to their definitions by brute
force, and the analysis of excluded trials, clusters and slices with trials."""

from __future__ import annotations

from fractions import Fraction
from math import comb

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from oloproof.analysis.metrics import Analysis, MetricPlan
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.trials import TrialMetricSpec
from oloproof.stats import cluster_ratio_interval
from oloproof.stats.pass_k import case_values


def _value(metric: str | None, j: int, c: int, n: int) -> Fraction:
    if metric is None:
        return Fraction(c, n)
    if metric == "pass_hat_k":
        return Fraction(comb(c, j), comb(n, j))
    return 1 - Fraction(comb(n - c, j), comb(n, j))


counts = st.tuples(st.integers(0, 6), st.integers(0, 6), st.integers(0, 6))


@given(st.lists(counts, min_size=1, max_size=12), st.sampled_from([None, "pass_hat_k",
                                                                  "pass_at_k"]),
       st.integers(1, 6))
def test_each_cases_values_are_the_worst_and_best_completion_of_its_missing_trials(
        cases, metric, j):
    c, f, m = (np.asarray(column, dtype=np.int64) for column in zip(*cases, strict=True))

    values = case_values(c, f, m, metric, j)

    for i, (ci, fi, mi) in enumerate(cases):
        n = ci + fi + mi
        if n == 0:
            assert not values.counted[i], "every trial excluded: the case is excluded"
            continue
        assert values.counted[i]
        if metric is not None and n < j:
            assert values.too_few[i] and not values.observed[i]
            assert (values.lower[i], values.upper[i]) == (0.0, 1.0)
            continue
        # Each missing trial passed or failed: every completion, by brute force.
        outcomes = [_value(metric, j, ci + passed, n) for passed in range(mi + 1)]
        assert values.lower[i] == float(min(outcomes))
        assert values.upper[i] == float(max(outcomes))
        assert bool(values.observed[i]) == (min(outcomes) == max(outcomes))


def test_pass_hat_four_with_one_failed_trial_is_observed_failed_even_if_the_rest_are_missing():
    values = case_values(np.array([0]), np.array([1]), np.array([3]), "pass_hat_k", 4)

    assert values.observed[0] and values.lower[0] == values.upper[0] == 0.0


def _outcome(case_id: str, codes: str, trial: int, *, groups=(), reasons=None,
             cluster=None, facts=None) -> CaseOutcome:
    return CaseOutcome(case_id=case_id, codes=codes,
                       reasons=reasons or [None if c in "PF" else "why" for c in codes],
                       case_key=None, facts=facts, latency_ms=None, groups=list(groups),
                       trial=trial, digest=f"sha256:{case_id}", cluster=cluster)


def test_excluded_trials_do_not_count_and_a_case_with_every_trial_excluded_is_excluded():
    plan = MetricPlan(criteria=["c"], quantiles=[], slices=[], min_slice_support=1, trials=3,
                      trial_metrics=[TrialMetricSpec("hat3", "pass_hat_k", 0, 3),
                                     TrialMetricSpec("hat2", "pass_hat_k", 0, 2)])
    analysis = Analysis(plan)
    # a: passes the two trials the criterion applies to; b: every trial excluded; d: passes all.
    for trial, (a, b, d) in enumerate(zip("PXP", "XXX", "PPP", strict=True), start=1):
        analysis.add(_outcome("a", a, trial))
        analysis.add(_outcome("b", b, trial))
        analysis.add(_outcome("d", d, trial))

    metrics, _ = analysis.finish(0.95)

    criterion, hat3, hat2 = metrics
    assert (criterion.passed, criterion.observed, criterion.excluded) == (5, 5, 4)
    assert (criterion.cases, criterion.excluded_cases) == (2, 1)
    assert criterion.estimate == 1.0, "a's value is 2 / 2: its excluded trial does not count"
    # pass^3 needs three counted trials: a has two (missing, too_few_trials); b is excluded.
    assert (hat3.observed, hat3.missing, hat3.excluded) == (1, 1, 1)
    assert hat3.missing_by_reason == {"too_few_trials": 1}
    assert hat3.excluded_by_reason == {"why": 1}
    assert (hat2.observed, hat2.passed, hat2.missing) == (2, 2, 0)


def test_trials_of_cases_in_one_named_cluster_are_estimated_over_clusters():
    plan = MetricPlan(criteria=["c"], quantiles=[], slices=[], min_slice_support=1, trials=2,
                      case_clusters=True)
    analysis = Analysis(plan)
    for trial in (1, 2):
        analysis.add(_outcome("x1", "P", trial, cluster="x"))
        analysis.add(_outcome("x2", "PF"[trial - 1], trial, cluster="x"))
        analysis.add(_outcome("y", "F", trial))

    (row,), _ = analysis.finish(0.95)

    assert row.approximate and row.clusters == 2
    # Cluster x: two cases whose values are 1 and 1/2; the single case y: 0 (a cluster of its
    # own). The mean of the three cases' values, over two clusters of unequal size.
    expected = cluster_ratio_interval([1.5, 0.0], [1.5, 0.0], [2, 1], 0.95, observed_sum=1.5,
                                      observed_cases=3)
    assert (row.estimate, row.lower, row.upper) == (0.5, expected.lower, expected.upper)
    assert row.method == "bentkus_ratio"


def test_a_case_outside_any_cluster_is_named_by_its_id_whatever_order_cases_finish_in():
    # Before: such a case stood in as `case:{row}`, the row filled in finishing order.
    plan = MetricPlan(criteria=["c"], quantiles=[], slices=[], min_slice_support=1, trials=2,
                      case_clusters=True)
    outcomes = [_outcome("x1", "P", 1, cluster="x"), _outcome("x2", "F", 1, cluster="x"),
                _outcome("x", "P", 1), _outcome("y", "F", 1)]
    outcomes += [_outcome(o.case_id, o.codes, 2, cluster=o.cluster) for o in outcomes]
    documents = set()
    for seed in range(6):
        analysis = Analysis(plan)
        for i in np.random.default_rng(seed).permutation(len(outcomes)):
            analysis.add(outcomes[i])
        (row,), _ = analysis.finish(0.95)
        documents.add(row.model_dump_json())
        # Case `x` has no cluster and joins the cluster named x, as without trials: clusters
        # x (x1, x2, x) and y.
        assert row.clusters == 2
    assert len(documents) == 1


def test_each_trial_joins_its_own_slice_group_and_a_groups_row_is_over_its_cases():
    plan = MetricPlan(criteria=["c"], quantiles=[], slices=["first_tool"],
                      min_slice_support=1, trials=3)
    analysis = Analysis(plan)
    # Case a: trials 1 and 3 start with search (and fail), trial 2 with lookup (passes).
    for trial, (code, tool) in enumerate([("F", "search"), ("P", "lookup"), ("F", "search")],
                                         start=1):
        analysis.add(_outcome("a", code, trial, groups=[tool]))
        analysis.add(_outcome("b", "P", trial, groups=["lookup"]))

    _, slices = analysis.finish(0.95)

    rows = {r.value: r for r in slices}
    assert (rows["search"].passed, rows["search"].observed, rows["search"].support) == (0, 2, 1)
    assert (rows["lookup"].passed, rows["lookup"].observed, rows["lookup"].support) == (4, 4, 2)
    # lookup: case a's one trial there passed (1/1), b's three (3/3): both cases at 1.
    assert rows["lookup"].estimate == 1.0 and rows["search"].estimate == 0.0
    assert rows["lookup"].mark is None and rows["lookup"].p_value is None, "never tested"
    assert rows["lookup"].method == "bentkus" and rows["lookup"].trials == 3


def test_a_case_with_a_failed_trial_is_a_failing_case_once():
    plan = MetricPlan(criteria=["c"], quantiles=[], slices=[], min_slice_support=1, trials=3)
    analysis = Analysis(plan)
    for trial, code in enumerate("FPF", start=1):
        analysis.add(_outcome("a", code, trial))

    analysis.finish(0.95)

    failing = analysis.first_cases.failing_cases()
    assert failing.total == 1 and [c.case for c in failing.first] == ["a"]
    assert analysis.cases == 1
