"""`current_case().user`: the user a case's system holds a conversation with
(docs/conversations.md#the-loop).

The system keeps its own loop and asks the user for each next turn::

    user = current_case().user
    message = user.first_message()
    while message is not None:
        reply = agent.respond(message)
        message = user.respond(reply)      # None: the user is done (or max_turns)

(`await user.afirst_message()` / `await user.arespond(reply)` in an async system.) A
`ScriptedUser` answers with its case's `turns` in order and ends when they run out; a
`SimulatedUser` asks a simulator for each turn through a `TurnSource` the execution layer
gives it (the call, its retries, bounds and cache are the execution layer's). Either records
every turn: the conversation (`conversation/v1`, `Conversation.record`) and the turns as
steps of the trajectory (`recording/turn_steps.py`).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from oloproof.errors import RecordingError
from oloproof.recording.turn_steps import ConversationSteps
from oloproof.recording.turns import SimulatorTurn

if TYPE_CHECKING:
    from oloproof.recording.recorder import CaseRecorder
    from oloproof.recording.steps import StepRecorder

CONVERSATION_KIND = "conversation/v1"

#: How a conversation ended (the `ended` of `conversation/v1`).
USER_DONE = "user_done"          # a simulated user said done
SCRIPT_DONE = "script_done"      # a scripted user's turns ran out
MAX_TURNS = "max_turns"          # the user reached max_turns without being done: truncated
SIMULATOR_ERROR = "simulator_error"  # the simulator's call failed, or its reply was no turn
SYSTEM_STOPPED = "system"        # the system stopped asking before the user was done


@dataclass(frozen=True, slots=True)
class TurnAnswer:
    """What a `TurnSource` gives for one turn: the simulator's turn, or why there is none
    (`error`: its call failed after its retries, or its reply was not a turn)."""

    turn: SimulatorTurn | None = None
    error: str | None = None
    cached: bool = False


class TurnSource(Protocol):
    """Where a simulated user's turns come from: the execution layer's simulators
    (`execution/simulating.py`), which call, retry, bound and cache them."""

    def turn(self, user: SimulatedUser) -> TurnAnswer:
        """The user's next turn, from a sync system's thread."""
        ...

    async def aturn(self, user: SimulatedUser) -> TurnAnswer:
        """The user's next turn, awaited in an async system."""
        ...


class User:
    """The user of one case's conversation (get it with `current_case().user`). Not shared by
    threads at once: a conversation takes one turn at a time."""

    kind = "user"

    def __init__(self, recorder: CaseRecorder, max_turns: int) -> None:
        self.case_id = recorder.case_id
        self.max_turns = max_turns
        #: The conversation so far: `{"role": "user" | "agent", "text": ...}` each (a user's
        #: turn also says whether it was its last, `done`).
        self.turns: list[dict[str, Any]] = []
        self._steps = ConversationSteps(recorder)
        self._started = False
        self._done = False
        self._closed = False  # respond() has returned None: later replies are not the agent's
        self.ended: str | None = None
        self.error: str | None = None

    # ---- the loop --------------------------------------------------------------------------

    @property
    def done(self) -> bool:
        """Whether the user has nothing more to say (`respond` returns None)."""
        return self._done

    @property
    def user_turns(self) -> int:
        """How many turns the user has taken."""
        return sum(1 for t in self.turns if t["role"] == "user")

    def first_message(self) -> str | None:
        """The user's first message (None: the user has nothing to say)."""
        self._start()
        return self._deliver(self._next())

    def respond(self, reply: str) -> str | None:
        """Take the agent's reply; the user's next message, or None when the user is done (it
        said so, its script ran out, `max_turns` was reached, or its simulator failed)."""
        if not self._take(reply):
            return None
        return self._deliver(self._next())

    async def afirst_message(self) -> str | None:
        """`first_message`, awaited (an async system)."""
        self._start()
        return self._deliver(await self._anext())

    async def arespond(self, reply: str) -> str | None:
        """`respond`, awaited (an async system)."""
        if not self._take(reply):
            return None
        return self._deliver(await self._anext())

    # ---- what the kinds of user provide -------------------------------------------------------

    def _next(self) -> TurnAnswer:
        raise NotImplementedError

    async def _anext(self) -> TurnAnswer:
        return self._next()

    # ---- shared --------------------------------------------------------------------------

    def _start(self) -> None:
        if self._started:
            raise RecordingError("first_message() was called twice; after the first message, "
                                 "call respond(reply) with each of the agent's replies",
                                 case=self.case_id)
        self._started = True

    def _take(self, reply: str) -> bool:
        """Record the agent's reply; whether the user takes another turn."""
        if not self._started:
            raise RecordingError("respond() was called before first_message(); the "
                                 "conversation starts with user.first_message()",
                                 case=self.case_id)
        if not isinstance(reply, str):
            raise RecordingError(f"respond() takes the agent's reply as text (a str), not "
                                 f"{type(reply).__name__}", case=self.case_id)
        if self._closed:
            return False
        self.turns.append({"role": "agent", "text": reply})
        self._steps.agent_reply(reply)
        if not self._done and self.user_turns >= self.max_turns:
            self._end(MAX_TURNS)
        if self._done:
            self._closed = True
            return False
        return True

    def _deliver(self, answer: TurnAnswer) -> str | None:
        """The message the user says, recorded (None: it says nothing more)."""
        turn = answer.turn
        if turn is None:
            self.error = answer.error or "the simulator gave no turn"
            self._end(SIMULATOR_ERROR)
            self._closed = True
            return None
        first = not self.turns
        message = turn.message
        if not message.strip() and not (turn.done or first):
            # Neither a message nor the end of the conversation: not a turn.
            self.error = "the simulator's reply holds an empty message and does not say done"
            self._end(SIMULATOR_ERROR)
            self._closed = True
            return None
        self.turns.append({"role": "user", "text": message, "done": turn.done})
        if not message.strip():  # (a first reply with no message: the agent never speaks)
            self._end(USER_DONE)
            self._closed = True
            return None
        self._steps.user_turn(message)
        if turn.done:
            self._end(USER_DONE)
        return message

    def _end(self, how: str) -> None:
        self._done = True
        if self.ended is None:
            self.ended = how

    # ---- the record ------------------------------------------------------------------------

    def steps_opened(self, steps: StepRecorder) -> None:
        """The system opened the case's step recorder: the turns so far take their place in it
        (they came before anything it records now)."""
        self._steps.opened(steps)

    def record(self) -> dict[str, Any]:
        """The case's `conversation/v1` artifact."""
        record: dict[str, Any] = {"user": self.kind, "turns": list(self.turns),
                                  "ended": self.ended or SYSTEM_STOPPED,
                                  "max_turns": self.max_turns}
        if self.error is not None:
            record["error"] = self.error
        return record

    @property
    def truncated(self) -> bool:
        """Whether the conversation was cut at `max_turns` (the agent's counts are then lower
        bounds: docs/agents-and-tools.md#truncated-traces)."""
        return self.ended == MAX_TURNS

    @property
    def conversation_steps(self) -> ConversationSteps:
        """Where the turns go among the trajectory's steps (`recording/turn_steps.py`)."""
        return self._steps


