"""The comparisons behind the `state_matches` and `state_unchanged` evaluators (SPEC §7.4).

Each function compares JSON values (the expected state, the initial state, the recorded end
state) and returns a `StateComparison`: whether they agreed, and a `PathCheck` for each compared
path with the expected value, the recorded value and whether they agreed — what the case panel
shows.

Words used here
---------------
- A **leaf** is a value that is not a non-empty object or a non-empty list: a scalar, `{}` or `[]`.
  Objects are compared key by key and lists of equal length position by position, down to leaves;
  a list whose length differs is one check holding both lists. A key present on one side only is
  one check with `ABSENT` on the other side.
- **Agreement** of two values: numbers (`int`, `float`, never `bool`) agree when equal, so `1`
  and `1.0` agree, or, with a `tolerance`, when `|a - b| <= tolerance`; `True` never agrees with
  `1`; strings, `None` and booleans agree when equal; objects and lists agree when every member
  does (same keys, same length).
- **Display paths** name a place in a state: `orders["a.b"].status`, `items[3]` (see
  `display_path`). **Config paths** — the `paths` of mode `paths` and of `state_unchanged` — are
  dotted: `orders.ord-001.status` (see `parse_dotted`).

Large states
------------
Every disagreeing check is kept; agreeing ones are kept up to `keep_agreeing` (50 by default) and
the rest are only counted (`agreed_count`, `truncated`). Mode `changes` never lists agreeing
leaves at all: it counts the expected changes that happened, and finds unexpected changes with
one structural walk of the expected end state against the recorded one, so a 5 MB sandbox with a
few changes costs one pass and a short judgment.
"""

from __future__ import annotations

import enum
import json
import math
import re
from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

AGREEING_CHECKS_KEPT = 50
"""How many agreeing checks a comparison keeps by default; the others are only counted."""

ROOT_PATH = "<root>"
"""The display path of the whole state."""

UNEXPECTED_CHANGE = "unexpected change"
EXPECTED_CHANGE = "expected change"
DELETE = "$delete"

PathKey = tuple[str | int, ...]

_SAFE_SEGMENT = re.compile(r'[^.\[\]"\\<>\s]+')
_INDEX = re.compile(r"0|[1-9][0-9]*")
_NUMBERS = frozenset((int, float))


class Absent(enum.Enum):
    """The type of `ABSENT`: the value of a path that does not exist."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "<absent>"

    def __str__(self) -> str:
        return "<absent>"


ABSENT = Absent.ABSENT
"""Stands for "this path does not exist" in a `PathCheck` (serialised as `{"$absent": true}`)."""

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


# --- paths ----------------------------------------------------------------------------------


def parse_dotted(path: str) -> tuple[str, ...]:
    """The keys named by a dotted config path: `orders.ord-001.status` → 3 keys.

    A key containing a dot (or starting with a double quote) is written in double quotes:
    `orders."a.b".status`; inside quotes, `\\"` is a quote and `\\\\` a backslash. Without
    quotes a key containing a dot cannot be addressed. A key made of digits also indexes a list
    (`items.0`). Raises `ValueError` for an empty path, an empty key or an unclosed quote.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"a state path is a non-empty dotted string, not {path!r}")
    keys: list[str] = []
    position = 0
    while True:
        if path[position] == '"':
            key, position = _read_quoted(path, position)
        else:
            end = path.find(".", position)
            end = len(path) if end < 0 else end
            key = path[position:end]
            if not key:
                raise ValueError(f"state path {path!r} has an empty key at character {end}")
            if '"' in key:
                raise ValueError(f'state path {path!r}: quote a whole key, as in a."b.c"')
            position = end
        keys.append(key)
        if position == len(path):
            return tuple(keys)
        if path[position] != ".":
            raise ValueError(f"state path {path!r}: expected '.' after a quoted key")
        position += 1
        if position == len(path):
            raise ValueError(f"state path {path!r} ends with a dot")


