"""Simulated users' turns (docs/conversations.md#simulators): I/O the execution layer makes for
the system's conversation, as it makes a judge's call.

A case with a `user` gets its user when its call starts (`Users.make`): a `ScriptedUser`, or a
`SimulatedUser` whose turns come from this process's `SimulatorPanel` through the case's own
`Conversation`. Each turn is looked up first, by its key (the simulator's definition, its
instructions for the case, the case's and trial's seed, and the conversation so far:
`keys.turn_key`) in the turns the coordinator shipped with the job (the store's, for that
conversation) and those this panel made lately; only a turn found nowhere is asked of the
simulator — at most its `concurrency` calls at once over the run, each bounded whole by its
`timeout_s`, retried as a judge's are, a reply that is not a turn asked again once. So an
unchanged re-run asks nothing (its executions are cached), and an agent whose reply changed
asks the simulator from that turn on. The turns made travel back with the execution
(`CallResult.simulator_turns`) for the coordinator to store.

A sync system's `user.respond(reply)` runs in its lane's thread: the turn is asked on the
panel's event loop and the thread waits for it. An async system awaits `user.arespond(reply)`
on that loop. A simulator that fails (its call errors after its retries, or its reply is
still not a turn) ends the conversation (`respond` returns None): the case's audit then finds
`simulator_error` — the simulator's failure, never the agent's.
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import CancelledError
from dataclasses import dataclass
from typing import Any

from oloproof.errors import RecordingError
from oloproof.execution.keys import conversation_key, seed, simulator_digest, turn_key
from oloproof.execution.model_calls import CalledEntry
from oloproof.execution.retries import call_with_retries_async
from oloproof.recording.recorder import CaseRecorder
from oloproof.recording.turns import (
    DEFAULT_PROMPT,
    TURN_SCHEMA,
    SimulatorRequest,
    SimulatorTurn,
    instructions,
    simulator_messages,
    turn_from_text,
    turn_from_value,
)
from oloproof.recording.users import ScriptedUser, SimulatedUser, TurnAnswer, User
from oloproof.suite.case import Case
from oloproof.suite.config import SimulatorConfig

#: How many times a reply that is not a turn is asked for (once, then once again).
PARSE_TRIES = 2
#: How many turns a panel keeps at hand (made lately): a case's retried attempts find them.
KEPT_TURNS = 4096
#: JSON-schema structured output, where the endpoint takes it.
_RESPONSE_FORMAT = {"type": "json_schema",
                    "json_schema": {"name": "turn", "schema": TURN_SCHEMA, "strict": True}}
#: A turn's fields as the cache keeps them.
_TURN_FIELDS = ("message", "done", "input_tokens", "output_tokens", "cost", "model")


@dataclass(frozen=True, slots=True)
class ConversationPlan:
    """What a simulated user's conversation is, the same wherever it is computed (the
    coordinator, to look its turns up; the worker, to ask them): its key, the seed, the
    simulator's instructions for the case, and the most turns the user takes."""

    key: str
    seed: int
    instructions: str
    max_turns: int


def plan_conversation(case: Case, trial: int, simulator: SimulatorConfig,
                      digest: str | None = None) -> ConversationPlan:
    """The plan of `case`'s simulated user in trial `trial` (`digest`: the simulator's, when
    it is known already)."""
    user = case.user or {}
    text = instructions(simulator.prompt or DEFAULT_PROMPT, user)
    case_seed = seed(case, trial)
    key = conversation_key(digest or simulator_digest(simulator), text, case_seed)
    return ConversationPlan(key, case_seed, text, int(user.get("max_turns")
                                                      or simulator.max_turns))


