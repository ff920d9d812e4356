"""Mode `changes` of `state_matches`: the recorded state is the initial one with exactly the
expected patch applied.

Mode `changes` never lists agreeing leaves at all: it counts the expected changes that
happened, and finds unexpected changes with one structural walk of the expected end state
against the recorded one, so a 5 MB sandbox with a few changes costs one pass and a short
judgment.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from oloproof.state.comparison import (
    AGREEING_CHECKS_KEPT,
    Checks,
    StateComparison,
    check_tolerance,
    values_agree,
)
from oloproof.state.paths import ABSENT, PathKey, lookup
from oloproof.state.walker import Walker

UNEXPECTED_CHANGE = "unexpected change"
EXPECTED_CHANGE = "expected change"
DELETE = "$delete"


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
    tolerance = check_tolerance(tolerance)
    if type(patch) is not dict or _is_delete(patch):
        raise ValueError("expected.state in mode `changes` must be an object naming paths")
    checks = Checks(keep_agreeing)
    for path, value in _patch_changes((), patch, initial):
        wanted = ABSENT if _is_delete(value) else value
        found = lookup(recorded, path)
        agreed = values_agree(wanted, found, tolerance)
        checks.add(path, wanted, found, agreed, EXPECTED_CHANGE)
    after = _apply_changes(initial, patch)
    walker = Walker(checks, tolerance, count_agreeing=False, note=UNEXPECTED_CHANGE)
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
    walker: Walker, path: PathKey, initial: Any, after: Any, recorded: Any, patch: Any
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
