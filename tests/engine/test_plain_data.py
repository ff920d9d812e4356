"""Jobs and results cross to a worker process pickled as their fields
(docs/scaling.md#a-cpu-bound-suite): every field of every such class comes back as it went,
and a class `pickled_by_fields` cannot serve is refused when it is declared."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from typing import Any

import pytest

from oloproof.analysis.outcome import CaseOutcome
from oloproof.errors import ErrorKind
from oloproof.evaluators.judgment import Judgment
from oloproof.execution import units
from oloproof.execution.rows import CaseRows, RowMaking
from oloproof.plain_data import pickled_by_fields
from oloproof.suite.case import Case

CROSSING = [units.CaseError, units.CachedExecution, units.JudgeAsk, units.CaseJob,
            units.ReplayJob, units.UnitJob, units.StoredText, units.Execution,
            units.CaseResult, units.UnitResult, Judgment, CaseOutcome, CaseRows]


def _distinct(cls: type, n: int) -> Any:
    """An instance whose every field holds a value of its own (none is a default)."""
    values: dict[str, Any] = {}
    for i, field in enumerate(dataclasses.fields(cls)):
        values[field.name] = {"field": field.name, "n": n + i, "list": [n, i]}
    values = {**values, **_typed(cls, n)}
    return cls(**values)


def _typed(cls: type, n: int) -> dict[str, Any]:
    # (fields whose value a test can read back as itself, whatever its type)
    if cls is units.CaseError:
        return {"kind": ErrorKind.TIMEOUT}
    if cls in (units.CaseJob,):
        return {"case": Case(f"c{n}", n, {"q": n}, {"a": n}, None, None, {}, None,
                             "sha256:x", "sha256:y")}
    return {}


@pytest.mark.parametrize("cls", CROSSING, ids=lambda c: c.__name__)
def test_every_field_crosses_pickle_as_it_went(cls: type) -> None:
    one = _distinct(cls, 7)
    back = pickle.loads(pickle.dumps(one, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(back) is cls
    for field in dataclasses.fields(cls):
        went, came = getattr(one, field.name), getattr(back, field.name)
        if isinstance(went, Case):
            assert (came.id, came.input, came.expected, came.digest) == (
                went.id, went.input, went.expected, went.digest)
        else:
            assert came == went, field.name
    # copies are made the same way, deep copies of the fields too
    deep = copy.deepcopy(one)
    assert type(deep) is cls


def test_a_nested_result_comes_back_equal() -> None:
    result = units.UnitResult(3, [units.CaseResult(
        units.Execution('{"a":1}', {"k": "sha256:h"}, [units.StoredText("sha256:h", "k", None,
                                                                        "{}")],
                        {"steps": 2}, 1.5, attempts=2,
                        attempt_errors=[units.CaseError(ErrorKind.TIMEOUT, "slow")]),
        [Judgment("P"), Judgment("F", "wrong", {"expected": 1})])],
        verdicts=[("key", {"verdict": "P"})], verdict_hits=1)
    assert pickle.loads(pickle.dumps(result, protocol=pickle.HIGHEST_PROTOCOL)) == result


def test_a_class_it_cannot_serve_is_refused_when_declared() -> None:
    with pytest.raises(TypeError, match="two fields or more"):
        @pickled_by_fields
        @dataclasses.dataclass(slots=True)
        class One:
            only: int

    with pytest.raises(TypeError, match="argument of __init__"):
        @pickled_by_fields
        @dataclasses.dataclass(slots=True)
        class Derived:
            given: int
            made: int = dataclasses.field(init=False, default=0)


def test_a_case_crosses_without_its_dataset_line() -> None:
    case = Case("c1", 4, {"q": 1}, {"a": [1, 2]}, {"db": {}}, "sha256:s", {"m": "x"}, "k",
                "sha256:d", "sha256:e", "c0", "swap", "sha256:p", {"turns": ["hi"]})
    case.raw = '{"id": "c1"}\n'
    back = pickle.loads(pickle.dumps(case, protocol=pickle.HIGHEST_PROTOCOL))
    for name in Case.__slots__:
        assert getattr(back, name) == (None if name == "raw" else getattr(case, name)), name


def test_the_runs_row_making_crosses_and_places_cases_in_the_same_groups() -> None:
    making = RowMaking(["k1", "k2"], ["answer", "judged"], [1], None,
                       ["metadata.surface", "first_tool", "trajectory_length:4,8"])
    back = pickle.loads(pickle.dumps(making, protocol=pickle.HIGHEST_PROTOCOL))
    assert (back.evaluator_keys, back.criteria, back.judges, back.judge_keys, back.fidelity,
            back.slices) == (("k1", "k2"), ("answer", "judged"), (1,), frozenset({"k2"}),
                             None, ("metadata.surface", "first_tool", "trajectory_length:4,8"))
    facts = {"steps": 6, "tool_calls": 2, "truncated": False, "first_tool": "lookup",
             "repeated": False, "route": None, "named": False}
    assert back.groups(facts, {"surface": "chat"}) == making.groups(facts, {"surface": "chat"})
    assert back.groups(facts, {"surface": "chat"}) == ["chat", "lookup", "le_8"]