def _read_quoted(path: str, start: int) -> tuple[str, int]:
    """The key quoted at `path[start]` and the position after its closing quote."""
    chars: list[str] = []
    position = start + 1
    while position < len(path):
        char = path[position]
        if char == "\\" and position + 1 < len(path):
            chars.append(path[position + 1])
            position += 2
        elif char == '"':
            return "".join(chars), position + 1
        else:
            chars.append(char)
            position += 1
    raise ValueError(f"state path {path!r} has an unclosed quote at character {start}")


def display_path(path: Sequence[str | int]) -> str:
    """A path as the case panel shows it: `orders["a.b"].status`, `items[3]`, `<root>`.

    Keys are joined by dots; a key with a dot, bracket, quote, angle bracket or whitespace, or an
    empty key, is shown as `["..."]` (JSON-quoted); list positions are shown as `[3]`.
    """
    parts: list[str] = []
    for key in path:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _SAFE_SEGMENT.fullmatch(key):
            parts.append(f".{key}" if parts else key)
        else:
            parts.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(parts) if parts else ROOT_PATH


def _resolve(state: Any, keys: Sequence[str]) -> tuple[Any, PathKey]:
    """The value at `keys` in `state` (or `ABSENT`) and the path with list positions as ints."""
    node = state
    path: list[str | int] = []
    for key in keys:
        if type(node) is dict:
            node = node.get(key, ABSENT)
            path.append(key)
        elif type(node) is list and _INDEX.fullmatch(key):
            index = int(key)
            node = node[index] if index < len(node) else ABSENT
            path.append(index)
        else:
            node = ABSENT
            path.append(key)
    return node, tuple(path)


def _lookup(state: Any, path: PathKey) -> Any:
    """The value at an object path in `state`, or `ABSENT` (lists are not indexed)."""
    node = state
    for key in path:
        if type(node) is not dict:
            return ABSENT
        node = node.get(key, ABSENT)
        if node is ABSENT:
            return ABSENT
    return node


def _parse_paths(paths: Sequence[str]) -> list[tuple[str, ...]]:
    """The config paths parsed, duplicates dropped; at least one is required."""
    if isinstance(paths, str) or not paths:
        raise ValueError("give `paths` as a non-empty list of dotted paths")
    return [parse_dotted(path) for path in dict.fromkeys(paths)]


# --- agreement ------------------------------------------------------------------------------


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


def _check_tolerance(tolerance: float | None) -> float | None:
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


class _Checks:
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


