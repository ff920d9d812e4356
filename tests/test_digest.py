"""A case's canonical text assembled from its members' texts reads as the object's own."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oloproof.digest import ObjectText, canonical_json

_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(st.dictionaries(st.text(), _json, max_size=6))
def test_an_object_made_of_its_members_texts_is_its_canonical_text(value: dict[str, Any]) -> None:
    keys = sorted(value)
    text = ObjectText(*keys)
    assert text(*[canonical_json(value[key]) for key in keys]) == canonical_json(value)


def test_the_case_digest_shape() -> None:
    case_text = ObjectText("expected", "initial_state", "input", "metadata")
    assert case_text(canonical_json(None), "null", canonical_json({"b": 1, "a": "é"}),
                     canonical_json({})) == (
        '{"expected":null,"initial_state":null,"input":{"a":"é","b":1},"metadata":{}}')


def test_an_object_text_takes_its_keys_in_canonical_order_only() -> None:
    with pytest.raises(ValueError, match="sorted order"):
        ObjectText("input", "expected")
    with pytest.raises(ValueError, match="sorted order"):
        ObjectText("a", "a")
    text = ObjectText("a%s", "b")
    with pytest.raises(ValueError, match="2 members"):
        text("1")
    assert text("1", '"%d"') == canonical_json({"b": "%d", "a%s": 1})
