"""The comparison modes of `state_matches` and `state_unchanged`: whole, subset, paths, unchanged.

Each compares JSON values and returns a `StateComparison`; a `tolerance` (absolute, for
numbers) applies in every mode of `state_matches`. Mode `changes` is in `oloproof.state.changes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oloproof.state.comparison import (
    AGREEING_CHECKS_KEPT,
    Checks,
    StateComparison,
    check_tolerance,
)
from oloproof.state.paths import ABSENT, PathKey, display_path, parse_config_paths, resolve
from oloproof.state.walker import Walker


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
    checks = Checks(keep_agreeing)
    Walker(checks, check_tolerance(tolerance)).walk((), expected, recorded)
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
    checks = Checks(keep_agreeing)
    walker = Walker(checks, check_tolerance(tolerance))
    _walk_subset(walker, (), expected, recorded)
    return checks.result()


def _walk_subset(
    walker: Walker, path: PathKey, expected: Any, recorded: Any, note: str | None = None
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
    checks = Checks(keep_agreeing)
    walker = Walker(checks, check_tolerance(tolerance))
    for keys in parse_config_paths(paths):
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
    checks = Checks(keep_agreeing)
    walker = Walker(checks, None)
    for keys in parse_config_paths(paths):
        _compare_at(walker, keys, initial, recorded)
    return checks.result()


def _compare_at(walker: Walker, keys: tuple[str, ...], expected: Any, recorded: Any) -> None:
    """Compare the values both states hold at one config path."""
    expected_value, expected_path = resolve(expected, keys)
    recorded_value, recorded_path = resolve(recorded, keys)
    path = expected_path if expected_value is not ABSENT else recorded_path
    if expected_value is ABSENT or recorded_value is ABSENT:
        agreed = expected_value is recorded_value
        walker.checks.add(path, expected_value, recorded_value, agreed)
    else:
        walker.walk(path, expected_value, recorded_value)
