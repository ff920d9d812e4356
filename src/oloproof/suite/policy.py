"""The release policy, `release.yaml` (docs/configuration.md#releaseyaml)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from oloproof.errors import ConfigError
from oloproof.suite.validation import (
    ConfigModel,
    accepted_fields,
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
    # Every kind but the budgets (max_errored, max_simulator_failures) names the metric it
    # decides on (checked in `_shape`).
    metric: str | None = Field(default=None, min_length=1)
    kind: Literal["interval", "observed_count", "non_inferiority", "max_errored",
                  "sequential", "max_simulator_failures"] = "interval"
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
    # kind: max_simulator_failures (docs/conversations.md#the-simulators-budget): the same
    # limits, over the run's simulated conversations.
    max_share: float | None = Field(default=None, ge=0, le=1, examples=[0.02])
    max_count: int | None = Field(default=None, ge=0, examples=[0])
    # kind: sequential: the case whose trials it decides, the most trials the rule may take,
    # and its confidence level (default: the policy's confidence_level).
    case: str | None = Field(default=None, min_length=1)
    trials: int | None = Field(default=None, ge=1, le=SEQUENTIAL_TRIALS_LIMIT, examples=[50])
    level: float | None = Field(default=None, gt=0.5, lt=1, examples=[0.95])
    # kind: non_inferiority: `any` pairs runs whose simulated users were played by different
    # simulator definitions (docs/conversations.md#the-simulator-is-part-of-the-measurement).
    simulator: Literal["any"] | None = None

    @property
    def subject(self) -> str:
        """What the rule decides on, as its decision names it: its metric, or `executions`
        (the run's accounting) for a max_errored rule, `conversations` for a
        max_simulator_failures one."""
        if self.metric is not None:
            return self.metric
        return CONVERSATIONS_SUBJECT if self.kind == "max_simulator_failures" else \
            ERRORED_SUBJECT

    @model_validator(mode="after")
    def _shape(self) -> Rule:
        if self.simulator is not None and self.kind != "non_inferiority":
            raise ValueError("simulator: any is for a non_inferiority rule (it pairs runs "
                             "whose simulators differ)")
        if self.kind in BUDGET_KINDS:
            return self._budget_shape()
        if self.metric is None:
            raise ValueError(f"{'an' if self.kind[0] in 'io' else 'a'} {self.kind} rule takes "
                             "metric: the criterion or metric it decides on (e.g. metric: "
                             "answer_correct)")
        if self.max_share is not None or self.max_count is not None:
            raise ValueError("max_share and max_count need kind: max_errored (they bound the "
                             "run's errored executions) or kind: max_simulator_failures")
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

    def _budget_shape(self) -> Rule:
        if self.metric is not None:
            raise ValueError(budget_no_metric(self.kind))
        for key in ("min", "max", "max_failures", "margin", "dropped"):
            if getattr(self, key) is not None:
                raise ValueError(f"a {self.kind} rule takes max_share or max_count, not {key}")
        if (self.max_share is None) == (self.max_count is None):
            raise ValueError(budget_one_limit(self.kind))
        return self


ERRORED_SUBJECT = "executions"
"""What a max_errored rule's decision names as its metric: the run's `executions`."""
CONVERSATIONS_SUBJECT = "conversations"
"""What a max_simulator_failures rule's decision names: the run's simulated conversations."""
#: The rules that bound a count of the run's accounting, not a metric.
BUDGET_KINDS = ("max_errored", "max_simulator_failures")
#: What each budget counts, and out of what.
_COUNTED = {"max_errored": ("errored executions", "the run's executions", "executions"),
            "max_simulator_failures": ("simulated conversations whose simulator failed a "
                                       "check", "the run's simulated conversations",
                                       "conversations")}


def budget_no_metric(kind: str) -> str:
    """Why a budget rule names no metric."""
    counted = _COUNTED[kind][0]
    return (f"a {kind} rule counts the run's {counted}, whatever they were to be judged on: "
            "it names no metric; remove `metric:`")


def budget_one_limit(kind: str) -> str:
    """What a budget rule's limit is."""
    counted, out_of, unit = _COUNTED[kind]
    return (f"a {kind} rule takes exactly one of max_share (the most {counted} as a fraction "
            f"of {out_of}, e.g. max_share: 0.02) and max_count (as a number of {unit}, e.g. "
            "max_count: 5)")


ERRORED_NO_METRIC = budget_no_metric("max_errored")
ERRORED_ONE_LIMIT = budget_one_limit("max_errored")


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
    # The most one case's own cost (its agent's usage) can be: what `oloproof board`'s cost
    # intervals need (docs/board.md#cost-per-case); a case above it is refused there.
    cost_cap: float | None = Field(default=None, gt=0, allow_inf_nan=False, examples=[0.5])
    rules: tuple[Rule, ...] = ()

    @field_validator("confidence_level", mode="before")
    @classmethod
    def _a_probability(cls, value: object) -> object:
        # `confidence_level: 95` meant 0.95: say so, as a rate's threshold does.
        if isinstance(value, int | float) and not isinstance(value, bool):
            fraction = as_fraction(float(value))
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
        if isinstance(rule, dict) and rule.get("kind") in BUDGET_KINDS:
            _check_budget_rule(rule, i, doc)
        if isinstance(rule, dict) and "slice" in rule:
            raise ConfigError(
                "a rule cannot name a slice: slices are exploratory and never gate; "
                "write the rule on a metric",
                file=path,
                line=doc.line_of(("rules", i, "slice")),
            )
    return validate_model(Policy, data, doc), doc


def _check_budget_rule(rule: dict[str, Any], i: int, doc: YamlDocument) -> None:
    """A budget rule's keys (max_errored, max_simulator_failures), each refused at its own line
    with what to write (the model checks the same, without lines, for a policy read back from
    a stored run)."""
    name = repr(rule.get("id", i + 1))
    kind = str(rule["kind"])
    counted, out_of, _ = _COUNTED[kind]
    for key in rule:
        if key == "metric":
            raise ConfigError(f"rule {name}: {budget_no_metric(kind)}", file=doc.path,
                              line=doc.line_of(("rules", i, key)))
        if key in ("min", "max", "max_failures", "margin", "dropped", "slice"):
            raise ConfigError(
                f"rule {name}: a {kind} rule takes max_share or max_count, not {key}; "
                f"write max_share: 0.02 (a fraction of {out_of}) or max_count: 5",
                file=doc.path, line=doc.line_of(("rules", i, key)))
    share = rule.get("max_share")
    if isinstance(share, int | float) and not isinstance(share, bool) \
            and math.isfinite(share) and not 0 <= share <= 1:
        fraction = as_fraction(float(share))
        write = f"write max_share: {fraction}" if fraction is not None else \
            "write a fraction in [0, 1] (max_share: 0.02 allows 2%)"
        raise ConfigError(
            f"rule {name}: max_share: {share:g} is outside [0, 1]: it is the most {counted} "
            f"as a fraction of {out_of}; {write}",
            file=doc.path, line=doc.line_of(("rules", i, "max_share")))
    if "max_share" in rule and "max_count" in rule:
        raise ConfigError(f"rule {name}: {budget_one_limit(kind)}, not both", file=doc.path,
                          line=doc.line_of(("rules", i, "max_count")))
    if "max_share" not in rule and "max_count" not in rule \
            and set(rule) <= set(accepted_fields(Rule)):  # (a misspelt key is said first)
        raise ConfigError(f"rule {name}: {budget_one_limit(kind)}", file=doc.path,
                          line=doc.line_of(("rules", i, "kind")))


def as_fraction(value: float) -> str | None:
    """`70` → `0.70`: a threshold written as a percentage, as a fraction (None when it cannot
    have been one)."""
    if not 1 < value <= 100:
        return None
    fraction = value / 100
    text = f"{fraction:.2f}"
    return text if abs(float(text) - fraction) < 1e-12 else repr(round(fraction, 10))
