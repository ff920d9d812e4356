"""What a state comparison finds: checks of paths, agreement of values, and their collection.

The words (leaf, agreement) are defined in `oloproof.state`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from oloproof.state.paths import ABSENT, PathKey, display_path

AGREEING_CHECKS_KEPT = 50
"""How many agreeing checks a comparison keeps by default; the others are only counted."""

_NUMBERS = frozenset((int, float))
_ABSENT_JSON = {"$absent": True}


def jsonable(value: Any) -> Any:
    """`value` ready for JSON: `ABSENT` becomes `{"$absent": true}`, anything else is unchanged."""
    return dict(_ABSENT_JSON) if value is ABSENT else value


def from_jsonable(value: Any) -> Any:
    """The inverse of `jsonable`: `{"$absent": true}` becomes `ABSENT`.

    A recorded value that is itself exactly `{"$absent": true}` cannot be told apart from a
    missing path once serialised.
    """
    is_marker = type(value) is dict and len(value) == 1 and value.get("$absent") is True
    return ABSENT if is_marker else value


@dataclass(frozen=True)
class PathCheck:
    """One compared path: what was expected there, what was recorded, and whether they agreed."""

    path: str
    expected: Any
    recorded: Any
    agreed: bool
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        """This check as a JSON object (`ABSENT` serialised by `jsonable`)."""
        return {
            "path": self.path,
            "expected": jsonable(self.expected),
            "recorded": jsonable(self.recorded),
            "agreed": self.agreed,
            "note": self.note,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PathCheck:
        """A check read back from `to_json`."""
        return cls(
            path=data["path"],
            expected=from_jsonable(data["expected"]),
            recorded=from_jsonable(data["recorded"]),
            agreed=bool(data["agreed"]),
            note=data.get("note"),
        )


@dataclass(frozen=True)
class StateComparison:
    """The outcome of comparing states: passed or not, and the checks behind it.

    `checks` holds every disagreeing check and the first agreeing ones (see `keep_agreeing`);
    `agreed_count` and `disagreed_count` count all of them, kept or not, and `truncated` says
    whether agreeing checks were left out.
    """

    agreed: bool
    checks: tuple[PathCheck, ...]
    agreed_count: int
    disagreed_count: int
    truncated: bool

    def to_json(self) -> dict[str, Any]:
        """This comparison as a JSON object."""
        return {
            "agreed": self.agreed,
            "checks": [check.to_json() for check in self.checks],
            "agreed_count": self.agreed_count,
            "disagreed_count": self.disagreed_count,
            "truncated": self.truncated,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StateComparison:
        """A comparison read back from `to_json`."""
        return cls(
            agreed=bool(data["agreed"]),
            checks=tuple(PathCheck.from_json(check) for check in data["checks"]),
            agreed_count=int(data["agreed_count"]),
            disagreed_count=int(data["disagreed_count"]),
            truncated=bool(data["truncated"]),
        )


def values_agree(expected: Any, recorded: Any, tolerance: float | None = None) -> bool:
    """Whether two values agree (numbers within `tolerance`; `True` is not `1`), deeply."""
    if expected is recorded:
        return True
    kind = type(expected)
    if kind in _NUMBERS and type(recorded) in _NUMBERS:
        if expected == recorded:
            return True
        try:
            return tolerance is not None and abs(expected - recorded) <= tolerance
        except OverflowError:
            return False
    if kind is not type(recorded):
        return False
    if kind is dict:
        return len(expected) == len(recorded) and all(
            key in recorded and values_agree(value, recorded[key], tolerance)
            for key, value in expected.items()
        )
    if kind is list:
        return len(expected) == len(recorded) and all(
            values_agree(a, b, tolerance) for a, b in zip(expected, recorded)
        )
    return bool(expected == recorded)


def check_tolerance(tolerance: float | None) -> float | None:
    """`tolerance` validated: None, or a finite number >= 0."""
    if tolerance is None:
        return None
    if type(tolerance) not in _NUMBERS or not math.isfinite(tolerance) or tolerance < 0:
        raise ValueError(f"tolerance must be a finite number >= 0, not {tolerance!r}")
    return tolerance


def count_leaves(value: Any) -> int:
    """How many leaves a value has (a scalar, `{}` and `[]` count as one)."""
    kind = type(value)
    if kind is dict and value:
        return sum(map(count_leaves, value.values()))
    if kind is list and value:
        return sum(map(count_leaves, value))
    return 1


# --- collecting checks ----------------------------------------------------------------------


class Checks:
    """Collects checks: all disagreeing ones, the first `keep` agreeing ones, counts of both."""

    def __init__(self, keep: int) -> None:
        if keep < 0:
            raise ValueError(f"keep_agreeing must be >= 0, not {keep}")
        self.checks: list[PathCheck] = []
        self.agreed = 0
        self.disagreed = 0
        self.room = keep
        """How many more agreeing checks are kept; once 0 they are only counted."""

    def add(
        self, path: PathKey, expected: Any, recorded: Any, agreed: bool, note: str | None = None
    ) -> None:
        """Count a check, and keep it unless it agrees and enough agreeing ones are kept."""
        if agreed:
            self.agreed += 1
            if not self.room:
                return
            self.room -= 1
        else:
            self.disagreed += 1
        self.checks.append(PathCheck(display_path(path), expected, recorded, agreed, note))

    def add_same(self, path: PathKey, value: Any) -> None:
        """Count every leaf of a subtree both sides share as agreeing (kept while there is room)."""
        if not self.room:
            self.agreed += count_leaves(value)
            return
        kind = type(value)
        if kind is dict and value:
            for key, item in value.items():
                self.add_same((*path, key), item)
        elif kind is list and value:
            for index, item in enumerate(value):
                self.add_same((*path, index), item)
        else:
            self.add(path, value, value, True)

    def result(self) -> StateComparison:
        """The comparison these checks make."""
        kept_agreeing = len(self.checks) - self.disagreed
        return StateComparison(
            agreed=self.disagreed == 0,
            checks=tuple(self.checks),
            agreed_count=self.agreed,
            disagreed_count=self.disagreed,
            truncated=self.agreed > kept_agreeing,
        )
