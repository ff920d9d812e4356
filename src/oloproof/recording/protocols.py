"""What a sandboxed system implements: `Stateful` and `Replayable`
(docs/stateful-agents.md#a-sandbox-oloproof-resets)."""

from __future__ import annotations

from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, JsonValue

from oloproof.recording.trajectory import AgentCheckpoint, AgentTrajectory

STATE_KIND = "environment_state/v1"

FaultKind = Literal["error", "timeout", "malformed"]

FAULT_RESULTS: dict[str, JsonValue] = {
    "error": {"error": "tool_error", "message": "the tool failed (fault injected by oloproof)"},
    "timeout": {"error": "timeout", "message": "the tool timed out (fault injected by oloproof)"},
    "malformed": "\u0000<malformed>",
}


@runtime_checkable
class Stateful(Protocol):
    """A system that owns a sandbox Oloproof can reset and read."""

    def reset(self, state: dict[str, Any]) -> None:
        """Make the sandbox hold exactly `state`."""
        ...

    def snapshot(self) -> dict[str, Any]:
        """The sandbox's state now, as JSON."""
        ...


@runtime_checkable
class Replayable(Protocol):
    """A system that can re-run a case from a checkpoint with one tool result changed."""

    def replay(
        self, trajectory: AgentTrajectory, *, checkpoint: AgentCheckpoint, change: ReplayChange
    ) -> Any:
        """Return what happened after the checkpoint, steps numbered from 1 (may be async)."""
        ...


class ReplayChange(BaseModel):
    """What a replay changes: nothing (control replay) or one tool call's result (a fault)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["none", "inject_fault"]
    step_index: int | None = None
    tool_name: str | None = None
    fault: FaultKind | None = None
    fault_result: JsonValue = None
