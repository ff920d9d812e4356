"""The step recorder: `current_case().steps()` numbers a trajectory's steps for the system.

A system records what its agent does one step at a time and never counts: each method adds a
step with the next index and returns it; `constraint()` and `checkpoint()` attach to the last
step taken; `finish()` builds the `AgentTrajectory` and records it as the case's
`agent_trajectory/v1`.

In a replay (docs/stateful-agents.md#a-tool-that-fails-fault-replays) the same code records in the
*recording's* numbering, so a replay needs no index arithmetic either:

- `current_case().steps()` starts at step 1: for a system that works the request again from the
  start (deterministically) to bring its world to the checkpoint. The engine checks that the
  steps up to the checkpoint retrace the recording, and keeps what came after.
- `current_case().steps(after=checkpoint)` starts with the recording's steps up to the
  checkpoint (and its constraints there): for a system that restores its world from the
  checkpoint's `payload` and records only what it does from there on.

`call_tool()` records a tool call and its result around the function that does the work, and in
a fault replay returns the injected fault instead of calling it at the faulted step.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pydantic import JsonValue

from oloproof.errors import RecordingError
from oloproof.recording.trajectory import (
    AgentCheckpoint,
    AgentConstraintCheck,
    AgentStep,
    AgentTrajectory,
    StepKind,
    TerminalStatus,
)

if TYPE_CHECKING:
    from oloproof.recording.protocols import ReplayChange
    from oloproof.recording.recorder import CaseRecorder


# The models' validators, called with the fields as a dict: what `AgentStep(**fields)` does
# without the keyword call into `BaseModel.__init__` (a third of a simple step's cost; the
# same checks, the same errors). A system records about a dozen of these per case.
_new_step = AgentStep.__pydantic_validator__.validate_python
_new_check = AgentConstraintCheck.__pydantic_validator__.validate_python
_new_checkpoint = AgentCheckpoint.__pydantic_validator__.validate_python
_new_trajectory = AgentTrajectory.__pydantic_validator__.validate_python


@dataclass(frozen=True, slots=True)
class Replaying:
    """What a replay is about: the recorded trajectory, its checkpoint, the change
    (docs/stateful-agents.md#a-tool-that-fails-fault-replays)."""

    recorded: AgentTrajectory
    checkpoint: AgentCheckpoint
    change: ReplayChange


class StepRecorder:
    """Builds one trajectory step by step, numbering the steps (1, 2, 3, ...).

    Get it with `current_case().steps()`; every call in one case returns the same recorder,
    so tools in different functions can record into it. It is not meant to be shared by
    threads at once (a case's agent takes one step at a time).
    """

    def __init__(self, recorder: CaseRecorder | None = None,
                 replaying: Replaying | None = None, *, resumed: bool = False) -> None:
        self._recorder = recorder
        self._replaying = replaying
        self._steps: list[AgentStep] = []
        self._constraints: list[AgentConstraintCheck] = []
        self._checkpoints: list[AgentCheckpoint] = []
        self._built: list[AgentTrajectory] = []
        self.resumed = resumed
        if resumed:
            assert replaying is not None
            at = replaying.checkpoint.step_index or 0
            self._steps = [s for s in replaying.recorded.steps if s.index <= at]
            self._constraints = [c for c in replaying.recorded.constraints
                                 if c.step_index is not None and c.step_index <= at]

    # ---- reading ---------------------------------------------------------------------------

    @property
    def last_index(self) -> int:
        """The index of the last step taken (0 before the first)."""
        return len(self._steps)

    @property
    def steps(self) -> tuple[AgentStep, ...]:
        """The steps taken so far."""
        return tuple(self._steps)

    # ---- steps -----------------------------------------------------------------------------

    def step(self, kind: StepKind, **fields: Any) -> AgentStep:
        """Add a step of any kind (`agent`, `to_agent`, `tool_name`, `arguments`, `result`)."""
        if "index" in fields:  # (the recorder numbers the steps)
            raise TypeError(f"{AgentStep.__module__}.AgentStep() got multiple values for "
                            "keyword argument 'index'")
        fields["index"] = len(self._steps) + 1
        fields["kind"] = kind
        step: AgentStep = _new_step(fields)
        self._steps.append(step)
        return step

    def message(self, content: dict[str, JsonValue] | None = None, *,
                agent: str | None = None) -> AgentStep:
        """A message (its content goes in `arguments`, e.g. `{"text": ...}`)."""
        return self.step("message", arguments=content, agent=agent)

    def tool_call(self, tool_name: str, arguments: dict[str, JsonValue] | None = None, *,
                  agent: str | None = None) -> AgentStep:
        """The agent calls a tool."""
        return self.step("tool_call", tool_name=tool_name, arguments=arguments, agent=agent)

    def tool_result(self, tool_name: str, result: JsonValue, *,
                    agent: str | None = None) -> AgentStep:
        """What the tool returned."""
        return self.step("tool_result", tool_name=tool_name, result=result, agent=agent)

    def observation(self, content: dict[str, JsonValue] | None = None, *,
                    agent: str | None = None) -> AgentStep:
        return self.step("observation", arguments=content, agent=agent)

    def decision(self, content: dict[str, JsonValue] | None = None, *,
                 agent: str | None = None) -> AgentStep:
        return self.step("decision", arguments=content, agent=agent)

    def handoff(self, to_agent: str, content: dict[str, JsonValue] | None = None, *,
                agent: str | None = None) -> AgentStep:
        """Control passes from `agent` to `to_agent`."""
        return self.step("handoff", to_agent=to_agent, arguments=content, agent=agent)

    def final(self, content: dict[str, JsonValue] | None = None, *,
              agent: str | None = None) -> AgentStep:
        """The agent's final answer."""
        return self.step("final", arguments=content, agent=agent)

    def call_tool(self, tool_name: str, arguments: dict[str, JsonValue],
                  run: Callable[..., Any], *, agent: str | None = None) -> Any:
        """Record `tool_call`, run `run(**arguments)`, record `tool_result`; return the result.

        In a fault replay, at the faulted call the tool is not run: the injected fault result
        is recorded and returned instead (a tool that failed did nothing).
        """
        call = self.tool_call(tool_name, arguments, agent=agent)
        change = self.injected(call)
        result = copy.deepcopy(change.fault_result) if change is not None else run(**arguments)
        self.tool_result(tool_name, result, agent=agent)
        return result

    def injected(self, call: AgentStep) -> ReplayChange | None:
        """The fault a replay injects at this tool call, if any (None outside a replay)."""
        replaying = self._replaying
        if replaying is None or replaying.change.kind != "inject_fault":
            return None
        change = replaying.change
        if call.kind == "tool_call" and call.index == change.step_index:
            return change
        return None

    # ---- constraints and checkpoints ----------------------------------------------------------

    def constraint(self, name: str, passed: bool, *,
                   step_index: int | None = None) -> AgentConstraintCheck:
        """An environment check; it observed the last step taken unless `step_index` says."""
        check: AgentConstraintCheck = _new_check({
            "name": name, "passed": passed,
            "step_index": step_index if step_index is not None else (len(self._steps) or None)})
        self._constraints.append(check)
        return check

    def checkpoint(self, checkpoint_id: str, *, kind: str = "checkpoint",
                   description: str | None = None,
                   payload: dict[str, JsonValue] | None = None) -> AgentCheckpoint:
        """A point a replay can resume from: after the last step taken (or before the first)."""
        point: AgentCheckpoint = _new_checkpoint({
            "checkpoint_id": checkpoint_id, "kind": kind, "step_index": len(self._steps) or None,
            "description": description, "payload": payload})
        self._checkpoints.append(point)
        return point

    # ---- the trajectory ----------------------------------------------------------------------

    def trajectory(self, terminal_status: TerminalStatus = "unknown", *, truncated: bool = False,
                   step_limit: int | None = None) -> AgentTrajectory:
        """The trajectory recorded so far (not recorded as the case's artifact)."""
        built: AgentTrajectory = _new_trajectory({
            "steps": tuple(self._steps), "terminal_status": terminal_status,
            "truncated": truncated, "step_limit": step_limit,
            "constraints": tuple(self._constraints), "checkpoints": tuple(self._checkpoints)})
        self._built.append(built)
        return built

    def finish(self, terminal_status: TerminalStatus = "unknown", *, truncated: bool = False,
               step_limit: int | None = None) -> AgentTrajectory:
        """Build the trajectory and record it as the case's `agent_trajectory/v1`."""
        if self._recorder is None:
            raise RecordingError("this step recorder belongs to no case: get it with "
                                 "current_case().steps()")
        built = self.trajectory(terminal_status, truncated=truncated, step_limit=step_limit)
        self._recorder.agent_trajectory(built)
        return built

    def built(self, trajectory: AgentTrajectory) -> bool:
        """Whether `trajectory` is one this recorder built (the engine's test in a replay)."""
        return any(t is trajectory for t in self._built)

    @property
    def built_trajectories(self) -> list[AgentTrajectory]:
        """The trajectories this recorder built, in order."""
        return self._built
