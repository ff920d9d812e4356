"""Rule states, reasons, the gate and exit codes
(docs/configuration.md#states-reasons-and-exit-codes)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from oloproof.decisions import decide, decide_rule, gate
from oloproof.decisions.rules import decide_max_errored
from oloproof.document import ErrorKind, Executions, MetricRow, QuantileRow, RateRow
from oloproof.report.decision_words import decision_comparison
from oloproof.suite.policy import Policy, Rule


def rate(lower: float | None, upper: float | None, *, passed: int = 10, observed: int = 10,
         missing: int = 0, **extra: Any) -> RateRow:
    return RateRow(id="m", estimate=0.5, lower=lower, upper=upper, passed=passed,
                   observed=observed, missing=missing, excluded=0, **extra)


def quantile(lower: float | None, upper: float | None) -> QuantileRow:
    return QuantileRow(id="p95", quantile=0.95, unit="steps", estimate=lower, lower=lower,
                       upper=upper, observed=20, missing=0, excluded=0)


POLICY = Policy()


def state(rule: Rule, metric: MetricRow, policy: Policy = POLICY, checked: dict | None = None
          ) -> tuple[str, str]:
    decision = decide_rule(rule, metric, policy, checked or {})
    return decision.state, decision.reasons[0]


@pytest.mark.parametrize(("lower", "upper", "expected"), [
    (0.80, 0.95, ("PASS", "lower_bound_meets_minimum")),
    (0.70, 0.95, ("PASS", "lower_bound_meets_minimum")),       # the bound equal to t meets it
    (0.50, 0.69, ("FAIL", "upper_bound_below_minimum")),
    (0.60, 0.80, ("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")),
    (0.60, 0.70, ("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")),
])
def test_min_rule(lower: float, upper: float, expected: tuple[str, str]) -> None:
    assert state(Rule(id="r", metric="m", min=0.70), rate(lower, upper)) == expected


@pytest.mark.parametrize(("lower", "upper", "expected"), [
    (2, 3, ("PASS", "upper_bound_meets_maximum")),
    (2, 12, ("PASS", "upper_bound_meets_maximum")),
    (13, 20, ("FAIL", "lower_bound_above_maximum")),
    (10, 14, ("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")),
    (10, None, ("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")),  # no bound never meets
    (None, None, ("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")),
])
def test_max_rule_on_a_quantile(lower: float | None, upper: float | None,
                                expected: tuple[str, str]) -> None:
    assert state(Rule(id="r", metric="p95", max=12), quantile(lower, upper)) == expected


def test_no_bound_cannot_meet_a_minimum() -> None:
    assert state(Rule(id="r", metric="m", min=0.5), rate(None, 1.0))[0] == "INSUFFICIENT_EVIDENCE"


def test_no_observations() -> None:
    metric = rate(0.0, 1.0, passed=0, observed=0, missing=5)
    assert state(Rule(id="r", metric="m", min=0.5), metric) == (
        "INSUFFICIENT_EVIDENCE", "no_observations")


@pytest.mark.parametrize(("passed", "observed", "missing", "limit", "expected"), [
    (37, 40, 0, 0, ("FAIL", "observed_failures_exceed_limit")),
    (40, 40, 0, 0, ("PASS", "observed_failures_within_limit")),
    (38, 40, 0, 2, ("PASS", "observed_failures_within_limit")),
    (39, 39, 1, 0, ("INSUFFICIENT_EVIDENCE", "missing_could_change_outcome")),
    (38, 39, 1, 1, ("INSUFFICIENT_EVIDENCE", "missing_could_change_outcome")),
    (38, 39, 1, 2, ("PASS", "observed_failures_within_limit")),
    # no observed case (every one excluded, or missing): nothing was counted, nothing passes
    (0, 0, 0, 0, ("INSUFFICIENT_EVIDENCE", "no_observations")),
    (0, 0, 3, 5, ("INSUFFICIENT_EVIDENCE", "no_observations")),
])
def test_observed_count(passed: int, observed: int, missing: int, limit: int,
                        expected: tuple[str, str]) -> None:
    rule = Rule(id="r", metric="m", kind="observed_count", max_failures=limit)
    metric = rate(None, None, passed=passed, observed=observed, missing=missing)
    assert state(rule, metric) == expected


@pytest.mark.parametrize("rule", [
    Rule(id="r", metric="m", min=0.0),
    Rule(id="r", metric="m", max=1.0),
    Rule(id="r", metric="m", kind="observed_count", max_failures=0),
    Rule(id="r", metric="m", kind="observed_count", max_failures=10),
], ids=["rate min 0", "rate max 1", "count max 0", "count max 10"])
@pytest.mark.parametrize("missing", [0, 4])
def test_no_rule_on_a_rate_passes_on_no_observed_case(rule: Rule, missing: int) -> None:
    """Even a threshold every rate meets: with nothing observed there is no evidence."""
    metric = rate(None, None, passed=0, observed=0, missing=missing)
    assert state(rule, metric) == ("INSUFFICIENT_EVIDENCE", "no_observations")
    assert state(rule, metric, Policy(allow_approximate_methods=True)) == (
        "INSUFFICIENT_EVIDENCE", "no_observations")


@pytest.mark.parametrize("rule", [Rule(id="r", metric="p95", max=1e9),
                                  Rule(id="r", metric="p95", min=-1e9)])
def test_no_rule_on_a_quantile_passes_on_no_observed_case(rule: Rule) -> None:
    metric = QuantileRow(id="p95", quantile=0.95, unit="steps", estimate=None, lower=None,
                         upper=None, observed=0, missing=0, excluded=12)
    assert state(rule, metric) == ("INSUFFICIENT_EVIDENCE", "no_observations")


def test_unchecked_transform_is_insufficient_whatever_the_estimate() -> None:
    metric = rate(0.99, 1.0, transform="injected")
    rule = Rule(id="r", metric="m", min=0.5)
    assert state(rule, metric, checked={"injected": False}) == (
        "INSUFFICIENT_EVIDENCE", "transform_not_checked")
    assert state(rule, metric, checked={"injected": True})[0] == "PASS"


def test_approximate_metric_needs_the_opt_in_and_twenty_clusters() -> None:
    metric = rate(0.9, 1.0, approximate=True, clusters=25)
    rule = Rule(id="r", metric="m", min=0.5)
    assert state(rule, metric) == ("MANUAL_REVIEW", "approximate_method_not_permitted")
    allowed = Policy(allow_approximate_methods=True)
    assert state(rule, metric, allowed)[0] == "PASS"
    few = rate(0.9, 1.0, approximate=True, clusters=19)
    assert state(rule, few, allowed) == ("INSUFFICIENT_EVIDENCE", "insufficient_clusters")


@pytest.mark.parametrize(("states", "action", "code"), [
    ([], "ALLOW", 0),
    (["PASS", "PASS"], "ALLOW", 0),
    (["PASS", "FAIL"], "BLOCK", 1),
    (["FAIL", "INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW"], "BLOCK", 1),
    (["INSUFFICIENT_EVIDENCE"], "BLOCK", 3),
    (["INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW"], "BLOCK", 4),
    (["MANUAL_REVIEW", "PASS"], "BLOCK", 4),
])
def test_gate_and_exit_codes(states: list[str], action: str, code: int) -> None:
    result = gate(POLICY, states)
    assert (result.action, result.exit_code) == (action, code)


def test_warn_on_and_a_narrower_block_on() -> None:
    policy = Policy(block_on=("FAIL",), warn_on=("INSUFFICIENT_EVIDENCE",))
    assert gate(policy, ["INSUFFICIENT_EVIDENCE"]).action == "WARN"
    assert gate(policy, ["INSUFFICIENT_EVIDENCE"]).exit_code == 0
    assert gate(policy, ["MANUAL_REVIEW"]).action == "ALLOW"
    assert gate(policy, ["FAIL"]).exit_code == 1


def test_decide_on_metrics_by_id() -> None:
    policy = Policy(rules=(Rule(id="a", metric="m", min=0.5),
                           Rule(id="b", metric="m", kind="observed_count", max_failures=0)))
    decisions, result = decide(policy, [rate(0.6, 0.9, passed=9, observed=10)], {})
    assert [(d.rule, d.state) for d in decisions] == [("a", "PASS"), ("b", "FAIL")]
    assert (result.action, result.exit_code) == ("BLOCK", 1)


@pytest.mark.parametrize(("lower", "upper", "side", "bound"), [
    (0.80, 0.95, "lower", 0.80),   # PASS: the lower bound met the minimum
    (0.50, 0.69, "upper", 0.69),   # FAIL: the upper bound fell below it
    (0.60, 0.80, "lower", 0.60),   # undecided: the lower bound did not reach it
])
def test_an_interval_decision_carries_the_bound_and_threshold_it_compared(
        lower: float, upper: float, side: str, bound: float) -> None:
    decision = decide_rule(Rule(id="r", metric="m", min=0.70), rate(lower, upper), POLICY, {})

    assert decision.to_json() == {
        "rule": "r", "metric": "m", "state": decision.state, "reasons": list(decision.reasons),
        "kind": "interval", "bound": bound, "bound_side": side, "threshold": 0.70,
        "threshold_side": "min"}


def test_a_maximum_on_a_quantile_compares_the_upper_bound_and_no_bound_is_null() -> None:
    rule = Rule(id="r", metric="p95", max=12)

    passed = decide_rule(rule, quantile(2, 3), POLICY, {})
    open_ended = decide_rule(rule, quantile(10, None), POLICY, {})
    failed = decide_rule(rule, quantile(13, 20), POLICY, {})

    assert (passed.bound_side, passed.bound, passed.threshold_side) == ("upper", 3, "max")
    assert (open_ended.bound_side, open_ended.bound) == ("upper", None)
    assert "bound" in open_ended.to_json(), "no bound is written as null, not left out"
    assert (failed.bound_side, failed.bound) == ("lower", 13)


def test_a_count_decision_carries_failures_missing_and_limit() -> None:
    rule = Rule(id="r", metric="m", kind="observed_count", max_failures=1)

    decision = decide_rule(rule, rate(None, None, passed=36, observed=39, missing=1), POLICY, {})

    assert decision.to_json() == {
        "rule": "r", "metric": "m", "state": "FAIL",
        "reasons": ["observed_failures_exceed_limit"], "kind": "observed_count",
        "failures": 3, "missing": 1, "limit": 1}


# ---- the error budget (docs/failures.md#the-error-budget) ----------------------------------------

def _executions(errored: dict[str, int], cases: int, cached: int = 0) -> Executions:
    return Executions(cases=cases, ran=cases - cached, cached=cached,
                      errored={ErrorKind(k): n for k, n in errored.items()})


@pytest.mark.parametrize(("errored", "cases", "limit", "state", "text"), [
    (40, 2000, {"max_share": 0.02}, "PASS", "40 of 2,000 executions errored (2.0%) ≤ max 2.0%"),
    (41, 2000, {"max_share": 0.02}, "FAIL",
     "41 of 2,000 executions errored (2.05%) > max 2.00%"),
    # a share just above the limit is printed with the decimals that show it above
    (201, 10000, {"max_share": 0.02}, "FAIL",
     "201 of 10,000 executions errored (2.01%) > max 2.00%"),
    # 0.3 as written: 3 of 10 is at the limit, not above the float just below 0.3
    (3, 10, {"max_share": 0.3}, "PASS", "3 of 10 executions errored (30.0%) ≤ max 30.0%"),
    (0, 10, {"max_share": 0}, "PASS", "0 of 10 executions errored (0.0%) ≤ max 0.0%"),
    (1, 1000, {"max_share": 0}, "FAIL", "1 of 1,000 executions errored (0.1%) > max 0.0%"),
    (10, 10, {"max_share": 1}, "PASS", "10 of 10 executions errored (100.0%) ≤ max 100.0%"),
    (5, 100, {"max_count": 5}, "PASS", "5 of 100 executions errored ≤ max 5"),
    (6, 100, {"max_count": 5}, "FAIL", "6 of 100 executions errored > max 5"),
    (0, 1, {"max_count": 0}, "PASS", "0 of 1 execution errored ≤ max 0"),
])
def test_max_errored_counts_errored_executions_against_its_limit(
        errored: int, cases: int, limit: dict[str, float], state: str, text: str) -> None:
    rule = Rule(id="infra", kind="max_errored", **limit)

    (decision,), result = decide(Policy(rules=(rule,)), [], {},
                                 executions=_executions({"timeout": errored}, cases))

    assert decision.state == state
    assert decision.reasons == [f"errored_share_{'within' if state == 'PASS' else 'exceeds'}"
                                "_limit"]
    assert decision_comparison(decision, None) == text
    assert result.exit_code == (0 if state == "PASS" else 1)


def test_max_errored_counts_every_kind_and_every_execution_cached_ones_included() -> None:
    rule = Rule(id="infra", kind="max_errored", max_share=0.02)
    executions = _executions({"timeout": 4, "system_error": 2, "snapshot_failed": 1}, 200,
                             cached=150)

    decision = decide_max_errored(rule, executions)

    assert decision.to_json() == {
        "rule": "infra", "metric": "executions", "state": "FAIL",
        "reasons": ["errored_share_exceeds_limit"], "kind": "max_errored", "errored": 7,
        "executions": 200, "max_share": 0.02}


def test_max_errored_on_no_execution_is_no_evidence() -> None:
    decision = decide_max_errored(Rule(id="infra", kind="max_errored", max_count=0),
                                  _executions({}, 0))

    assert (decision.state, decision.reasons) == ("INSUFFICIENT_EVIDENCE", ["no_observations"])
    assert decision_comparison(decision, None) == "no execution to count"


def test_max_errored_needs_the_run_s_executions_and_reads_back_from_a_stored_policy() -> None:
    policy = Policy(rules=(Rule(id="infra", kind="max_errored", max_share=0.02),
                           Rule(id="a", metric="m", min=0.5)))
    with pytest.raises(ValueError, match="needs the run's executions"):
        decide(policy, [rate(0.6, 0.9)], {})
    stored = Policy.model_validate(policy.model_dump(mode="json"))
    assert stored == policy and stored.rules[0].metric is None


@pytest.mark.parametrize(("fields", "says"), [
    ({"max_share": 0.02, "metric": "m"}, "it names no metric"),
    ({"max_share": 0.02, "max_count": 1}, "exactly one of max_share"),
    ({}, "exactly one of max_share"),
    ({"max_share": 0.02, "margin": 0.1}, "not margin"),
    ({"max_share": 1.5}, "less than or equal to 1"),
    ({"max_count": -1}, "greater than or equal to 0"),
])
def test_a_max_errored_rule_is_validated_strictly(fields: dict[str, Any], says: str) -> None:
    with pytest.raises(ValueError, match=re.escape(says)):
        Rule(id="infra", kind="max_errored", **fields)


def test_a_max_errored_rule_with_nothing_to_count_is_planned_as_running_the_suite() -> None:
    from oloproof.decisions.plan import plan_decisions

    rule = Rule(id="infra", kind="max_errored", max_share=0.02)
    policy = Policy(rules=(rule,))
    decisions, _ = decide(policy, [], {}, executions=_executions({}, 0))

    (row,) = plan_decisions("run_x", policy, decisions, []).rules

    assert (row.rule, row.metric, row.reason, row.total) == ("infra", "executions",
                                                             "no_executions", None)
    assert "running the suite settles the rule" in row.note
