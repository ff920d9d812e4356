"""The one walk over two states that every comparison mode shares."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from oloproof.state.comparison import Checks, values_agree
from oloproof.state.paths import ABSENT, PathKey


class Walker:
    """Compares two values leaf by leaf (objects by key, equal-length lists by position).

    With `count_agreeing`, agreeing leaves are added to the checks; without it (mode `changes`)
    only disagreements are, each with `note`. The loops are written for speed: one pass, scalar
    comparisons inline, a path tuple built only for a check or a descent.
    """

    def __init__(
        self,
        checks: Checks,
        tolerance: float | None,
        *,
        count_agreeing: bool = True,
        note: str | None = None,
    ) -> None:
        self.checks = checks
        self.tolerance = tolerance
        self.count_agreeing = count_agreeing
        self.note = note

    def walk(self, path: PathKey, expected: Any, recorded: Any) -> None:
        """Compare `expected` with `recorded` below `path`."""
        if expected is recorded:
            if self.count_agreeing:
                self.checks.add_same(path, expected)
            return
        kind = type(expected)
        if kind is dict and type(recorded) is dict and (expected or recorded):
            self.walk_object(path, expected, recorded)
        elif (
            kind is list and type(recorded) is list and expected and len(expected) == len(recorded)
        ):
            self._walk_list(path, expected, recorded)
        else:
            self.leaf(path, expected, recorded)

    def leaf(self, path: PathKey, expected: Any, recorded: Any) -> None:
        """Compare two values as one check."""
        agreed = values_agree(expected, recorded, self.tolerance)
        if agreed and not self.count_agreeing:
            return
        note = None if agreed else self.note or length_note(expected, recorded)
        self.checks.add(path, expected, recorded, agreed, note)

    def walk_object(
        self,
        path: PathKey,
        expected: dict[str, Any],
        recorded: dict[str, Any],
        skip: Collection[str] = (),
    ) -> None:
        """Compare two objects key by key, then the keys only `recorded` has; `skip` keys aside."""
        count = self.count_agreeing
        get = recorded.get
        if not count:
            self._walk_object_differences(path, expected, recorded, skip)
            return
        missing = 0
        for key, value in expected.items():
            if skip and key in skip:
                continue
            found = get(key, ABSENT)
            kind = type(value)
            if kind is type(found) and kind is not dict and kind is not list and value == found:
                if count:
                    self.agree_scalar(path, key, value, found)
                continue
            missing += found is ABSENT
            self._descend(path, key, value, found)
        compared, present = len(expected), len(recorded)
        if skip:
            compared -= sum(1 for key in skip if key in expected)
            present -= sum(1 for key in skip if key in recorded)
        if present > compared - missing:
            for key, value in recorded.items():
                if key not in expected and key not in skip:
                    self.leaf((*path, key), ABSENT, value)

    def _walk_object_differences(
        self, path: PathKey, expected: dict[str, Any], recorded: dict[str, Any],
        skip: Collection[str],
    ) -> None:
        """Only disagreements are wanted: skip every member that is the very same object.

        States rebuilt from diffs share untouched subtrees with the initial state, so on a large
        sandbox nearly every member is identical; one comprehension finds the others without a
        Python-level step per member.
        """
        get = recorded.get
        suspects = [key for key, value in expected.items() if get(key, ABSENT) is not value]
        for key in suspects:
            if skip and key in skip:
                continue
            value, found = expected[key], get(key, ABSENT)
            kind = type(value)
            if kind is type(found) and kind is not dict and kind is not list and value == found:
                continue
            self._descend(path, key, value, found)
        if len(recorded) > len(expected) - len(suspects):
            for key in recorded.keys() - expected.keys():
                if key not in skip:
                    self.leaf((*path, key), ABSENT, recorded[key])

    def _walk_list(self, path: PathKey, expected: list[Any], recorded: list[Any]) -> None:
        """Compare two lists of the same length position by position."""
        count = self.count_agreeing
        for index, (value, found) in enumerate(zip(expected, recorded)):
            kind = type(value)
            if kind is type(found) and kind is not dict and kind is not list and value == found:
                if count:
                    self.agree_scalar(path, index, value, found)
                continue
            self._descend(path, index, value, found)

    def agree_scalar(self, path: PathKey, key: str | int, expected: Any, recorded: Any) -> None:
        """Count an agreeing scalar member (kept while there is room)."""
        checks = self.checks
        if checks.room:
            checks.add((*path, key), expected, recorded, True)
        else:
            checks.agreed += 1

    def _descend(self, path: PathKey, key: str | int, expected: Any, recorded: Any) -> None:
        """Compare a member that is not an equal scalar on both sides."""
        if expected is recorded:
            if self.count_agreeing:
                self.checks.add_same((*path, key), expected)
        elif type(expected) is dict and type(recorded) is dict and (expected or recorded):
            self.walk_object((*path, key), expected, recorded)
        else:
            self.walk((*path, key), expected, recorded)


def length_note(expected: Any, recorded: Any) -> str | None:
    """A note for two lists of different lengths."""
    if type(expected) is list and type(recorded) is list and len(expected) != len(recorded):
        return f"list length differs: expected {len(expected)}, recorded {len(recorded)}"
    return None
