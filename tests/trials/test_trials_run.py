"""Repeated trials through the real engine (docs/reliability.md): every case runs `trials` times,
each trial is its own execution (cached by trial), and each metric is computed over cases from its
per-case values exactly as docs/reliability.md#what-passk-means defines them."""

from __future__ import annotations

import json
from math import comb

import pytest

import oloproof
from oloproof.stats import bentkus_interval, rate_interval

# A: one pass, one fail, two errored trials; B: all pass; C: all fail; D: three pass, one
# errored. (Errored trials are missing for every criterion.)
PLANS = {"A": "PFEE", "B": "PPPP", "C": "FFFF", "D": "PPPE"}


def _by_digest(run_ref: str, config: str) -> list[oloproof.api.CaseTrials]:
    cases = oloproof.load_case_trials(run_ref, config)
    return sorted(cases, key=lambda c: (c.digest, c.case_id))


def test_every_case_runs_each_trial_and_the_system_can_read_which(trial_project):
    trial_project.cases(PLANS)

    oloproof.run(trial_project.config)

    calls = sorted(trial_project.calls())
    assert calls == sorted((case, t, 4) for case in PLANS for t in range(1, 5))


def test_the_criterion_is_each_cases_share_of_passing_trials_with_the_bentkus_interval(
        trial_project):
    trial_project.cases(PLANS)

    result = oloproof.run(trial_project.config)

    row = result.metric("answer_correct")
    # Trials: 8 passed, 7 failed... counted per trial; the interval is over the 4 cases.
    assert (row.passed, row.observed, row.missing, row.excluded) == (8, 13, 3, 0)
    assert (row.trials, row.cases, row.method) == (4, 4, "bentkus")
    ordered = _by_digest("latest", trial_project.config)
    share = {"A": (1 / 4, 3 / 4), "B": (1.0, 1.0), "C": (0.0, 0.0), "D": (3 / 4, 1.0)}
    expected = bentkus_interval([share[c.case_id][0] for c in ordered],
                                     [share[c.case_id][1] for c in ordered], 0.95)
    assert (row.estimate, row.lower, row.upper) == (expected.estimate, expected.lower,
                                                    expected.upper)
    # The estimate is the mean over the observed cases (B and C, nothing missing).
    assert row.estimate == 0.5


def test_pass_hat_k_at_k_equal_to_trials_is_exact_over_cases_and_a_failed_trial_settles_it(
        trial_project):
    trial_project.suite["metrics"] = [
        {"id": "pass_hat_4", "type": "pass_hat_k", "criterion": "answer_correct", "k": 4},
        {"id": "pass_at_4", "type": "pass_at_k", "criterion": "answer_correct", "k": 4}]
    trial_project.write()
    trial_project.cases(PLANS)

    result = oloproof.run(trial_project.config)

    hat = result.metric("pass_hat_4")
    # A has failed a trial: 0 whatever its two missing trials did (observed, failed). D has
    # three passes and one missing trial: its pass^4 could be 0 or 1 (missing).
    assert (hat.passed, hat.observed, hat.missing, hat.excluded) == (1, 3, 1, 0)
    assert hat.missing_by_reason == {"case_errored": 1}
    exact = rate_interval(1, 3, 1, 0.95)
    assert (hat.estimate, hat.lower, hat.upper, hat.method) == (
        exact.estimate, exact.lower, exact.upper, "clopper_pearson")
    at = result.metric("pass_at_4")
    # pass@4: A has a pass (1, observed), B 1, C 0, D 1 (its passes settle it).
    assert (at.passed, at.observed, at.missing) == (3, 4, 0)
    assert (at.metric_type, at.criterion, at.k, at.trials) == ("pass_at_k", "answer_correct",
                                                               4, 4)


