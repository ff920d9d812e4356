"""The release policy against the suite it decides (docs/configuration.md#releaseyaml): every
rule's metric produced by the suite and of a kind the rule can decide, each threshold one that
can bound what it names, each sequential rule's case in the dataset, a baseline given where a
rule compares; and a stored run's policy read back as strictly as a policy file."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from oloproof.errors import ConfigError
from oloproof.suite.policy import Policy, Rule, as_fraction
from oloproof.suite.validation import error_location, plain_message
from oloproof.suite.yaml_source import YamlDocument


def check_rule_metrics(policy: Policy, doc: YamlDocument, metrics: dict[str, str]) -> None:
    """Every rule names a metric the suite produces; `metrics` maps id → kind (rate, fraction
    — a pass_hat_k / pass_at_k with k below trials —, or quantile). A budget rule names none
    (it counts the run's errored executions, or its simulators' failures)."""
    for i, rule in enumerate(policy.rules):
        if rule.metric is None:
            continue
        line = doc.line_of(("rules", i, "metric"))
        kind = metrics.get(rule.metric)
        if kind is None:
            hint = (
                " (slices are exploratory: a rule cannot name one)"
                if "=" in rule.metric or ":" in rule.metric
                else ""
            )
            raise ConfigError(
                f"rule {rule.id!r} names metric {rule.metric!r}, which nothing produces{hint}; "
                "metrics in this suite: " + ", ".join(sorted(metrics)),
                file=doc.path,
                line=line,
            )
        problem = threshold_problem(rule, kind)
        if problem is not None:
            side, message = problem
            raise ConfigError(message, file=doc.path, line=doc.line_of(("rules", i, side)))
        if rule.kind == "non_inferiority" and kind == "quantile":
            raise ConfigError(
                f"rule {rule.id!r}: non_inferiority rules compare pass rates case by case, "
                f"and {rule.metric!r} is a quantile; name a criterion (or a pass_hat_k / "
                "pass_at_k metric)",
                file=doc.path,
                line=line,
            )
        if rule.kind == "sequential" and kind != "rate":
            raise ConfigError(
                f"rule {rule.id!r}: a sequential rule decides the trials of a pass-rate "
                f"criterion, and {rule.metric!r} is a {kind}; name a criterion",
                file=doc.path,
                line=line,
            )
        if rule.kind == "observed_count" and kind == "fraction":
            raise ConfigError(
                f"rule {rule.id!r}: observed_count rules count failures, and {rule.metric!r} "
                "is a pass_hat_k / pass_at_k with k below trials, whose per-case values are "
                "fractions; count failing trials on its criterion instead, or use k = trials",
                file=doc.path,
                line=line,
            )
        if rule.kind == "observed_count" and kind != "rate":
            raise ConfigError(
                f"rule {rule.id!r}: observed_count rules apply to pass-rate criteria, "
                f"and {rule.metric!r} is a {kind}",
                file=doc.path,
                line=line,
            )


def check_rule_cases(policy: Policy, doc: YamlDocument, case_ids: Sequence[str],
                     criteria: Sequence[str]) -> None:
    """Every sequential rule names a case of the dataset and one of its criteria (a pass_hat_k
    metric has no trials of its own to decide)."""
    ids: set[str] | None = None
    for i, rule in enumerate(policy.rules):
        if rule.kind != "sequential":
            continue
        if rule.metric not in criteria:
            raise ConfigError(
                f"rule {rule.id!r}: a sequential rule decides one criterion's trials, and "
                f"{rule.metric!r} is not a criterion; criteria in this suite: "
                + ", ".join(criteria), file=doc.path, line=doc.line_of(("rules", i, "metric")))
        ids = set(case_ids) if ids is None else ids
        if rule.case not in ids:
            raise ConfigError(
                f"rule {rule.id!r} names case {rule.case!r}, which the dataset does not hold; "
                "a sequential rule decides the trials of one case of the suite",
                file=doc.path, line=doc.line_of(("rules", i, "case")))


RATE_KINDS = ("rate", "fraction")
"""Metric kinds whose values, and so whose thresholds, are fractions in [0, 1]."""


def threshold_problem(rule: Rule, kind: str) -> tuple[str, str] | None:
    """Why a rule's `min`/`max` cannot bound a metric of this kind, as (key, message), or None.

    A pass rate is between 0 and 1, so a threshold outside [0, 1] either always passes (`max:
    5`, `min: -5`) or never does (`min: 70`, which meant 0.70): both are mistakes, never a gate.
    (NaN and infinities are refused by the model itself, for every kind.)"""
    if rule.kind != "interval" or kind not in RATE_KINDS:
        return None
    side = "min" if rule.min is not None else "max"
    value = rule.min if rule.min is not None else rule.max
    if value is None or 0 <= value <= 1:
        return None
    shown = f"{value:g}"
    fraction = as_fraction(value)
    write = f"write {fraction}" if fraction is not None else \
        f"write it as a fraction ({side}: 0.95 is 95%)"
    return side, (f"rule {rule.id!r}: {side}: {shown} cannot bound {rule.metric!r}, a pass "
                  f"rate: a rate is between 0 and 1: {write}")


def stored_policy(data: Any, run: str, metrics: dict[str, str] | None = None) -> Policy:
    """The policy a stored run was decided under, read back as strictly as a policy file (a
    run stored by an earlier version may hold what is now refused, such as a NaN threshold):
    a ConfigError naming the run and saying what to do otherwise. With `metrics` (id → kind,
    as `check_rule_metrics` takes), to decide the run again: each threshold is checked
    against what it bounds too."""
    advice = (f"; decide it under a policy file instead: oloproof gate {run} --policy "
              "release.yaml")
    try:
        policy = Policy.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"run {run} was decided under a policy that is not valid now: "
                          f"{error_location(first)}: {plain_message(first)}{advice}") from None
    if metrics is None:
        return policy
    for rule in policy.rules:
        if rule.metric is None:
            continue  # a max_errored or max_simulator_failures rule names no metric
        kind = metrics.get(rule.metric)
        problem = threshold_problem(rule, kind) if kind is not None else None
        if problem is not None:
            raise ConfigError(f"run {run} was decided under a policy that is not valid now: "
                              f"{problem[1]}{advice}")
    return policy


def check_baseline_given(policy: Policy, doc: YamlDocument, baseline: str | None) -> None:
    """A policy with a `non_inferiority` rule needs a baseline run: `baseline:` in the policy
    or `baseline` given (`--baseline REF`). A ConfigError at the first such rule otherwise."""
    if baseline is not None or policy.baseline_reference is not None:
        return
    for i, rule in enumerate(policy.rules):
        if rule.kind == "non_inferiority":
            raise ConfigError(
                f"rule {rule.id!r} is a non_inferiority rule, which compares this run with a "
                "baseline run, and no baseline is given; add `baseline: latest~1` (any run "
                "reference) at the top of the policy, or pass --baseline REF",
                file=doc.path,
                line=doc.line_of(("rules", i, "kind")),
            )
