"""End states stored as structural diffs (docs/stateful-agents.md#a-sandbox-oloproof-resets): exact
round trips, small patches, speed."""

from __future__ import annotations

import copy
import json
import time
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oloproof.state.diff import PatchError, apply, diff, identical

# Keys drawn from a small alphabet so that two random objects share keys (and so recurse), with
# the characters a dotted-path format would trip on.
keys = st.text(alphabet='ab.$ "[]', max_size=3)
scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-3, max_value=3)
    | st.floats(min_value=-3, max_value=3, allow_nan=False)
    | st.text(max_size=3)
)
json_values = st.recursive(
    scalars,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(keys, children, max_size=4),
    max_leaves=25,
)


def typed(value: Any) -> Any:
    """`value` with every scalar tagged by its type, so `==` tells True, 1 and 1.0 apart."""
    if isinstance(value, dict):
        return ("dict", sorted((key, typed(item)) for key, item in value.items()))
    if isinstance(value, list):
        return ("list", [typed(item) for item in value])
    return (type(value).__name__, value)


def same(a: Any, b: Any) -> bool:
    """``typed(a) == typed(b)``, without building either: the same containers, keys and type
    names all the way down, and scalars equal (``is`` first, as a tuple's ``==`` takes them).
    On the 5 MB state below it is a quarter of the time, most of that test's."""
    if isinstance(a, dict):
        return isinstance(b, dict) and len(a) == len(b) and all(
            key in b and same(item, b[key]) for key, item in a.items())
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(
            same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(b, (dict, list)):
        return False
    return type(a).__name__ == type(b).__name__ and (a is b or a == b)


def assert_same(a: Any, b: Any) -> None:
    if not same(a, b):
        assert typed(a) == typed(b)  # fails, showing where the tagged values differ
        raise AssertionError(f"same() and typed() disagree on {a!r} and {b!r}")


def test_same_is_equality_of_the_typed_values() -> None:
    values = [None, True, False, 0, 1, 1.0, -0.0, 0.0, "", "1", [], {}, [1], [1.0], [True],
              {"a": 1}, {"a": 1.0}, {"b": 1}, {"a": 1, "b": [None]}, {"b": [None], "a": 1},
              [[1, {"a": []}]], [[1, {"a": {}}]], [1, 2], [2, 1]]
    for a in values:
        for b in values:
            assert same(a, b) is (typed(a) == typed(b)), (a, b)


def mutate(value: Any, data: st.DataObject) -> Any:
    """A copy of `value` with a few random edits somewhere inside it."""
    value = copy.deepcopy(value)
    if isinstance(value, dict) and value and data.draw(st.booleans()):
        key = data.draw(st.sampled_from(sorted(value)))
        value[key] = mutate(value[key], data)
        return value
    if isinstance(value, list) and value and data.draw(st.booleans()):
        index = data.draw(st.integers(0, len(value) - 1))
        value[index] = mutate(value[index], data)
        return value
    return data.draw(json_values)


@settings(max_examples=400)
@given(json_values, json_values)
def test_round_trip_between_unrelated_values(base: Any, new: Any) -> None:
    before = copy.deepcopy(base)
    patch = diff(base, new)
    assert_same(apply(base, patch), new)
    assert_same(base, before)  # neither diff nor apply mutated the base


@settings(max_examples=400)
@given(json_values, st.data())
def test_round_trip_after_small_edits(base: Any, data: st.DataObject) -> None:
    new = mutate(base, data)
    before = copy.deepcopy(base)
    patch = diff(base, new)
    assert_same(apply(base, patch), new)
    assert_same(base, before)


@settings(max_examples=200)
@given(json_values, json_values)
def test_patch_survives_json(base: Any, new: Any) -> None:
    """The store writes patches as JSON text; reading one back must still reconstruct `new`."""
    patch = json.loads(json.dumps(diff(base, new)))
    assert_same(apply(base, patch), new)


@given(json_values)
def test_identical_inputs_give_an_empty_patch(value: Any) -> None:
    assert diff(value, copy.deepcopy(value)) == {}
    assert diff(value, value) == {}
    assert identical(value, copy.deepcopy(value))


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (1, True),
        (0, False),
        (True, 1),
        (1, 1.0),
        (1.0, 1),
        ({"a": 1}, {"a": True}),
        ([0], [False]),
        (None, {}),
        ({}, []),
        ("1", 1),
    ],
)
def test_json_types_are_told_apart(old: Any, new: Any) -> None:
    patch = diff(old, new)
    assert patch != {}
    assert not identical(old, new)
    assert_same(apply(old, patch), new)


def test_object_patch_names_added_changed_and_removed_keys() -> None:
    base = {"keep": 1, "change": {"x": 1, "y": 2}, "drop": [1, 2]}
    new = {"keep": 1, "change": {"x": 1, "y": 3}, "add": None}
    patch = diff(base, new)
    assert patch == {
        "$keys": {"change": {"$keys": {"y": {"$replace": 3}}}, "add": {"$replace": None}},
        "$remove": ["drop"],
    }
    assert apply(base, patch) == new


