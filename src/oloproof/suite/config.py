"""The suite file, `oloproof.yaml` (docs/configuration.md#oloproofyaml): models and strict loading.

Evaluator entries are validated by the evaluator registry (each type has its own model);
everything else here. Validation happens before any system call.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal, Self

from pydantic import Field, ValidationInfo, field_validator, model_validator

from oloproof.errors import ConfigError
from oloproof.suite.validation import (
    ENTRY_POINT,
    PLAIN_NAME,
    ConfigModel,
    accepted_fields,
    unknown_key,
    validate_model,
    version_text,
)
from oloproof.suite.variants import VariantsMatrix, check_matrix
from oloproof.suite.yaml_source import YamlDocument, read_yaml

#: Where a run's workers live (docs/scaling.md#configuration).
EXECUTORS = ("local", "processes", "ray")
MAX_WORKERS = 4096
ARTIFACT_KIND = re.compile(r"^[a-z][a-z0-9_.-]*/v[0-9]+$")
QUANTILE_SOURCES = ("agent_steps", "agent_tool_calls", "latency_ms", "tokens", "cost", "turns",
                    "agent_turns")
SLICE_PATTERN = re.compile(
    r"^(metadata\.[^\s]+|first_tool|repeated_action|route|"
    r"(trajectory_length|tool_calls):\d+(,\d+)*)$"
)


class _Strict(ConfigModel):
    """A mapping of the suite file (see `ConfigModel`)."""


#: At most this many attempts per case under `system.retries`.
MAX_ATTEMPTS = 100


class RetriesConfig(_Strict):
    """`system.retries:` — which exceptions of the system are transient, how many attempts a
    case gets in all, and how long to wait between them (docs/failures.md#retries)."""

    attempts: int = Field(default=1, ge=1, le=MAX_ATTEMPTS, examples=[3])
    # Exception classes as `module:Class` (`openai:RateLimitError`, `builtins:TimeoutError`).
    on: tuple[str, ...] = ()
    backoff_s: float = Field(default=1.0, ge=0, le=3600, examples=[1])
    max_backoff_s: float = Field(default=30.0, ge=0, le=3600, examples=[30])

    @field_validator("on")
    @classmethod
    def _names(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for name in value:
            if not re.match(ENTRY_POINT, name):
                raise ValueError(f"{name!r} is not an exception class as module:Class (e.g. "
                                 "builtins:TimeoutError, openai:RateLimitError)")
        if len(set(value)) != len(value):
            raise ValueError("an exception class is listed twice")
        return value

    @model_validator(mode="after")
    def _meaningful(self) -> RetriesConfig:
        # A retry policy that retries nothing is a mistake, not a default.
        if self.attempts > 1 and not self.on:
            raise ValueError(f"attempts: {self.attempts} retries nothing without `on:`; list "
                             "the exceptions that are transient (e.g. on: "
                             "[builtins:TimeoutError])")
        if self.attempts == 1 and self.on:
            raise ValueError("`on:` has no effect with attempts: 1 (one attempt, none "
                             "retried); write attempts: 3 (the first attempt and two retries)")
        if self.max_backoff_s < self.backoff_s:
            raise ValueError(f"max_backoff_s ({self.max_backoff_s:g}) is below backoff_s "
                             f"({self.backoff_s:g}): the cap must be at least the first wait")
        return self


class SystemConfig(_Strict):
    """`system:` — what is under test and how to call it."""

    name: str = Field(min_length=1)
    version: str = Field(min_length=1)
    # Exactly one of the two (docs/scaling.md#configuration): `callable` is the system itself,
    # `factory` a zero-argument callable returning a fresh system (one per worker, each with its
    # sandbox).
    callable: str | None = Field(default=None, pattern=ENTRY_POINT)
    factory: str | None = Field(default=None, pattern=ENTRY_POINT)
    records: tuple[str, ...] = ()
    # `otel` (docs/traces.md#systemtrace-otel-the-engine-reads-the-spans): the engine records the
    # trajectory and usage from the OpenTelemetry spans the system emits under a per-case span; the
    # system records neither itself.
    trace: Literal["otel"] | None = None
    concurrency: int = Field(default=8, ge=1, le=4096)
    timeout_s: float | None = Field(default=None, gt=0, examples=[60])
    retries: RetriesConfig | None = None
    # Every combination a candidate of its own, one run each (docs/board.md); the system reads
    # its run's combination as `current_case().variant`.
    variants: VariantsMatrix = Field(default_factory=dict)

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: object) -> object:
        return version_text(value)

    @field_validator("variants")
    @classmethod
    def _few_enough(cls, value: VariantsMatrix) -> VariantsMatrix:
        check_matrix(value)
        return value

    @model_validator(mode="after")
    def _one_entry_point(self) -> SystemConfig:
        if (self.callable is None) == (self.factory is None):
            raise ValueError(
                "give exactly one of system.callable (the system object or function) and "
                "system.factory (a zero-argument callable returning a fresh system)")
        return self

    @property
    def entry(self) -> str:
        """`module:attribute` of the system (its callable or its factory)."""
        entry = self.callable if self.callable is not None else self.factory
        assert entry is not None
        return entry

    @property
    def entry_key(self) -> str:
        """Which key names the system: `callable` or `factory`."""
        return "callable" if self.callable is not None else "factory"

    @property
    def recorded(self) -> frozenset[str]:
        """The artifact kinds a case has: those declared, and with `trace: otel` the
        trajectory and usage the engine records from the spans."""
        kinds = set(self.records)
        if self.trace == "otel":
            kinds.update(("agent_trajectory/v1", "usage/v1"))
        return frozenset(kinds)

    @field_validator("records")
    @classmethod
    def _kinds(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for kind in value:
            if not ARTIFACT_KIND.match(kind):
                raise ValueError(f"{kind!r} is not an artifact kind like 'agent_trajectory/v1'")
        return value


class QuantileMetricConfig(_Strict):
    """A quantile of a per-case number (docs/concepts.md#quantiles-order-statistic-intervals)."""

    id: str = Field(min_length=1)
    type: Literal["quantile"]
    source: Literal["agent_steps", "agent_tool_calls", "latency_ms", "tokens", "cost", "turns",
                    "agent_turns"]
    quantile: float = Field(gt=0, lt=1, examples=[0.95])


class TrialMetricConfig(_Strict):
    """A reliability metric over a case's trials (docs/reliability.md#what-passk-means):
    `pass_hat_k` (the chance that `k` fresh trials all pass, τ-bench's pass^k) or `pass_at_k` (that
    at least one of `k` passes); `criterion` names the evaluator's criterion it is computed from."""

    id: str = Field(min_length=1)
    type: Literal["pass_hat_k", "pass_at_k"]
    criterion: str = Field(min_length=1)
    k: int = Field(ge=1, examples=[3])


MetricConfig = Annotated[QuantileMetricConfig | TrialMetricConfig, Field(discriminator="type")]
METRIC_TYPES = ("quantile", "pass_hat_k", "pass_at_k")
#: The most trials a suite may ask for (each is a whole execution of every case).
MAX_TRIALS = 1000


class TransformConfig(_Strict):
    """A metamorphic transform (docs/stateful-agents.md#the-same-request-changed-metamorphic-pairs):
    `template` or `replace` on one input field."""

    name: str = Field(pattern=PLAIN_NAME)
    field: str = Field(min_length=1)
    template: str | None = None
    replace: tuple[tuple[str, str], ...] | None = None
    validity_labels: str | None = None
    minimum_validity: float = Field(default=0.85, gt=0, le=1)

    @model_validator(mode="after")
    def _one_rule(self) -> TransformConfig:
        if (self.template is None) == (self.replace is None):
            raise ValueError("a transform takes exactly one of `template` or `replace`")
        if self.template is not None and "{value}" not in self.template:
            raise ValueError("a template must contain {value} (the field's text)")
        return self


class MetamorphicConfig(_Strict):
    transforms: tuple[TransformConfig, ...] = ()


class RayConfig(_Strict):
    """`execution.ray:` — how a run uses Ray (only with `executor: ray`)."""

    # Absent: a local Ray instance for this run; `auto` or `ray://host:port` (or host:port):
    # an existing cluster, which the project folder is shipped to.
    address: str | None = Field(default=None, min_length=1)
    num_cpus_per_worker: float = Field(default=1, gt=0)
    runtime_env: dict[str, Any] = Field(default_factory=dict)


class ExecutionConfig(_Strict):
    """`execution:` — how many copies of the system run, and where
    (docs/scaling.md#configuration)."""

    workers: int = Field(default=1, ge=1, le=MAX_WORKERS)
    executor: Literal["local", "processes", "ray"] = "local"
    ray: RayConfig = Field(default_factory=RayConfig)

    @field_validator("ray", mode="before")
    @classmethod
    def _ray_needs_ray(cls, value: object, info: ValidationInfo) -> object:
        # Settings that would be ignored are a mistake, not a default: the file says one
        # executor and configures another (`--executor` may still choose another per run).
        executor = info.data.get("executor", "local")
        if executor != "ray":
            raise ValueError(
                f"only applies to `executor: ray`, and this suite's executor is "
                f"{executor}; write `executor: ray` under execution: (`--executor {executor}` "
                "still runs it there), or remove `ray:`")
        return value


class CalledModel(_Strict):
    """What a judge and a simulator share: a model behind an OpenAI-compatible chat completions
    API, called through the `openai` SDK (the optional `judge` extra), or a Python function,
    sync or async (`callable`) — exactly one of the two; how many calls are in flight at once
    over the whole run, how long one may take, what is retried."""

    #: What a `callable:` of this kind takes and returns (in the error for neither or both).
    _CALLABLE: ClassVar[str] = ""

    name: str = Field(pattern=r"^[A-Za-z0-9_.-]+$")
    model: str | None = Field(default=None, min_length=1)
    callable: str | None = Field(default=None, pattern=ENTRY_POINT)
    # Change it when the entry changes where its name does not show it (a callable's code, a
    # new model behind the same name): it is in the cache keys, so the calls are made again.
    version: str | None = Field(default=None, min_length=1)
    base_url: str | None = Field(default=None, min_length=1)
    api_key_env: str | None = Field(default=None, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    temperature: float = Field(default=0.0, ge=0, le=2)
    concurrency: int = Field(default=8, ge=1, le=1024)
    timeout_s: float = Field(default=60.0, gt=0)
    # Ask for JSON-schema structured output (`response_format`); an endpoint that does not
    # take it can be told not to, and the reply is then read as JSON text.
    structured_output: bool = True
    max_tokens: int | None = Field(default=None, ge=1)
    # Which failures of a call are retried, as `system.retries:` says it; absent: a model's
    # rate limits and lost connections (a callable's ConnectionError and TimeoutError) are
    # retried 3 times (`JUDGE_RETRIES_MODEL`, `JUDGE_RETRIES_CALLABLE`).
    retries: RetriesConfig | None = None

    @field_validator("version", mode="before")
    @classmethod
    def _version_text(cls, value: object) -> object:
        return None if value is None else version_text(value)

    @model_validator(mode="after")
    def _one_kind(self) -> Self:
        if (self.model is None) == (self.callable is None):
            raise ValueError(
                "give exactly one of model (a model behind an OpenAI-compatible API) and "
                f"callable (module:function {self._CALLABLE})")
        if self.callable is not None:
            for key in ("base_url", "api_key_env", "max_tokens"):
                if getattr(self, key) is not None:
                    raise ValueError(f"{key} is for an entry given by `model`; a `callable` "
                                     "makes its own calls")
        return self

    @property
    def key_variable(self) -> str:
        """The environment variable the model's API key is read from."""
        return self.api_key_env or "OPENAI_API_KEY"

    def definition(self) -> dict[str, Any]:
        """What makes this entry's answers what they are, for cache keys: its name, and the
        model and temperature (or the callable), and its version when it has one. Where it is
        served from is not part of it."""
        made: dict[str, Any] = {"name": self.name}
        if self.callable is not None:
            made.update(callable=self.callable, temperature=self.temperature)
        else:
            made.update(model=self.model, temperature=self.temperature)
        if self.version is not None:  # (absent, the keys stay those of an entry without one)
            made["version"] = self.version
        return made


class JudgeConfig(CalledModel):
    """One entry of `judges:` — a model that judges free text (docs/judges.md).

    Exactly one of `model` (any model behind an OpenAI-compatible chat completions API, called
    through the `openai` SDK: the optional `judge` extra) and `callable` (a Python
    function, sync or async, taking a `JudgeRequest` and returning a `JudgeVerdict`).
    `api_key_env` names the environment variable that holds the key (never the key itself);
    `concurrency` is how many calls of this judge are in flight at once, over the whole run.
    """

    _CALLABLE: ClassVar[str] = "taking a JudgeRequest, returning a JudgeVerdict"


class SimulatorConfig(CalledModel):
    """One entry of `simulators:` — what plays a case's simulated user
    (docs/conversations.md#simulators): a model behind an OpenAI-compatible API, through the
    same client, retries and concurrency as judges, or a Python function taking a
    `SimulatorRequest` and returning a `SimulatorTurn`.

    `prompt` replaces the default prompt template (its `{persona}`, `{goal}` and `{facts}` are
    filled from the case); `max_turns` is the most turns a user takes when its case does not
    say (a conversation cut there is truncated).
    """

    _CALLABLE: ClassVar[str] = "taking a SimulatorRequest, returning a SimulatorTurn"

    temperature: float = Field(default=0.7, ge=0, le=2)
    prompt: str | None = Field(default=None, min_length=1)
    max_turns: int = Field(default=10, ge=1, le=1000)

    @field_validator("prompt")
    @classmethod
    def _goal_placeholder(cls, value: str | None) -> str | None:
        if value is not None and "{goal}" not in value:
            raise ValueError("a simulator's prompt must contain {goal} (what the user wants); "
                             "{persona} and {facts} are filled in too")
        return value

    def definition(self) -> dict[str, Any]:
        """The judge's definition, and the prompt template when it is not the default (the
        default's text is in the turns' keys by its own digest: `recording.turns`)."""
        made = super().definition()
        if self.prompt is not None:
            made["prompt"] = self.prompt
        return made


class SimulatorFidelityConfig(_Strict):
    """`simulator_fidelity:` — a judge over each simulated user's turns
    (docs/conversations.md#unfaithful-a-judge-not-a-pattern): did the user stay true to its
    persona, goal and facts? A criterion of its own (`simulator_fidelity`), checked against
    people's labels like any judge; a conversation it fails is `unfaithful`."""

    judge: str = Field(min_length=1)
    rubric: str | None = Field(default=None, min_length=1)
    labels: str | None = Field(default=None, min_length=1)
    minimum_agreement: float = Field(default=0.8, gt=0, le=1)
    samples: int = Field(default=1, ge=1, le=15)


#: What a judge retries when its entry says nothing (docs/judges.md): 3 retries, 4 attempts.
JUDGE_RETRY_ATTEMPTS = 4
JUDGE_RETRIES_MODEL = ("openai:RateLimitError", "openai:APIConnectionError",
                       "builtins:TimeoutError")
JUDGE_RETRIES_CALLABLE = ("builtins:ConnectionError", "builtins:TimeoutError")


class SuiteFile(_Strict):
    """The top level of oloproof.yaml. `evaluators` is validated by the registry."""

    version: Literal[1]
    project: str = Field(default="oloproof-project", min_length=1)
    dataset: str = Field(min_length=1)
    system: SystemConfig
    evaluators: tuple[dict[str, Any], ...] = Field(min_length=1)
    trials: int = Field(default=1, ge=1, le=MAX_TRIALS, examples=[5])
    metrics: tuple[MetricConfig, ...] = ()
    slices: tuple[str, ...] = ()
    min_slice_support: int = Field(default=5, ge=1)
    metamorphic: MetamorphicConfig | None = None
    store: str | None = None
    execution: ExecutionConfig = Field(default_factory=ExecutionConfig)
    judges: tuple[JudgeConfig, ...] = ()
    # Conversations (docs/conversations.md): what plays the cases' simulated users, and the
    # judge of their fidelity.
    simulators: tuple[SimulatorConfig, ...] = ()
    simulator_fidelity: SimulatorFidelityConfig | None = None

    @field_validator("judges", "simulators")
    @classmethod
    def _entry_names(cls, value: tuple[CalledModel, ...], info: ValidationInfo
                     ) -> tuple[CalledModel, ...]:
        names = [j.name for j in value]
        what = "judges" if info.field_name == "judges" else "simulators"
        for name in names:
            if names.count(name) > 1:
                raise ValueError(f"two {what} are named {name!r}; give each its own name")
        return value

    @field_validator("slices")
    @classmethod
    def _slices(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for entry in value:
            if not SLICE_PATTERN.match(entry):
                raise ValueError(
                    f"{entry!r} is not a slice; use metadata.<key>, first_tool, "
                    "repeated_action, route, trajectory_length:a,b,... or tool_calls:a,b,..."
                )
            if ":" in entry:
                bounds = [int(b) for b in entry.split(":", 1)[1].split(",")]
                if bounds != sorted(set(bounds)):
                    raise ValueError(f"{entry!r}: bucket bounds must be strictly ascending")
        if len(set(value)) != len(value):
            raise ValueError("a slice is listed twice")
        return value


def load_suite_file(path: Path) -> tuple[SuiteFile, YamlDocument]:
    """Read and validate oloproof.yaml (everything but the evaluator entries)."""
    doc = read_yaml(path, "suite", "check the path given (--config), or run where the "
                    "suite is (`oloproof init` writes an oloproof.yaml)")
    if not isinstance(doc.data, dict):
        raise ConfigError(
            "the suite must be a YAML mapping with version, dataset, system and evaluators",
            file=path,
            line=1,
        )
    unknown = [k for k in doc.data if k not in accepted_fields(SuiteFile)]
    if unknown:
        raise ConfigError(
            unknown_key(unknown[0], accepted_fields(SuiteFile)),
            file=path,
            line=doc.line_of((unknown[0],)),
        )
    metrics = doc.data.get("metrics") or ()
    if isinstance(metrics, list):
        for i, entry in enumerate(metrics):
            if isinstance(entry, dict) and entry.get("type") not in METRIC_TYPES:
                raise ConfigError(
                    f"unknown metric type {entry.get('type')!r}; accepted types: "
                    + ", ".join(METRIC_TYPES) + " (pass rates come from evaluators)",
                    file=path,
                    line=doc.line_of(("metrics", i, "type")),
                )
    suite = validate_model(SuiteFile, doc.data, doc)
    return suite, doc


def quantile_metrics(suite: SuiteFile) -> list[QuantileMetricConfig]:
    """The suite's quantile metrics, in order."""
    return [m for m in suite.metrics if isinstance(m, QuantileMetricConfig)]


def trial_metrics(suite: SuiteFile) -> list[TrialMetricConfig]:
    """The suite's `pass_hat_k` / `pass_at_k` metrics, in order."""
    return [m for m in suite.metrics if isinstance(m, TrialMetricConfig)]
