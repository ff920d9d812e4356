"""Copy-on-write copies of a `$ref` state (`state/cow.py`): whatever a system does to the copy,
it sees what it would see on a deep copy, the frozen base never changes, and the end state's
diff is the diff a deep copy would give.

Each operation below is applied to a copy-on-write copy and to a plain deep copy; the two must
agree on every value read, and in the end on their contents and their diffs from the base.
"""

from __future__ import annotations

import copy
import json
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oloproof.execution.resets import StateCopies
from oloproof.state import diff as state_diff
from oloproof.state.cow import CowDict, FrozenDict, cow_copy, frozen
from oloproof.suite.case import Case


def _base() -> dict[str, Any]:
    return {"orders": {f"o{i}": {"id": f"o{i}", "qty": i, "tags": ["a", {"k": i}]}
                       for i in range(6)},
            "log": [{"n": 1}, {"n": 2}, [3, 4]], "count": 6, "name": "shop"}


OPERATIONS = {
    "set nested": lambda s: s["orders"]["o1"].__setitem__("qty", 99),
    "get then set": lambda s: s.get("orders")["o2"]["tags"][1].__setitem__("k", "x"),
    "values": lambda s: [v.__setitem__("seen", True) for v in s["orders"].values()],
    "items": lambda s: [v["tags"].append(k) for k, v in s["orders"].items()],
    "setdefault": lambda s: s.setdefault("orders", {})["o3"].pop("tags"),
    "pop": lambda s: s["orders"].pop("o4")["tags"].append("gone"),
    "popitem": lambda s: s["orders"].popitem()[1].__setitem__("qty", -1),
    "dict copy": lambda s: dict(s["orders"])["o0"].__setitem__("qty", 7),
    "unpacking": lambda s: {**s["orders"]}["o5"]["tags"].clear(),
    "method copy": lambda s: s["orders"].copy()["o1"]["tags"].append(1),
    "union": lambda s: (s["orders"] | {})["o2"].__setitem__("qty", 0),
    "update from": lambda s: s.__setitem__("mirror", {}) or s["mirror"].update(s["orders"]),
    "list iteration": lambda s: [x.append(5) if isinstance(x, list) else x.__setitem__("n", 0)
                                 for x in s["log"]],
    "list slice": lambda s: s["log"][0:2][1].__setitem__("n", 42),
    "list pop": lambda s: s["log"].pop(0).__setitem__("n", -5),
    "list concat": lambda s: (s["log"] + [])[2].append(6),
    "list radd": lambda s: ([] + s["log"])[0].__setitem__("n", 8),
    "list times": lambda s: (s["log"] * 2)[2].append(7),
    "list unpack": lambda s: (lambda a, b, c: c.append(9))(*s["log"]),
    "reversed": lambda s: list(reversed(s["log"]))[-1].append(10),
    "sort and replace": lambda s: s.__setitem__("log", sorted(s["log"][:2],
                                                              key=lambda x: -x["n"])),
    "json round": lambda s: s.__setitem__("snapshot", json.loads(json.dumps(s["orders"]))),
    "deepcopy": lambda s: copy.deepcopy(s["orders"])["o0"].__setitem__("qty", 1000),
    "pickle": lambda s: pickle.loads(pickle.dumps(s["orders"]))["o0"]["tags"].append(2),
    "delete": lambda s: s["orders"].__delitem__("o3"),
    "add": lambda s: s["orders"].__setitem__("o9", {"id": "o9", "qty": 1}),
    "scalar": lambda s: s.__setitem__("count", s["count"] + 1),
}


def _run(names: list[str]) -> tuple[Any, Any, Any]:
    base = frozen(_base())
    pristine = _base()
    plain = _base()
    cow = cow_copy(base)
    for name in names:
        results = []
        for target in (plain, cow):
            try:
                OPERATIONS[name](target)
                results.append(None)
            except (KeyError, IndexError, TypeError, AttributeError, ValueError) as exc:
                results.append(type(exc))
        assert results[0] == results[1], name
        assert cow == plain, f"after {name}"
    assert base == pristine, "the base never changes"
    return base, plain, cow


def test_every_operation_on_its_own() -> None:
    for name in OPERATIONS:
        base, plain, cow = _run([name])
        assert state_diff.diff(base, cow) == state_diff.diff(base, plain), name
        assert json.loads(json.dumps(cow)) == plain


@given(st.lists(st.sampled_from(sorted(OPERATIONS)), max_size=8))
def test_any_sequence_of_operations(names: list[str]) -> None:
    base, plain, cow = _run(names)
    patch = state_diff.diff(base, cow)
    assert patch == state_diff.diff(base, plain)
    assert state_diff.apply(base, json.loads(json.dumps(patch))) == plain


def test_an_object_the_system_stores_is_the_same_object_read_back() -> None:
    cow = cow_copy(frozen(_base()))
    mine = {"a": 1}
    cow["orders"]["o1"]["mine"] = mine
    assert cow["orders"]["o1"]["mine"] is mine
    assert cow["orders"]["o1"] is cow["orders"]["o1"], "a part is copied once"
    assert isinstance(cow, dict) and type(copy.deepcopy(cow)) is dict
    assert type(pickle.loads(pickle.dumps(cow))) is dict


def test_untouched_parts_are_not_copied() -> None:
    base = frozen({"records": {f"r{i}": {"qty": i} for i in range(1000)}})
    cow = cow_copy(base)
    cow["records"]["r7"]["qty"] = -1
    records = dict.__getitem__(cow, "records")
    assert isinstance(records, CowDict)
    untouched = [k for k in base["records"] if dict.__getitem__(records, k) is base["records"][k]]
    assert len(untouched) == 999
    assert state_diff.diff(base, cow) == {"$keys": {"records": {"$keys": {
        "r7": {"$keys": {"qty": {"$replace": -1}}}}}}}


def _case(state: dict[str, Any]) -> Case:
    return Case("c1", 1, {}, {}, state, "sha256:state", {}, None, "d", "e", "x")


def test_resets_share_one_frozen_base_and_a_reach_past_the_copy_cannot_change_it() -> None:
    state = _base()
    case = _case(state)
    copies = StateCopies()
    first = copies.fresh(case)
    assert isinstance(first, CowDict) and first == state
    first["orders"]["o1"]["qty"] = 5  # through the copy: fine
    base = copies.diff_base(case)
    assert type(base) is FrozenDict and base == state
    assert copies.diff_base(case) is base, "frozen once"
    leaked = copies.fresh(case)
    reached = dict.__getitem__(leaked, "orders")  # read past the copy, as C code could
    with pytest.raises(TypeError, match="shared initial state"):
        reached["o2"]["qty"] = -7
    with pytest.raises(TypeError):
        reached["o2"]["tags"].append("x")
    assert state == _base() and base == _base() and copies.fresh(case) == _base()
    assert type(copy.deepcopy(base)) is dict and type(pickle.loads(pickle.dumps(base))) is dict
