"""The run document (docs/cli.md#the-json-document): what a run decided, as typed models.

This module is the product's vocabulary for a run's results — verdicts, rule states, gate
actions, exit codes, error kinds (`ErrorKind`, from `errors.py`) — and the rows of the
document `oloproof run --json` prints, the store keeps (`runs.summary`) and every report
renders. It imports only `errors`, so any layer may use it.

The JSON is the contract: enums are `str` (or `int`) valued so they dump as the plain values,
and a few keys appear only when they carry something (`approximate` on a clustered metric,
`p_value` on a tested slice row, ...); `RunDocument.to_json()` gives exactly that shape, and
`RunDocument.model_validate(json)` reads a document stored by any earlier version (keys added
since then take their defaults).
"""

from __future__ import annotations

from enum import IntEnum, StrEnum
from typing import Annotated, Any, ClassVar, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_validator,
    model_serializer,
)

from oloproof.errors import ErrorKind

__all__ = [
    "BaselineSummary",
    "CacheCounts",
    "CaseChange",
    "CaseError",
    "Comparison",
    "CriterionComparison",
    "DecisionReason",
    "DecisionRow",
    "ErrorKind",
    "Execution",
    "Executions",
    "ExitCode",
    "ExpectedKeyHint",
    "FailingCase",
    "FailingCases",
    "Gate",
    "GateAction",
    "HitMiss",
    "JudgeCalibration",
    "MetricRow",
    "MissingExample",
    "NotRescored",
    "Plan",
    "PlanRow",
    "QuantileRow",
    "QuantileSliceRow",
    "RateRow",
    "RateSliceRow",
    "RuleState",
    "RunDocument",
    "RunStatus",
    "SliceRow",
    "Subset",
    "SystemRef",
    "TrajectoryParting",
    "TransformValidity",
    "Verdict",
    "VerdictChange",
]


# ---- the vocabulary ------------------------------------------------------------------------


class Verdict(StrEnum):
    """A criterion's verdict on one case (docs/concepts.md#cases-criteria-and-the-four-verdicts)."""

    PASSED = "passed"
    FAILED = "failed"
    MISSING = "missing"
    EXCLUDED = "excluded"


class RuleState(StrEnum):
    """A rule's state (docs/configuration.md#states-reasons-and-exit-codes)."""

    PASS = "PASS"
    FAIL = "FAIL"
    INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
    MANUAL_REVIEW = "MANUAL_REVIEW"


class DecisionReason(StrEnum):
    """Why a rule is in its state (docs/configuration.md#states-reasons-and-exit-codes)."""

    LOWER_BOUND_MEETS_MINIMUM = "lower_bound_meets_minimum"
    UPPER_BOUND_BELOW_MINIMUM = "upper_bound_below_minimum"
    UPPER_BOUND_MEETS_MAXIMUM = "upper_bound_meets_maximum"
    LOWER_BOUND_ABOVE_MAXIMUM = "lower_bound_above_maximum"
    INTERVAL_OVERLAPS_THRESHOLD = "interval_overlaps_threshold"
    NO_OBSERVATIONS = "no_observations"
    TRANSFORM_NOT_CHECKED = "transform_not_checked"
    APPROXIMATE_METHOD_NOT_PERMITTED = "approximate_method_not_permitted"
    INSUFFICIENT_CLUSTERS = "insufficient_clusters"
    MISSING_COULD_CHANGE_OUTCOME = "missing_could_change_outcome"
    OBSERVED_FAILURES_EXCEED_LIMIT = "observed_failures_exceed_limit"
    OBSERVED_FAILURES_WITHIN_LIMIT = "observed_failures_within_limit"
    # non_inferiority rules (docs/compare.md#gating-on-it-kind-non_inferiority): the paired
    # difference candidate − baseline
    DIFFERENCE_LOWER_BOUND_WITHIN_MARGIN = "difference_lower_bound_within_margin"
    DIFFERENCE_UPPER_BOUND_BELOW_MARGIN = "difference_upper_bound_below_margin"
    DIFFERENCE_INTERVAL_OVERLAPS_MARGIN = "difference_interval_overlaps_margin"
    NO_PAIRED_CASES = "no_paired_cases"
    # judge criteria (docs/judges.md): not yet checked against people's labels, or checked
    # and found to agree with them less than the criterion's minimum_agreement
    JUDGE_NOT_CHECKED = "judge_not_checked"
    JUDGE_DISAGREES_WITH_PEOPLE = "judge_disagrees_with_people"
    # max_errored rules (docs/failures.md#the-error-budget): the run's errored executions
    # against max_share or max_count
    ERRORED_SHARE_EXCEEDS_LIMIT = "errored_share_exceeds_limit"
    ERRORED_SHARE_WITHIN_LIMIT = "errored_share_within_limit"
    # sequential rules (docs/pytest.md#the-stored-run): the case's trials stopped before the
    # rule decided and before its `trials` were all run
    TRIALS_NOT_FINISHED = "trials_not_finished"
    # max_simulator_failures rules (docs/conversations.md#the-simulators-budget): the simulated
    # conversations whose simulator failed a check, against max_share or max_count
    SIMULATOR_FAILURES_EXCEED_LIMIT = "simulator_failures_exceed_limit"
    SIMULATOR_FAILURES_WITHIN_LIMIT = "simulator_failures_within_limit"
    # beside an INSUFFICIENT_EVIDENCE reason: the rule's errored executions alone keep it from
    # a decision (docs/failures.md#errors-that-hide-an-outcome)
    ERRORED_EXECUTIONS_HIDE_OUTCOME = "errored_executions_hide_outcome"