class _Walker:
    """Compares two values leaf by leaf (objects by key, equal-length lists by position).

    With `count_agreeing`, agreeing leaves are added to the checks; without it (mode `changes`)
    only disagreements are, each with `note`. The loops are written for speed: one pass, scalar
    comparisons inline, a path tuple built only for a check or a descent.
    """

    def __init__(
        self,
        checks: _Checks,
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
        note = None if agreed else self.note or _length_note(expected, recorded)
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


def _length_note(expected: Any, recorded: Any) -> str | None:
    """A note for two lists of different lengths."""
    if type(expected) is list and type(recorded) is list and len(expected) != len(recorded):
        return f"list length differs: expected {len(expected)}, recorded {len(recorded)}"
    return None


# --- the modes ------------------------------------------------------------------------------


def compare_whole(
    expected: Any,
    recorded: Any,
    tolerance: float | None = None,
    *,
    keep_agreeing: int = AGREEING_CHECKS_KEPT,
) -> StateComparison:
    """Mode `whole`: the recorded state equals the expected one (deep equality).

    There is one check per leaf: every disagreeing leaf is listed, agreeing leaves are counted
    (and the first `keep_agreeing` listed).
    """
    checks = _Checks(keep_agreeing)
    _Walker(checks, _check_tolerance(tolerance)).walk((), expected, recorded)
    return checks.result()


def compare_subset(
    expected: Any,
    recorded: Any,
    tolerance: float | None = None,
    *,
    keep_agreeing: int = AGREEING_CHECKS_KEPT,
) -> StateComparison:
    """Mode `subset`: every leaf path of `expected` holds that value in `recorded`.

    Paths `expected` does not name are free. Objects in `expected` name paths; a list, a scalar,
    or an empty object or list in `expected` is a value the path must hold whole (`{}` means
    "an empty object", not "anything").
    """
    checks = _Checks(keep_agreeing)
    walker = _Walker(checks, _check_tolerance(tolerance))
    _walk_subset(walker, (), expected, recorded)
    return checks.result()


def _walk_subset(
    walker: _Walker, path: PathKey, expected: Any, recorded: Any, note: str | None = None
) -> None:
    """Check each path `expected` names in `recorded` (`note`: why `recorded` is absent)."""
    if type(expected) is not dict or not expected:
        if note is None:
            walker.walk(path, expected, recorded)
        else:
            walker.checks.add(path, expected, ABSENT, False, note)
        return
    if type(recorded) is not dict:
        if recorded is not ABSENT and note is None:
            note = f"{display_path(path)} is not an object in the recorded state"
        recorded = {}
    get = recorded.get
    for key, value in expected.items():
        found = get(key, ABSENT)
        kind = type(value)
        if kind is type(found) and kind is not dict and kind is not list and value == found:
            walker.agree_scalar(path, key, value, found)
        else:
            _walk_subset(walker, (*path, key), value, found, note)


def compare_paths(
    expected: Any,
    recorded: Any,
    paths: Sequence[str],
    tolerance: float | None = None,
    *,
    keep_agreeing: int = AGREEING_CHECKS_KEPT,
) -> StateComparison:
    """Mode `paths`: only the listed dotted paths are compared, each deeply.

    A path absent from both states agrees; absent from one side only, it disagrees.
    """
    checks = _Checks(keep_agreeing)
    walker = _Walker(checks, _check_tolerance(tolerance))
    for keys in _parse_paths(paths):
        _compare_at(walker, keys, expected, recorded)
    return checks.result()


def compare_unchanged(
    initial: Any,
    recorded: Any,
    paths: Sequence[str],
    *,
    keep_agreeing: int = AGREEING_CHECKS_KEPT,
) -> StateComparison:
    """`state_unchanged`: every listed dotted path still holds its initial value.

    A path absent from the initial state must still be absent. Comparison is exact (no
    tolerance); `1` and `1.0` agree, `True` and `1` do not.
    """
    checks = _Checks(keep_agreeing)
    walker = _Walker(checks, None)
    for keys in _parse_paths(paths):
        _compare_at(walker, keys, initial, recorded)
    return checks.result()


def _compare_at(walker: _Walker, keys: tuple[str, ...], expected: Any, recorded: Any) -> None:
    """Compare the values both states hold at one config path."""
    expected_value, expected_path = _resolve(expected, keys)
    recorded_value, recorded_path = _resolve(recorded, keys)
    path = expected_path if expected_value is not ABSENT else recorded_path
    if expected_value is ABSENT or recorded_value is ABSENT:
        agreed = expected_value is recorded_value
        walker.checks.add(path, expected_value, recorded_value, agreed)
    else:
        walker.walk(path, expected_value, recorded_value)


def compare_changes(
    initial: Any,
    patch: Any,
    recorded: Any,
    tolerance: float | None = None,
    *,
    keep_agreeing: int = AGREEING_CHECKS_KEPT,
) -> StateComparison:
    """Mode `changes`: the recorded state is `initial` with exactly `patch` applied.

    `patch` (the case's `expected.state`) is an object whose nested objects name paths; any
    other value is what that path must hold afterwards (a list or scalar replaces the old value
    whole) and `{"$delete": true}` means the path must be gone. A nested object where the
    initial state has no object creates one (`{}` there expects an empty object), unless all it
    holds is deletions: deleting below a path that holds no object changes nothing.

    Checks: one per expected change (note "expected change"), then one per unexpected change
    found (note "unexpected change", expected = the initial value or `ABSENT`). `agreed_count`
    counts the expected changes that happened; agreeing leaves elsewhere are not listed or
    counted. Raises `ValueError` for a malformed patch.
    """
    tolerance = _check_tolerance(tolerance)
    if type(patch) is not dict or _is_delete(patch):
        raise ValueError("expected.state in mode `changes` must be an object naming paths")
    checks = _Checks(keep_agreeing)
    for path, value in _patch_changes((), patch, initial):
        wanted = ABSENT if _is_delete(value) else value
        found = _lookup(recorded, path)
        agreed = values_agree(wanted, found, tolerance)
        checks.add(path, wanted, found, agreed, EXPECTED_CHANGE)
    after = _apply_changes(initial, patch)
    walker = _Walker(checks, tolerance, count_agreeing=False, note=UNEXPECTED_CHANGE)
    if patch:
        _find_unexpected(walker, (), initial, after, recorded, patch)
    else:
        walker.walk((), after, recorded)
    return checks.result()


def _is_delete(value: Any) -> bool:
    """Whether `value` is the deletion marker `{"$delete": true}` (a malformed one raises)."""
    if type(value) is not dict or DELETE not in value:
        return False
    if len(value) != 1 or value[DELETE] is not True:
        raise ValueError(f'a deletion is written {{"{DELETE}": true}} alone, not {value!r}')
    return True


def _patch_changes(
    path: PathKey, patch: dict[str, Any], base: Any
) -> Iterator[tuple[PathKey, Any]]:
    """Each change a patch expects: (path, value or deletion marker), in the patch's order."""
    for key, value in patch.items():
        here = (*path, key)
        old = base.get(key, ABSENT) if type(base) is dict else ABSENT
        if type(value) is not dict or _is_delete(value):
            yield here, value
        elif value:
            yield from _patch_changes(here, value, old)
        elif type(old) is not dict:
            yield here, {}


def _apply_changes(base: Any, patch: dict[str, Any]) -> Any:
    """The state `patch` expects from `base`: copies along patched paths, shares the rest."""
    if type(base) is not dict and patch and _only_deletes(patch):
        return base
    result = dict(base) if type(base) is dict else {}
    for key, value in patch.items():
        if _is_delete(value):
            result.pop(key, None)
        elif type(value) is dict:
            changed = _apply_changes(result.get(key, ABSENT), value)
            if changed is not ABSENT:
                result[key] = changed
        else:
            result[key] = value
    return result


def _only_deletes(patch: dict[str, Any]) -> bool:
    """Whether a non-empty nested patch does nothing but delete paths."""
    return all(
        _is_delete(value) or (type(value) is dict and value and _only_deletes(value))
        for value in patch.values()
    )


def _find_unexpected(
    walker: _Walker, path: PathKey, initial: Any, after: Any, recorded: Any, patch: Any
) -> None:
    """Report differences between the expected and the recorded end state outside the patch.

    `patch` is the part of the patch at `path`. Below a patch leaf the expected-change check
    already speaks. Where the patch names nothing, `after` is the initial value (shared, not
    copied) and any difference the walker finds is an unexpected change.
    """
    if type(patch) is not dict or _is_delete(patch):
        return
    if not patch:
        if type(initial) is dict:
            walker.walk(path, after, recorded)
        return
    if type(recorded) is not dict or type(after) is not dict:
        if not values_agree(initial, recorded, walker.tolerance):
            walker.checks.add(path, initial, recorded, False, UNEXPECTED_CHANGE)
        return
    walker.walk_object(path, after, recorded, skip=patch)
    before = initial if type(initial) is dict else {}
    for key, part in patch.items():
        _find_unexpected(
            walker,
            (*path, key),
            before.get(key, ABSENT),
            after.get(key, ABSENT),
            recorded.get(key, ABSENT),
            part,
        )
