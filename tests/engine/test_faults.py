"""Fault replays (docs/stateful-agents.md#a-tool-that-fails-fault-replays): checkpoint, control
replay, fault replay, verdict, exclusion, cache.

The system below is Stateful and Replayable. What its agent does after the refund fails is
picked by the case (`on_error`); its `replay` logs every call it gets (the change, the
checkpoint, the sandbox it found) to `replays.log`, so a test can see what reached the system
and count replays across runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stateful_support import StatefulProject, metric

from oloproof.recording.protocols import FAULT_RESULTS

FAULT_SYSTEM = '''
import copy

from oloproof import (AgentCheckpoint, AgentConstraintCheck, AgentStep, AgentTrajectory,
                      current_case)


def lookup_order(state, order):
    return copy.deepcopy(state["orders"][order])


def refund(state, order):
    state["orders"][order]["refunded"] = True
    state["receipts"] = state.get("receipts", 0) + 1
    return {"ok": True}


def escalate(state, order):
    state.setdefault("tickets", []).append(order)
    return {"ticket": len(state["tickets"])}


TOOLS = {"lookup_order": lookup_order, "refund": refund, "escalate": escalate}


class Desk:
    def __init__(self):
        self.state = {}
        self.receipt_counter = 0

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def work(self, request, change=None):
        plan = request.get("plan", "refund")
        steps = []
        checkpoints = []
        if plan != "no_checkpoint":
            checkpoints.append(AgentCheckpoint(checkpoint_id="start", step_index=None,
                                               payload={"request": request}))

        def add(**fields):
            steps.append(AgentStep(index=len(steps) + 1, **fields))
            return steps[-1]

        def call(tool, arguments):
            made = add(kind="tool_call", tool_name=tool, arguments=arguments)
            if change is not None and change.kind == "inject_fault" \\
                    and change.step_index == made.index:
                result = copy.deepcopy(change.fault_result)
            else:
                result = TOOLS[tool](self.state, **arguments)
                if tool == "refund" and plan == "diverge":
                    self.receipt_counter += 1  # differs on every execution
                    result = {"ok": True, "receipt": self.receipt_counter}
            add(kind="tool_result", tool_name=tool, result=result)
            if plan != "no_checkpoint":
                checkpoints.append(AgentCheckpoint(checkpoint_id=f"after-{len(steps)}",
                                                   kind="tool_result", step_index=len(steps)))
            return result

        order = request["order"]
        add(kind="message", arguments={"text": request["message"]})
        call("lookup_order", {"order": order})
        status, claims_refund = "success", False
        if plan != "no_refund":
            first = call("refund", {"order": order})
            if plan == "twice":
                call("refund", {"order": order})
            if isinstance(first, dict) and first.get("ok") is True:
                claims_refund = True
            else:
                on_error = request.get("on_error", "give_up")
                if on_error == "escalate":
                    call("escalate", {"order": order})
                    status = "failure"
                elif on_error == "claim":
                    claims_refund = True
                elif on_error == "retry":
                    again = call("refund", {"order": order})
                    claims_refund = isinstance(again, dict) and again.get("ok") is True
                    status = "success" if claims_refund else "failure"
                elif on_error == "unknown":
                    status = "unknown"
                else:
                    status = "failure"
        final = add(kind="final", arguments={"refunded": claims_refund})
        holds = not claims_refund or self.state["orders"][order].get("refunded") is True
        return AgentTrajectory(
            steps=tuple(steps), terminal_status=status, checkpoints=tuple(checkpoints),
            constraints=(AgentConstraintCheck(name="claim_true", passed=holds,
                                              step_index=final.index),),
        ), claims_refund

    def __call__(self, case_input):
        trajectory, refunded = self.work(case_input)
        current_case().agent_trajectory(trajectory)
        return {"refunded": refunded}

    def _replay(self, trajectory, checkpoint, change):
        start = next(c for c in trajectory.checkpoints if c.step_index is None)
        request = start.payload["request"]
        log("replays", {"case": request["id"], "kind": change.kind,
                        "step_index": change.step_index, "tool_name": change.tool_name,
                        "fault": change.fault, "fault_result": change.fault_result,
                        "checkpoint": checkpoint.checkpoint_id,
                        "sandbox": copy.deepcopy(self.state)})
        if request.get("plan") == "replay_raises":
            raise RuntimeError("this replay cannot run")
        again, _ = self.work(request, change)
        at = checkpoint.step_index or 0
        return AgentTrajectory(
            steps=tuple(s.model_copy(update={"index": s.index - at})
                        for s in again.steps if s.index > at),
            terminal_status=again.terminal_status,
            constraints=tuple(c.model_copy(update={"step_index": c.step_index - at})
                              for c in again.constraints if c.step_index > at),
        )

    def replay(self, trajectory, *, checkpoint, change):
        return self._replay(trajectory, checkpoint, change)


class AsyncDesk(Desk):
    async def replay(self, trajectory, *, checkpoint, change):
        return self._replay(trajectory, checkpoint, change)


desk = Desk()
desk_async = AsyncDesk()
'''

ERROR = "recovers_from_error_at_refund"
TIMEOUT = "recovers_from_timeout_at_refund"
MALFORMED = "recovers_from_malformed_at_refund"


def _case(case_id: str, **request: Any) -> dict[str, Any]:
    request = {"id": case_id, "order": "o1", "message": f"refund {case_id}", **request}
    return {"id": case_id, "input": request,
            "initial_state": {"orders": {"o1": {"refunded": False}, "o2": {"refunded": False}}},
            "expected": {"state": {}}}


CASES = [
    _case("escalates", on_error="escalate"),
    _case("claims", on_error="claim"),
    _case("gives-up", on_error="give_up"),
    _case("retries", on_error="retry"),
    _case("unknown", on_error="unknown"),
    _case("no-refund", plan="no_refund"),
    _case("diverges", plan="diverge", on_error="escalate"),
    _case("no-checkpoint", plan="no_checkpoint", on_error="escalate"),
    _case("raises", plan="replay_raises", on_error="escalate"),
    _case("twice", plan="twice", on_error="escalate"),
]


def _project(root: Path, callable_: str = "app:desk",
             cases: list[dict[str, Any]] | None = None) -> StatefulProject:
    project = StatefulProject(root, FAULT_SYSTEM, callable_=callable_)
    project.suite["evaluators"] = [
        {"type": "fault_recovery", "tool": "refund", "fault": "error",
         "escalate_tools": ["escalate"]},
        {"type": "fault_recovery", "tool": "refund", "fault": "timeout",
         "escalate_tools": ["escalate"]},
        {"type": "fault_recovery", "tool": "refund", "fault": "malformed",
         "escalate_tools": ["escalate"]},
        {"type": "fault_recovery", "tool": "refund", "fault": "error", "occurrence": 2,
         "criterion": "second_refund", "escalate_tools": ["escalate"]},
    ]
    return project.write(cases if cases is not None else CASES)


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[StatefulProject, Any]:
    project = _project(tmp_path_factory.mktemp("faults") / "desk")
    return project, project.run()


EXPECTED_ERROR_VERDICTS = {
    "escalates": ("passed", "escalated"),
    "claims": ("failed", "constraint_failed_after_fault"),
    "gives-up": ("failed", "ended_in_failure_without_escalation"),
    "retries": ("passed", "recovered"),
    "unknown": ("missing", "replay_inconclusive"),
    "no-refund": ("excluded", "fault_target_not_called"),
    "diverges": ("missing", "control_replay_diverged"),
    "no-checkpoint": ("missing", "no_checkpoint"),
    "raises": ("missing", "replay_failed"),
    "twice": ("passed", "escalated"),
}


def test_each_verdict_rule_of_a_fault_replay(first_run: tuple[StatefulProject, Any]) -> None:
    project, result = first_run
    assert result.to_json()["errors"] == []
    verdicts = project.verdicts(result.run_id)
    assert {c: v[ERROR] for c, v in verdicts.items()} == EXPECTED_ERROR_VERDICTS
    row = metric(result, ERROR)
    assert (row["passed"], row["observed"], row["missing"], row["excluded"]) == (3, 5, 4, 1)
    assert row["excluded_by_reason"] == {"fault_target_not_called": 1}
    # occurrence 2: only the case that called the tool twice is judged
    second = {c: v["second_refund"] for c, v in verdicts.items()}
    assert second.pop("twice") == ("passed", "recovered")
    assert {v for v in second.values()} == {("excluded", "fault_target_not_called")}


def test_every_fault_kind_reaches_the_system_as_its_fixed_result(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, result = first_run
    replays = [r for r in project.log("replays") if r["case"] == "claims"]
    control = [r for r in replays if r["kind"] == "none"]
    faults = {r["fault"]: r for r in replays if r["kind"] == "inject_fault"}
    assert set(faults) == {"error", "timeout", "malformed"}
    for kind, seen in faults.items():
        assert seen["fault_result"] == FAULT_RESULTS[kind]
        assert seen["tool_name"] == "refund"
        assert seen["step_index"] == 4  # the refund call, in the recording's numbering
        assert seen["checkpoint"] == "after-3"  # the latest checkpoint before it
    assert FAULT_RESULTS["error"]["error"] == "tool_error"
    assert FAULT_RESULTS["timeout"]["error"] == "timeout"
    assert not isinstance(FAULT_RESULTS["malformed"], dict)
    assert len(control) == 3
    assert all(r["step_index"] is None and r["fault_result"] is None for r in control)
    # every replay found the sandbox reset to the case's initial state
    initial = CASES[1]["initial_state"]
    assert all(r["sandbox"] == initial for r in replays)
    # the claiming agent is caught by its constraint under each kind of fault
    verdicts = project.verdicts(result.run_id)["claims"]
    for criterion in (ERROR, TIMEOUT, MALFORMED):
        assert verdicts[criterion] == ("failed", "constraint_failed_after_fault")


def test_the_occurrence_picks_the_call_and_the_checkpoint_before_it(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, _ = first_run
    second = [r for r in project.log("replays")
              if r["case"] == "twice" and r["kind"] == "inject_fault" and r["step_index"] == 6]
    assert len(second) == 1
    assert second[0]["checkpoint"] == "after-5"


def test_the_replay_is_kept_joined_after_the_checkpoint(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, result = first_run
    view = project.view(result.run_id, "escalates")
    replay = next(r for r in view["replays"] if r["criterion"] == ERROR)
    assert replay["status"] == "ok"
    steps = replay["fault_trajectory"]["steps"]
    assert [s["index"] for s in steps] == list(range(1, len(steps) + 1))
    recorded = view["trajectory"]["steps"]
    assert steps[:3] == recorded[:3]  # the recorded head, up to the checkpoint
    assert steps[3]["tool_name"] == "refund"
    assert steps[4]["result"] == FAULT_RESULTS["error"]
    assert [s["tool_name"] for s in steps if s["kind"] == "tool_call"] == [
        "lookup_order", "refund", "escalate"]
    assert replay["fault_trajectory"]["terminal_status"] == "failure"
    # the sandbox after the fault replay is kept with it: the refund never happened
    assert replay.get("end_state_patch") is not None

    diverged = next(r for r in project.view(result.run_id, "diverges")["replays"]
                    if r["criterion"] == ERROR)
    assert diverged["status"] == "control_replay_diverged"
    assert "step 5" in diverged["message"]  # the refund's result differs


def test_replays_are_cached_by_system_version(tmp_path: Path) -> None:
    cases = [c for c in CASES if c["id"] in ("escalates", "claims", "retries", "no-refund")]
    project = _project(tmp_path / "cache", cases=cases)
    result = project.run()
    before = len(project.log("replays"))
    assert before > 0

    again = project.run()
    assert len(project.log("replays")) == before  # a second run calls replay zero times
    assert project.verdicts(again.run_id) == project.verdicts(result.run_id)

    # judging differently re-judges from the stored replays, without replaying
    project.suite["evaluators"][0]["escalate_tools"] = []
    project.write()
    rejudged = project.run()
    assert len(project.log("replays")) == before
    assert project.verdicts(rejudged.run_id)["escalates"]["recovers_from_error_at_refund"] == (
        "failed", "ended_in_failure_without_escalation")

    # a new system version replays again
    project.suite["system"]["version"] = "v2"
    project.write()
    project.run()
    assert len(project.log("replays")) == 2 * before


def test_a_new_fault_on_cached_executions_replays_only(tmp_path: Path) -> None:
    """Executions cached, a fault_recovery evaluator added: its replays run against the stored
    trajectories (no case is called again), and judge as a run from scratch does."""
    project = _project(tmp_path / "added")
    added = project.suite["evaluators"].pop()  # the second-refund fault, added later
    project.write()
    project.run()
    replays = len(project.log("replays"))

    project.suite["evaluators"].append(added)
    project.write()
    later = project.run()
    executions = later.to_json()["cache"]["execution"]
    assert executions == {"hit": len(CASES), "miss": 0}  # no case was called again
    assert len(project.log("replays")) > replays  # the new fault's replays ran

    fresh = _project(tmp_path / "fresh")
    from_scratch = fresh.run()
    assert project.verdicts(later.run_id) == fresh.verdicts(from_scratch.run_id)


def test_an_async_replay_gives_the_same_verdicts(tmp_path: Path) -> None:
    cases = [c for c in CASES if c["id"] in ("escalates", "claims", "diverges", "no-refund")]
    project = _project(tmp_path / "async", "app:desk_async", cases)
    result = project.run()
    verdicts = project.verdicts(result.run_id)
    assert {c: v[ERROR] for c, v in verdicts.items()} == {
        c: EXPECTED_ERROR_VERDICTS[c] for c in verdicts}


ASYNC_SANDBOX = '''

class AllAsync(AsyncDesk):
    """reset, snapshot, the call and replay are all coroutines (the engine awaits them)."""

    async def reset(self, state):
        self.state = state

    async def snapshot(self):
        return self.state

    async def __call__(self, case_input):
        return Desk.__call__(self, case_input)


all_async = AllAsync()
'''


def test_an_async_sandbox_keeps_its_state_after_a_replay(tmp_path: Path) -> None:
    project = StatefulProject(tmp_path / "all-async", FAULT_SYSTEM + ASYNC_SANDBOX,
                              callable_="app:all_async")
    project.suite["evaluators"] = [{"type": "fault_recovery", "tool": "refund", "fault": "error",
                                    "escalate_tools": ["escalate"]}]
    project.write([c for c in CASES if c["id"] == "escalates"])
    result = project.run()
    assert project.verdicts(result.run_id)["escalates"][ERROR] == ("passed", "escalated")
    replay = project.view(result.run_id, "escalates")["replays"][0]
    # the escalation opened a ticket in the sandbox during the fault replay
    assert replay["end_state_patch"] is not None