def test_pass_hat_k_below_trials_is_the_unbiased_estimate_with_the_bentkus_interval(
        trial_project):
    trial_project.suite["metrics"] = [
        {"id": "pass_hat_2", "type": "pass_hat_k", "criterion": "answer_correct", "k": 2},
        {"id": "pass_at_2", "type": "pass_at_k", "criterion": "answer_correct", "k": 2}]
    trial_project.write()
    trial_project.cases(PLANS)

    result = oloproof.run(trial_project.config)

    # (c, f, m) per case, out of 4 trials.
    counts = {"A": (1, 1, 2), "B": (4, 0, 0), "C": (0, 4, 0), "D": (3, 0, 1)}
    ordered = _by_digest("latest", trial_project.config)
    for metric, value in (
            ("pass_hat_2", lambda c, f: comb(c, 2) / comb(4, 2)),
            ("pass_at_2", lambda c, f: 1 - comb(4 - c, 2) / comb(4, 2))):
        low = [value(counts[x.case_id][0], 0) for x in ordered]
        high = [value(counts[x.case_id][0] + counts[x.case_id][2], 0) for x in ordered]
        expected = bentkus_interval(low, high, 0.95)
        row = result.metric(metric)
        assert (row.lower, row.upper, row.method) == (expected.lower, expected.upper,
                                                      "bentkus"), metric
    hat = result.metric("pass_hat_2")
    # pass^2 of A: C(1,2)/6 = 0 to C(3,2)/6 = 1/2 — missing; D: C(3,2)/6 to 1 — missing.
    assert (hat.observed, hat.missing) == (2, 2)
    at = result.metric("pass_at_2")
    # pass@2 of A: with one pass and one fail already, 1 − C(3,2)/6 = 1/2 to 1 − C(1,2)/6 = 1
    # — missing; D: 1 − C(1,2)/6 = 1 either way — observed.
    assert (at.observed, at.missing) == (3, 1)


def test_the_case_trials_of_a_stored_run_are_the_counts_per_criterion(trial_project):
    trial_project.cases(PLANS)
    oloproof.run(trial_project.config)

    cases = {c.case_id: c for c in oloproof.load_case_trials("latest", trial_project.config)}

    assert {k: (c.counts[0].passed, c.counts[0].failed, c.counts[0].missing,
                c.counts[0].excluded) for k, c in cases.items()} == {
        "A": (1, 1, 2, 0), "B": (4, 0, 0, 0), "C": (0, 4, 0, 0), "D": (3, 0, 1, 0)}
    assert all(c.trials == 4 and c.digest.startswith("sha256:") for c in cases.values())
    assert cases["A"].counts[0].divided and not cases["B"].counts[0].divided
    assert cases["A"].errors == ("system_error", "system_error")


def test_raising_trials_runs_only_the_new_trials_and_trial_one_keeps_the_plain_key(
        trial_project):
    trial_project.suite["trials"] = 1
    trial_project.write()
    trial_project.cases({"A": "PPPPPPPP", "B": "PFPFPFPF"})
    oloproof.run(trial_project.config)
    trial_project.forget_calls()

    five = oloproof.run(trial_project.config, trials=5)
    assert sorted(t for _, t, _ in trial_project.calls()) == [2, 2, 3, 3, 4, 4, 5, 5], \
        "trial 1 is the execution a run without trials stored"
    assert five.to_json()["cache"]["execution"] == {"hit": 2, "miss": 8}
    trial_project.forget_calls()

    eight = oloproof.run(trial_project.config, trials=8)
    assert sorted(t for _, t, _ in trial_project.calls()) == [6, 6, 7, 7, 8, 8]
    assert eight.to_json()["cache"]["execution"] == {"hit": 10, "miss": 6}
    assert eight.metric("answer_correct").passed == 12
    trial_project.forget_calls()

    one = oloproof.run(trial_project.config)
    assert trial_project.calls() == [] and one.metric("answer_correct").trials is None


def test_trials_finishing_in_any_order_give_the_same_intervals(trial_project):
    plans = {f"c{i:02d}": "".join("PF"[(i * 7 + t * 3) % 5 == 0] for t in range(4))
             for i in range(30)}
    trial_project.cases(plans)
    trial_project.suite["metrics"] = [
        {"id": "hat", "type": "pass_hat_k", "criterion": "answer_correct", "k": 2}]
    trial_project.write()
    first = oloproof.run(trial_project.config, concurrency=1)
    again = oloproof.run(trial_project.config, no_cache=True, concurrency=8)

    regate = oloproof.redecide("latest", config=trial_project.config)

    for run in (again, regate):
        for metric in ("answer_correct", "hat"):
            assert (run.metric(metric).lower, run.metric(metric).upper) == (
                first.metric(metric).lower, first.metric(metric).upper)


def test_rules_gate_on_pass_hat_k_unchanged(trial_project):
    trial_project.cases({f"c{i:02d}": "PPPP" if i % 4 else "PPFP" for i in range(40)})
    trial_project.suite["metrics"] = [
        {"id": "hat4", "type": "pass_hat_k", "criterion": "answer_correct", "k": 4}]
    trial_project.policy["rules"] = [{"id": "every-time", "metric": "hat4", "min": 0.9},
                                     {"id": "no-fail", "metric": "hat4",
                                      "kind": "observed_count", "max_failures": 5}]
    trial_project.write()

    result = oloproof.run(trial_project.config)

    hat = result.metric("hat4")
    assert (hat.passed, hat.observed) == (30, 40)
    assert [d.state for d in result.decisions] == ["FAIL", "FAIL"]
    assert result.decisions[1].failures == 10
    assert result.gate.exit_code == 1


