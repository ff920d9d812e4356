"""A dataset line reads as `json.loads` reads it (suite/json_lines.py's faster parser), except a
line json would read otherwise than written — a key given twice in one object, a value the
store cannot keep — which is refused (LineRefused), never read the way json reads it."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oloproof.storable import MAX_DEPTH
from oloproof.suite.json_lines import LineRefused, read_json_line

_json = st.recursive(
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=16,
)


@given(_json, st.booleans(), st.booleans(), st.sampled_from([(",", ":"), (", ", ": ")]))
def test_a_line_reads_as_json_loads_reads_it(value: Any, ascii_only: bool, sort: bool,
                                              separators: tuple[str, str]) -> None:
    line = json.dumps(value, ensure_ascii=ascii_only, sort_keys=sort, separators=separators)
    # repr: the same types, key order and floats as json's
    assert repr(read_json_line(line + "\n")) == repr(json.loads(line + "\n"))


# ---- keys given twice, wherever they are --------------------------------------------------------

@dataclass
class Obj:
    """An object written pair by pair, so a key may be given twice."""

    pairs: list[tuple[str, Any]]


_KEYS = st.sampled_from(["a", "b", ":", "a:b", "é", "id"])
_TEXT = st.text(alphabet=":ab é\"\\", max_size=6)
_pairs = st.recursive(
    st.none() | st.integers(-5, 5) | _TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.lists(st.tuples(_KEYS, inner), max_size=4)
    .map(Obj),
    max_leaves=12,
)


def _write(value: Any, escape_colons: bool, ascii_only: bool) -> str:
    """JSON text of `value`, `:` inside strings written as `\\u003a` when `escape_colons`."""
    def text(s: str) -> str:
        out = json.dumps(s, ensure_ascii=ascii_only)
        return out.replace(":", "\\u003a") if escape_colons else out
    if isinstance(value, Obj):
        return "{" + ", ".join(f"{text(k)}: {_write(v, escape_colons, ascii_only)}"
                               for k, v in value.pairs) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_write(v, escape_colons, ascii_only) for v in value) + "]"
    return text(value) if isinstance(value, str) else json.dumps(value)


def _has_key_twice(value: Any) -> bool:
    if isinstance(value, Obj):
        keys = [k for k, _ in value.pairs]
        return len(set(keys)) < len(keys) or any(_has_key_twice(v) for _, v in value.pairs)
    if isinstance(value, list):
        return any(_has_key_twice(v) for v in value)
    return False


@given(_pairs, st.booleans(), st.booleans())
def test_a_key_given_twice_anywhere_is_refused_and_every_other_line_reads_as_json(
        value: Any, escape_colons: bool, ascii_only: bool) -> None:
    line = _write(value, escape_colons, ascii_only)
    if _has_key_twice(value):
        with pytest.raises(LineRefused, match="twice in one object"):
            read_json_line(line)
    else:
        assert repr(read_json_line(line)) == repr(json.loads(line))


@pytest.mark.parametrize(("line", "says"), [
    ('{"id": "a", "input": {}, "id": "b"}', 'gives the key "id" twice in one object (at '
     'columns 2 and 26)'),
    ('{"id": "a", "input": {"q": 1, "q" : 2}}', 'gives the key "q" twice in one object (at '
     'columns 23 and 31)'),
    # an escaped colon makes the colon count even: the line is read strictly
    ('{"a": 1, "a": 2, "b": "\\u003a"}', 'gives the key "a" twice'),
    ('{"k\\u00e9": 1, "ké": 2}', 'gives the key "ké" twice in one object (at columns 2 and 16)'),
])
def test_the_key_given_twice_is_named_with_both_places(line: str, says: str) -> None:
    with pytest.raises(LineRefused) as refused:
        read_json_line(line)
    assert says in str(refused.value)
    assert "JSON readers would keep only the last one" in str(refused.value)


# ---- what the store cannot keep ---------------------------------------------------------------

def _nested(depth: int) -> str:
    return '{"x": ' + "[" * (depth - 1) + "]" * (depth - 1) + "}"


@pytest.mark.parametrize(("line", "says"), [
    ('"\\ud800"', "the value holds a lone surrogate \\ud800 (half of a UTF-16 pair"),
    ('{"a": "\\udc00\\ud800"}', "a holds a lone surrogate \\udc00"),
    ('{"a": {"\\ud800": 1}}', "a key of a holds a lone surrogate \\ud800"),
    ('{"a": NaN}', "a holds NaN, which JSON has no form for"),
    ('{"a": [-Infinity]}', "a[0] holds -Infinity"),
    ('{"a": [1e400]}', "a[0] holds Infinity"),  # read as a float too large: infinity
    (_nested(MAX_DEPTH + 1), f"x[0][0][0][0]… nests deeper than the {MAX_DEPTH} levels of "
     "arrays and objects the store keeps"),
    ("[" * 5000 + "]" * 5000, f"nests deeper than the {MAX_DEPTH} levels"),  # past recursion
])
def test_a_line_the_store_cannot_keep_is_refused_saying_why(line: str, says: str) -> None:
    with pytest.raises(LineRefused) as refused:
        read_json_line(line)
    assert "cannot be stored as written" in str(refused.value)
    assert says in str(refused.value)


@pytest.mark.parametrize("line", ['{"a": "\\ud83d\\ude00"}', _nested(MAX_DEPTH),
                                  '{"a": "x:y", "b": "\\u003a"}', '{"a": 1e308}'])
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
