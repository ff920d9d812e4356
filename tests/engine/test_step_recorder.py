"""The step recorder (`current_case().steps()`): it numbers a trajectory for the system, and in a
replay it numbers in the recording's numbering, so a Replayable system does no index arithmetic.

Each test runs a real suite through `oloproof.run` and reads back what was stored.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from stateful_support import StatefulProject

from oloproof import RecordingError, current_case
from oloproof.recording.protocols import FAULT_RESULTS
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
from oloproof.recording.steps import StepRecorder

# A desk over {"orders": {...}}: look the order up, refund it, tell the customer. `replay`
# works the request again from the start with the same code; with `resume` in the case it
# instead restores the world from the checkpoint and records only from there on.
DESK = '''
import asyncio

from oloproof import current_case


def lookup(state, order):
    return dict(state["orders"][order])


def refund(state, order):
    state["orders"][order]["refunded"] = True
    return {"ok": True}


class Desk:
    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def work(self, request, steps):
        log("work", {"case": current_case().case_id,
                     "replay": current_case().replay is not None})
        order = request["order"]
        if steps.last_index == 0:
            steps.checkpoint("start", payload={"request": request})
            steps.message({"text": request["text"]})
            if request.get("depart") and current_case().replay is not None:
                steps.message({"text": "something else first"})
            steps.call_tool("lookup", {"order": order}, lambda order: lookup(self.state, order))
            steps.checkpoint("looked-up", payload={"refunded": []})
        result = steps.call_tool("refund", {"order": order},
                                 lambda order: refund(self.state, order))
        ok = isinstance(result, dict) and result.get("ok") is True
        steps.final({"answer": "refunded" if ok else "sorry"})
        steps.constraint("refund_in_store", self.state["orders"][order].get("refunded", False))
        return steps.finish("success" if ok else "failure")

    def __call__(self, request):
        self.work(request, current_case().steps())
        return {"answer": "refunded"}

    def replay(self, trajectory, *, checkpoint, change):
        replaying = current_case().replay
        log("replays", {"checkpoint": checkpoint.checkpoint_id, "kind": change.kind,
                        "same": replaying.recorded == trajectory
                                and replaying.checkpoint == checkpoint
                                and replaying.change == change})
        start = trajectory.checkpoints[0].payload["request"]
        if start.get("resume"):
            for order in checkpoint.payload["refunded"]:  # restore the world at the checkpoint
                self.state["orders"][order]["refunded"] = True
            steps = current_case().steps(after=checkpoint)
        else:
            steps = current_case().steps()
        self.work(start, steps)  # recorded by finish(); nothing to return


class AsyncDesk(Desk):
    async def __call__(self, request):
        await asyncio.sleep(0)
        return Desk.__call__(self, request)

    async def replay(self, trajectory, *, checkpoint, change):
        await asyncio.sleep(0)
        return Desk.replay(self, trajectory, checkpoint=checkpoint, change=change)


desk = Desk()
async_desk = AsyncDesk()
'''

ERROR = "recovers_from_error_at_refund"


def _case(case_id: str, **request: Any) -> dict[str, Any]:
    return {"id": case_id, "input": {"order": "o1", "text": f"refund o1 ({case_id})", **request},
            "initial_state": {"orders": {"o1": {"refunded": False}}},
            "expected": {"answer": "refunded"}}


def _project(root: Path, callable_: str = "app:desk") -> StatefulProject:
    project = StatefulProject(root, DESK, callable_=callable_)
    project.suite["evaluators"] = [
        {"type": "agent_constraints_satisfied"},
        {"type": "fault_recovery", "tool": "refund", "fault": "error"},
    ]
    return project.write([_case("again"), _case("resumes", resume=True),
                          _case("departs", depart=True)])


@pytest.fixture(scope="module")
def first_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[StatefulProject, Any]:
    project = _project(tmp_path_factory.mktemp("steps") / "desk")
    return project, project.run()


def test_a_case_is_numbered_for_the_system(first_run: tuple[StatefulProject, Any]) -> None:
    project, result = first_run
    assert result.to_json()["errors"] == []
    trajectory = project.view(result.run_id, "again")["trajectory"]
    assert [(s["index"], s["kind"], s["tool_name"]) for s in trajectory["steps"]] == [
        (1, "message", None), (2, "tool_call", "lookup"), (3, "tool_result", "lookup"),
        (4, "tool_call", "refund"), (5, "tool_result", "refund"), (6, "final", None)]
    # a checkpoint is after the last step taken (none taken yet: before the first)
    assert [(c["checkpoint_id"], c["step_index"]) for c in trajectory["checkpoints"]] == [
        ("start", None), ("looked-up", 3)]
    # a constraint observed the last step taken
    assert trajectory["constraints"] == [
        {"name": "refund_in_store", "passed": True, "step_index": 6}]
    assert trajectory["terminal_status"] == "success"
    assert {"case": "again", "replay": False} in project.log("work")


def test_a_replay_that_works_again_is_cut_at_the_checkpoint_by_the_engine(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, result = first_run
    replay = next(r for r in project.view(result.run_id, "again")["replays"]
                  if r["criterion"] == ERROR)
    assert replay["status"] == "ok"
    # the control replay, numbered from the checkpoint (step 3): the refund and what followed
    assert [(s["index"], s["kind"]) for s in replay["control"]["steps"]] == [
        (1, "tool_call"), (2, "tool_result"), (3, "final")]
    assert replay["control"]["constraints"] == [
        {"name": "refund_in_store", "passed": True, "step_index": 3}]
    # the fault replay, joined after the recorded head: the fault came from call_tool
    steps = replay["fault_trajectory"]["steps"]
    assert [s["index"] for s in steps] == [1, 2, 3, 4, 5, 6]
    assert steps[4]["result"] == FAULT_RESULTS["error"]
    assert steps[5]["arguments"] == {"answer": "sorry"}
    assert replay["fault_trajectory"]["constraints"] == [
        {"name": "refund_in_store", "passed": False, "step_index": 6}]
    # the tool did not run at the faulted call: the sandbox was never refunded
    assert project.verdicts(result.run_id)["again"][ERROR] == (
        "failed", "constraint_failed_after_fault")


def test_a_replay_can_resume_from_the_checkpoint_with_the_recorded_head(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, result = first_run
    view = project.view(result.run_id, "resumes")
    replay = next(r for r in view["replays"] if r["criterion"] == ERROR)
    assert replay["status"] == "ok"
    assert replay["fault_trajectory"]["steps"][:3] == view["trajectory"]["steps"][:3]
    assert [s["index"] for s in replay["control"]["steps"]] == [1, 2, 3]
    assert project.verdicts(result.run_id)["resumes"] == project.verdicts(
        result.run_id)["again"]


def test_a_replay_that_departs_before_the_checkpoint_is_not_trusted(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, result = first_run
    # `departs` takes an extra step only in replays, before the checkpoint at step 3
    replay = next(r for r in project.view(result.run_id, "departs")["replays"]
                  if r["criterion"] == ERROR)
    assert replay["status"] == "control_replay_diverged"
    assert replay["message"] == ("the replay departs from the recording at step 2, before the "
                                 "checkpoint at step 3")
    assert project.verdicts(result.run_id)["departs"][ERROR] == (
        "missing", "control_replay_diverged")


def test_inside_replay_current_case_says_what_the_replay_is_about(
    first_run: tuple[StatefulProject, Any],
) -> None:
    project, _ = first_run
    replays = project.log("replays")
    assert replays and all(r["same"] for r in replays)
    assert {r["kind"] for r in replays} == {"none", "inject_fault"}
    assert {r["checkpoint"] for r in replays} == {"looked-up"}
    assert {"case": "again", "replay": True} in project.log("work")


def test_an_async_system_records_the_same_way(tmp_path: Path,
                                              first_run: tuple[StatefulProject, Any]) -> None:
    sync_project, sync_result = first_run
    project = _project(tmp_path / "async", "app:async_desk")
    result = project.run()
    assert project.verdicts(result.run_id) == sync_project.verdicts(sync_result.run_id)


# ---- mistakes are errors that say what to do -------------------------------------------------


def _in_a_case() -> Any:
    """Make this thread's code run as if inside case `c1`; returns the token to undo it."""
    return set_current(CaseRecorder("c1"))