def test_a_stopped_runs_missing_trials_count_as_missing(trial_project):
    # Re-analysing what a run stored before it finished: trials never run are missing.
    from oloproof.analysis.metrics import Analysis, MetricPlan
    from oloproof.analysis.outcome import CaseOutcome

    analysis = Analysis(MetricPlan(criteria=["answer_correct"], quantiles=[], slices=[],
                                   min_slice_support=5, trials=3))
    analysis.add(CaseOutcome("A", "P", [None], None, None, None, [], digest="sha256:a"))
    metrics, _ = analysis.finish(0.95)

    row = metrics[0]
    assert (row.passed, row.observed, row.missing) == (1, 1, 2)
    assert row.missing_by_reason == {"trial_not_run": 2}
    assert (row.lower, row.upper) == (bentkus_interval([1 / 3], [1.0], 0.95).lower, 1.0)


@pytest.mark.parametrize("trials", [1, 3])
def test_current_case_trial_is_readable_in_an_async_system_too(trial_project, trials):
    (trial_project.root / "app.py").write_text(
        "from oloproof import current_case, system\n"
        "@system(name='a', version='1')\n"
        "async def run(case_input):\n"
        "    case = current_case()\n"
        "    return {'answer': f'{case.trial}/{case.trials}'}\n", encoding="utf-8")
    trial_project.suite["system"]["name"] = "a"
    trial_project.suite["system"]["version"] = "1"
    trial_project.suite["trials"] = trials
    trial_project.suite["evaluators"] = [{"type": "exact_match", "criterion": "first",
                                          "field": "answer", "expected_field": "answer"}]
    trial_project.write()
    (trial_project.root / "data" / "cases.jsonl").write_text(
        json.dumps({"id": "x", "input": {}, "expected": {"answer": f"1/{trials}"}}) + "\n")

    result = oloproof.run(trial_project.config)

    row = result.metric("first")
    assert (row.passed, row.observed) == (1, trials), "only trial 1 answers 1/k"


def test_a_quantile_over_trials_is_clustered_by_case_and_decides_without_approximate_methods(
        trial_project):
    # A case's own trials do not make a metric approximate: the interval over cases is valid
    # for every number of cases (before, this rule was MANUAL_REVIEW under the default policy).
    trial_project.suite["system"]["records"] = []
    trial_project.suite["metrics"] = [{"id": "latency_p50", "type": "quantile",
                                       "source": "latency_ms", "quantile": 0.5}]
    trial_project.policy["rules"] = [{"id": "fast", "metric": "latency_p50", "max": 10_000}]
    trial_project.write()
    trial_project.cases({f"c{i:02d}": "PPPP" for i in range(12)})

    result = oloproof.run(trial_project.config)

    row = result.metric("latency_p50")
    assert (row.approximate, row.clusters, row.cases, row.observed, row.trials) == (
        False, None, 12, 48, 4)
    assert row.method == "bentkus over clusters (inverted at each observed value)"
    assert result.decisions[0].state == "PASS"
    assert result.decisions[0].reasons == ["upper_bound_meets_maximum"]


def test_trials_that_all_pass_cost_no_evidence(trial_project):
    # The new user's desk: 18 cases, 18 / 18 at one trial read [81.4%, 100.0%] → PASS; at
    # three trials, 54 / 54 passing, the betting interval read [68.7%, 100.0%] → blocked.
    trial_project.policy["rules"] = [{"id": "floor", "metric": "answer_correct", "min": 0.8}]
    trial_project.cases({f"c{i:02d}": "PPP" for i in range(18)})
    trial_project.suite["trials"] = 1
    trial_project.write()
    one = oloproof.run(trial_project.config)
    trial_project.suite["trials"] = 3
    trial_project.write()

    three = oloproof.run(trial_project.config)

    row = three.metric("answer_correct")
    assert (row.passed, row.observed, row.cases, row.trials) == (54, 54, 18, 3)
    first = one.metric("answer_correct")
    assert (row.lower, row.upper) == (first.lower, first.upper) == (
        rate_interval(18, 18, 0, 0.95).lower, 1.0)
    assert oloproof.stats.percent_lower(row.lower) == "81.4%"
    assert [d.state for d in three.decisions] == [d.state for d in one.decisions] == ["PASS"]
