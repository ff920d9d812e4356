"""A dataset line reads as `json.loads` reads it (suite/cases.py's faster parser)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oloproof.suite.cases import read_json_line

_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=16,
)


@given(_json, st.booleans(), st.booleans(), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_a_line_reads_as_json_loads_reads_it(value: Any, ascii_only: bool, sort: bool,
                                              separators: tuple[str, str]) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only, sort_keys=sort, separators=separators)
    # repr: the same types, key order and floats (NaN included) as json's
    assert repr(read_json_line(line + "\n")) == repr(json.loads(line + "\n"))


@pytest.mark.parametrize("line", ['"\\ud800"', '{"a": "\\udc00\\ud800"}', "[" * 600 + "]" * 600,
                                  '{"a": 1, "b": 2, "a": 3}'])
def test_lines_the_fast_parser_refuses_or_may_differ_on_read_as_json_reads_them(
        line: str) -> None:
    assert repr(read_json_line(line)) == repr(json.loads(line))


@pytest.mark.parametrize("line", ['{"id": "a",}', '\ufeff{"id": "a"}', '{"id": "a"} x', "",
                                  '{"a": "\x01"}', "1" * 5000])
def test_a_broken_line_fails_as_json_loads_fails(line: str) -> None:
    with pytest.raises(ValueError) as expected:
        json.loads(line)
    with pytest.raises(ValueError) as got:
        read_json_line(line)
    assert type(got.value) is type(expected.value)
    assert str(got.value) == str(expected.value)
