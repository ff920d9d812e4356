"""`oloproof.storable`: what the store can keep as it is, and why not, in words."""

from __future__ import annotations

import math
from typing import Any

import pytest
from pydantic_core import PydanticSerializationError

from oloproof.storable import MAX_DEPTH, storable_problem
from oloproof.store.sql import dumps


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_max_depth_is_what_the_store_s_serialiser_keeps() -> None:
    """If pydantic-core's limit moves, MAX_DEPTH (and the dataset check) must move with it."""
    assert dumps(_nested(MAX_DEPTH)) == "[" * MAX_DEPTH + "]" * MAX_DEPTH
    with pytest.raises(PydanticSerializationError):
        dumps(_nested(MAX_DEPTH + 1))
    assert storable_problem(_nested(MAX_DEPTH)) is None
    assert "nests deeper than the 255 levels" in str(storable_problem(_nested(MAX_DEPTH + 1)))


@pytest.mark.parametrize("leaf", [1, "x", None, {}])
def test_a_value_inside_the_innermost_container_counts_as_a_level(leaf: Any) -> None:
    """`[[1]]` is three levels to the serialiser: 255 levels of containers holding a value are
    refused (storable_problem said they could be stored)."""
    value: Any = leaf
    for _ in range(MAX_DEPTH - 1):
        value = {"next": value}
    assert storable_problem(value) is None
    dumps(value)
    deeper = {"next": value}
    with pytest.raises(PydanticSerializationError):
        dumps(deeper)
    assert "nests deeper than the 255 levels" in str(storable_problem(deeper))


@pytest.mark.parametrize(("value", "says"), [
    ({"a": "ok", "b": ["x", "\ud800"]}, "b[1] holds a lone surrogate \\ud800"),
    ({"\udfff": 1}, "a key of the value holds a lone surrogate \\udfff"),
    ({"score": math.nan}, "score holds NaN, which JSON has no form for"),
    ({"score": -math.inf}, "score holds -Infinity"),
    ({"tags": {"a", "b"}}, "tags holds a value of type set, which JSON has no form for"),
    ({(1, 2): "pair"}, "the value has a key of type tuple"),
    ({"a": {"b": {"c": {"d": {"e": {"f": math.nan}}}}}}, "a.b.c.d.e… holds NaN"),
])
def test_what_cannot_be_stored_is_named_with_where_it_is(value: Any, says: str) -> None:
    problem = storable_problem(value)
    assert problem is not None and says in problem


def test_the_first_problem_in_document_order_is_named() -> None:
    assert str(storable_problem({"a": [math.nan], "b": "\ud800"})).startswith("a[0] holds NaN")


def test_a_root_path_starts_the_words() -> None:
    assert str(storable_problem({"x": math.inf}, ("output",))).startswith("output.x holds")


@pytest.mark.parametrize("value", [
    None, True, 0, 10**40, 1.5, "", "😀", [], {}, (1, "a"), {"1": [{"": None}]}, {1: "a"},
    _nested(MAX_DEPTH),
])
def test_json_values_are_storable(value: Any) -> None:
    assert storable_problem(value) is None
    dumps(value)  # and the store's serialiser agrees
