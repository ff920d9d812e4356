"""The release policy, `release.yaml` (SPEC §2.3)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, field_validator, model_validator

from oloproof.errors import ConfigError
from oloproof.suite.validation import ConfigModel, accepted_fields, unknown_key, validate_model
from oloproof.suite.yaml_source import YamlDocument, read_yaml

RuleState = Literal["PASS", "FAIL", "INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW"]


class Rule(ConfigModel):
    """One release rule over one metric (never a slice).

    `kind: non_inferiority` (SPEC §17) compares the metric with the policy's baseline run: it
    passes when the paired difference candidate − baseline is shown to be at least −`margin`.
    """

    id: str = Field(min_length=1)
    metric: str = Field(min_length=1)
    kind: Literal["interval", "observed_count", "non_inferiority"] = "interval"
    min: float | None = None
    max: float | None = None
    max_failures: int | None = Field(default=None, ge=0)
    # How far below the baseline's pass rate the candidate may be, a fraction in [0, 1).
    margin: float | None = Field(default=None, ge=0, lt=1)

    @field_validator("min", "max", "max_failures", "margin", mode="before")
    @classmethod
    def _not_a_boolean(cls, value: object) -> object:
        # YAML's true/false would pass as 1 and 0: a threshold must be written as a number.
        if isinstance(value, bool):
            raise ValueError("must be a number, not true or false")
        return value

    @model_validator(mode="after")
    def _shape(self) -> Rule:
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


class Policy(ConfigModel):
    """The release policy: confidence level, rules, and which states block or warn."""

    version: Literal[1] = 1
    confidence_level: float = Field(default=0.95, gt=0.5, lt=1)
    block_on: tuple[RuleState, ...] = ("FAIL", "INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW")
    warn_on: tuple[RuleState, ...] = ()
    allow_approximate_methods: bool = False
    # The run `non_inferiority` rules compare with (SPEC §17): a run reference (§4.2).
    baseline: str | None = Field(default=None, min_length=1)
    rules: tuple[Rule, ...] = ()

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


def load_policy(path: Path) -> tuple[Policy, YamlDocument]:
    """Read and validate release.yaml."""
    doc = read_yaml(path, "policy", "check the path given (--policy, or `policy=`), or "
                    "create it (`oloproof init` writes a release.yaml beside oloproof.yaml)")
    data = doc.data
    if data is None:
        # An empty policy would allow every release: fail closed (SPEC §11.1).
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
    for i, rule in enumerate(data.get("rules") or ()):
        margin = rule.get("margin") if isinstance(rule, dict) else None
        if isinstance(margin, int | float) and not isinstance(margin, bool) \
                and not 0 <= margin < 1:
            raise ConfigError(
                f"rule {rule.get('id', i + 1)!r}: margin {margin!r} is outside [0, 1); a "
                "margin is how far below the baseline's pass rate the candidate may be, as a "
                "fraction (margin: 0.02 allows 2 percentage points)",
                file=path,
                line=doc.line_of(("rules", i, "margin")),
            )
        if isinstance(rule, dict) and "slice" in rule:
            raise ConfigError(
                "a rule cannot name a slice: slices are exploratory and never gate; "
                "write the rule on a metric",
                file=path,
                line=doc.line_of(("rules", i, "slice")),
            )
    return validate_model(Policy, data, doc), doc


def check_rule_metrics(policy: Policy, doc: YamlDocument, metrics: dict[str, str]) -> None:
    """Every rule names a metric the suite produces; `metrics` maps id → kind (rate, fraction
    — a pass_hat_k / pass_at_k with k below trials —, or quantile)."""
    for i, rule in enumerate(policy.rules):
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
        if rule.kind == "non_inferiority" and kind == "quantile":
            raise ConfigError(
                f"rule {rule.id!r}: non_inferiority rules compare pass rates case by case, "
                f"and {rule.metric!r} is a quantile; name a criterion (or a pass_hat_k / "
                "pass_at_k metric)",
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


def check_baseline_given(policy: Policy, doc: YamlDocument, baseline: str | None) -> None:
    """A policy with a `non_inferiority` rule needs a baseline run: `baseline:` in the policy
    or `baseline` given (`--baseline REF`). A ConfigError at the first such rule otherwise."""
    if baseline is not None or policy.baseline is not None:
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
