"""Every Eval Ever (schema 0.3): the aggregate JSON and its `_samples.jsonl`
(docs/imports.md#every-eval-ever): `read_eee`.

Oloproof's own models of the documented schema (`eval.schema.json` and
`instance_level_eval.schema.json` of the `every-eval-ever` package), which needs a newer Python
than Oloproof supports. Where that project's models refuse unknown fields (the aggregate's top
level, a sample row, the generation arguments) these do too; elsewhere a field this module does
not name is kept. The files the tests read were made and validated by that project's own code
(tests/data/harnesses/README.md).

Layout: the aggregate lives at `data/<benchmark>/<developer>/<model>/<uuid>.json`, and its
per-sample rows beside it, in `<uuid>_samples.jsonl`, which the aggregate names by its
repository path in `detailed_evaluation_results.file_path`.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from oloproof.errors import TraceError
from oloproof.traces.documents import checked_document, first_problem

SCHEMA_VERSION = "0.3.0"
_UUID = r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-4[0-9A-Fa-f]{3}-[89ABab][0-9A-Fa-f]{3}-[0-9A-Fa-f]{12}"
SAMPLES_PATH = rf"^data/[^/]+/[^/]+/[^/]+/{_UUID}_samples\.jsonl$"


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class _Closed(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EeeSourceMetadata(_Open):
    source_name: str | None = None
    source_type: Literal["documentation", "evaluation_run"]
    source_organization_name: str
    source_organization_url: str | None = None
    source_organization_logo_url: str | None = None
    evaluator_relationship: Literal["first_party", "third_party", "collaborative", "other"]
    additional_details: dict[str, str] | None = None


class EeeEvalLibrary(_Open):
    name: str
    version: str
    additional_details: dict[str, str] | None = None


class EeeModelInfo(_Open):
    name: str
    id: str
    developer: str | None = None
    inference_platform: str | None = None
    inference_engine: dict[str, Any] | None = None
    additional_details: dict[str, str] | None = None


class EeeSourceData(_Open):
    dataset_name: str
    source_type: Literal["url", "hf_dataset", "other"]
    samples_number: int | None = None
    sample_ids: list[str] | None = None
    additional_details: dict[str, str] | None = None


class EeeConfidenceInterval(_Open):
    lower: float
    upper: float
    confidence_level: float | None = Field(default=None, ge=0, le=1)
    method: str | None = None


class EeeStandardError(_Open):
    value: float
    method: str | None = None


class EeeUncertainty(_Open):
    standard_error: EeeStandardError | None = None
    confidence_interval: EeeConfidenceInterval | None = None
    standard_deviation: float | None = None
    num_samples: int | None = None
    num_bootstrap_samples: int | None = None


class EeeScoreDetails(_Open):
    score: float
    details: dict[str, str] | None = None
    uncertainty: EeeUncertainty | None = None


class EeeMetricConfig(_Open):
    evaluation_description: str | None = None
    metric_id: str | None = None
    metric_name: str | None = None
    metric_kind: str | None = None
    metric_unit: str | None = None
    lower_is_better: bool
    score_type: Literal["binary", "continuous", "levels"] | None = None
    min_score: float | None = None
    max_score: float | None = None
    additional_details: dict[str, str] | None = None


class EeeEvaluationResult(_Open):
    evaluation_result_id: str | None = None
    evaluation_name: str
    source_data: EeeSourceData
    evaluation_timestamp: str | None = None
    metric_config: EeeMetricConfig
    score_details: EeeScoreDetails
    generation_config: dict[str, Any] | None = None


class EeeDetailedResults(_Open):
    format: Literal["jsonl"]
    file_path: str = Field(pattern=SAMPLES_PATH)
    hash_algorithm: Literal["sha256", "md5"] | None = None
    checksum: str | None = None
    total_rows: int | None = None
    additional_details: dict[str, str] | None = None


class EeeAggregate(_Closed):
    """The aggregate JSON: one evaluation of one model, its results metric by metric."""

    schema_version: str
    evaluation_id: str
    evaluation_timestamp: str | None = None
    retrieved_timestamp: str
    source_metadata: EeeSourceMetadata
    eval_library: EeeEvalLibrary
    model_info: EeeModelInfo
    evaluation_results: list[EeeEvaluationResult]
    detailed_evaluation_results: EeeDetailedResults | None = None


class EeeInput(_Open):
    raw: str
    formatted: str | None = None
    reference: list[str]
    choices: list[str] | None = None


class EeeOutput(_Open):
    raw: list[str]
    reasoning_trace: list[str] | None = None


class EeeToolCall(_Open):
    id: str
    name: str
    arguments: dict[str, Any] | None = None


class EeeMessage(_Open):
    turn_idx: int = Field(ge=0)
    role: str
    content: str | None = None
    reasoning_trace: str | None = None
    tool_calls: list[EeeToolCall] | None = None
    tool_call_id: list[str] | None = None


class EeeAnswerAttribution(_Open):
    turn_idx: int = Field(ge=0)
    source: str
    extracted_value: str
    extraction_method: str
    is_terminal: bool


class EeeEvaluation(_Open):
    score: float
    is_correct: bool
    num_turns: int | None = Field(default=None, ge=1)
    tool_calls_count: int | None = Field(default=None, ge=0)


class EeeTokenUsage(_Open):
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    total_tokens: int = Field(ge=0)
    input_tokens_cache_write: int | None = Field(default=None, ge=0)
    input_tokens_cache_read: int | None = Field(default=None, ge=0)
    reasoning_tokens: int | None = Field(default=None, ge=0)


class EeePerformance(_Open):
    latency_ms: float | None = Field(default=None, ge=0)
    time_to_first_token_ms: float | None = Field(default=None, ge=0)
    generation_time_ms: float | None = Field(default=None, ge=0)
    additional_details: dict[str, Any] | None = None


class EeeSampleRow(_Closed):
    """One line of `_samples.jsonl`: one sample's interaction and its score for one result."""

    schema_version: str
    evaluation_id: str
    model_id: str
    evaluation_name: str
    evaluation_result_id: str | None = None
    sample_id: str
    sample_hash: str | None = None
    interaction_type: Literal["single_turn", "multi_turn", "agentic"]
    input: EeeInput
    output: EeeOutput | None = None
    messages: list[EeeMessage] | None = None
    answer_attribution: list[EeeAnswerAttribution]
    evaluation: EeeEvaluation
    token_usage: EeeTokenUsage | None = None
    performance: EeePerformance | None = None
    error: str | None = None
    metadata: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _transcript_of_its_kind(self) -> EeeSampleRow:
        if self.interaction_type == "single_turn":
            if self.output is None or self.messages is not None:
                raise ValueError("a single_turn row has `output` and no `messages`")
        elif self.messages is None or self.output is not None:
            raise ValueError(f"a {self.interaction_type} row has `messages` and no `output`")
        return self


