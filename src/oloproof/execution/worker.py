"""A worker: one copy of the system with its own sandbox (docs/scaling.md#configuration).

A worker performs what a unit's procedure asks for -- one case around the sandbox (reset →
call → snapshot) or one replay -- and runs a unit's calls (`run_calls`, whose judging is the
caller's) or units whole (`run_unit`, `run_unit_async`).
Where units come from and where results go is the transport's business (`transports/`); a
worker neither knows the store nor the coordinator.

A Stateful worker has one sandbox, so its cases run one at a time; its lock is held from
`reset` until `snapshot` has returned, and a sync call that timed out keeps it until the call
really returns (a thread cannot be killed), so a late write can never land in another case's
state.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine, Sequence
from contextlib import AbstractContextManager
from typing import Any

from oloproof.evaluators.base import Evaluator
from oloproof.execution.calls import (
    CallResult,
    MakeUser,
    ReplayResult,
    call_async,
    call_sync,
    replay_async,
    replay_sync,
    replay_timed_out,
    timed_out,
)
from oloproof.execution.procedure import (
    CallRequest,
    Request,
    Response,
    UnitCalls,
    failed_unit,
    judged,
    unit_calls,
)
from oloproof.execution.replays import ReplayRequest
from oloproof.execution.resets import StateCopies
from oloproof.execution.retries import RetryPolicy, Slot, Throttle
from oloproof.execution.simulating import Users
from oloproof.execution.target import SystemTarget
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.suite.case import Case
from oloproof.suite.config import SimulatorConfig


class Worker:
    """One copy of the system and its sandbox, with the suite's evaluators to judge by."""

    def __init__(self, target: SystemTarget, evaluators: Sequence[Evaluator],
                 timeout_s: float | None, copies: StateCopies | None = None, *,
                 retries: RetryPolicy | None = None, throttle: Throttle | None = None,
                 simulators: Sequence[SimulatorConfig] = ()) -> None:
        self.target = target
        # What plays the cases' simulated users (docs/conversations.md): the transport gives
        # the worker its process's panel of them (`users`); a scripted user needs none.
        self.simulators = tuple(simulators)
        self.users = Users(None)
        # `system.retries` (docs/failures.md#retries): which failures are tried again, and the
        # throttle every call of this system in this process starts through (None: neither).
        self.retries = retries
        self.throttle = throttle if throttle is not None or retries is None else Throttle()
        self.evaluators = list(evaluators)
        self.timeout_s = timeout_s
        self.is_async = target.is_async
        self.stateful = target.stateful is not None
        # Held from reset until snapshot (a no-op without a sandbox).
        self.sandbox: AbstractContextManager[Any] = (
            threading.Lock() if self.stateful else contextlib.nullcontext())
        self.copies = copies if copies is not None else StateCopies()
        self.calls = 0

    def fresh_state(self, case: Case) -> dict[str, Any] | None:
        """A private copy of the case's initial state for `reset` (None: not Stateful): a
        copy-on-write copy of a state shared by `$ref` (`resets.py`)."""
        if not self.stateful:
            return None
        return self.copies.fresh(case)

    # ---- sync systems (in a thread) ---------------------------------------------------------

    def perform(self, request: Request) -> CallResult | ReplayResult:
        """Do one request of a unit's procedure, holding the sandbox (no timeout here: a
        thread transport enforces it from outside, see `transports.threads.ThreadLanes`)."""
        slot = self.wait_turn(request)
        try:
            if not self.stateful:  # no sandbox: nothing to hold
                return self.settle(request, self.perform_holding_sandbox(request), slot)
            with self.sandbox:
                return self.settle(request, self.perform_holding_sandbox(request), slot)
        finally:
            if slot is not None:
                slot.finish()

    # ---- retries (docs/failures.md#retries) -----------------------------------------------

    def wait_turn(self, request: Request) -> Slot | None:
        """Under `system.retries`: wait (this thread) until the request may start -- its
        backoff has passed, no rate limit's pause runs, and the calls in flight allow one
        more -- and take a slot (`finish()` it once the call has returned). None otherwise."""
        if self.throttle is None:
            return None
        return self.throttle.start(request.not_before)

    async def wait_turn_async(self, request: Request) -> Slot | None:
        """`wait_turn`, awaited on the loop."""
        if self.throttle is None:
            return None
        return await self.throttle.start_async(request.not_before)

    def settle(self, request: Request, result: Response, slot: Slot | None) -> Response:
        """Whether a failed attempt is tried again: `result.retry_in` set to the backoff when
        the policy retries what it raised; a rate limit pauses every new call of the system
        (before the slot is given back, so no call slips in)."""
        retries = self.retries
        if retries is None or result.raised is None:
            return result
        wait = retries.backoff(result.raised, request.attempt)
        if wait is not None:
            result.retry_in = wait.seconds
            if wait.rate_limited and self.throttle is not None:
                self.throttle.pause(wait.seconds, slot.others if slot is not None else 0)
        return result

    def perform_holding_sandbox(self, request: Request) -> CallResult | ReplayResult:
        """`perform`, for a caller that already holds `sandbox`."""
        case = request.case
        state = self.fresh_state(case)
        base = self.copies.diff_base(case) if self.stateful else None
        if isinstance(request, CallRequest):
            self.calls += 1
            return call_sync(self.target, case, state, request.trial, request.trials, base,
                             self._user(request), request.variant)
        return replay_sync(self.target, case, state, request.recorded, request.checkpoint,
                           request.change, request.trial, request.trials, base,
                           request.variant)

    def _user(self, request: CallRequest) -> MakeUser | None:
        """What makes the case's user (None: the case holds no conversation)."""
        case = request.case
        if case.user is None:
            return None
        return self.users.maker(case, request.trial, request.turns)

    def run_unit(self, job: UnitJob) -> UnitResult:
        """Run one unit whole in this thread (a sync system, no timeout)."""
        return judged(self.run_calls(job), self.evaluators)

    def run_calls(self, job: UnitJob) -> UnitCalls | UnitResult:
        """Run one unit's calls and replays in this thread (a sync system, no timeout),
        leaving its judging to the caller (`procedure.judged`); a unit that could not be run
        comes back as its result, every case errored."""
        calls = unit_calls(job)
        try:
            request = next(calls)
            while True:
                request = calls.send(self.perform(request))
        except StopIteration as done:
            called: UnitCalls = done.value
            return called
        except Exception as exc:  # an engine bug must not stop the run: the unit errors
            return failed_unit(job, exc)

    def timed_out(self, request: Request) -> CallResult | ReplayResult:
        """What a request that did not finish within `timeout_s` comes back as (retried when
        the policy retries a TimeoutError)."""
        if isinstance(request, CallRequest):
            return self.settle(request, timed_out(self.timeout_s), None)
        return self.settle(request, replay_timed_out(self.timeout_s), None)

    # ---- async systems (on the event loop) ------------------------------------------------

    async def perform_async(self, request: Request) -> CallResult | ReplayResult:
        """Do one request of a unit's procedure on the loop, within `timeout_s`.

        An async Stateful worker runs one unit at a time (one lane), so its sandbox needs no
        lock: a timed-out call is cancelled, and `wait_for` returns only once it has ended.
        """
        # (the turn first: a backoff or a rate limit's pause is not the call's time)
        slot = await self.wait_turn_async(request) if self.throttle is not None else None
        try:
            case = request.case
            state = self.fresh_state(case)
            base = self.copies.diff_base(case) if self.stateful else None
            work: Coroutine[Any, Any, CallResult | ReplayResult]
            if isinstance(request, CallRequest):
                self.calls += 1
                work = call_async(self.target, case, state, request.trial, request.trials,
                                  base, self._user(request), request.variant)
            else:
                assert isinstance(request, ReplayRequest)
                work = replay_async(self.target, case, state, request.recorded,
                                    request.checkpoint, request.change, request.trial,
                                    request.trials, base, request.variant)
            if self.timeout_s is None:
                return self.settle(request, await work, slot)
            try:
                return self.settle(request, await asyncio.wait_for(work, self.timeout_s), slot)
            except TimeoutError:
                return self.timed_out(request)
        finally:
            if slot is not None:
                slot.finish()

    async def run_unit_async(self, job: UnitJob) -> UnitResult:
        """Run one unit whole on the event loop (an async system)."""
        return judged(await self.run_calls_async(job), self.evaluators)

    async def run_calls_async(self, job: UnitJob) -> UnitCalls | UnitResult:
        """Run one unit's calls and replays on the event loop (an async system), leaving its
        judging to the caller, as `run_calls` does for a sync one."""
        calls = unit_calls(job)
        try:
            request = next(calls)
            while True:
                request = calls.send(await self.perform_async(request))
        except StopIteration as done:
            called: UnitCalls = done.value
            return called
        except Exception as exc:  # an engine bug must not stop the run: the unit errors
            return failed_unit(job, exc)