class _Simulator(CalledEntry):
    """One `simulators:` entry in this process."""

    what = "simulator"

    def __init__(self, config: SimulatorConfig, share: int) -> None:
        super().__init__(config, share)
        self.simulator = config

    async def ask(self, request: SimulatorRequest) -> tuple[SimulatorTurn | None, str | None]:
        """One call: the turn (None when the reply is not one) and the reply's text."""
        if self.config.callable is not None:
            value = await self.bounded(lambda: self.call_function(request))
            return turn_from_value(value), None if value is None else repr(value)[:300]
        asked: tuple[SimulatorTurn | None, str | None] = await self.bounded(
            lambda: self._ask_model(request))
        return asked

    async def _ask_model(self, request: SimulatorRequest
                         ) -> tuple[SimulatorTurn | None, str | None]:
        reply = await self.completion(request.messages, _RESPONSE_FORMAT, seed=request.seed)
        if reply.problem is not None:
            return None, reply.problem
        turn = turn_from_text(reply.text)
        if turn is None:
            return None, reply.text
        # (the counts and the model as the endpoint gave them: `CalledEntry.completion`)
        return turn.model_copy(update={
            "input_tokens": reply.input_tokens, "output_tokens": reply.output_tokens,
            "model": reply.model}), reply.text

    async def turn(self, request: SimulatorRequest) -> tuple[dict[str, Any] | None, str | None,
                                                             int]:
        """The turn as the cache keeps it (None: none), why not, and how many calls it took:
        asked again once if the reply is not a turn; an error after the retries is one."""
        attempts = 0
        reply: str | None = None
        refused: str | None = None

        async def call() -> tuple[SimulatorTurn | None, str | None]:
            async with self.slots:  # (a slot per attempt: a backoff holds none)
                return await self.ask(request)

        for _ in range(PARSE_TRIES):
            tried = await call_with_retries_async(self.retries, call, throttle=self.throttle)
            attempts += tried.attempts
            if not tried.ok:
                exc = tried.errors[-1]
                return None, self.message(f"{type(exc).__name__}: {exc}"), attempts
            turn, reply = tried.value or (None, None)
            if turn is None:
                refused = None
                continue
            message, refused = self.kept(turn.message, "its message")
            if refused is None:
                record = turn.model_dump()
                record["message"] = message
                if isinstance(record.get("model"), str):
                    model, problem = self.kept(record["model"], "its model")
                    record["model"] = None if problem else model
                return record, None, attempts
        said = refused if refused is not None else \
            f"its last reply began: {(reply or '')[:200]!r}"
        return None, self.message(f"the simulator's reply is not a turn (asked {attempts} "
                                  f"times); {said}"), attempts


class SimulatorPanel:
    """The simulators of one process (a transport's), by name, and the turns they made lately.
    Made on the event loop whose thread asks them."""

    def __init__(self, simulators: Sequence[SimulatorConfig], share: int = 1) -> None:
        self._simulators = {s.name: _Simulator(s, share) for s in simulators}
        self.digests = {s.name: simulator_digest(s) for s in simulators}
        self.loop = asyncio.get_running_loop()
        self._kept: OrderedDict[str, dict[str, Any]] = OrderedDict()

    @classmethod
    def of(cls, simulators: Sequence[SimulatorConfig], share: int = 1) -> SimulatorPanel | None:
        """The panel of a suite's simulators, or None when it has none."""
        return cls(simulators, share) if simulators else None

    @property
    def calls(self) -> int:
        """How many calls the simulators of this process made."""
        return sum(s.calls for s in self._simulators.values())

    def config(self, name: str) -> SimulatorConfig:
        return self._simulators[name].simulator

    def kept(self, key: str) -> dict[str, Any] | None:
        record = self._kept.get(key)
        if record is not None:
            self._kept.move_to_end(key)
        return record

    def keep(self, key: str, record: dict[str, Any]) -> None:
        self._kept[key] = record
        self._kept.move_to_end(key)
        if len(self._kept) > KEPT_TURNS:
            self._kept.popitem(last=False)

    async def ask(self, name: str, request: SimulatorRequest
                  ) -> tuple[dict[str, Any] | None, str | None, int]:
        return await self._simulators[name].turn(request)

    async def close(self) -> None:
        for simulator in self._simulators.values():
            await simulator.close()


