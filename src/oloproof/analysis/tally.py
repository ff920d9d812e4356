"""Streaming tallies: each case's outcome is added once; nothing per case is kept but counts
(and, for quantile metrics, the observed values)."""

from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field


@dataclass
class RateTally:
    """passed / failed / missing / excluded counts of one criterion over a set of cases."""

    passed: int = 0
    failed: int = 0
    missing: int = 0
    excluded: int = 0
    excluded_by_reason: Counter[str] = field(default_factory=Counter)
    missing_by_reason: Counter[str] = field(default_factory=Counter)

    @property
    def observed(self) -> int:
        return self.passed + self.failed

    @property
    def support(self) -> int:
        return self.passed + self.failed + self.missing

    def add(self, code: str, reason: str | None, count: int = 1) -> None:
        if code == "P":
            self.passed += count
        elif code == "F":
            self.failed += count
        elif code == "M":
            self.missing += count
            self.missing_by_reason[reason or "unknown"] += count
        else:
            self.excluded += count
            self.excluded_by_reason[reason or "unknown"] += count


@dataclass
class QuantileTally:
    """Observed values of one per-case number, with missing and excluded counts.

    The values are kept as machine doubles, not a list of float objects: a run's garbage
    collections then have nothing of them to walk (a list of 20,000 is walked at each)."""

    values: array[float] = field(default_factory=lambda: array("d"))
    missing: int = 0
    excluded: int = 0
    excluded_by_reason: Counter[str] = field(default_factory=Counter)
    missing_by_reason: Counter[str] = field(default_factory=Counter)

    @property
    def support(self) -> int:
        return len(self.values) + self.missing

    def add(self, value: float | None, excluded_reason: str | None = None,
            missing_reason: str | None = None) -> None:
        if excluded_reason is not None:
            self.excluded += 1
            self.excluded_by_reason[excluded_reason] += 1
        elif value is None:
            self.missing += 1
            self.missing_by_reason[missing_reason or "unknown"] += 1
        else:
            self.values.append(value)


def merge_into(tallies: list[QuantileTally], more: list[QuantileTally]) -> None:
    """Add each tally of `more` to the tally at its position in `tallies` (values appended)."""
    for tally, other in zip(tallies, more, strict=True):
        tally.values.extend(other.values)
        tally.missing += other.missing
        tally.excluded += other.excluded
        tally.excluded_by_reason.update(other.excluded_by_reason)
        tally.missing_by_reason.update(other.missing_by_reason)
