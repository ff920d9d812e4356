"""The `agent_trajectory/v1` artifact: what an agent did, step by step (SPEC §3.3).

The models are frozen pydantic models that reject unknown fields. The whole trace is checked
when it is recorded (`trajectory_problems`: contiguous indices, tool names on tool steps,
`to_agent` only on hand-offs, all-or-none agent naming), because `model_copy(update=...)` does
not re-validate; an invalid trajectory makes that case errored, never a pass.

The facts several parts read — the tool calls, what makes two calls identical, the route, the
actions, where a call of a tool was made — are methods of `AgentTrajectory`, computed once per
trajectory, so that evaluators, slices and replays share one definition and one computation.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from oloproof.digest import canonical_json

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
        return list(self._facts().calls)

    def call_keys(self) -> tuple[tuple[str, str], ...]:
        """What makes each `tool_call` what it is: its tool and its arguments as canonical JSON.

        Two calls are *identical* when their keys are equal (a call recorded without arguments
        and one with `{}` are the same call). One key per `tool_call` step, in order.
        """
        return self._facts().call_keys

    def has_repeated_call(self) -> bool:
        """Whether some identical call occurs twice or more anywhere (not only in a row)."""
        facts = self._facts()
        names = [s.tool_name for s in facts.calls]
        if len(set(names)) == len(names):
            return False  # no tool called twice: no need to compare arguments
        keys = facts.call_keys
        return len(set(keys)) < len(keys)

    def route(self) -> list[str] | None:
        """The agents that held control, in order, consecutive repeats collapsed.

        Each step's `agent` holds control when it takes the step, and a `handoff` step's
        `to_agent` holds it next (so a hand-off to a person, who takes no step, ends the route
        at `person`). None when no step names an agent (a single-agent trace has no route).
        """
        route = self._facts().route
        return None if route is None else list(route)

    def actions(self) -> list[list[Any]]:
        """The agent's actions: [tool name, arguments] of every `tool_call` step, in order."""
        return [[s.tool_name, s.arguments or {}] for s in self._facts().calls]

    def call_index(self, tool_name: str, occurrence: int = 1) -> int | None:
        """The step index of the `occurrence`-th `tool_call` of `tool_name`, or None if that call
        was not made (the call a fault replay makes fail)."""
        seen = 0
        for step in self._facts().calls:
            if step.tool_name == tool_name:
                seen += 1
                if seen == occurrence:
                    return step.index
        return None

    def _facts(self) -> _StepFacts:
        """The facts of these steps, computed on first use.

        Kept in the instance's `__dict__` beside the fields (as `functools.cached_property`
        does): pydantic compares, dumps and validates fields only, whereas a private attribute
        would take part in `==`. The facts remember the `steps` tuple they were computed from,
        because `model_copy(update=...)` copies `__dict__` — a copy with other steps recomputes.
        """
        facts: _StepFacts | None = self.__dict__.get(_FACTS)
        if facts is None or facts.steps is not self.steps:
            facts = _StepFacts(self.steps)
            self.__dict__[_FACTS] = facts  # the model is frozen; its fields are untouched
        return facts


_FACTS = "_step_facts"


class _StepFacts:
    """The tool calls, their identity keys and the route of one tuple of steps."""

    __slots__ = ("_call_keys", "calls", "route", "steps")

    def __init__(self, steps: tuple[AgentStep, ...]) -> None:
        self.steps = steps
        self.calls = tuple(s for s in steps if s.kind == "tool_call")
        self._call_keys: tuple[tuple[str, str], ...] | None = None
        self.route = _route(steps)

    @property
    def call_keys(self) -> tuple[tuple[str, str], ...]:
        """Computed when first asked for: most traces never call one tool twice, and then
        no arguments need to be compared."""
        if self._call_keys is None:
            self._call_keys = tuple(
                (s.tool_name or "", canonical_json(s.arguments or {})) for s in self.calls)
        return self._call_keys


def _route(steps: tuple[AgentStep, ...]) -> tuple[str, ...] | None:
    """The route of `AgentTrajectory.route`, as a tuple."""
    if not any(s.agent for s in steps):
        return None
    route: list[str] = []
    for step in steps:
        holders = [step.agent]
        if step.kind == "handoff":
            holders.append(step.to_agent)
        for agent in holders:
            if agent and (not route or route[-1] != agent):
                route.append(agent)
    return tuple(route)


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