class Conversation:
    """One simulated user's conversation in one case's call: where its turns come from (the
    `TurnSource` of its `SimulatedUser`), and the turns it made, for the coordinator to
    store."""

    def __init__(self, panel: SimulatorPanel, case: Case, trial: int, plan: ConversationPlan,
                 stored: dict[str, dict[str, Any]] | None) -> None:
        self.panel = panel
        self.case = case
        self.trial = trial
        self.plan = plan
        self.stored = stored or {}
        #: (conversation key, turn key, turn) of each turn asked of the simulator, in order.
        self.made: list[tuple[str, str, dict[str, Any]]] = []
        self.calls = 0
        self.latency_ms = 0.0

    def turn(self, user: SimulatedUser) -> TurnAnswer:
        loop = self.panel.loop
        if _running_loop() is loop:
            raise RecordingError("user.respond() (or first_message()) was called on the event "
                                 "loop: an async system awaits user.arespond(reply) (or "
                                 "user.afirst_message())", case=self.case.id)
        future = asyncio.run_coroutine_threadsafe(self._turn(user), loop)
        try:
            return future.result()
        except CancelledError:
            return TurnAnswer(error="the run stopped while the simulator was asked")

    async def aturn(self, user: SimulatedUser) -> TurnAnswer:
        loop = self.panel.loop
        if _running_loop() is loop:
            return await self._turn(user)
        # (a system running its own event loop in its thread: asked on the panel's)
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(self._turn(user),
                                                                          loop))

    async def _turn(self, user: SimulatedUser) -> TurnAnswer:
        key = turn_key(self.plan.key, user.turns)
        record = self.stored.get(key) or self.panel.kept(key)
        if record is not None:
            return TurnAnswer(SimulatorTurn.model_validate(
                {k: record[k] for k in _TURN_FIELDS if k in record}), cached=True)
        config = self.panel.config(user.simulator)
        spec = user.spec
        request = SimulatorRequest(
            simulator=config.name, case_id=self.case.id, trial=self.trial, seed=self.plan.seed,
            turn=user.user_turns + 1, persona=spec.get("persona"), goal=spec["goal"],
            facts=dict(spec.get("facts") or {}), max_turns=self.plan.max_turns,
            conversation=tuple(dict(t) for t in user.turns),
            instructions=self.plan.instructions,
            messages=simulator_messages(self.plan.instructions, user.turns),
            model=config.model, temperature=config.temperature)
        start = time.perf_counter()
        made, error, calls = await self.panel.ask(config.name, request)
        self.latency_ms += (time.perf_counter() - start) * 1000.0
        self.calls += calls
        if made is None:
            return TurnAnswer(error=error)
        made = {k: v for k, v in made.items() if v is not None}
        self.made.append((self.plan.key, key, made))
        self.panel.keep(key, made)
        return TurnAnswer(SimulatorTurn.model_validate(made))


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


class Users:
    """Each case's user, made when its call starts: scripted from its turns, or simulated
    through this process's panel (None: the suite has no simulators)."""

    def __init__(self, panel: SimulatorPanel | None) -> None:
        self.panel = panel

    def maker(self, case: Case, trial: int, stored: dict[str, dict[str, Any]] | None
              ) -> Callable[[CaseRecorder], User] | None:
        """What makes `case`'s user for its recorder (None: the case has no user)."""
        spec = case.user
        if spec is None:
            return None
        if "turns" in spec:
            turns = list(spec["turns"])
            return lambda recorder: ScriptedUser(recorder, turns)
        panel = self.panel
        assert panel is not None, "a suite whose cases name simulators has a panel"
        name = str(spec["simulator"])
        plan = plan_conversation(case, trial, panel.config(name), panel.digests[name])

        def make(recorder: CaseRecorder) -> User:
            return SimulatedUser(recorder, spec, simulator=name, seed=plan.seed,
                                 instructions=plan.instructions, max_turns=plan.max_turns,
                                 source=Conversation(panel, case, trial, plan, stored),
                                 trial=trial)
        return make


__all__ = ["Conversation", "ConversationPlan", "SimulatorPanel", "Users", "plan_conversation"]
