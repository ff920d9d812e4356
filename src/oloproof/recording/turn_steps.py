"""Where a conversation's turns go among the trajectory's steps
(docs/conversations.md#where-the-turns-go).

Each turn of the user is a `user_message` step; each reply of the agent passed to `respond` is
a `message` step, unless the system recorded it itself. Two ways a system records:

- **As it goes** (`current_case().steps()`): each turn takes its place among the steps the
  moment it happens. A reply counts as recorded when a step taken since the user's last turn
  holds its text (any text value of its `arguments` or `result`, spaces around it aside);
  otherwise a `message` step `{"text": reply}` is added. Turns that came before the system
  opened its step recorder are placed first when it does; turns after `finish()` follow the
  steps it finished with.
- **A whole trajectory at the end** (`current_case().agent_trajectory(...)`, `system.trace:
  otel`, a trace adapter): the turns are placed by their text. A user's turn the trajectory
  holds already — a `message` step with `role: user` holding its text, as the message
  adapters read one — becomes that step, as a `user_message`; else it goes right after the
  step holding the reply it answers (the first turn before step 1). Each reply is found as
  the first step after the previous turn that holds its text; from the first reply found
  nowhere on, that reply (as a `message` step) and everything after it follow the last step.

A `message` step added for a reply names the agent holding control there (the last named
step's agent, or a hand-off's `to_agent`; else the first agent named after it) when the
trajectory names its agents, so that the all-or-none naming of agents still holds. Step
indices are renumbered 1, 2, 3, …, and constraints and checkpoints follow their steps.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oloproof.errors import RecordingError
from oloproof.recording.trajectory import (
    USER_MESSAGE,
    AgentStep,
    AgentTrajectory,
    trajectory_problems,
)

if TYPE_CHECKING:
    from oloproof.recording.recorder import CaseRecorder
    from oloproof.recording.steps import StepRecorder


def holds_text(step: AgentStep, text: str) -> bool:
    """Whether some text value of the step's `arguments` or `result` is `text` (spaces around
    either aside)."""
    wanted = text.strip()
    return _holds(step.arguments, wanted) or _holds(step.result, wanted)


def _holds(value: Any, wanted: str) -> bool:
    if isinstance(value, str):
        return value.strip() == wanted
    if isinstance(value, dict):
        return any(_holds(v, wanted) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds(v, wanted) for v in value)
    return False


def _is_users(step: AgentStep, text: str) -> bool:
    """A message step the trajectory holds for the user's turn `text` (as the message adapters
    read a user's message: `{"role": "user", "content": ...}`)."""
    return (step.kind == "message" and isinstance(step.arguments, dict)
            and step.arguments.get("role") == "user" and holds_text(step, text))


class ConversationSteps:
    """The turns of one case's conversation, in order, and where they went among the steps of
    its step recorder, if the system opened one (see the module docstring)."""

    def __init__(self, recorder: CaseRecorder) -> None:
        self._recorder = recorder
        #: (role, text) of each turn, in order: `user` or `agent`.
        self.events: list[tuple[str, str]] = []
        #: The index of the step each placed turn is (or, for a reply the system recorded, the
        #: step that holds it), in the step recorder's numbering.
        self.placed: list[int] = []
        self._steps: StepRecorder | None = None
        self._mark = 0  # the last step a turn was placed at: the agent's turn starts after it
        self.added: set[int] = set()  # the message steps added for replies, by index

    def user_turn(self, text: str) -> None:
        self.events.append(("user", text))
        self._place()

    def agent_reply(self, text: str) -> None:
        self.events.append(("agent", text))
        self._place()

    def opened(self, steps: StepRecorder) -> None:
        self._steps = steps
        self._place()

    def _place(self) -> None:
        steps = self._steps
        if steps is None:
            return
        while len(self.placed) < len(self.events):
            role, text = self.events[len(self.placed)]
            if role == "user":
                self._mark = steps.step(USER_MESSAGE, arguments={"text": text}).index
            else:
                taken = steps.steps
                found = next((s.index for s in taken[self._mark:] if holds_text(s, text)), None)
                if found is None:
                    found = steps.step("message", arguments={"text": text},
                                       agent=_controlling(taken)).index
                    self.added.add(found)
                self._mark = found
            self.placed.append(self._mark)

    # ---- the trajectory, once the call has returned -------------------------------------------

    def finish(self, trajectory: AgentTrajectory, *, built_by_steps: bool,
               truncated: bool) -> AgentTrajectory:
        """The case's trajectory with every turn in its place (and `truncated` when the user
        reached `max_turns`)."""
        if built_by_steps:
            kept = len(trajectory.steps)
            steps = list(trajectory.steps)
            added = {i for i in self.added if i <= kept}
            # Turns after `finish()` (or never placed) follow the steps it finished with.
            late = [event for event, at in zip(self.events, self.placed, strict=False)
                    if at > kept] + self.events[len(self.placed):]
            order: list[_Item] = [*steps, *late]
        else:
            order, added = _by_text(trajectory.steps, self.events)
        return _rebuilt(trajectory, order, added, truncated, self._recorder.case_id)