def test_steps_after_a_checkpoint_is_for_replays_only() -> None:
    token = _in_a_case()
    try:
        point = current_case().steps().checkpoint("start")
        with pytest.raises(RecordingError, match="for a replay"):
            current_case().steps(after=point)
    finally:
        reset_current(token)


def test_one_recorder_per_case_and_one_trajectory() -> None:
    token = _in_a_case()
    try:
        steps = current_case().steps()
        assert current_case().steps() is steps  # tools in other functions record into it
        steps.final({"answer": "ok"})
        steps.finish()
        with pytest.raises(RecordingError, match="twice"):
            steps.finish()
    finally:
        reset_current(token)


def test_a_recorder_outside_a_case_cannot_finish() -> None:
    steps = StepRecorder()
    steps.message({"text": "hi"})
    assert steps.trajectory().steps[0].index == 1
    with pytest.raises(RecordingError, match=r"current_case\(\)\.steps\(\)"):
        steps.finish()


def test_a_finished_case_holds_its_trajectory_by_no_cycle() -> None:
    """Once its case is closed, a trajectory the step recorder built is freed as soon as
    nothing else holds it (no reference cycle keeps it for the garbage collector), and the
    engine can still tell that the step recorder built it."""
    import gc
    import weakref

    enabled = gc.isenabled()
    gc.disable()
    try:
        recorder = CaseRecorder("c1")
        token = set_current(recorder)
        try:
            steps = current_case().steps()
            steps.final({"answer": "ok"})
            built = steps.finish()
        finally:
            recorder.close()
            reset_current(token)
        assert recorder.built_by_steps(built) and recorder.uses_steps
        assert not recorder.built_by_steps(built.model_copy())
        gone = weakref.ref(built)
        del recorder, steps, built
        assert gone() is None
    finally:
        if enabled:
            gc.enable()
