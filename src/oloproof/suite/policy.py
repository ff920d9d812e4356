"""The release policy, `release.yaml` (docs/configuration.md#releaseyaml)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator, model_validator

from oloproof.errors import ConfigError
from oloproof.suite.validation import (
    ConfigModel,
    accepted_fields,
    error_location,
    plain_message,
    unknown_key,
    validate_model,
    version_text,
)
from oloproof.suite.yaml_source import YamlDocument, read_yaml

RuleState = Literal["PASS", "FAIL", "INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW"]

SEQUENTIAL_TRIALS_LIMIT = 10_000
"""The most trials a sequential rule takes (`oloproof.stats.sequential.TRIALS_LIMIT`, which
is not imported here: the policy is read without NumPy)."""


class Rule(ConfigModel):
    """One release rule over one metric (never a slice).

    `kind: non_inferiority` (docs/compare.md#gating-on-it-kind-non_inferiority) compares the metric
    with the policy's baseline run: it passes when the paired difference candidate − baseline is
    shown to be at least −`margin`. `kind: sequential` (docs/pytest.md#the-stored-run) decides
    one `case`'s trials of the criterion `metric` in trial order, as a marked pytest test decided
    them: up to `trials` trials, stopped at the first decision, against `min` at `level`.
    """

    id: str = Field(min_length=1)
    # Every kind but max_errored names the metric it decides on (checked in `_shape`).
    metric: str | None = Field(default=None, min_length=1)
    kind: Literal["interval", "observed_count", "non_inferiority", "max_errored",
                  "sequential"] = "interval"
    # A threshold: on a pass rate a fraction in [0, 1] (checked where the policy meets the
    # suite, `check_rule_metrics`), on a quantile a value in the metric's unit.
    min: float | None = Field(default=None, examples=[0.95])
    max: float | None = Field(default=None, examples=[0.05])
    max_failures: int | None = Field(default=None, ge=0, examples=[0])
    # How far below the baseline's pass rate the candidate may be, a fraction in [0, 1).
    margin: float | None = Field(default=None, ge=0, lt=1, examples=[0.02])
    # A case of the baseline that is not in the candidate: `count` it as a pair whose candidate
    # side is missing (so removing failing cases cannot improve the gate), or `ignore` it.
    dropped: Literal["count", "ignore"] | None = None
    # kind: max_errored (docs/failures.md#the-error-budget): the most errored executions the
    # run may hold, as a share of its executions (a fraction in [0, 1]) or as a count.
    max_share: float | None = Field(default=None, ge=0, le=1, examples=[0.02])
    max_count: int | None = Field(default=None, ge=0, examples=[0])
    # kind: sequential: the case whose trials it decides, the most trials the rule may take,
    # and its confidence level (default: the policy's confidence_level).
    case: str | None = Field(default=None, min_length=1)
    trials: int | None = Field(default=None, ge=1, le=SEQUENTIAL_TRIALS_LIMIT, examples=[50])
    level: float | None = Field(default=None, gt=0.5, lt=1, examples=[0.95])

    @property
    def subject(self) -> str:
        """What the rule decides on, as its decision names it: its metric, or `executions`
        (the run's accounting) for a max_errored rule."""
        return self.metric if self.metric is not None else ERRORED_SUBJECT

    @model_validator(mode="after")
    def _shape(self) -> Rule:
        if self.kind == "max_errored":
            return self._errored_shape()
        if self.metric is None:
            raise ValueError(f"{'an' if self.kind[0] in 'io' else 'a'} {self.kind} rule takes "
                             "metric: the criterion or metric it decides on (e.g. metric: "
                             "answer_correct)")
        if self.max_share is not None or self.max_count is not None:
            raise ValueError("max_share and max_count need kind: max_errored (they bound the "
                             "run's errored executions)")
        if self.kind == "sequential":
            return self._sequential_shape()
        for key in ("case", "trials", "level"):
            if getattr(self, key) is not None:
                raise ValueError(f"{key} needs kind: sequential (a rule that decides one case's "
                                 "trials, as a marked pytest test does)")
        if self.kind == "non_inferiority":
            if self.margin is None:
                raise ValueError("a non_inferiority rule takes margin (e.g. margin: 0.02, a "
                                 "fraction in [0, 1))")
            if self.min is not None or self.max is not None or self.max_failures is not None:
                raise ValueError("a non_inferiority rule takes margin, not min/max/"
                                 "max_failures")
            return self
        if self.margin is not None:
            raise ValueError("margin needs kind: non_inferiority")
        if self.dropped is not None:
            raise ValueError("dropped needs kind: non_inferiority (it says what a case of the "
                             "baseline missing from the candidate counts as)")
        if self.kind == "observed_count":
            if self.max_failures is None:
                raise ValueError("an observed_count rule takes max_failures")
            if self.min is not None or self.max is not None:
                raise ValueError("an observed_count rule takes max_failures, not min/max")
        else:
            if (self.min is None) == (self.max is None):
                raise ValueError("an interval rule takes exactly one of min or max")
            if self.max_failures is not None:
                raise ValueError("max_failures needs kind: observed_count")
        return self

    def _sequential_shape(self) -> Rule:
        for key in ("max", "max_failures", "margin", "dropped"):
            if getattr(self, key) is not None:
                raise ValueError(f"a sequential rule takes case, min and trials, not {key}")
        if self.case is None or self.min is None or self.trials is None:
            raise ValueError("a sequential rule takes case (the case whose trials it decides), "
                             "min (a fraction strictly between 0 and 1) and trials (the most "
                             "trials it may take), e.g. {kind: sequential, metric: passed, "
                             "case: test_refund, min: 0.8, trials: 50}")
        if not 0 < self.min < 1:
            raise ValueError(f"a sequential rule's min is a pass rate strictly between 0 and 1, "
                             f"not {self.min:g}")
        return self

    def _errored_shape(self) -> Rule:
        if self.metric is not None:
            raise ValueError(ERRORED_NO_METRIC)
        for key in ("min", "max", "max_failures", "margin", "dropped"):
            if getattr(self, key) is not None:
                raise ValueError(f"a max_errored rule takes max_share or max_count, not {key}")
        if (self.max_share is None) == (self.max_count is None):
            raise ValueError(ERRORED_ONE_LIMIT)
        return self


ERRORED_SUBJECT = "executions"
"""What a max_errored rule's decision names as its metric: the run's `executions`."""

ERRORED_NO_METRIC = (
    "a max_errored rule counts the run's errored executions, whatever they were to be judged "
    "on: it names no metric; remove `metric:`")

ERRORED_ONE_LIMIT = (
    "a max_errored rule takes exactly one of max_share (the most errored executions as a "
    "fraction of the run's executions, e.g. max_share: 0.02) and max_count (as a number of "
    "executions, e.g. max_count: 5)")


class BaselineChoice(ConfigModel):
    """`baseline: {version: "1.4.0"}` — the latest complete run of the project whose system
    version is that — or `baseline: {tag: NAME}` — the run `oloproof tag RUN NAME` named."""

    version: str | None = Field(default=None, min_length=1)
    tag: str | None = Field(default=None, min_length=1)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: object) -> object:
        return version_text(value)  # as the system's version is read

    @model_validator(mode="after")
    def _one(self) -> BaselineChoice:
        if (self.version is None) == (self.tag is None):
            raise ValueError("a baseline is a run reference (latest~1, a run id), "
                             '{version: "1.4.0"} or {tag: NAME}: give exactly one of version '
                             "and tag")
        return self

    @property
    def reference(self) -> str:
        """The same choice as a run reference: `version:1.4.0` or `tag:NAME`."""
        return f"version:{self.version}" if self.version is not None else f"tag:{self.tag}"


class Policy(ConfigModel):
    """The release policy: confidence level, rules, and which states block or warn."""

    version: Literal[1] = 1
    confidence_level: float = Field(default=0.95, gt=0.5, lt=1)
    block_on: tuple[RuleState, ...] = ("FAIL", "INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW")
    warn_on: tuple[RuleState, ...] = ()
    allow_approximate_methods: bool = False
    # The run `non_inferiority` rules compare with (docs/compare.md): a run reference, or
    # {version: ...} / {tag: ...}.
    baseline: str | BaselineChoice | None = None
    rules: tuple[Rule, ...] = ()

    @field_validator("confidence_level", mode="before")
    @classmethod
    def _a_probability(cls, value: object) -> object:
        # `confidence_level: 95` meant 0.95: say so, as a rate's threshold does.
        if isinstance(value, int | float) and not isinstance(value, bool):
            fraction = _as_fraction(float(value))
            if fraction is not None and 0.5 < float(fraction) < 1:
                raise ValueError("is a probability between 0.5 and 1: "
                                 f"write {fraction}")
        return value

    @field_validator("baseline", mode="before")
    @classmethod
    def _a_reference(cls, value: object) -> object:
        if isinstance(value, str) and not value.strip():
            raise ValueError("is empty: write a run reference (latest~1, a run id), "
                             '{version: "1.4.0"} or {tag: NAME}')
        if value is not None and not isinstance(value, str | dict | BaselineChoice):
            raise ValueError("is a run reference (latest~1, a run id), {version: \"1.4.0\"} "
                             f"or {{tag: NAME}}, not {value!r}")
        return value

    @property
    def baseline_reference(self) -> str | None:
        """`baseline:` as a run reference (`version:V` and `tag:NAME` for the mappings)."""
        if isinstance(self.baseline, BaselineChoice):
            return self.baseline.reference
        return self.baseline

    @property
    def compares(self) -> bool:
        """Whether some rule needs a baseline run."""
        return any(rule.kind == "non_inferiority" for rule in self.rules)

    @model_validator(mode="after")
    def _unique(self) -> Policy:
        seen: set[str] = set()
        for rule in self.rules:
            if rule.id in seen:
                raise ValueError(f"rule id {rule.id!r} is used twice")
            seen.add(rule.id)
        return self


_DECIDES_NOTHING = "to decide nothing on purpose (every run is then allowed, and says so)"

NO_RULES_WARNING = (
    "the policy decides nothing (`rules: []`): no rule gates this run, so it is allowed "
    "whatever its figures; add rules to decide a release"
)

NOTHING_BLOCKS_WARNING = (
    "the policy blocks on nothing (`block_on: []`): no rule's state can block a release, so "
    "a run is allowed whatever its rules decide, FAIL and INSUFFICIENT_EVIDENCE included (or "
    "warned, for the states `warn_on` names); to gate, list the states that block, e.g. "
    "`block_on: [FAIL, INSUFFICIENT_EVIDENCE, MANUAL_REVIEW]` (the default)"
)


def errors_can_hide_warning(block_on: Sequence[str]) -> str:
    """What a policy that does not block on INSUFFICIENT_EVIDENCE is told."""
    listed = ", ".join(block_on)
    return (
        f"the policy does not block on INSUFFICIENT_EVIDENCE (`block_on: [{listed}]`), so "
        "errored and missing executions can hide failures: a case that errors (or that a "
        "judge could not judge) counts as missing, a rule it leaves undecided is "
        "INSUFFICIENT_EVIDENCE, and the release is allowed — a system that errors on exactly "
        "the cases it would fail passes; add INSUFFICIENT_EVIDENCE to block_on, or bound the "
        "errors with a max_errored rule (docs/failures.md#errors-that-hide-an-outcome)"
    )


def policy_warnings(policy: Policy) -> list[str]:
    """What a report says of a policy that cannot stop a release: one that decides nothing,
    one that decides and blocks on nothing, one whose undecided rules never block (errored
    executions can then hide a failure). Warnings, not errors: each can be meant."""
    if not policy.rules:
        return [NO_RULES_WARNING]
    if not policy.block_on:
        return [NOTHING_BLOCKS_WARNING]
    if "INSUFFICIENT_EVIDENCE" not in policy.block_on:
        return [errors_can_hide_warning(policy.block_on)]
    return []


def load_policy(path: Path) -> tuple[Policy, YamlDocument]:
    """Read and validate release.yaml."""
    doc = read_yaml(path, "policy", "check the path given (--policy, or `policy=`), or "
                    "create it (`oloproof init` writes a release.yaml beside oloproof.yaml)")
    data = doc.data
    if data is None:
        # An empty policy would allow every release: fail closed
        # (docs/configuration.md#how-oloproof-fails-closed).
        raise ConfigError(
            "the policy is empty, so it would allow any release; write its rules "
            f"(`rules:` with rules on the suite's metrics), or `rules: []` {_DECIDES_NOTHING}",
            file=path, line=1,
        )
    if not isinstance(data, dict):
        raise ConfigError("the policy must be a YAML mapping", file=path, line=1)
    for key in data:
        if key not in accepted_fields(Policy):
            raise ConfigError(
                unknown_key(key, accepted_fields(Policy)),
                file=path,
                line=doc.line_of((key,)),
            )
    if data.get("rules") is None:
        given = "rules" in data
        raise ConfigError(
            ("`rules:` is given without any rule" if given else "the policy has no `rules:`")
            + f", so it would allow any release; list its rules, or write `rules: []` "
            f"{_DECIDES_NOTHING}",
            file=path, line=doc.line_of(("rules",)) if given else 1,
        )
    if isinstance(data.get("baseline"), dict):  # its own errors, not the union's two at once
        validate_model(BaselineChoice, data["baseline"], doc, ("baseline",))
    first_line: dict[str, int | None] = {}
    for i, rule in enumerate(data.get("rules") or ()):
        rule_id = rule.get("id") if isinstance(rule, dict) else None
        if isinstance(rule_id, str):
            line = doc.line_of(("rules", i, "id"))
            if rule_id in first_line:
                first = first_line[rule_id]
                raise ConfigError(
                    f"rule id {rule_id!r} is used twice"
                    + (f" (first on line {first})" if first is not None else "")
                    + "; give each rule its own id",
                    file=path, line=line,
                )
            first_line[rule_id] = line
        margin = rule.get("margin") if isinstance(rule, dict) else None
        if isinstance(margin, int | float) and not isinstance(margin, bool) \
                and math.isfinite(margin) and not 0 <= margin < 1:
            raise ConfigError(
                f"rule {rule.get('id', i + 1)!r}: margin {margin!r} is outside [0, 1); a "
                "margin is how far below the baseline's pass rate the candidate may be, as a "
                "fraction (margin: 0.02 allows 2 percentage points)",
                file=path,
                line=doc.line_of(("rules", i, "margin")),
            )
        if isinstance(rule, dict) and rule.get("kind") == "max_errored":
            _check_errored_rule(rule, i, doc)
        if isinstance(rule, dict) and "slice" in rule:
            raise ConfigError(
                "a rule cannot name a slice: slices are exploratory and never gate; "
                "write the rule on a metric",
                file=path,
                line=doc.line_of(("rules", i, "slice")),
            )
    return validate_model(Policy, data, doc), doc


def _check_errored_rule(rule: dict[str, Any], i: int, doc: YamlDocument) -> None:
    """A max_errored rule's keys, each refused at its own line with what to write (the model
    checks the same, without lines, for a policy read back from a stored run)."""
    name = repr(rule.get("id", i + 1))
    for key in rule:
        if key == "metric":
            raise ConfigError(f"rule {name}: {ERRORED_NO_METRIC}", file=doc.path,
                              line=doc.line_of(("rules", i, key)))
        if key in ("min", "max", "max_failures", "margin", "dropped", "slice"):
            raise ConfigError(
                f"rule {name}: a max_errored rule takes max_share or max_count, not {key}; "
                f"write max_share: 0.02 (a fraction of the run's executions) or max_count: 5",
                file=doc.path, line=doc.line_of(("rules", i, key)))
    share = rule.get("max_share")
    if isinstance(share, int | float) and not isinstance(share, bool) \
            and math.isfinite(share) and not 0 <= share <= 1:
        fraction = _as_fraction(float(share))
        write = f"write max_share: {fraction}" if fraction is not None else \
            "write a fraction in [0, 1] (max_share: 0.02 allows 2%)"
        raise ConfigError(
            f"rule {name}: max_share: {share:g} is outside [0, 1]: it is the most errored "
            f"executions as a fraction of the run's executions; {write}",
            file=doc.path, line=doc.line_of(("rules", i, "max_share")))
    if "max_share" in rule and "max_count" in rule:
        raise ConfigError(f"rule {name}: {ERRORED_ONE_LIMIT}, not both", file=doc.path,
                          line=doc.line_of(("rules", i, "max_count")))
    if "max_share" not in rule and "max_count" not in rule \
            and set(rule) <= set(accepted_fields(Rule)):  # (a misspelt key is said first)
        raise ConfigError(f"rule {name}: {ERRORED_ONE_LIMIT}", file=doc.path,
                          line=doc.line_of(("rules", i, "kind")))


def check_rule_metrics(policy: Policy, doc: YamlDocument, metrics: dict[str, str]) -> None:
    """Every rule names a metric the suite produces; `metrics` maps id → kind (rate, fraction
    — a pass_hat_k / pass_at_k with k below trials —, or quantile). A max_errored rule names
    none (it counts the run's errored executions)."""
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


def _as_fraction(value: float) -> str | None:
    """`70` → `0.70`: a threshold written as a percentage, as a fraction (None when it cannot
    have been one)."""
    if not 1 < value <= 100:
        return None
    fraction = value / 100
    text = f"{fraction:.2f}"
    return text if abs(float(text) - fraction) < 1e-12 else repr(round(fraction, 10))


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
    fraction = _as_fraction(value)
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
            continue  # a max_errored rule names no metric (it counts errored executions)
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