#: An item of a trajectory being rebuilt: a step kept as it is, or (`user`, text) / (`agent`,
#: text) a turn to make a step of, or (`relabel`, step) a step of the user's turn to make its
#: `user_message`.
_Item = AgentStep | tuple[str, Any]


def _by_text(steps: tuple[AgentStep, ...], events: list[tuple[str, str]]
             ) -> tuple[list[_Item], set[int]]:
    """A handed-over trajectory's steps with the turns placed by their text (see the module
    docstring), and the replies added (none of its own steps: the added ones are items)."""
    out: list[_Item] = []
    at = 0  # the steps before `at` are placed
    tail: list[_Item] = []  # from the first reply found nowhere on: after the last step
    for role, text in events:
        if tail:
            tail.append((role, text))
            continue
        if role == "user":
            found = next((i for i in range(at, len(steps)) if _is_users(steps[i], text)), None)
            if found is None:
                out.append((role, text))
            else:
                out.extend(steps[at:found])
                out.append(("relabel", steps[found]))
                at = found + 1
            continue
        found = next((i for i in range(at, len(steps))
                      if steps[i].kind != USER_MESSAGE and holds_text(steps[i], text)), None)
        if found is None:
            tail.append((role, text))
            continue
        out.extend(steps[at:found + 1])
        at = found + 1
    out.extend(steps[at:])
    out.extend(tail)
    return out, set()


def _controlling(steps: tuple[AgentStep, ...] | list[AgentStep]) -> str | None:
    """The agent holding control after these steps (a hand-off's `to_agent`, else the last
    named step's agent), or None when no step names one."""
    for step in reversed(steps):
        if step.kind == "handoff" and step.to_agent:
            return step.to_agent
        if step.kind != USER_MESSAGE and step.agent:
            return step.agent
    return None


def _rebuilt(trajectory: AgentTrajectory, order: list[_Item], added: set[int],
             truncated: bool, case_id: str) -> AgentTrajectory:
    """The steps renumbered 1, 2, 3, … (turns made steps; the constraints and checkpoints
    following their steps), a reply's added `message` step naming its agent where the
    trajectory names agents, and `truncated` set when the conversation was cut."""
    names: dict[int, int] = {}
    made: list[AgentStep] = []
    new_replies: list[int] = []
    for item in order:
        index = len(made) + 1
        if isinstance(item, AgentStep):
            names[item.index] = index
            if item.index in added:
                new_replies.append(index)
            made.append(item if item.index == index else
                        item.model_copy(update={"index": index}))
            continue
        role, value = item
        if role == "relabel":
            names[value.index] = index
            made.append(value.model_copy(update={"index": index, "kind": USER_MESSAGE,
                                                 "agent": None}))
        elif role == "user":
            made.append(AgentStep(index=index, kind=USER_MESSAGE, arguments={"text": value}))
        else:
            made.append(AgentStep(index=index, kind="message", arguments={"text": value}))
            new_replies.append(index)
    made = _named_replies(made, new_replies)
    update: dict[str, Any] = {"steps": tuple(made)}
    if any(old != new for old, new in names.items()):
        update["constraints"] = tuple(
            c if c.step_index is None else c.model_copy(
                update={"step_index": names.get(c.step_index, c.step_index)})
            for c in trajectory.constraints)
        update["checkpoints"] = tuple(
            c if c.step_index is None else c.model_copy(
                update={"step_index": names.get(c.step_index, c.step_index)})
            for c in trajectory.checkpoints)
    if truncated:
        update["truncated"] = True
    rebuilt = trajectory.model_copy(update=update)
    problems = trajectory_problems(rebuilt.steps)
    if problems:  # (the system's own trajectory was checked when it was recorded)
        raise RecordingError("the trajectory with the conversation's turns placed is not "
                             "valid: " + "; ".join(problems), case=case_id)
    return rebuilt


def _named_replies(steps: list[AgentStep], replies: list[int]) -> list[AgentStep]:
    """Each added reply step named by the agent holding control there, where the trajectory
    names agents."""
    if not replies or not any(s.agent for s in steps if s.kind != USER_MESSAGE):
        return steps
    out = list(steps)
    for index in replies:
        step = out[index - 1]
        if step.agent:
            continue
        agent = _controlling(out[:index - 1]) or next(
            (s.agent for s in out[index:] if s.kind != USER_MESSAGE and s.agent), None)
        out[index - 1] = step.model_copy(update={"agent": agent})
    return out


__all__ = ["ConversationSteps", "holds_text"]
