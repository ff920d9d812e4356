"""Rules → states → gate → exit code (SPEC §5.3, §10).

Pure: a rule and a metric row (as analysis produced it) in, a decision out. Decisions are made
on the interval, never on the estimate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oloproof.suite.policy import Policy, Rule

MIN_CLUSTERS = 20


@dataclass(frozen=True)
class Decision:
    rule: str
    metric: str
    state: str
    reasons: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"rule": self.rule, "metric": self.metric, "state": self.state,
                "reasons": list(self.reasons)}


@dataclass(frozen=True)
class Gate:
    action: str
    exit_code: int

    def to_json(self) -> dict[str, Any]:
        return {"action": self.action, "exit_code": self.exit_code}


def decide_rule(
    rule: Rule, metric: dict[str, Any], policy: Policy, checked_transforms: dict[str, bool]
) -> Decision:
    """The state of one rule on one metric row."""

    def out(state: str, reason: str) -> Decision:
        return Decision(rule.id, rule.metric, state, (reason,))

    transform = metric.get("transform")
    if transform is not None and not checked_transforms.get(transform, False):
        return out("INSUFFICIENT_EVIDENCE", "transform_not_checked")
    if rule.kind == "observed_count":
        return _observed_count(rule, metric)
    if metric.get("approximate"):
        if not policy.allow_approximate_methods:
            return out("MANUAL_REVIEW", "approximate_method_not_permitted")
        if int(metric.get("clusters") or 0) < MIN_CLUSTERS:
            return out("INSUFFICIENT_EVIDENCE", "insufficient_clusters")
    if not metric.get("observed"):
        return out("INSUFFICIENT_EVIDENCE", "no_observations")
    lower, upper = metric.get("lower"), metric.get("upper")
    if rule.min is not None:
        t = rule.min
        if lower is not None and lower >= t:
            return out("PASS", "lower_bound_meets_minimum")
        if upper is not None and upper < t:
            return out("FAIL", "upper_bound_below_minimum")
        return out("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")
    t = float(rule.max if rule.max is not None else 0)
    if upper is not None and upper <= t:
        return out("PASS", "upper_bound_meets_maximum")
    if lower is not None and lower > t:
        return out("FAIL", "lower_bound_above_maximum")
    return out("INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold")


def _observed_count(rule: Rule, metric: dict[str, Any]) -> Decision:
    """SPEC §5.3: decided on the suite that ran, with no interval."""
    limit = int(rule.max_failures or 0)
    failures = int(metric["observed"]) - int(metric["passed"])
    missing = int(metric["missing"])
    if failures > limit:
        state, reason = "FAIL", "observed_failures_exceed_limit"
    elif failures + missing <= limit:
        state, reason = "PASS", "observed_failures_within_limit"
    else:
        state, reason = "INSUFFICIENT_EVIDENCE", "missing_could_change_outcome"
    return Decision(rule.id, rule.metric, state, (reason,))


def decide(
    policy: Policy, metrics: Sequence[dict[str, Any]], checked_transforms: dict[str, bool]
) -> tuple[list[Decision], Gate]:
    """Every rule's decision and the release gate."""
    by_id = {m["id"]: m for m in metrics}
    decisions = []
    for rule in policy.rules:
        metric = by_id.get(rule.metric)
        if metric is None:  # a stored run re-decided under a policy naming an unknown metric
            decisions.append(Decision(rule.id, rule.metric, "INSUFFICIENT_EVIDENCE",
                                      ("no_observations",)))
            continue
        decisions.append(decide_rule(rule, metric, policy, checked_transforms))
    return decisions, gate(policy, [d.state for d in decisions])


def gate(policy: Policy, states: Sequence[str]) -> Gate:
    """ALLOW / WARN / BLOCK and the exit code (SPEC §10.3)."""
    blocking = [s for s in states if s in policy.block_on]
    if blocking:
        if "FAIL" in blocking:
            return Gate("BLOCK", 1)
        if "MANUAL_REVIEW" in blocking:
            return Gate("BLOCK", 4)
        return Gate("BLOCK", 3)
    if any(s in policy.warn_on for s in states):
        return Gate("WARN", 0)
    return Gate("ALLOW", 0)