class ScriptedUser(User):
    """A user whose turns are its case's `turns`, in order; done when they run out."""

    kind = "scripted"

    def __init__(self, recorder: CaseRecorder, turns: list[str]) -> None:
        super().__init__(recorder, len(turns))
        self._script = list(turns)

    def _next(self) -> TurnAnswer:
        taken = self.user_turns
        last = taken + 1 >= len(self._script)
        return TurnAnswer(SimulatorTurn(message=self._script[taken], done=last))

    def _deliver(self, answer: TurnAnswer) -> str | None:
        message = super()._deliver(answer)
        if self.ended == USER_DONE:
            self.ended = SCRIPT_DONE
        return message


class SimulatedUser(User):
    """A user played by a simulator (docs/conversations.md#simulators): each turn asked of its
    `TurnSource` with the case's persona, goal and facts, the conversation so far and the
    case's and trial's seed."""

    kind = "simulated"

    def __init__(self, recorder: CaseRecorder, spec: dict[str, Any], *, simulator: str,
                 seed: int, instructions: str, max_turns: int, source: TurnSource,
                 trial: int = 1) -> None:
        super().__init__(recorder, max_turns)
        self.spec = spec
        self.simulator = simulator
        self.seed = seed
        self.trial = trial
        self.instructions = instructions
        self.source = source
        #: How many of the user's turns were asked of the simulator, and how many of those the
        #: cache answered.
        self.asked = 0
        self.cached = 0
        self.usage: dict[str, float] = {}

    def _next(self) -> TurnAnswer:
        return self._count(self.source.turn(self))

    async def _anext(self) -> TurnAnswer:
        return self._count(await self.source.aturn(self))

    def _count(self, answer: TurnAnswer) -> TurnAnswer:
        self.asked += 1
        self.cached += answer.cached
        turn = answer.turn
        if turn is not None:
            for key in ("input_tokens", "output_tokens", "cost"):
                value = getattr(turn, key)
                if value is not None:
                    self.usage[key] = self.usage.get(key, 0) + value
        return answer

    def record(self) -> dict[str, Any]:
        record = super().record()
        record.update(simulator=self.simulator, seed=self.seed,
                      instructions=self.instructions)
        if self.usage:  # what the conversation's turns cost (a cached turn, when it was made)
            record["usage"] = dict(self.usage)
        return record


def in_loop_thread() -> bool:
    """Whether this thread is running an event loop (an async system's: a sync call there
    would block it)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


__all__ = ["CONVERSATION_KIND", "MAX_TURNS", "SCRIPT_DONE", "SIMULATOR_ERROR", "SYSTEM_STOPPED",
           "USER_DONE", "ScriptedUser", "SimulatedUser", "TurnAnswer", "TurnSource", "User",
           "in_loop_thread"]
