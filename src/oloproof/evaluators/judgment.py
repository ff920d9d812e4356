"""A judgment: one case, one criterion — passed, failed, missing or excluded
(docs/concepts.md#cases-criteria-and-the-four-verdicts)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from oloproof.plain_data import pickled_by_fields

Verdict = Literal["passed", "failed", "missing", "excluded"]

# The stored one-letter codes of the verdicts.
PASSED, FAILED, MISSING, EXCLUDED = "P", "F", "M", "X"
VERDICT_CODES: dict[str, str] = {"passed": PASSED, "failed": FAILED, "missing": MISSING,
                                 "excluded": EXCLUDED}
CODE_VERDICTS: dict[str, Verdict] = {
    PASSED: "passed", FAILED: "failed", MISSING: "missing", EXCLUDED: "excluded"}


@pickled_by_fields
@dataclass(slots=True)
class Judgment:
    """The verdict of one criterion on one case, with why and what was compared.

    `reason` is a short snake_case word (`no_declared_tools`, `truncated`, ...); `details`
    holds what the case panel shows (compared paths, expected and recorded values). `code` is
    the verdict as stored (P, F, M, X): a worker hands judgments back as they are (plain,
    picklable data). Read-only by convention, not frozen: a frozen dataclass costs five times
    as much to make, and one is made per case and criterion.
    """

    code: str
    reason: str | None = None
    details: dict[str, Any] | None = None

    @property
    def verdict(self) -> Verdict:
        return CODE_VERDICTS[self.code]


def passed(reason: str | None = None, **details: Any) -> Judgment:
    return Judgment(PASSED, reason, details or None)


def failed(reason: str | None = None, **details: Any) -> Judgment:
    return Judgment(FAILED, reason, details or None)


def missing(reason: str, **details: Any) -> Judgment:
    return Judgment(MISSING, reason, details or None)


def excluded(reason: str, **details: Any) -> Judgment:
    return Judgment(EXCLUDED, reason, details or None)
