"""Output evaluators (docs/configuration.md#evaluators): they read the JSON object the system
returned."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from oloproof.evaluators.base import Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import VERDICT_CODES, Judgment, failed, missing, passed

_ABSENT = object()


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


class _FieldConfig(EvaluatorConfig):
    field: str = Field(min_length=1)
    expected_field: str | None = None


class _ExpectedEvaluator(Evaluator):
    """Compares `output[field]` with `expected[expected_field]`."""

    config: _FieldConfig

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        self._key = self.config.expected_field or self.config.field  # the expected field
        self.absent_expected = (f"no_expected_{self._key}", self._key)

    def values(self, evidence: Evidence) -> tuple[Any, Any]:
        output = evidence.output or {}
        return output.get(self.config.field, _ABSENT), evidence.case.expected[self._key]


@register("exact_match")
class ExactMatch(_ExpectedEvaluator):
    """Passes when `output[field] == expected[expected_field]`.

    Args:
        field: the output field.
        expected_field: the expected field (default: the same name).
        case_sensitive: compare strings exactly (default true).
    """

    class Config(_FieldConfig):
        case_sensitive: bool = True

    config: Config

    def judge(self, evidence: Evidence) -> Judgment:
        got, want = self.values(evidence)
        if got is _ABSENT:
            return failed("output_field_absent", field=self.config.field, expected=want)
        if not self.config.case_sensitive and isinstance(got, str) and isinstance(want, str):
            ok = got.casefold() == want.casefold()
        else:
            ok = got == want
        # A pass keeps no details (the output and expected are in the case panel already):
        # judgments are stored for every case, so they are kept small.
        return passed() if ok else failed(None, expected=want, recorded=got)


@register("contains")
class Contains(_ExpectedEvaluator):
    """Passes when `expected[expected_field]` occurs in `output[field]` as text.

    Args:
        field: the output field.
        expected_field: the expected field (default: the same name).
        case_sensitive: default false (containment ignores case).
    """

    class Config(_FieldConfig):
        case_sensitive: bool = False

    config: Config

    def judge(self, evidence: Evidence) -> Judgment:
        got, want = self.values(evidence)
        if got is _ABSENT:
            return failed("output_field_absent", field=self.config.field, expected=want)
        haystack, needle = _as_text(got), _as_text(want)
        if not self.config.case_sensitive:
            haystack, needle = haystack.casefold(), needle.casefold()
        return passed() if needle in haystack else failed(None, expected=want, recorded=got)


@register("regex")
class Regex(Evaluator):
    """Passes when `output[field]` matches `pattern` (re.search).

    Args:
        field: the output field.
        pattern: a Python regular expression.
    """

    class Config(EvaluatorConfig):
        field: str = Field(min_length=1)
        pattern: str

        @model_validator(mode="after")
        def _compiles(self) -> Any:
            try:
                re.compile(self.pattern)
            except re.error as exc:
                raise ValueError(f"pattern does not compile: {exc}") from None
            return self

    config: Config

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        self._pattern = re.compile(self.config.pattern)

    def judge(self, evidence: Evidence) -> Judgment:
        got = (evidence.output or {}).get(self.config.field, _ABSENT)
        if got is _ABSENT:
            return failed("output_field_absent", field=self.config.field)
        if self._pattern.search(_as_text(got)) is not None:
            return passed()
        return failed(None, pattern=self.config.pattern, recorded=got)


@register("json_schema")
class JsonSchema(Evaluator):
    """Passes when the output (or `output[field]`) validates against a JSON Schema.

    Args:
        schema: the schema inline, or
        schema_file: a path to it (relative to oloproof.yaml).
        field: validate this output field instead of the whole output.
    """

    class Config(EvaluatorConfig):
        schema_: dict[str, Any] | None = Field(default=None, alias="schema")
        schema_file: str | None = None
        field: str | None = None

        @model_validator(mode="after")
        def _one(self) -> Any:
            if (self.schema_ is None) == (self.schema_file is None):
                raise ValueError("json_schema takes exactly one of schema or schema_file")
            return self

    config: Config

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        schema: Any = self.config.schema_
        what = "schema"
        if schema is None:
            what = f"schema_file {self.config.schema_file!r}"
            path = Path(self.config.schema_file or "")
            if self.base_dir is not None and not path.is_absolute():
                path = self.base_dir / path
            try:
                text = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                raise LookupError(f"{what} does not exist (looked for {path}; the path is "
                                  "relative to oloproof.yaml)") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise LookupError(f"cannot read {what}: {exc}") from None
            try:
                schema = json.loads(text)
            except ValueError as exc:
                raise ValueError(f"{what} is not JSON: {exc}") from None
            if not isinstance(schema, dict | bool):
                raise ValueError(f"{what} must hold a JSON Schema (an object)")
        # Checked against its metaschema now, so a typo (`type: objekt`) stops the run before
        # any call instead of failing every case. (Imported here: a tenth of a second that a
        # suite without a schema should not pay.)
        import jsonschema

        validator_cls = jsonschema.validators.validator_for(schema)
        try:
            validator_cls.check_schema(schema)
        except jsonschema.SchemaError as exc:
            at = "/".join(str(p) for p in exc.absolute_path)
            hint = ("; a type is one of array, boolean, integer, null, number, object, string"
                    if exc.absolute_path and exc.absolute_path[-1] == "type" else "")
            raise ValueError(
                f"{what} is not a valid JSON Schema ({validator_cls.__name__}): {exc.message}"
                + (f" (at {at})" if at else "") + hint
            ) from None
        self._validator = validator_cls(schema)

    def judge(self, evidence: Evidence) -> Judgment:
        value: Any = evidence.output
        if self.config.field is not None:
            value = (evidence.output or {}).get(self.config.field, _ABSENT)
            if value is _ABSENT:
                return failed("output_field_absent", field=self.config.field)
        errors = [
            f"{'/'.join(str(p) for p in e.absolute_path) or '(root)'}: {e.message}"
            for e in self._validator.iter_errors(value)
        ]
        if errors:
            return failed("schema_violation", errors=errors[:20])
        return passed()


_RECORDED_VERDICTS = ("passed", "failed", "missing", "excluded")
_REASON = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


@register("recorded")
class Recorded(Evaluator):
    """The verdict the system itself recorded in its output: for a system that replays
    outcomes judged where they happened — a pytest trial (docs/pytest.md#the-stored-run), an
    imported harness's score — so that the run stores and shows them as any judgment.

    `output[field]` is `passed`, `failed`, `missing` or `excluded`; `output["reason"]` (a
    snake_case word) says why, and is required for `missing` and `excluded`;
    `output["details"]`, a JSON object, is kept as the judgment's details (what the case panel
    shows: an assertion's message). An output without the field, or with anything else in it,
    is missing (`no_recorded_verdict`, `not_a_verdict`), never a pass.

    Args:
        field: the output field holding the verdict (default `verdict`).
    """

    class Config(EvaluatorConfig):
        field: str = Field(default="verdict", min_length=1)

    config: Config

    def judge(self, evidence: Evidence) -> Judgment:
        output = evidence.output or {}
        verdict = output.get(self.config.field, _ABSENT)
        if verdict is _ABSENT:
            return missing("no_recorded_verdict", field=self.config.field)
        reason = output.get("reason")
        details = output.get("details")
        if verdict not in _RECORDED_VERDICTS or (
                reason is not None and not (isinstance(reason, str) and _REASON.match(reason))) \
                or (details is not None and not isinstance(details, dict)) \
                or (verdict in ("missing", "excluded") and reason is None):
            return missing("not_a_verdict", field=self.config.field,
                           recorded={"verdict": verdict, "reason": reason, "details": details},
                           accepted=list(_RECORDED_VERDICTS))
        return Judgment(VERDICT_CODES[verdict], reason, details or None)