class GateAction(StrEnum):
    """What the gate says about the release (docs/ci.md#exit-codes)."""

    ALLOW = "ALLOW"
    WARN = "WARN"
    BLOCK = "BLOCK"


class ExitCode(IntEnum):
    """The exit codes of `oloproof run` and `gate` (docs/ci.md#exit-codes); each keeps one
    meaning."""

    OK = 0  # allow or warn
    FAIL = 1  # blocked with a FAIL
    CONFIGURATION = 2  # usage or configuration error
    INSUFFICIENT_EVIDENCE = 3  # blocked on INSUFFICIENT_EVIDENCE only
    MANUAL_REVIEW = 4  # blocked with MANUAL_REVIEW and no FAIL
    INCOMPLETE = 5  # the run could not complete (stopped, store error, internal error)


class RunStatus(StrEnum):
    """Where a run is (docs/concepts.md#caches-what-invalidates-what)."""

    RUNNING = "running"
    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    STOPPED = "stopped"
    FAILED = "failed"


# ---- the models ----------------------------------------------------------------------------


class _Model(BaseModel):
    """A part of the document: strict about its own keys, dumped as JSON-ready values.

    `_OPTIONAL` names the keys written only when they hold something (not None, not False):
    they were absent from such rows before the document was typed, and stay so.
    """

    model_config = ConfigDict(extra="forbid", use_enum_values=False, validate_default=False)

    _OPTIONAL: ClassVar[frozenset[str]] = frozenset()

    @model_serializer(mode="wrap")
    def _drop_empty_optionals(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if self._OPTIONAL and isinstance(data, dict):
            for key in self._OPTIONAL:
                if key in data and (data[key] is None or data[key] is False):
                    del data[key]
        return data

    def to_json(self) -> dict[str, Any]:
        """This part as the JSON document holds it."""
        dumped: dict[str, Any] = self.model_dump(mode="json")
        return dumped


Number = float | int


class SystemRef(_Model):
    """The system under test, as the run names it; `variant` (written for a run of one
    combination of `system.variants`, docs/board.md) is that combination as `k=v,…`."""

    _OPTIONAL = frozenset({"variant"})

    name: str
    version: str
    variant: str | None = None


class Gate(_Model):
    """The release action and the process's exit code."""

    action: GateAction
    exit_code: ExitCode


class DecisionRow(_Model):
    """One rule's decision, with the numbers it was decided on.

    An interval rule carries `bound` (the bound compared, `None` for "no bound"), `bound_side`
    (`lower` / `upper`), `threshold` and `threshold_side` (`min` / `max`). An observed-count
    rule carries `failures`, `missing` and `limit` (`max_failures`). A `non_inferiority` rule
    (docs/compare.md#gating-on-it-kind-non_inferiority) carries the bound of the paired difference
    candidate − baseline it compared, `threshold` −margin (`threshold_side` `min`: the difference
    must be at least −margin), the `baseline` run and how many cases were `paired`; `dropped` is how
    many cases of the baseline are not in this run (counted as pairs whose candidate side is
    missing, or with `dropped_ignored` left out, as the rule's `dropped: ignore` asks).
    A `max_errored` rule (its `metric` is `executions`, the run's accounting) carries how many
    of the run's `executions` `errored` and its limit as the rule gives it, `max_share` or
    `max_count` (docs/failures.md#the-error-budget). A `max_simulator_failures` rule (its
    `metric` is `conversations`) carries how many of the run's simulated `conversations` had a
    simulator that failed a check (`simulator_failures`) and its limit the same way
    (docs/conversations.md#the-simulators-budget).
    A `sequential` rule (docs/pytest.md#the-stored-run) decides one `case`'s trials in order:
    `trials_run` of at most `trials` (`passed`, `failed`, `errored`), its stagewise `lower` and
    `upper` bounds at `level` (the bound compared is also `bound`, against `threshold` `min`),
    and for INSUFFICIENT_EVIDENCE `more_trials` (about how many more would decide) with
    `more_trials_chance`, or `projection_reason` when there is no projection.
    """

    _INTERVAL: ClassVar[tuple[str, ...]] = ("bound", "bound_side", "threshold", "threshold_side")
    _COUNT: ClassVar[tuple[str, ...]] = ("failures", "missing", "limit")
    _BASELINE: ClassVar[tuple[str, ...]] = ("baseline", "paired", "dropped", "dropped_ignored")
    _ERRORED: ClassVar[tuple[str, ...]] = ("errored", "executions", "max_share", "max_count")
    _SEQUENTIAL: ClassVar[tuple[str, ...]] = (
        "case", "level", "trials", "trials_run", "passed", "failed", "lower", "upper",
        "more_trials", "more_trials_chance", "projection_reason", "method")
    _SIMULATED: ClassVar[tuple[str, ...]] = ("simulator_failures", "conversations")

    rule: str
    metric: str
    state: RuleState
    reasons: list[DecisionReason]
    kind: Literal["interval", "observed_count", "non_inferiority", "max_errored",
                  "sequential", "max_simulator_failures"] | None = None
    bound: Number | None = None
    bound_side: Literal["lower", "upper"] | None = None
    threshold: Number | None = None
    threshold_side: Literal["min", "max"] | None = None
    failures: int | None = None
    missing: int | None = None
    limit: int | None = None
    baseline: str | None = None
    paired: int | None = None
    dropped: int | None = None
    dropped_ignored: bool | None = None
    errored: int | None = None
    executions: int | None = None
    max_share: Number | None = None
    max_count: int | None = None
    case: str | None = None
    level: float | None = None
    trials: int | None = None
    trials_run: int | None = None
    passed: int | None = None
    failed: int | None = None
    lower: float | None = None
    upper: float | None = None
    more_trials: int | None = None
    more_trials_chance: float | None = None
    projection_reason: str | None = None
    method: str | None = None
    simulator_failures: int | None = None
    conversations: int | None = None

    @model_serializer(mode="wrap")
    def _drop_empty_optionals(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict):
            if self.kind != "sequential":
                for key in self._SEQUENTIAL:
                    data.pop(key, None)
            # Each kind of rule keeps its own numbers; a row stored before decisions carried
            # numbers (no kind) has none.
            if self.kind == "interval":
                drop = (*self._COUNT, *self._BASELINE, *self._ERRORED, *self._SIMULATED)
            elif self.kind == "observed_count":
                drop = (*self._INTERVAL, *self._BASELINE, *self._ERRORED, *self._SIMULATED)
            elif self.kind == "non_inferiority":
                drop = (*self._COUNT, *self._ERRORED, *self._SIMULATED)
                if not self.dropped:  # no case of the baseline is left out of this run
                    drop = (*drop, "dropped", "dropped_ignored")
            elif self.kind == "max_errored":  # the limit the rule gives, of the two
                drop = (*self._INTERVAL, *self._COUNT, *self._BASELINE, *self._SIMULATED,
                        "max_count" if self.max_count is None else "max_share")
            elif self.kind == "sequential":  # its counts and bounds; a projection if any
                drop = (*self._COUNT, *self._BASELINE, *self._SIMULATED, "executions",
                        "max_share", "max_count",
                        *(key for key in ("more_trials", "more_trials_chance",
                                          "projection_reason") if data.get(key) is None))
            elif self.kind == "max_simulator_failures":
                drop = (*self._INTERVAL, *self._COUNT, *self._BASELINE, "errored",
                        "executions", "max_count" if self.max_count is None else "max_share")
            else:
                drop = ("kind", *self._INTERVAL, *self._COUNT, *self._BASELINE, *self._ERRORED,
                        *self._SIMULATED)
            for key in drop:
                data.pop(key, None)
        return data


class JudgeCalibration(_Model):
    """A judge criterion checked against people (docs/judges.md#what-a-judged-criterion-reports).

    `status`: `uncalibrated` (no labels, or fewer than 10 labelled sampled cases: `why` says
    which; the row's figures are the judge's raw rate), `checked` (the agreement's exact lower
    bound reaches `minimum_agreement`) or `disagrees` (it does not). The counts are over the
    sampled cases labelled for this run's text: judge pass & person pass (`both_pass`), judge
    pass & person fail (`judge_only`), judge fail & person pass (`person_only`), both fail.
    `raw_*` is the judge's own pass rate and interval at the run's level. Once labelled, two
    intervals for the rate as people would judge it: `corrected_*`, the judge's verdicts on
    every case used (`stratified_by_verdict`; `ppi_plus_plus`, approximate, where the policy
    allows approximate methods and there are enough labels), and `people_*`, the exact interval
    of the labels alone; `width_saved` is the labels' width less the corrected one's (below 0:
    the judge cost width). `correction` (`judge` or `people_only`, declared on the criterion)
    says which of the two is the row's estimate and interval, the one rules decide on.
    `stratified_lower`/`stratified_upper` is the judge-based interval alone, at the share
    `safeguard` of the error (docs/judges.md#never-much-wider-than-the-labels-alone).
    `judge_lower`, `judge_upper` and `rectifier*` are the parts of the prediction-powered
    interval, read from runs stored before issue 39 replaced it; no run writes them now.
    """

    _OPTIONAL = frozenset({"why", "agreement", "agreement_lower", "agreement_upper",
                           "agreement_method", "kappa", "corrected_estimate", "corrected_lower",
                           "corrected_upper", "corrected_method", "corrected_approximate",
                           "people_estimate", "people_lower", "people_upper", "people_method",
                           "width_saved", "stratified_lower", "stratified_upper",
                           "safeguard", "judge_lower", "judge_upper", "rectifier",
                           "rectifier_lower", "rectifier_upper"})

    judge: str
    status: Literal["uncalibrated", "checked", "disagrees"]
    why: str | None = None
    minimum_agreement: float
    correction: Literal["judge", "people_only"] = "judge"
    sampled: int = 0
    labelled: int = 0
    both_pass: int = 0
    judge_only: int = 0
    person_only: int = 0
    both_fail: int = 0
    agreement: float | None = None
    agreement_lower: float | None = None
    agreement_upper: float | None = None
    agreement_method: str | None = None
    kappa: float | None = None
    raw_estimate: float | None = None
    raw_lower: float | None = None
    raw_upper: float | None = None
    raw_method: str = ""
    corrected_estimate: float | None = None
    corrected_lower: float | None = None
    corrected_upper: float | None = None
    corrected_method: str | None = None
    corrected_approximate: bool = False
    people_estimate: float | None = None
    people_lower: float | None = None
    people_upper: float | None = None
    people_method: str | None = None
    width_saved: float | None = None
    stratified_lower: float | None = None
    stratified_upper: float | None = None
    safeguard: float | None = None
    judge_lower: float | None = None
    judge_upper: float | None = None
    rectifier: float | None = None
    rectifier_lower: float | None = None
    rectifier_upper: float | None = None


class RateRow(_Model):
    """A pass-rate metric (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases): counts
    and the exact interval, bounds unrounded.

    With repeated trials (docs/reliability.md) a criterion's row counts *trials* in `passed`,
    `observed`, `missing` and `excluded` (and their reasons), `trials` is k and `cases` the cases it
    counts (`excluded_cases` had every trial excluded); its estimate and interval are over the
    cases' shares of passing trials (`method: "bentkus"`). A `pass_hat_k` / `pass_at_k` row
    (`metric_type`, `criterion`, `k`) counts *cases*: `observed` are the cases whose value
    missing trials cannot change, `passed` those whose value is 1.
    """

    _OPTIONAL = frozenset({"approximate", "clusters", "transform", "missing_examples", "trials",
                           "cases", "excluded_cases", "metric_type", "criterion", "k", "judge"})

    id: str
    kind: Literal["rate"] = "rate"
    estimate: float | None
    lower: float | None
    upper: float | None
    passed: int
    observed: int
    missing: int
    excluded: int
    excluded_by_reason: dict[str, int] = Field(default_factory=dict)
    missing_by_reason: dict[str, int] = Field(default_factory=dict)
    method: str = ""
    approximate: bool = False
    clusters: int | None = None
    transform: str | None = None
    missing_examples: dict[str, MissingExample] | None = None
    trials: int | None = None
    cases: int | None = None
    excluded_cases: int | None = None
    metric_type: Literal["pass_hat_k", "pass_at_k"] | None = None
    criterion: str | None = None
    k: int | None = None
    # A judge criterion (docs/judges.md): how far its judge agrees with people, and its raw rate.
    judge: JudgeCalibration | None = None


class QuantileRow(_Model):
    """A quantile metric (docs/concepts.md#quantiles-order-statistic-intervals): order-statistic
    interval, `None` for no bound.

    With repeated trials each trial's value counts (`observed`, `missing`, `excluded` are
    trials) and the interval is clustered by case (`cases`); valid for every number of cases,
    so not `approximate` (docs/reliability.md#quantiles-and-slices-with-trials).
    """

    _OPTIONAL = frozenset({"missing_examples", "approximate", "clusters", "trials", "cases"})

    id: str
    kind: Literal["quantile"] = "quantile"
    quantile: float
    unit: str
    estimate: Number | None
    lower: Number | None
    upper: Number | None
    observed: int
    missing: int
    excluded: int
    excluded_by_reason: dict[str, int] = Field(default_factory=dict)
    missing_by_reason: dict[str, int] = Field(default_factory=dict)
    method: str = ""
    missing_examples: dict[str, MissingExample] | None = None
    approximate: bool = False
    clusters: int | None = None
    trials: int | None = None
    cases: int | None = None


MetricRow = Annotated[RateRow | QuantileRow, Field(discriminator="kind")]


class MissingExample(_Model):
    """The first case (in case-id order) missing for a reason, and its error text if any."""

    _OPTIONAL = frozenset({"message"})

    case: str
    message: str | None = None


class RateSliceRow(_Model):
    """A pass rate restated on one slice group
    (docs/concepts.md#slices-are-exploratory-and-never-gate): descriptive, never gated.

    Below `min_slice_support` the row has counts and no interval (`below_support`). A row
    tested against the rest of the suite carries its Fisher `p_value` and adjusted `q_value`.
    With repeated trials (`trials`) the counts are the group's trials, `support` the cases
    with a trial in the group, and the interval is over those cases (never tested).
    """

    _OPTIONAL = frozenset({"method", "below_support", "p_value", "q_value", "trials"})

    slice: str
    value: str
    metric: str
    kind: Literal["rate"] = "rate"
    estimate: float | None
    lower: float | None
    upper: float | None
    passed: int
    observed: int
    missing: int
    excluded: int
    excluded_by_reason: dict[str, int] = Field(default_factory=dict)
    missing_by_reason: dict[str, int] = Field(default_factory=dict)
    method: str | None = None
    below_support: bool = False
    support: int
    mark: Literal["*"] | None = None
    p_value: float | None = None
    q_value: float | None = None
    trials: int | None = None


class QuantileSliceRow(_Model):
    """A quantile restated on one slice group
    (docs/concepts.md#slices-are-exploratory-and-never-gate)."""

    _OPTIONAL = frozenset({"method", "below_support", "trials"})

    slice: str
    value: str
    metric: str
    kind: Literal["quantile"] = "quantile"
    quantile: float
    unit: str
    estimate: Number | None
    lower: Number | None
    upper: Number | None
    observed: int
    missing: int
    excluded: int
    excluded_by_reason: dict[str, int] = Field(default_factory=dict)
    missing_by_reason: dict[str, int] = Field(default_factory=dict)
    method: str | None = None
    below_support: bool = False
    support: int
    mark: Literal["*"] | None = None
    trials: int | None = None


SliceRow = Annotated[RateSliceRow | QuantileSliceRow, Field(discriminator="kind")]


class TransformValidity(_Model):
    """How far people's labels show a metamorphic transform keeps meaning
    (docs/stateful-agents.md#the-same-request-changed-metamorphic-pairs)."""

    transform: str
    digest: str
    pairs: int
    kept: int
    lower: float | None
    minimum_validity: float
    checked: bool
    labels: str | None = None
    stale_labels: int = 0


class HitMiss(_Model):
    hit: int = 0
    miss: int = 0


class CacheCounts(_Model):
    """What the run took from the caches (docs/concepts.md#caches-what-invalidates-what); `rerun`
    (written when there are some): how many executions ran again because they had errored in the run
    before, `rerun_from` (errored executions are never cached: docs/failures.md#resuming); `judge`
    (a suite with judges, docs/judges.md): verdicts taken from the judge cache (hit) and asked of a
    judge (miss)."""

    _OPTIONAL = frozenset({"rerun", "rerun_from", "judge"})

    execution: HitMiss = Field(default_factory=HitMiss)
    judgment: HitMiss = Field(default_factory=HitMiss)
    rerun: int | None = None
    rerun_from: str | None = None
    judge: HitMiss | None = None


class Execution(_Model):
    """Where the run's cases ran (docs/scaling.md#configuration): the executor, how many workers,
    how many cases were tried again because the worker running them was lost, and on `ray` the ids
    of the Ray nodes the actors ran on."""

    _OPTIONAL = frozenset({"nodes"})

    executor: str
    workers: int
    retried: int = 0
    nodes: list[str] | None = None


class Executions(_Model):
    """What the run's executions came to (docs/failures.md#accounting). An execution is one
    case's call for one trial -- a metamorphic copy is a case of its own; fault replays are
    not executions (they are part of judging their source). `cases` counts them all, each
    either `ran` (the system was called this run) or `cached` (reused from an earlier run):
    `cases = ran + cached`. `errored` counts by kind the executions that errored -- all ran
    this run, since an errored execution is never cached -- `snapshot_failed` included (the
    output judged, the end state missing). `retried` counts the executions that
    `system.retries` tried more than once, `attempts` the system's calls over those that ran
    (each attempt one call)."""

    cases: int
    ran: int
    cached: int
    errored: dict[ErrorKind, int] = Field(default_factory=dict)
    retried: int = 0
    attempts: int = 0

    @property
    def errored_total(self) -> int:
        """How many executions errored, whatever the kind."""
        return sum(self.errored.values())

    @property
    def nothing_measured(self) -> bool:
        """Every execution errored, so nothing was judged: a run that never ran (its status is
        `failed`, docs/failures.md#a-run-that-never-ran). A snapshot that failed leaves its
        case's output judged: that execution ran."""
        if not self.cases or self.cached:
            return False
        errored = sum(n for kind, n in self.errored.items()
                      if kind != ErrorKind.SNAPSHOT_FAILED)
        return errored >= self.cases


class UsageSum(_Model):
    """Tokens and cost of the calls a run made beside the agent's: its simulated users'
    (`simulator`) or its judges' (`judge`); a total is None when no call said it."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None


class UsageTotals(_Model):
    """Tokens and cost the run's cases recorded (docs/traces.md#tokens-and-cost), summed over every
    execution the run judged — each trial, metamorphic copies, cached executions included.

    `cases` counts the executions that recorded any usage; a total is None when no case
    recorded that field (never 0 for "not recorded"). These are the agent's: what the run's
    simulated users cost is `simulator`, what its judges cost `judge`
    (docs/conversations.md#cost-accounting), each summed the same way and never added to the
    agent's.
    """

    _OPTIONAL = frozenset({"simulator", "judge"})

    cases: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = None
    simulator: UsageSum | None = None
    judge: UsageSum | None = None


class Conversations(_Model):
    """The run's conversations (docs/conversations.md#accounting): how many cases held one and
    how many of those a simulator played, the user's turns and the agent's, the simulator
    calls this run made (a cached execution's were another run's), the conversations cut at
    max_turns (truncated), and the simulated ones whose simulator failed a check, by the first
    check failed, with the first cases of each (in case order)."""

    conversations: int
    simulated: int = 0
    turns: int = 0
    agent_turns: int = 0
    simulator_calls: int = 0
    truncated: int = 0
    failures: dict[str, int] = Field(default_factory=dict)
    failed_cases: dict[str, list[str]] = Field(default_factory=dict)

    @property
    def failed(self) -> int:
        """How many simulated conversations failed a check."""
        return sum(self.failures.values())


class CaseError(_Model):
    """An errored case: its id, the kind of error and the message (and, with repeated
    trials, which trial errored)."""

    _OPTIONAL = frozenset({"trial"})

    case: str
    kind: ErrorKind
    message: str
    trial: int | None = None

    @field_validator("kind", mode="before")
    @classmethod
    def _stored_name(cls, value: object) -> object:
        # A document stored before the kinds were one set names them as it did then.
        return ErrorKind.of(value) if isinstance(value, str) else value


class FailingCase(_Model):
    """A case with a failed criterion or an error, and the criteria it failed or missed.

    With repeated trials, `failed_trials` and `missing_trials` say how many of the case's
    trials (the document's `trials`) failed each criterion of `failed` and were missing on
    each of `missing`.
    """

    _OPTIONAL = frozenset({"error", "failed_trials", "missing_trials"})

    case: str
    failed: list[str] = Field(default_factory=list)
    missing: list[str] = Field(default_factory=list)
    error: str | None = None
    failed_trials: dict[str, int] | None = None
    missing_trials: dict[str, int] | None = None


class ExpectedKeyHint(_Model):
    """A criterion excluded `excluded` cases because their `expected` holds no `key`, while
    `similar_cases` cases hold `similar`, a key of a similar name: likely a misspelt key in
    the dataset (`tool` for `tools`), which silently shrinks the criterion's denominator."""

    criterion: str
    key: str
    excluded: int
    similar: str
    similar_cases: int


class FailingCases(_Model):
    """How many cases failed a criterion or errored, and the first of them in case-id order."""

    total: int = 0
    first: list[FailingCase] = Field(default_factory=list)


class CriterionComparison(_Model):
    """One criterion (or pass^k / pass@k metric) of a candidate against its baseline
    (docs/compare.md#oloproof-compare-baseline-candidate).

    Over the `paired` cases (same id and digest in both runs, counted — not excluded — in
    both): `both_passed`, `fixed` (failed → passed), `broken` (passed → failed), `both_failed`,
    and `missing` (a side missing); `excluded` pairs (a side excluded) are not paired. The
    `difference` in pass rate candidate − baseline has its interval `lower`–`upper` over the
    paired cases (`method` `betting`: docs/concepts.md#the-betting-interval on the
    differences mapped to [0, 1], a side missing resolved the worst way for each bound); `mcnemar_p`
    is the exact McNemar p-value on the discordant pairs (`broken`, `fixed`), descriptive only.

    With trials a case's value is its share of passing trials
    (docs/reliability.md#what-passk-means): `fixed` and `broken` are the pairs whose share rose or
    fell, `unchanged` those with the same share strictly between 0 and 1, and `mcnemar_p` the exact
    sign test on the pairs that moved (which is McNemar's test when every value is 0 or 1).

    `method` names the interval: `melded_mcnemar` (0/1 values on both sides: Fay & Lumbard
    2021, compatible with exact McNemar) or `betting` (fractions, or clusters). `dropped`
    counts the cases of the baseline that are not in the candidate, each a pair whose
    candidate side is missing (in the interval, not in `paired`). When cases share clusters
    and some cluster holds two pairs, the interval is over the `clusters` (each cluster's
    mean difference one value) and `approximate` is true, as for a clustered metric.
    """

    _OPTIONAL = frozenset({"unchanged", "metric_type", "k", "dropped", "approximate",
                           "clusters"})

    criterion: str
    paired: int
    both_passed: int
    fixed: int
    broken: int
    both_failed: int
    missing: int
    difference: float | None
    lower: float | None
    upper: float | None
    method: str
    mcnemar_p: float | None
    excluded: int = 0
    unchanged: int | None = None
    metric_type: Literal["pass_hat_k", "pass_at_k"] | None = None
    k: int | None = None
    dropped: int | None = None
    approximate: bool = False
    clusters: int | None = None


class VerdictChange(_Model):
    """How one criterion's verdict on one case moved between the runs: the verdicts (one
    trial), or with trials each side's share of passing trials (`None` while missing trials
    could change it)."""

    _OPTIONAL = frozenset({"baseline_value", "candidate_value"})

    criterion: str
    baseline: Verdict | None
    candidate: Verdict | None
    baseline_value: float | None = None
    candidate_value: float | None = None


class TrajectoryParting(_Model):
    """The first step at which a case's trajectories differ between the runs (1-based), each
    side's step there in a line (`None`: that trajectory had already ended, or none was
    recorded), and the first tool call whose tool or arguments differ (`None`: the calls are
    the same)."""

    step: int
    baseline: str | None
    candidate: str | None
    action: int | None = None


class CaseChange(_Model):
    """A case whose verdicts moved: each criterion that changed, and where the trajectories
    part (`None` when they are the same step by step, or neither run recorded one)."""

    case: str
    criteria: list[VerdictChange]
    parting: TrajectoryParting | None = None


class BaselineTaken(_Model):
    """Which of several complete runs of the baseline's suite, system version and variant was
    taken as the baseline, and why (docs/compare.md#which-run-is-the-baseline), written when
    there are several: it is run `run` of the `runs` counted (oldest first,
    docs/limits.md#re-runs-and-re-drawn-samples); `latest` is the latest of them other than
    the candidate; `why` is `latest` when the reference takes the latest complete run of the
    version (`version:V`), `named` when it names a run (an id, `latest~N`, a tag), which
    `reference` gives as it was written (absent: named by id, no reference given)."""

    _OPTIONAL = frozenset({"reference"})

    run: int
    runs: int
    latest: str
    why: Literal["latest", "named"]
    reference: str | None = None


class Comparison(_Model):
    """A candidate run against its baseline (docs/compare.md#oloproof-compare-baseline-candidate):
    `compare --json` prints `to_json()`.

    Cases are paired by id. `changed` cases have another digest in the candidate (their input
    or expected changed) and are not paired; `baseline_only` and `candidate_only` are in one
    run only. `broken_cases` and `fixed_cases` name, per criterion, the cases that broke or
    were fixed (by case id); `changes` says what changed in the broken cases (the first
    `CHANGES_SHOWN` by case id), then in the fixed ones. The `criteria` rows count the
    `baseline_only` cases, and the baseline sides of the `changed` ones, as pairs whose
    candidate side is missing; when there are some,
    `ignoring_dropped` holds the rows without them (what a rule with `dropped: ignore` decides
    on). `not_compared` names the metrics left out because their evaluator is configured
    otherwise in the baseline run. `baseline_taken` (written when the baseline's version has
    several complete runs of its suite) says which of them the baseline is, and why.
    """

    _OPTIONAL = frozenset({"ignoring_dropped", "not_compared", "baseline_taken"})

    baseline: str
    candidate: str
    project: str
    confidence_level: float
    baseline_system: SystemRef
    candidate_system: SystemRef
    baseline_taken: BaselineTaken | None = None
    criteria: list[CriterionComparison] = Field(default_factory=list)
    changed: list[str] = Field(default_factory=list)
    baseline_only: list[str] = Field(default_factory=list)
    candidate_only: list[str] = Field(default_factory=list)
    broken_cases: dict[str, list[str]] = Field(default_factory=dict)
    fixed_cases: dict[str, list[str]] = Field(default_factory=dict)
    changes: list[CaseChange] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    ignoring_dropped: list[CriterionComparison] | None = None
    not_compared: list[str] | None = None

    def criterion(self, name: str) -> CriterionComparison:
        """The row of this criterion (KeyError naming the rows there are)."""
        for row in self.criteria:
            if row.criterion == name:
                return row
        raise KeyError(f"no criterion {name!r} in both runs; compared: "
                       f"{[r.criterion for r in self.criteria]}")

    def summary(self) -> BaselineSummary:
        """What a run document keeps of the comparison its rules were decided on."""
        return BaselineSummary(baseline=self.baseline, criteria=list(self.criteria),
                               changed=len(self.changed), baseline_only=len(self.baseline_only),
                               candidate_only=len(self.candidate_only),
                               warnings=list(self.warnings),
                               ignoring_dropped=self.ignoring_dropped,
                               dropped_cases=list(self.baseline_only) + list(self.changed) or None,
                               baseline_taken=self.baseline_taken)


class BaselineSummary(_Model):
    """In a run document: the baseline its `non_inferiority` rules were decided against, the
    paired figures per criterion, and how many cases were changed or in one run only; with
    cases of the baseline not in this run, which (`dropped_cases`) and the figures without them
    (`ignoring_dropped`, for rules with `dropped: ignore`); `baseline_taken` as in
    `Comparison`."""

    _OPTIONAL = frozenset({"ignoring_dropped", "dropped_cases", "baseline_taken"})

    baseline: str
    criteria: list[CriterionComparison] = Field(default_factory=list)
    changed: int = 0
    baseline_only: int = 0
    candidate_only: int = 0
    warnings: list[str] = Field(default_factory=list)
    ignoring_dropped: list[CriterionComparison] | None = None
    dropped_cases: list[str] | None = None
    baseline_taken: BaselineTaken | None = None


class RunRecord(_Model):
    """Where a complete run stands among the complete runs of its suite, system version and
    variant (docs/limits.md#re-runs-and-re-drawn-samples), written in a run document when
    there are several: it is run `run` of the `runs` counted when it was decided, oldest
    first; `earlier` and `later` name the others (oldest first). `no_cache`: it was made with
    --no-cache, so with `run` above 1 it is a re-sample (`resample`); `resampled` names every
    counted run made with --no-cache after an earlier one, oldest first (this one included).
    `suite` is the suite digest the runs share, `variant` their variant (written when there
    is one)."""

    _OPTIONAL = frozenset({"variant"})

    run: int
    runs: int
    earlier: list[str] = Field(default_factory=list)
    later: list[str] = Field(default_factory=list)
    no_cache: bool = False
    resampled: list[str] = Field(default_factory=list)
    suite: str
    variant: str | None = None

    @property
    def resample(self) -> bool:
        """Made with --no-cache after an earlier complete run: its cases drawn again."""
        return self.no_cache and self.run > 1


class PlanRow(_Model):
    """`oloproof plan` (docs/compare.md#what-it-would-take-to-decide-oloproof-plan), one undecided
    rule: what would settle it *if the rate stayed at its estimate* — a projection, not a promise.

    `observed` counts observed *cases* (with trials too); `passed` those whose value is 1, set
    only where every value is 0 or 1 (`values` says in words what a case's value is where they
    are fractions). `total` is the smallest number of observed cases whose interval at the same
    rate would decide the rule, reaching `state`; `more` is `total − observed`; `chance` is
    the chance that the run continued to that many cases reaches it (about a coin flip),
    computed as `chance_method` says, under `chance_assumption`: the rate drawn from what the
    run says about it (its confidence distribution), the run's observed cases kept. Every
    chance here is that average, not the chance at one true rate. `likely_total`
    (`likely_more`) is a number of observed cases that decides it with the chance
    `likely_chance`, at least 0.8, computed as `likely_method` says (exact or simulated);
    `reachable` is the most any number of cases could give — the share of the confidence
    distribution on the estimate's side of the threshold — and when it is not above 0.8 there
    is no `likely_total`. Each is `None` when no number would, or when no projection is made
    for the rule's kind of metric: `reason` says which, and `note` says it in words.

    A rule on a judged criterion (docs/compare.md#a-judged-criterion) counts *labelled* cases
    (`unit` `labelled cases`): `observed`, `passed` and `estimate` are people's labels (how
    many sampled cases are labelled, how many people passed, their rate), and the totals and
    chances are of the labels alone — their exact interval, the rate drawn from what the labels
    say. `cases` is how many cases the run has, and `cases_total` how many hold `total`
    labelled ones at the run's share of labelled cases. `corrected_total` (`corrected_cases`)
    is the labelled cases (cases) at which the corrected interval the rule decides on, at the
    same rates, would decide it (`corrected_reason` when none would).
    """

    _OPTIONAL = frozenset({"total", "more", "state", "estimate", "threshold", "chance",
                           "chance_method", "chance_assumption", "reachable",
                           "likely_total", "likely_more", "likely_chance", "likely_method",
                           "values", "unit", "cases", "cases_total", "corrected_total",
                           "corrected_cases", "corrected_reason"})

    rule: str
    metric: str
    reasons: list[DecisionReason]
    observed: int | None = None
    passed: int | None = None
    estimate: float | None = None
    threshold: float | None = None
    total: int | None = None
    more: int | None = None
    state: RuleState | None = None
    chance: float | None = None
    chance_method: str | None = None
    chance_assumption: str | None = None
    reachable: float | None = None
    likely_total: int | None = None
    likely_more: int | None = None
    likely_chance: float | None = None
    likely_method: str | None = None
    values: str | None = None
    unit: str | None = None
    cases: int | None = None
    cases_total: int | None = None
    corrected_total: int | None = None
    corrected_cases: int | None = None
    corrected_reason: str | None = None
    reason: str | None = None
    method: str | None = None
    note: str = ""


class Plan(_Model):
    """`oloproof plan RUN`: each rule that is INSUFFICIENT_EVIDENCE, with its projection."""

    run_id: str
    confidence_level: float
    projection: Literal[True] = True
    rules: list[PlanRow] = Field(default_factory=list)
    decided: int = 0
    note: str = ""


class Subset(_Model):
    """A run of part of the suite (docs/cli.md#running-part-of-the-suite): `cases` of the
    suite's `of` source cases, chosen by `selection` (the options given, as `words` writes
    them; a rescored run's, the cases its stored run could give). Its gate never exits 0."""

    cases: int
    of: int
    selection: dict[str, Any] = Field(default_factory=dict)
    words: str = ""

    def note(self) -> str:
        """What every report says beside the gate of a subset run."""
        return f"subset of {self.cases} of {self.of} cases: not a release decision"


class NotRescored(_Model):
    """A case a rescored run left out (docs/cli.md#oloproof-rescore): its id, the reason's
    code and the reason in words."""

    case: str
    reason: str
    words: str


class RunDocument(_Model):
    """The whole run document (docs/cli.md#the-json-document): `to_json()` is what
    `oloproof run --json` prints.

    `trials` (written when above 1) is how many times each of the `cases` ran (docs/reliability.md).
    `baseline` (written when a `non_inferiority` rule was decided) holds the paired figures
    against the baseline run (docs/compare.md#oloproof-compare-baseline-candidate). `usage` (written
    when a case recorded tokens or cost) holds the run's totals (docs/traces.md#tokens-and-cost).
    `executions` (every run since error kinds) counts the executions: ran, cached, errored by kind,
    retried. `expected_key_hints` (written when there is one) names criteria that excluded cases for
    an `expected` key they lack while they hold one of a similar name. `conversations` (written
    when cases held one) counts them (docs/conversations.md#accounting). `subset` (written for
    a run of part of the suite) says how many of the suite's cases it held and how they were
    chosen; `rescored_from` (a run made by `oloproof rescore`) names the run whose executions
    it scored, and `not_rescored` the cases it left out, each with why. `imported_from` (a run
    `oloproof import` stored) names the harness that recorded it. `record` (written when
    the run's version has several complete runs of its suite) says which of them this run is.
    """

    _OPTIONAL = frozenset({"failing_cases", "trials", "execution", "baseline", "usage",
                           "executions", "expected_key_hints", "conversations", "subset",
                           "rescored_from", "not_rescored", "imported_from", "record"})

    run_id: str
    status: RunStatus
    project: str
    system: SystemRef
    cases: int
    confidence_level: float
    gate: Gate
    decisions: list[DecisionRow] = Field(default_factory=list)
    metrics: list[MetricRow] = Field(default_factory=list)
    slices: list[SliceRow] = Field(default_factory=list)
    transforms: list[TransformValidity] = Field(default_factory=list)
    cache: CacheCounts = Field(default_factory=CacheCounts)
    errors: list[CaseError] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)
    limits: list[str] = Field(default_factory=list)
    failing_cases: FailingCases | None = None
    trials: int | None = None
    execution: Execution | None = None
    baseline: BaselineSummary | None = None
    usage: UsageTotals | None = None
    executions: Executions | None = None
    expected_key_hints: list[ExpectedKeyHint] | None = None
    conversations: Conversations | None = None
    subset: Subset | None = None
    rescored_from: str | None = None
    imported_from: str | None = None
    not_rescored: list[NotRescored] | None = None
    record: RunRecord | None = None

    def metric(self, metric_id: str) -> RateRow | QuantileRow:
        """The metric row with this id (KeyError naming the metrics there are)."""
        for row in self.metrics:
            if row.id == metric_id:
                return row
        raise KeyError(f"no metric {metric_id!r}; metrics: {[m.id for m in self.metrics]}")

    def not_rescored_by_reason(self) -> list[tuple[str, list[str]]]:
        """The cases a rescored run left out, grouped by the reason in words (in the order the
        reasons first come), each group's cases in order: how every report lists them."""
        groups: dict[str, list[str]] = {}
        for item in self.not_rescored or ():
            groups.setdefault(item.words, []).append(item.case)
        return list(groups.items())


RateRow.model_rebuild()
Comparison.model_rebuild()
QuantileRow.model_rebuild()
