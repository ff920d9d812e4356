"""A judgment: one case, one criterion — passed, failed, missing or excluded (SPEC §1)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Verdict = Literal["passed", "failed", "missing", "excluded"]

VERDICT_CODES: dict[str, str] = {"passed": "P", "failed": "F", "missing": "M", "excluded": "X"}
CODE_VERDICTS: dict[str, str] = {v: k for k, v in VERDICT_CODES.items()}


@dataclass(slots=True)
class Judgment:
    """The verdict of one criterion on one case, with why and what was compared.

    `reason` is a short snake_case word (`no_declared_tools`, `truncated`, ...); `details`
    holds what the case panel shows (compared paths, expected and recorded values). Read-only
    by convention, not frozen: a frozen dataclass costs five times as much to make, and six
    are made per case.
    """

    verdict: Verdict
    reason: str | None = None
    details: dict[str, Any] | None = None

    @property
    def code(self) -> str:
        return VERDICT_CODES[self.verdict]


def passed(reason: str | None = None, **details: Any) -> Judgment:
    return Judgment("passed", reason, details or None)


def failed(reason: str | None = None, **details: Any) -> Judgment:
    return Judgment("failed", reason, details or None)


def missing(reason: str, **details: Any) -> Judgment:
    return Judgment("missing", reason, details or None)


def excluded(reason: str, **details: Any) -> Judgment:
    return Judgment("excluded", reason, details or None)
