"""What a judge is asked and what it answers (docs/judges.md): `JudgeRequest`, `JudgeVerdict`,
and the `judge_verdict/v1` record the execution layer stores for each judged case.

A `callable:` judge is a function `JudgeRequest -> JudgeVerdict` (sync or async); a `model:`
judge is sent `request.messages` and its reply is read into a `JudgeVerdict`. Both are public
(`from oloproof import JudgeRequest, JudgeVerdict`).
"""

from __future__ import annotations

import json
import math
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

JUDGE_VERDICT_KIND = "judge_verdict/v1"

#: How a judge's reply failed to give a verdict, or its call failed (the case is then
#: missing for the criterion with this reason, never failed or passed).
JUDGE_ERROR = "judge_error"
JUDGE_UNPARSEABLE = "judge_unparseable"
JUDGE_FAILURES = frozenset({JUDGE_ERROR, JUDGE_UNPARSEABLE})

#: The JSON schema of a verdict, sent as structured output where the endpoint takes it.
VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdict": {"type": "string", "enum": ["pass", "fail"]},
        "reason": {"type": "string"},
    },
    "required": ["verdict", "reason"],
    "additionalProperties": False,
}


class JudgeRequest(BaseModel):
    """One question to a judge: one case (one trial, one sample) against one criterion.

    `shown` holds exactly the fields the criterion's `shows` names (`input.message`,
    `output.answer`, `trajectory.tool_results`, …) with their values; `messages` is the chat a
    model judge is sent (a system message saying how to answer, then the rubric and the shown
    fields, or the criterion's `prompt:` with its placeholders filled in).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    criterion: str
    judge: str
    case_id: str
    trial: int = 1
    sample: int = 1
    rubric: str | None = None
    shown: dict[str, Any]
    messages: tuple[dict[str, str], ...]
    model: str | None = None
    temperature: float = 0.0


#: The largest token count kept (SQLite's largest integer).
_MOST_TOKENS = 2**63 - 1


def token_count(value: object) -> int | None:
    """A token count as a reply gave it, if it is one: a whole number from 0 (a float that is
    one, such as `12.0`, included), else None — negative, infinite, NaN, text, true or false
    are no counts, and are dropped rather than stored (docs/judges.md#what-a-reply-may-hold)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    if isinstance(value, int) and 0 <= value <= _MOST_TOKENS:
        return value
    return None


class JudgeVerdict(BaseModel):
    """A judge's answer: `pass` or `fail`, why, and (optionally) what the call cost. A token
    count that is no count (negative, infinite, not a number) is dropped, not refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    verdict: Literal["pass", "fail"]
    reason: str = ""
    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    model: str | None = None

    @field_validator("input_tokens", "output_tokens", mode="before")
    @classmethod
    def _count_or_nothing(cls, value: object) -> int | None:
        return token_count(value)


def verdict_from_text(text: str | None) -> JudgeVerdict | None:
    """A model's reply read as a verdict: a JSON object `{"verdict": "pass"|"fail", "reason":
    "..."}` (surrounding text or a fenced block tolerated), or None when it is not one."""
    if not isinstance(text, str):
        return None
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{"):] if "{" in body else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        value = json.loads(body[start:end + 1])
    except json.JSONDecodeError:
        return None
    return verdict_from_value(value)


def verdict_from_value(value: Any) -> JudgeVerdict | None:
    """A callable's return value (a `JudgeVerdict`, or a mapping shaped like one) as a verdict,
    or None when it is not one."""
    if isinstance(value, JudgeVerdict):
        return value
    if not isinstance(value, dict):
        return None
    verdict = value.get("verdict")
    if isinstance(verdict, str):
        value = {**value, "verdict": verdict.strip().lower()}
    if value.get("reason") is None:
        value = {**value, "reason": ""}
    try:
        return JudgeVerdict.model_validate(value)
    except ValidationError:
        return None


__all__ = ["JUDGE_ERROR", "JUDGE_FAILURES", "JUDGE_UNPARSEABLE", "JUDGE_VERDICT_KIND",
           "VERDICT_SCHEMA", "JudgeRequest", "JudgeVerdict", "token_count", "verdict_from_text",
           "verdict_from_value"]
