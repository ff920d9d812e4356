"""Fault replays (docs/stateful-agents.md#a-tool-that-fails-fault-replays): control replay first,
then the same replay with one result faulted.

The runner never interprets a trajectory beyond what a replay needs: finding the faulted call,
choosing the checkpoint, comparing the control replay with the recording, and joining the
continuation to the recorded steps before the checkpoint.

`fault_replay` is a generator: it yields each replay it needs (a `ReplayRequest`) and is sent
back the `ReplayResult`, so a sync worker (in a thread) and an async worker (on the loop) run
the same procedure, each calling the system its own way.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any

from oloproof.execution.calls import ReplayResult
from oloproof.recording.protocols import FAULT_RESULTS, ReplayChange
from oloproof.recording.recorder import Variant
from oloproof.recording.trajectory import (
    AgentCheckpoint,
    AgentConstraintCheck,
    AgentStep,
    AgentTrajectory,
    trajectory_problems,
)
from oloproof.state.diff import diff
from oloproof.suite.case import Case


@dataclass(frozen=True, slots=True)
class ReplayRequest:
    """One replay to run around the sandbox: reset, `replay(...)`, snapshot."""

    case: Case
    recorded: AgentTrajectory
    checkpoint: AgentCheckpoint
    change: ReplayChange
    # whose recording is replayed (docs/reliability.md#fault-replays-and-pairs-with-trials)
    trial: int = 1
    trials: int = 1
    attempt: int = 1  # under system.retries: which attempt (docs/failures.md#retries)
    not_before: float = 0.0  # time.monotonic() before which it does not start (a backoff)
    variant: Variant = ()  # the run's combination of system.variants (docs/board.md)


#: `control: exact` (docs/stateful-agents.md#a-tool-that-fails-fault-replays): the control replay
#: must repeat the recording step for step.
EXACT = "exact"
#: `control: world` (docs/reliability.md#fault-replays-and-pairs-with-trials): up to the agent's
#: first different choice, every tool result must equal the recording's — what shows the sandbox was
#: restored, for an agent that samples.
WORLD = "world"


def world_not_restored(expected: list[tuple[Any, ...]], got: list[tuple[Any, ...]]
                       ) -> int | None:
    """Where (0-based, after the checkpoint) a control replay shows the world was not
    restored, or None when it was (the `control: world` rule of
    docs/reliability.md#fault-replays-and-pairs-with-trials).

    Steps are compared in order as (kind, tool, arguments, result). A `tool_result` is the
    world's answer: while the agent has made the same choices as in the recording, it must
    equal the recording's. Any other step is the agent's choice (a message, a tool call with
    its arguments, a decision, its final answer); the first one that differs ends the
    comparison — from there on the agent is on another path and the world owes it nothing.
    A replay that stops where the recording's world was still to answer (a tool result) did
    not get that answer: not restored.
    """
    for i, recorded in enumerate(expected):
        if i >= len(got):
            return i if recorded[0] == "tool_result" else None
        replayed = got[i]
        if recorded[0] == "tool_result" or replayed[0] == "tool_result":
            if replayed != recorded:
                return i
            continue
        if replayed != recorded:
            return None  # the agent chose differently: the world was right up to here
    return None


def choose_checkpoint(trajectory: AgentTrajectory, call_index: int) -> AgentCheckpoint | None:
    """The latest checkpoint strictly before the call (None step_index = the start, 0)."""
    best: AgentCheckpoint | None = None
    best_index = -1
    for checkpoint in trajectory.checkpoints:
        at = checkpoint.step_index or 0
        if at < call_index and at > best_index:
            best, best_index = checkpoint, at
    return best


def _comparable(step: AgentStep) -> tuple[Any, ...]:
    return (step.kind, step.tool_name, step.arguments, step.result)


def continuation(recorded: AgentTrajectory, at: int, result: ReplayResult
                 ) -> tuple[AgentTrajectory | None, str | None]:
    """What the replay did after the checkpoint at step `at`, numbered from 1.

    A trajectory recorded with the replay's step recorder is numbered as the recording: its
    steps up to the checkpoint must retrace the recording (else the replay cannot be trusted,
    and the message says where it departs), and the rest is the continuation.
    """
    replayed = result.trajectory
    assert replayed is not None
    if not result.whole:
        return replayed, None
    head = [_comparable(s) for s in replayed.steps if s.index <= at]
    expected = [_comparable(s) for s in recorded.steps if s.index <= at]
    if head != expected:
        first = next((i for i, (a, b) in enumerate(zip(expected, head, strict=False)) if a != b),
                     min(len(expected), len(head)))
        return None, (f"the replay departs from the recording at step {first + 1}, before the "
                      f"checkpoint at step {at}")
    return AgentTrajectory(
        steps=tuple(s.model_copy(update={"index": s.index - at})
                    for s in replayed.steps if s.index > at),
        terminal_status=replayed.terminal_status,
        truncated=replayed.truncated,
        step_limit=replayed.step_limit,
        constraints=tuple(
            c if c.step_index is None else c.model_copy(update={"step_index": c.step_index - at})
            for c in replayed.constraints if c.step_index is None or c.step_index > at),
    ), None


def join(recorded: AgentTrajectory, at: int, tail_part: AgentTrajectory) -> AgentTrajectory:
    """Recorded steps up to the checkpoint, then the continuation renumbered after them."""
    head = [s for s in recorded.steps if s.index <= at]
    tail = [s.model_copy(update={"index": s.index + at}) for s in tail_part.steps]
    constraints = [c for c in recorded.constraints
                   if c.step_index is not None and c.step_index <= at]
    constraints += [
        AgentConstraintCheck(name=c.name, passed=c.passed,
                             step_index=None if c.step_index is None else c.step_index + at)
        for c in tail_part.constraints
    ]
    return AgentTrajectory(
        steps=tuple(head + tail), terminal_status=tail_part.terminal_status,
        truncated=tail_part.truncated, step_limit=tail_part.step_limit,
        constraints=tuple(constraints), checkpoints=(),
    )


def fault_replay(
    case: Case, recorded: AgentTrajectory, plan: dict[str, Any], *, trial: int = 1,
    trials: int = 1, variant: Variant = (),
) -> Generator[ReplayRequest, ReplayResult, dict[str, Any]]:
    """Run the control and the fault replay of one case (of its trial `trial`, whose
    recording `recorded` is); returns the record the store keeps."""
    tool, fault, occurrence = plan["tool"], plan["fault"], plan["occurrence"]
    call_index = recorded.call_index(tool, occurrence)
    if call_index is None:
        return {"status": "fault_target_not_called"}
    checkpoint = choose_checkpoint(recorded, call_index)
    if checkpoint is None:
        return {"status": "no_checkpoint", "message": f"no checkpoint before step {call_index}"}
    at = checkpoint.step_index or 0
    record: dict[str, Any] = {"checkpoint": checkpoint.model_dump(mode="json"),
                              "call_index": call_index, "plan": plan}
    control = yield ReplayRequest(case, recorded, checkpoint, ReplayChange(kind="none"), trial,
                                  trials, variant=variant)
    if control.trajectory is None:
        return record | {"status": "replay_failed", "message": control.error}
    after, departed = continuation(recorded, at, control)
    if after is None:
        return record | {"status": "control_replay_diverged", "message": departed}
    record["control"] = after.model_dump(mode="json")
    expected = [_comparable(s) for s in recorded.steps if s.index > at]
    got = [_comparable(s) for s in after.steps]
    if plan.get("control", EXACT) == WORLD:
        differs = world_not_restored(expected, got)
        if differs is not None:
            return record | {
                "status": "control_replay_diverged",
                "message": f"a tool answered differently at step {at + differs + 1} before "
                           "the agent chose differently: the sandbox was not restored",
            }
    elif got != expected:
        first = next((i for i, (a, b) in enumerate(zip(expected, got, strict=False)) if a != b),
                     min(len(expected), len(got)))
        return record | {
            "status": "control_replay_diverged",
            "message": f"the control replay differs from the recording at step {at + first + 1}",
        }
    change = ReplayChange(kind="inject_fault", step_index=call_index, tool_name=tool,
                          fault=fault, fault_result=FAULT_RESULTS[fault])
    faulted = yield ReplayRequest(case, recorded, checkpoint, change, trial, trials,
                                  variant=variant)
    if faulted.trajectory is None:
        return record | {"status": "replay_failed", "message": faulted.error}
    after, departed = continuation(recorded, at, faulted)
    if after is None:
        return record | {"status": "replay_failed", "message": departed}
    joined = join(recorded, at, after)
    problems = trajectory_problems(joined.steps)
    if problems:
        return record | {"status": "invalid_replay", "message": "; ".join(problems)}
    return record | {
        "status": "ok",
        "change": change.model_dump(mode="json"),
        "fault_trajectory": joined.model_dump(mode="json"),
        # The sandbox after the fault replay, as a diff from the case's initial state.
        "end_state_patch": None if faulted.state is None
        else diff(case.initial_state or {}, faulted.state),
    }
