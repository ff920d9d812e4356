"""Sandboxes (docs/stateful-agents.md): reset → call → snapshot, one case at a time per Stateful
instance.

Acceptance 2 of issue 5: 200 cases on one Stateful instance at concurrency 16, sync and async;
each case checks at its start that the sandbox holds exactly its own initial_state and mutates
it -- the system raises if it ever sees another case's state, so zero errors is the proof.
Also: a case without state is missing (never a pass), and a suite whose evaluators need what the
system does not implement is refused before any call (acceptance 6).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from stateful_support import StatefulProject, metric

import oloproof
from oloproof.errors import ConfigError

ISOLATION_SYSTEM = '''
import asyncio
import threading
import time


class _Checks:
    """Raises whenever a case sees a state that is not exactly its own."""

    def __init__(self):
        self.state = None
        self.inside = 0
        self.guard = threading.Lock()

    def reset(self, state):
        if self.inside:
            raise RuntimeError("reset() while a case is inside the sandbox")
        self.state = state

    def snapshot(self):
        if self.inside:
            raise RuntimeError("snapshot() while a case is inside the sandbox")
        return self.state

    def enter(self, case_input):
        with self.guard:
            self.inside += 1
            if self.inside > 1:
                raise RuntimeError("two cases inside one sandbox at once")
        me = case_input["me"]
        mine = self.state
        if mine != {"owner": me, "marks": [], "n": case_input["n"]}:
            raise RuntimeError(f"{me} saw a state that is not its own: {mine!r}")
        mine["marks"].append(me)
        return me, mine

    def leave(self, me, mine):
        try:
            if self.state is not mine or self.state["marks"] != [me]:
                raise RuntimeError(f"{me}: the sandbox changed under the case")
            self.state["n"] += 1
        finally:
            with self.guard:
                self.inside -= 1
        return {"owner": me}


class SyncDesk(_Checks):
    def __call__(self, case_input):
        try:
            me, mine = self.enter(case_input)
        except BaseException:
            with self.guard:
                self.inside -= 1
            raise
        time.sleep(0.0003)
        return self.leave(me, mine)


class AsyncDesk(_Checks):
    async def __call__(self, case_input):
        try:
            me, mine = self.enter(case_input)
        except BaseException:
            with self.guard:
                self.inside -= 1
            raise
        await asyncio.sleep(0)
        await asyncio.sleep(0.0002)
        return self.leave(me, mine)


class SlowDesk:
    """A call that outlives its timeout and then writes to whatever the sandbox holds."""

    def __init__(self):
        self.state = None

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def __call__(self, case_input):
        if self.state.get("late") is not None:
            raise RuntimeError(f"{case_input['me']} saw a late write: {self.state!r}")
        time.sleep(case_input.get("sleep", 0))
        self.state["late"] = case_input["me"]
        return {"owner": case_input["me"]}


desk = SyncDesk()
desk_async = AsyncDesk()
slow = SlowDesk()
'''


def _isolation_cases(n: int) -> list[dict[str, Any]]:
    cases = []
    for i in range(n):
        me = f"c{i:03d}"
        cases.append({
            "id": me,
            "input": {"me": me, "n": i},
            "initial_state": {"owner": me, "marks": [], "n": i},
            "expected": {"state": {"owner": me, "marks": [me], "n": i + 1}},
        })
    return cases


@pytest.mark.parametrize("callable_", ["app:desk", "app:desk_async"])
def test_200_cases_on_one_instance_never_see_each_others_state(
    tmp_path: Path, callable_: str
) -> None:
    project = StatefulProject(tmp_path / "iso", ISOLATION_SYSTEM, callable_=callable_)
    project.suite["system"].update(records=[], concurrency=16)
    project.write(_isolation_cases(200))

    result = project.run()

    assert result.to_json()["errors"] == []
    row = metric(result, "state_matches")
    assert (row["passed"], row["observed"], row["missing"]) == (200, 200, 0)
    assert result.to_json()["cache"]["execution"] == {"hit": 0, "miss": 200}


def test_a_timed_out_call_keeps_its_sandbox_until_it_returns(tmp_path: Path) -> None:
    project = StatefulProject(tmp_path / "slow", ISOLATION_SYSTEM, callable_="app:slow")
    project.suite["system"].update(records=[], concurrency=4, timeout_s=0.2)
    cases = [{"id": "slow", "input": {"me": "slow", "sleep": 0.6}, "initial_state": {},
              "expected": {"state": {"late": "slow"}}}]
    cases += [{"id": f"next{i}", "input": {"me": f"next{i}"}, "initial_state": {},
               "expected": {"state": {"late": f"next{i}"}}} for i in range(3)]
    project.write(cases)

    result = project.run()

    errors = result.to_json()["errors"]
    assert [(e["case"], e["kind"]) for e in errors] == [("slow", "timeout")]
    verdicts = project.verdicts(result.run_id)
    assert verdicts["slow"]["state_matches"][0] == "missing"
    for i in range(3):
        assert verdicts[f"next{i}"]["state_matches"] == ("passed", None)


# ---- a case without state ---------------------------------------------------------------------

NO_STATE_SYSTEM = '''
class Desk:
    def __init__(self):
        self.state = None

    def reset(self, state):
        log("resets", state)
        self.state = state

    def snapshot(self):
        how = self.state.get("snapshot")
        if how == "raise":
            raise RuntimeError("the sandbox cannot be read")
        if how == "not_json":
            return {"when": {1, 2}}
        if how == "not_a_dict":
            return ["a", "list"]
        return self.state

    def __call__(self, case_input):
        self.state["done"] = True
        return {"answer": "ok"}


desk = Desk()
'''


def test_a_case_without_state_is_missing_for_every_state_criterion(tmp_path: Path,
                                                                   cli: Any) -> None:
    project = StatefulProject(tmp_path / "nostate", NO_STATE_SYSTEM)
    project.suite["system"]["records"] = []
    project.suite["evaluators"] = [
        {"type": "exact_match", "criterion": "answer_correct", "field": "answer"},
        {"type": "state_matches", "mode": "subset"},
        {"type": "state_unchanged", "criterion": "untouched", "paths": ["other"]},
    ]
    expected = {"answer": "ok", "state": {"done": True}}
    cases = [
        {"id": "fine", "input": {"q": 1}, "initial_state": {"other": 1}, "expected": expected},
        {"id": "raises", "input": {"q": 2}, "initial_state": {"snapshot": "raise", "other": 1},
         "expected": expected},
        {"id": "not-json", "input": {"q": 3},
         "initial_state": {"snapshot": "not_json", "other": 1}, "expected": expected},
        {"id": "not-a-dict", "input": {"q": 4},
         "initial_state": {"snapshot": "not_a_dict", "other": 1}, "expected": expected},
        {"id": "no-initial", "input": {"q": 5}, "expected": expected},
    ]
    project.write(cases)

    result = project.run()

    # A snapshot that fails is kept like a failing reset(): listed under what broke, with its
    # text; the case's output is still judged, its state criteria are missing.
    errors = result.to_json()["errors"]
    assert [(e["case"], e["kind"]) for e in errors] == [
        ("raises", "snapshot_failed"), ("not-json", "snapshot_failed"),
        ("not-a-dict", "snapshot_failed")]
    assert "RuntimeError: the sandbox cannot be read" in errors[0]["message"]
    assert "not JSON serializable" in errors[1]["message"]
    assert "returned list, not a dict" in errors[2]["message"]
    # ... and the terminal report shows them under "What broke", with the snapshot's text.
    code, out, err = cli("inspect", result.run_id, cwd=project.root, env={"COLUMNS": "100"})
    assert code == 0, err
    broke = out[out.index("What broke"):out.index("Gate:")]
    assert broke.startswith("What broke: 3 case(s) left no end state (snapshot() failed)")
    assert "errored" not in broke and "their output is judged" in broke
    assert "snapshot_failed × 1: the sandbox's snapshot() failed: RuntimeError: the" in broke
    assert "cases: raises" in broke
    verdicts = project.verdicts(result.run_id)
    assert verdicts["fine"]["state_matches"] == ("passed", None)
    assert verdicts["fine"]["untouched"] == ("passed", None)
    for case in ("raises", "not-json", "not-a-dict"):
        assert verdicts[case]["answer_correct"] == ("passed", None)
        assert verdicts[case]["state_matches"] == ("missing", "snapshot_failed")
        assert verdicts[case]["untouched"] == ("missing", "snapshot_failed")
    view = project.view(result.run_id, "raises")
    assert view["output"] == {"answer": "ok"} and view["end_state"] is None
    assert view["errors"][0]["kind"] == "snapshot_failed"
    assert "Traceback" in view["errors"][0]["traceback"]
    state = next(c for c in view["criteria"] if c["criterion"] == "state_matches")
    assert "the sandbox cannot be read" in state["details"]["error"]
    # a case without initial_state resets to {}; `other` was absent and stays absent
    assert verdicts["no-initial"]["state_matches"] == ("passed", None)
    assert verdicts["no-initial"]["untouched"] == ("passed", None)
    assert {} in project.log("resets")
    row = metric(result, "state_matches")
    assert (row["passed"], row["observed"], row["missing"]) == (2, 2, 3)
    assert row["upper"] == pytest.approx(1.0)  # missing widens, never counts as a pass
    assert row["lower"] < 0.2

    # the stored end state reads back exactly
    assert project.view(result.run_id, "fine")["end_state"] == {"other": 1, "done": True}

    # an execution whose snapshot failed is never reused: the next run calls those again
    again = project.run()
    assert again.to_json()["cache"]["execution"] == {"hit": 2, "miss": 3}
    assert metric(again, "state_matches")["missing"] == 3


# ---- refusals before any call (acceptance 6) ---------------------------------------------------

PLAIN_SYSTEMS = '''
def run(case_input):
    log("calls", case_input)
    return {"answer": "ok"}


class OnlyStateful:
    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def __call__(self, case_input):
        log("calls", case_input)
        return {"answer": "ok"}


only_stateful = OnlyStateful()
'''

_CASE = {"id": "a", "input": {"message": "hello"}, "initial_state": {"x": 1},
         "expected": {"answer": "ok", "state": {"x": 1}}}


@pytest.mark.parametrize(
    ("callable_", "evaluator", "says"),
    [
        ("app:only_stateful",
         {"type": "fault_recovery", "tool": "refund", "fault": "error"},
         ["not Replayable", "replay(trajectory, *, checkpoint, change)"]),
        ("app:run", {"type": "state_matches"},
         ["not Stateful", "reset(state) and snapshot()"]),
        ("app:run", {"type": "state_unchanged", "paths": ["x"]},
         ["not Stateful", "reset(state) and snapshot()"]),
        ("app:run", {"type": "metamorphic_relation", "relation": "same_state",
                     "transform": "loud"},
         ["not Stateful", "reset(state) and snapshot()"]),
    ],
    ids=["fault_recovery-not-replayable", "state_matches-not-stateful",
         "state_unchanged-not-stateful", "same_state-not-stateful"],
)
def test_a_suite_needing_what_the_system_lacks_is_refused_before_any_call(
    tmp_path: Path, cli: Callable[..., Any], callable_: str, evaluator: dict[str, Any],
    says: list[str],
) -> None:
    project = StatefulProject(tmp_path / "refused", PLAIN_SYSTEMS, callable_=callable_)
    project.suite["evaluators"] = [evaluator]
    project.suite["metamorphic"] = {"transforms": [
        {"name": "loud", "field": "message", "template": "{value}!"}]}
    project.write([_CASE])

    code, out, err = cli("run", cwd=project.root)

    assert code == 2, out + err
    for words in says:
        assert words in err
    assert "oloproof.yaml" in err
    assert project.log("calls") == []  # refused before any call

    code, out, _ = cli("run", "--json", cwd=project.root)
    assert code == 2
    error = json.loads(out)["error"]
    assert error["kind"] == "configuration"
    assert says[0] in error["message"]
    assert error["line"] is not None

    with pytest.raises(ConfigError):
        oloproof.run(project.root / "oloproof.yaml")
    assert project.log("calls") == []