def test_keys_with_dots_dollars_and_brackets_are_plain_keys() -> None:
    base = {"a.b": {"$ref": 1, "c": 2}, "$replace": {"x": 1}, "": {"[0]": "v"}}
    new = {"a.b": {"$ref": 5, "c": 2}, "$replace": {"x": 2}, "": {"[0]": "w"}, "a": {"b": 9}}
    patch = diff(base, new)
    assert patch["$keys"]["a.b"] == {"$keys": {"$ref": {"$replace": 5}}}
    assert patch["$keys"]["$replace"] == {"$keys": {"x": {"$replace": 2}}}
    assert patch["$keys"]["a"] == {"$replace": {"b": 9}}  # not confused with "a.b"
    assert_same(apply(base, patch), new)


def test_lists_of_the_same_length_are_patched_by_position() -> None:
    base = {"items": [{"sku": f"s{i}", "qty": 1} for i in range(10)]}
    new = copy.deepcopy(base)
    new["items"][7]["qty"] = 2
    patch = diff(base, new)
    assert patch == {"$keys": {"items": {"$items": [[7, {"$keys": {"qty": {"$replace": 2}}}]]}}}
    assert apply(base, patch) == new


def test_lists_are_replaced_whole_when_the_length_changes_or_most_items_change() -> None:
    assert diff([1, 2, 3], [1, 2]) == {"$replace": [1, 2]}
    assert diff([1, 2, 3], [1, 5, 6]) == {"$replace": [1, 5, 6]}
    assert diff([1, 2, 3, 4], [1, 2, 3, 5]) == {"$items": [[3, {"$replace": 5}]]}


def test_apply_copies_only_along_changed_paths() -> None:
    base = {"orders": {"o1": {"status": "delivered"}, "o2": {"status": "delivered"}}, "x": [1]}
    new = {"orders": {"o1": {"status": "refunded"}, "o2": {"status": "delivered"}}, "x": [1]}
    result = apply(base, diff(base, new))
    assert result == new
    assert result is not base and result["orders"] is not base["orders"]
    assert result["orders"]["o2"] is base["orders"]["o2"]  # untouched subtree shared
    assert result["x"] is base["x"]
    assert base["orders"]["o1"]["status"] == "delivered"
    assert apply(base, {}) is base


def test_patch_size_grows_with_the_change_not_the_state() -> None:
    base = {"orders": {f"ord-{i:05d}": {"status": "delivered", "total": i} for i in range(5000)}}
    new = copy.deepcopy(base)
    new["orders"]["ord-00042"]["status"] = "refunded"
    del new["orders"]["ord-04999"]
    new["orders"]["ord-new"] = {"status": "placed", "total": 1}
    patch = diff(base, new)
    assert len(json.dumps(patch)) < 250 < len(json.dumps(base)) // 1000
    assert apply(base, patch) == new


@pytest.mark.parametrize(
    ("base", "patch"),
    [
        (1, {"$keys": {"a": {"$replace": 1}}}),
        ({"a": 1}, {"$remove": ["b"]}),
        ({"a": 1}, {"$keys": {"b": {"$keys": {}}}}),
        ([1], {"$items": [[3, {"$replace": 1}]]}),
        ({"a": 1}, {"$items": [[0, {"$replace": 1}]]}),
        (1, {"$replace": 2, "$keys": {}}),
        (1, {"$what": 2}),
        (1, [1]),
    ],
)
def test_malformed_or_misfit_patches_are_refused(base: Any, patch: Any) -> None:
    with pytest.raises(PatchError):
        apply(base, patch)


def big_state(records: int) -> dict[str, Any]:
    """A sandbox of `records` orders, about 100 bytes each (50,000 make ~5 MB of JSON)."""
    orders = {
        f"ord-{i:06d}": {
            "status": "delivered",
            "amount": 12.5 + i,
            "customer": f"cust-{i % 997}",
            "paid": i % 2 == 0,
            "qty": i % 7,
        }
        for i in range(records)
    }
    return {"orders": orders, "meta": {"version": 3}}


def test_diff_of_a_5_mb_state_with_three_changed_records_is_fast() -> None:
    # Benchmark: 50,000 records (5.3 MB of JSON), 3 records changed, the end state a fresh
    # object (as a snapshot is) rather than one sharing subtrees with the initial state.
    # Measured on a 2-core container: diff ~45-55 ms, apply < 1 ms. The bound below is loose,
    # and on the CPU time of this thread: a loaded machine (other tests beside this one) makes
    # the wall time longer, not the work.
    base = big_state(50_000)
    assert len(json.dumps(base)) > 5_000_000
    new = json.loads(json.dumps(base))
    new["orders"]["ord-000010"]["status"] = "refunded"
    new["orders"]["ord-020000"]["paid"] = 1  # a type-only change: True -> 1
    del new["orders"]["ord-049999"]["qty"]
    started = time.thread_time()
    patch = diff(base, new)
    elapsed = time.thread_time() - started
    assert len(json.dumps(patch)) < 300
    assert_same(apply(base, patch), new)
    assert elapsed < 0.5, f"diff took {elapsed * 1000:.0f} ms"
