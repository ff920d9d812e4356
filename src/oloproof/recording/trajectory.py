"""The `agent_trajectory/v1` artifact: what an agent did, step by step
(docs/agents-and-tools.md#the-models).

The models are frozen pydantic models that reject unknown fields. The whole trace is checked
when it is recorded (`trajectory_problems`: contiguous indices, tool names on tool steps,
`to_agent` only on hand-offs, all-or-none agent naming), because `model_copy(update=...)` does
not re-validate; an invalid trajectory makes that case errored, never a pass.

The facts several parts read — the tool calls, what makes two calls identical, the route, the
actions, where a call of a tool was made — are methods of `AgentTrajectory`, computed once per
trajectory, so that evaluators, slices and replays share one definition and one computation.
"""

from __future__ import annotations

from typing import Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from oloproof.digest import canonical_json

TRAJECTORY_KIND = "agent_trajectory/v1"

StepKind = Literal[
    "message", "tool_call", "tool_result", "observation", "decision", "final", "handoff",
    "user_message",
]
#: A turn of the user the system holds a conversation with (docs/conversations.md): a step of
#: the trajectory, but never the agent's — not counted among its steps, tool calls or
#: hand-offs, and outside the all-or-none naming of agents.
USER_MESSAGE: Final = "user_message"
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
        return list(self.step_facts().calls)

    def call_keys(self) -> tuple[tuple[str, str], ...]:
        """What makes each `tool_call` what it is: its tool and its arguments as canonical JSON.

        Two calls are *identical* when their keys are equal (a call recorded without arguments
        and one with `{}` are the same call). One key per `tool_call` step, in order.
        """
        return self.step_facts().call_keys

    def has_repeated_call(self) -> bool:
        """Whether some identical call occurs twice or more anywhere (not only in a row)."""
        return self.step_facts().repeated

    def route(self) -> list[str] | None:
        """The agents that held control, in order, consecutive repeats collapsed.

        Each step's `agent` holds control when it takes the step, and a `handoff` step's
        `to_agent` holds it next (so a hand-off to a person, who takes no step, ends the route
        at `person`). None when no step names an agent (a single-agent trace has no route).
        """
        route = self.step_facts().route
        return None if route is None else list(route)

    def actions(self) -> list[list[Any]]:
        """The agent's actions: [tool name, arguments] of every `tool_call` step, in order."""
        return [[s.tool_name, s.arguments or {}] for s in self.step_facts().calls]

    def call_index(self, tool_name: str, occurrence: int = 1) -> int | None:
        """The step index of the `occurrence`-th `tool_call` of `tool_name`, or None if that call
        was not made (the call a fault replay makes fail)."""
        seen = 0
        for step in self.step_facts().calls:
            if step.tool_name == tool_name:
                seen += 1
                if seen == occurrence:
                    return step.index
        return None

    def step_facts(self) -> StepFacts:
        """The facts of these steps, computed on first use, as read-only tuples (the methods
        above hand out copies; the engine's own readers take these as they are).

        Kept in the instance's `__dict__` beside the fields (as `functools.cached_property`
        does): pydantic compares, dumps and validates fields only, whereas a private attribute
        would take part in `==`. The facts remember the `steps` tuple they were computed from,
        because `model_copy(update=...)` copies `__dict__` — a copy with other steps recomputes.
        """
        facts: StepFacts | None = self.__dict__.get(_FACTS)
        if facts is None or facts.steps is not self.steps:
            facts = StepFacts(self.steps)
            self.__dict__[_FACTS] = facts  # the model is frozen; its fields are untouched
        return facts


_FACTS = "_step_facts"


class StepFacts:
    """The tool calls, their tool names and identity keys, and the route of one tuple of steps.

    `calls` and `names` (each call's `tool_name`), `route` and `agent_steps` (the steps that
    are not the user's turns) are made at once, in one pass; `call_keys` and `repeated` when
    first asked for.
    """

    __slots__ = ("_call_keys", "_repeated", "agent_steps", "calls", "names", "route", "steps")

    def __init__(self, steps: tuple[AgentStep, ...]) -> None:
        self.steps = steps
        calls: list[AgentStep] = []
        route: list[str] = []
        named = False
        users = 0
        for step in steps:
            kind = step.kind
            if kind == "tool_call":
                calls.append(step)
            elif kind == "user_message":
                users += 1
            agent = step.agent
            if agent:
                named = True
                if not route or route[-1] != agent:
                    route.append(agent)
            if step.kind == "handoff":
                agent = step.to_agent
                if agent and (not route or route[-1] != agent):
                    route.append(agent)
        self.calls: tuple[AgentStep, ...] = tuple(calls)
        #: How many steps are the agent's: every step but the user's turns.
        self.agent_steps = len(steps) - users
        self.names: tuple[str | None, ...] = tuple([s.tool_name for s in calls])
        # A route only when some step names its agent (a hand-off's `to_agent` alone is none).
        self.route: tuple[str, ...] | None = tuple(route) if named else None
        self._call_keys: tuple[tuple[str, str], ...] | None = None
        self._repeated: bool | None = None

    @property
    def call_keys(self) -> tuple[tuple[str, str], ...]:
        """Computed when first asked for: most traces never call one tool twice, and then
        no arguments need to be compared."""
        if self._call_keys is None:
            self._call_keys = tuple(
                (s.tool_name or "", canonical_json(s.arguments or {})) for s in self.calls)
        return self._call_keys

    @property
    def repeated(self) -> bool:
        """Whether some identical call occurs twice or more anywhere."""
        if self._repeated is None:
            names = self.names
            if len(set(names)) == len(names):
                self._repeated = False  # no tool called twice: no need to compare arguments
            else:
                keys = self.call_keys
                self._repeated = len(set(keys)) < len(keys)
        return self._repeated


def trajectory_problems(steps: tuple[AgentStep, ...]) -> list[str]:
    """Every reason a sequence of steps is not a valid trajectory (empty when it is).

    One pass over the steps (this runs for every recorded trajectory).
    """
    gaps: list[str] = []
    nameless: list[int] = []
    stray: list[int] = []
    unnamed: list[int] = []
    users = 0
    for pos, s in enumerate(steps, 1):
        if s.index != pos:
            gaps.append(f"step {pos} has index {s.index}")
        kind = s.kind
        if not s.tool_name and (kind == "tool_call" or kind == "tool_result"):
            nameless.append(s.index)
        if s.to_agent is not None and kind != "handoff":
            stray.append(s.index)
        if kind == "user_message":
            users += 1
        elif not s.agent:
            unnamed.append(s.index)
    problems: list[str] = []
    if gaps:
        problems.append(
            "step indices must run 1, 2, 3, ... without gaps: " + ", ".join(gaps[:5])
            + (f" (+{len(gaps) - 5} more)" if len(gaps) > 5 else "")
        )
    if nameless:
        problems.append(f"tool steps without a tool_name: {_indices(nameless)}")
    if stray:
        problems.append(f"to_agent is only allowed on handoff steps: {_indices(stray)}")
    if unnamed and len(unnamed) != len(steps) - users:
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
