"""The `agent_trajectory/v1` artifact: what an agent did, step by step (SPEC §3.3).

The models are frozen pydantic models that reject unknown fields. The whole trace is checked
when it is recorded (`trajectory_problems`: contiguous indices, tool names on tool steps,
`to_agent` only on hand-offs, all-or-none agent naming), because `model_copy(update=...)` does
not re-validate; an invalid trajectory makes that case errored, never a pass.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

TRAJECTORY_KIND = "agent_trajectory/v1"

StepKind = Literal[
    "message", "tool_call", "tool_result", "observation", "decision", "final", "handoff"
]
TerminalStatus = Literal["success", "failure", "unknown"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentStep(_Frozen):
    """One step of a trajectory.

    Args:
        index: position, 1-based, strictly increasing by 1 within a trajectory.
        kind: what the step is.
        agent: the agent that took the step (multi-agent systems); all steps or none name one.
        to_agent: on a `handoff` step only, who receives control.
        tool_name: required on `tool_call` and `tool_result`.
        arguments: the call's arguments (or a message's content).
        result: what the tool returned.
    """

    index: int = Field(ge=1)
    kind: StepKind
    agent: str | None = None
    to_agent: str | None = None
    tool_name: str | None = None
    arguments: dict[str, JsonValue] | None = None
    result: JsonValue = None


class AgentConstraintCheck(_Frozen):
    """A check the environment made; `step_index` is the step it observed."""

    name: str
    passed: bool
    step_index: int | None = None


class AgentCheckpoint(_Frozen):
    """A point a replay can resume from; `step_index` None means before the first step."""

    checkpoint_id: str
    kind: str = "checkpoint"
    step_index: int | None = None
    description: str | None = None
    payload: dict[str, JsonValue] | None = None


class AgentTrajectory(_Frozen):
    """What an agent did in one case, as its system recorded it."""

    steps: tuple[AgentStep, ...] = ()
    terminal_status: TerminalStatus = "unknown"
    truncated: bool = False
    step_limit: int | None = None
    constraints: tuple[AgentConstraintCheck, ...] = ()
    checkpoints: tuple[AgentCheckpoint, ...] = ()

    def tool_calls(self) -> list[AgentStep]:
        """The `tool_call` steps, in order."""
        return [s for s in self.steps if s.kind == "tool_call"]


def trajectory_problems(steps: tuple[AgentStep, ...]) -> list[str]:
    """Every reason a sequence of steps is not a valid trajectory (empty when it is)."""
    problems: list[str] = []
    gaps = [
        f"step {pos} has index {s.index}" for pos, s in enumerate(steps, 1) if s.index != pos
    ]
    if gaps:
        problems.append(
            "step indices must run 1, 2, 3, ... without gaps: " + ", ".join(gaps[:5])
            + (f" (+{len(gaps) - 5} more)" if len(gaps) > 5 else "")
        )
    nameless = [s.index for s in steps
                if s.kind in ("tool_call", "tool_result") and not s.tool_name]
    if nameless:
        problems.append(f"tool steps without a tool_name: {_indices(nameless)}")
    stray = [s.index for s in steps if s.to_agent is not None and s.kind != "handoff"]
    if stray:
        problems.append(f"to_agent is only allowed on handoff steps: {_indices(stray)}")
    named = [s for s in steps if s.agent]
    if named and len(named) != len(steps):
        unnamed = [s.index for s in steps if not s.agent]
        problems.append(
            "either every step names its agent or none does; steps without an agent: "
            + _indices(unnamed)
        )
    return problems


def _indices(indices: list[int]) -> str:
    shown = ", ".join(str(i) for i in indices[:10])
    return shown + (f" (+{len(indices) - 10} more)" if len(indices) > 10 else "")


def trajectory_from_payload(payload: Any) -> AgentTrajectory:
    """Rebuild a stored `agent_trajectory/v1` payload."""
    return AgentTrajectory.model_validate(payload)
