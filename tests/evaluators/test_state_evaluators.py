"""State evaluators (docs/stateful-agents.md#checking-what-changed) as the engine calls them:
`state_matches` in every mode, with and without a tolerance, `state_unchanged` (absent paths
included), and what happens without a state. The comparisons themselves are tested in tests/state/;
here, the evaluators: their configuration, their verdicts and reasons through `judge_case`, and the
compared paths each judgment keeps for the case panel. The last test runs every mode end to end.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

import oloproof
from oloproof.evaluators import state  # noqa: F401  (registers the types)
from oloproof.evaluators.base import Evaluator, judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.registry import REGISTRY
from oloproof.recording.protocols import STATE_KIND
from oloproof.suite.case import Case

INITIAL = {
    "orders": {
        "ord-001": {"status": "delivered", "total": 40.0, "items": ["kettle"]},
        "ord-999": {"status": "delivered", "total": 12.5, "items": ["mug"]},
    },
    "ledger": {"balance": 100.0},
}


def refunded(**changes: Any) -> dict[str, Any]:
    """INITIAL after ord-001 was refunded (and 40 left the ledger), with `changes` on top."""
    end = json.loads(json.dumps(INITIAL))
    end["orders"]["ord-001"]["status"] = "refunded"
    end["ledger"]["balance"] = 60.0
    for dotted, value in changes.items():
        *parents, last = dotted.split("__")
        node = end
        for key in parents:
            node = node[key]
        node[last] = value
    return end


def make(type_name: str, **config: Any) -> Evaluator:
    cls = REGISTRY.evaluator_type(type_name)
    return cls(cls.Config.model_validate({"type": type_name, **config}))


def judge(evaluator: Evaluator, recorded: dict[str, Any] | None,
          expected_state: Any = None, *, derived: bool = False,
          initial: dict[str, Any] | None = INITIAL) -> Judgment:
    expected = {} if expected_state is None else {"state": expected_state}
    case = Case(
        id="c1~t" if derived else "c1", line=1, input={"message": "refund"}, expected=expected,
        initial_state=initial, state_ref=None, metadata={}, cluster=None, digest="sha256:0",
        exec_digest="sha256:0",
        source_id="c1" if derived else None, transform="t" if derived else None,
    )
    artifacts = {} if recorded is None else {STATE_KIND: recorded}
    return judge_case(evaluator, Evidence(case, {"answer": "ok"}, artifacts,
                                          initial_state=initial))


def checks(judgment: Judgment) -> dict[str, tuple[Any, Any, bool]]:
    assert judgment.details is not None
    return {c["path"]: (c["expected"], c["recorded"], c["agreed"])
            for c in judgment.details["checks"]}


# ---- state_matches ----------------------------------------------------------------------------

def test_whole_needs_deep_equality() -> None:
    evaluator = make("state_matches")  # mode whole is the default
    assert evaluator.criterion == "state_matches"
    assert judge(evaluator, refunded(), refunded()).verdict == "passed"
    extra = judge(evaluator, refunded(ledger__note="manual"), refunded())
    assert (extra.verdict, extra.reason) == ("failed", "state_differs")
    assert checks(extra)["ledger.note"] == ({"$absent": True}, "manual", False)
    assert extra.details is not None and extra.details["mode"] == "whole"


def test_subset_checks_only_what_expected_names() -> None:
    evaluator = make("state_matches", mode="subset")
    expected = {"orders": {"ord-001": {"status": "refunded"}}}
    ok = judge(evaluator, refunded(ledger__note="free"), expected)
    assert ok.verdict == "passed"
    assert checks(ok) == {"orders.ord-001.status": ("refunded", "refunded", True)}
    wrong = judge(evaluator, INITIAL, expected)
    assert wrong.verdict == "failed"
    assert checks(wrong)["orders.ord-001.status"] == ("refunded", "delivered", False)
    gone = judge(evaluator, {"orders": {}}, expected)
    assert gone.verdict == "failed"
    assert checks(gone)["orders.ord-001.status"][1] == {"$absent": True}


def test_paths_compares_only_the_listed_paths() -> None:
    evaluator = make("state_matches", mode="paths", paths=["orders.ord-001.status"])
    expected = refunded(ledger__balance=0.0)  # the ledger is not a listed path
    judgment = judge(evaluator, refunded(), expected)
    assert judgment.verdict == "passed"
    assert list(checks(judgment)) == ["orders.ord-001.status"]
    assert judge(evaluator, INITIAL, expected).verdict == "failed"


def test_changes_needs_exactly_the_patch() -> None:
    evaluator = make("state_matches", mode="changes")
    patch = {"orders": {"ord-001": {"status": "refunded"}}, "ledger": {"balance": 60.0}}
    exact = judge(evaluator, refunded(), patch)
    assert exact.verdict == "passed"
    # an unexpected change elsewhere fails, and is named
    bystander = refunded()
    bystander["orders"]["ord-999"]["status"] = "refunded"
    unexpected = judge(evaluator, bystander, patch)
    assert unexpected.verdict == "failed"
    found = checks(unexpected)
    assert found["orders.ord-999.status"][:2] == ("delivered", "refunded")
    # an expected change that did not happen fails
    assert judge(evaluator, INITIAL, patch).verdict == "failed"
    # a deletion and a list replaced whole
    deleting = {"orders": {"ord-999": {"$delete": True}}}
    end = json.loads(json.dumps(INITIAL))
    del end["orders"]["ord-999"]
    assert judge(evaluator, end, deleting).verdict == "passed"
    assert judge(evaluator, INITIAL, deleting).verdict == "failed"
    replacing = {"orders": {"ord-001": {"items": []}}}
    end = json.loads(json.dumps(INITIAL))
    end["orders"]["ord-001"]["items"] = []
    assert judge(evaluator, end, replacing).verdict == "passed"


@pytest.mark.parametrize(
    ("mode", "extra"),
    [("whole", {}), ("subset", {}), ("paths", {"paths": ["ledger.balance"]}),
     ("changes", {})],
)
def test_tolerance_applies_to_numbers_in_every_mode(mode: str, extra: dict[str, Any]) -> None:
    recorded = refunded(ledger__balance=60.004)
    expected: Any = refunded()
    if mode == "changes":
        expected = {"orders": {"ord-001": {"status": "refunded"}}, "ledger": {"balance": 60.0}}
    strict = make("state_matches", mode=mode, **extra)
    lenient = make("state_matches", mode=mode, tolerance=0.01, **extra)
    assert judge(strict, recorded, expected).verdict == "failed"
    assert judge(lenient, recorded, expected).verdict == "passed"
    assert judge(lenient, refunded(ledger__balance=60.5), expected).verdict == "failed"
    # a tolerance never makes a bool agree with a number
    flagged = make("state_matches", mode="subset", tolerance=1.0)
    assert judge(flagged, {"flag": True}, {"flag": 1}).verdict == "failed"


def test_state_matches_configuration_is_strict() -> None:
    cls = REGISTRY.evaluator_type("state_matches")
    with pytest.raises(ValidationError, match="needs `paths"):
        cls.Config.model_validate({"type": "state_matches", "mode": "paths"})
    with pytest.raises(ValidationError, match="only used with mode `paths`"):
        cls.Config.model_validate({"type": "state_matches", "mode": "subset", "paths": ["a"]})
    with pytest.raises(ValidationError):
        cls.Config.model_validate({"type": "state_matches", "mode": "approximately"})
    with pytest.raises(ValidationError):
        cls.Config.model_validate({"type": "state_matches", "tolerance": -1})
    with pytest.raises(ValidationError):
        cls.Config.model_validate({"type": "state_matches", "field": "answer"})


# ---- state_unchanged ---------------------------------------------------------------------------

def test_state_unchanged_on_present_and_absent_paths() -> None:
    evaluator = make("state_unchanged", criterion="other_order_untouched",
                     paths=["orders.ord-999", "orders.ord-404"])
    assert evaluator.criterion == "other_order_untouched"
    ok = judge(evaluator, refunded())
    assert ok.verdict == "passed"
    assert checks(ok)["orders.ord-404"] == ({"$absent": True}, {"$absent": True}, True)

    touched = refunded()
    touched["orders"]["ord-999"]["status"] = "refunded"
    failed = judge(evaluator, touched)
    assert (failed.verdict, failed.reason) == ("failed", "state_differs")
    assert checks(failed)["orders.ord-999.status"] == ("delivered", "refunded", False)

    created = refunded()
    created["orders"]["ord-404"] = {"status": "new"}
    assert judge(evaluator, created).verdict == "failed"  # absent before must stay absent

    removed = refunded()
    del removed["orders"]["ord-999"]
    assert judge(evaluator, removed).verdict == "failed"

    # no initial_state means {}: every path was absent and must stay so
    assert judge(evaluator, {}, initial=None).verdict == "passed"
    assert judge(evaluator, {"orders": {"ord-999": {}}}, initial=None).verdict == "failed"


def test_state_unchanged_needs_valid_paths() -> None:
    cls = REGISTRY.evaluator_type("state_unchanged")
    with pytest.raises(ValidationError):
        cls.Config.model_validate({"type": "state_unchanged", "paths": []})
    with pytest.raises(ValidationError):
        cls.Config.model_validate({"type": "state_unchanged", "paths": ["orders..x"]})


# ---- without a state, without an expectation, on a copy ----------------------------------------

@pytest.mark.parametrize("evaluator", [
    make("state_matches"), make("state_matches", mode="changes"),
    make("state_unchanged", paths=["orders.ord-999"]),
], ids=["state_matches", "changes", "state_unchanged"])
def test_no_recorded_state_is_missing_never_a_pass(evaluator: Evaluator) -> None:
    judgment = judge(evaluator, None, refunded())
    assert (judgment.verdict, judgment.reason) == ("missing", "no_state")
    copy = judge(evaluator, refunded(), refunded(), derived=True)
    assert (copy.verdict, copy.reason) == ("excluded", "metamorphic_copy")


def test_state_matches_excludes_a_case_without_expected_state() -> None:
    judgment = judge(make("state_matches", mode="subset"), refunded(), None)
    assert (judgment.verdict, judgment.reason) == ("excluded", "no_expected_state")


# ---- end to end --------------------------------------------------------------------------------

SYSTEM = '''
import json


class Shop:
    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def __call__(self, case_input):
        order = self.state["orders"][case_input["order"]]
        order["status"] = "refunded"
        self.state["ledger"]["balance"] = round(
            self.state["ledger"]["balance"] - order["total"] + case_input.get("drift", 0), 6)
        return {"answer": "refunded"}


shop = Shop()
'''


def test_every_mode_end_to_end(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "app.py").write_text(SYSTEM, encoding="utf-8")
    suite = {
        "version": 1, "dataset": "data/cases.jsonl",
        "system": {"name": "shop", "version": "v1", "callable": "app:shop"},
        "evaluators": [
            {"type": "state_matches", "criterion": "whole"},
            {"type": "state_matches", "criterion": "subset", "mode": "subset"},
            {"type": "state_matches", "criterion": "paths", "mode": "paths",
             "paths": ["orders.ord-001.status"]},
            {"type": "state_matches", "criterion": "changes", "mode": "changes",
             "tolerance": 0.01},
            {"type": "state_unchanged", "criterion": "other_order_untouched",
             "paths": ["orders.ord-999", "orders.ord-404"]},
        ],
    }
    (tmp_path / "oloproof.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    (tmp_path / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    patch = {"orders": {"ord-001": {"status": "refunded"}}, "ledger": {"balance": 60.0}}
    cases = [
        {"id": "exact", "input": {"order": "ord-001"}, "initial_state": INITIAL,
         "expected": {"state": patch}},
        {"id": "drifts", "input": {"order": "ord-001", "drift": 0.005},
         "initial_state": INITIAL, "expected": {"state": patch}},
        {"id": "wrong-order", "input": {"order": "ord-999"}, "initial_state": INITIAL,
         "expected": {"state": patch}},
    ]
    (tmp_path / "data" / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    result = oloproof.run(tmp_path / "oloproof.yaml")

    rows = {m["id"]: (m["passed"], m["observed"], m["missing"])
            for m in result.to_json()["metrics"]}
    assert rows == {
        "whole": (0, 3, 0),       # the patch is not the whole state
        "subset": (1, 3, 0),      # exact only (drift moves the balance by 0.005)
        "paths": (2, 3, 0),       # only ord-001's status is compared
        "changes": (2, 3, 0),     # exact, and drift within the tolerance
        "other_order_untouched": (2, 3, 0),
    }