def load_aggregate(path: str | Path) -> EeeAggregate:
    """An aggregate file, checked against the schema.

    Raises:
        TraceError: naming the file and the first thing that is wrong.
    """
    return checked_document(Path(path), EeeAggregate, "an Every Eval Ever aggregate")


def samples_path(aggregate_path: str | Path, aggregate: EeeAggregate) -> Path | None:
    """Where the aggregate's samples file is: beside it, under the name it gives."""
    detail = aggregate.detailed_evaluation_results
    if detail is None:
        return None
    return Path(aggregate_path).parent / Path(detail.file_path).name


def read_samples(path: str | Path) -> Iterator[EeeSampleRow]:
    """The rows of a `_samples.jsonl`, one at a time.

    Raises:
        TraceError: naming the file and line of the first row that is not a sample row.
    """
    where = Path(path)
    with where.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                yield EeeSampleRow.model_validate_json(line)
            except ValidationError as exc:
                raise TraceError(f"not an Every Eval Ever sample row: {first_problem(exc)}",
                                 file=where, line=number) from None


def read_eee(aggregate_path: str | Path) -> tuple[EeeAggregate, Iterator[EeeSampleRow]]:
    """An aggregate and the rows of its samples file (none when it names no file).

    Raises:
        TraceError: a file is not Every Eval Ever, or the samples file it names is absent.
    """
    aggregate = load_aggregate(aggregate_path)
    companion = samples_path(aggregate_path, aggregate)
    if companion is None:
        return aggregate, iter(())
    if not companion.is_file():
        raise TraceError(f"the aggregate names its samples file {companion.name}, which is "
                         f"not beside it", file=aggregate_path)
    return aggregate, read_samples(companion)
