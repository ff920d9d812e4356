"""`ThreadLanes`: the transport of a sync system's workers in this process, on threads.

A plain pool of `lanes` threads, started as the first jobs arrive, each taking the next job
from a shared queue and running its calls and replays (`procedure.unit_calls`) in that thread;
what the calls returned is kept and judged (`procedure.judge_unit`) on the event loop's thread,
one unit at a time as the coordinator takes the results. So a lane runs the system and little
else, as an async system's calls do on the loop: a system that reads a file or a socket hands
the interpreter to another thread at every read, and each hand-over costs more the more a lane
runs between them (judging on the lanes cost the I/O-doing desk of
`benchmarks/case_overhead.py` 9–14% more at `concurrency: 8`; measured in
`benchmarks/RESULTS.md`). Every call runs on a lane, from the first case: real agents block on
the network, and `concurrency` threads overlap their waits from the start. (A run used to start
with one lane and add more when the process looked idle; that guess failed whenever anything
else in the process was busy — importing, loading — and a blocking system then ran at half its
concurrency.)

Calls come back in bulk, through `base.Outbox`: a lane wakes the event loop only once
`WAKE_AT` units' calls are waiting, and the loop collects smaller batches itself every
`POLL_SECONDS`, so the coordinator takes the interpreter once per batch, not once per case. A
lane that finds `AHEAD` waiting gives the loop up to `AHEAD_WAIT_SECONDS` to take them before
it adds its own: lanes that only compute would otherwise pass the interpreter among themselves
and run a whole chunk ahead of the judging, its trajectories kept alive meanwhile. With
`timeout_s`, a watchdog thread abandons a call that runs too long and lets a fresh lane carry
on with the rest of its unit; the abandoned thread keeps the sandbox (if any) until its call
really returns, then ends.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from oloproof.execution.calls import CallResult, ReplayResult
from oloproof.execution.judging import JudgePanel
from oloproof.execution.procedure import (
    Calls,
    Request,
    UnitCalls,
    failed_unit,
    judged,
    unit_calls,
)
from oloproof.execution.transports.base import Judging, LocalLanes, Outbox
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.execution.worker import Worker

_ABANDONED = object()


@dataclass(slots=True)
class _Running:
    """A call in flight on a lane, for the watchdog."""

    deadline: float
    request: Request
    calls: Calls
    job: UnitJob
    worker: int
    abandoned: bool = False


class ThreadLanes(LocalLanes):
    """`lanes` threads per worker running the calls of sync workers' units, judged on the
    event loop's thread (see the module docstring)."""

    def __init__(self, workers: Sequence[Worker], lanes: int,
                 panel: JudgePanel | None = None) -> None:
        super().__init__(workers, lanes)
        self.worker = self._workers[0]  # what every worker shares: timeout, evaluators
        self._jobs: queue.SimpleQueue[UnitJob | None] = queue.SimpleQueue()
        self._outbox: Outbox[UnitCalls | UnitResult] = Outbox()
        self._started = 0
        self._closed = False
        self._running: dict[int, _Running] = {}
        self._running_lock = threading.Lock()
        self._lanes_lock = threading.Lock()  # starting lanes and closing, one at a time
        self._watchdog: threading.Thread | None = None
        self._judging = None if panel is None else Judging(panel, self._outbox.put)

    def submit(self, jobs: Sequence[UnitJob]) -> None:
        for job in jobs:
            self._jobs.put(job)
        for _ in range(min(len(jobs), self.lanes - self._started)):
            self._start_lane(None)
        if self._watchdog is None and self.worker.timeout_s is not None:
            self._watchdog = threading.Thread(target=self._watch, name="oloproof-watchdog",
                                            daemon=True)
            self._watchdog.start()

    async def results(self) -> Iterator[UnitResult]:
        return self._judged(await self._outbox.take())

    def ready(self) -> Iterator[UnitResult]:
        return self._judged(self._outbox.ready())

    def _judged(self, items: list[UnitCalls | UnitResult]) -> Iterator[UnitResult]:
        """Each unit's result, judged on this (the loop's) thread as the coordinator takes it:
        a unit's calls are let go once it is judged, so no more than one unit's judgments and
        trajectories are alive beside what still waits."""
        evaluators = self.worker.evaluators
        judging = self._judging
        items.reverse()
        while items:
            item = items.pop()
            if judging is not None and isinstance(item, UnitCalls) and judging.send(item):
                continue  # (back in the outbox once its judges have answered)
            yield judged(item, evaluators)

    async def close(self) -> None:
        with self._lanes_lock:
            self._closed = True
            for _ in range(self._started):
                self._jobs.put(None)
        if self._judging is not None:
            await self._judging.close()

    # ---- a lane ------------------------------------------------------------------------

    def _start_lane(self, resume: tuple[Calls, UnitJob, Any, int] | None) -> None:
        with self._lanes_lock:
            if self._closed:
                return  # (each started lane gets one end-of-jobs marker at close)
            # A new lane serves the next worker in turn; a lane that carries on after a
            # timeout serves the worker of the lane it replaces (whose sandbox it waits for).
            worker = self._started % len(self._workers) if resume is None else resume[3]
            if resume is None:
                self._started += 1
            thread = threading.Thread(target=self._serve, args=(worker, resume),
                                      name="oloproof-case", daemon=True)
            thread.start()

    def _serve(self, at: int, resume: tuple[Calls, UnitJob, Any, int] | None) -> None:
        worker = self._workers[at]
        if resume is not None:  # carry on with the unit of a lane whose call timed out
            calls, job, response, _ = resume
            if not self._finish(at, calls, job, response):
                return
        while True:
            next_job = self._jobs.get()
            if next_job is None or self._closed:
                return
            self._busy.start(at)
            if worker.timeout_s is None:
                self._outbox.put(worker.run_calls(next_job))
                self._busy.stop(at)
            elif not self._finish(at, unit_calls(next_job), next_job, None, started=True):
                return

    def _finish(self, at: int, calls: Calls, job: UnitJob, response: Any,
                started: bool = False) -> bool:
        """Drive a unit to its end under the watchdog; False if this lane was abandoned
        (the lane that takes the unit on counts it busy from then on)."""
        if not started:
            self._busy.start(at)
        try:
            request = next(calls) if response is None else calls.send(response)
            while True:
                outcome = self._watched(at, request, calls, job)
                if outcome is _ABANDONED:
                    self._busy.stop(at)
                    return False
                request = calls.send(outcome)
        except StopIteration as done:
            self._outbox.put(done.value)
        except Exception as exc:  # an engine bug must not stop the run: the unit errors
            self._outbox.put(failed_unit(job, exc))
        self._busy.stop(at)
        return True

    def _watched(self, at: int, request: Request, calls: Calls, job: UnitJob) -> Any:
        worker = self._workers[at]
        assert worker.timeout_s is not None
        me = threading.get_ident()
        # The clock starts once the sandbox is held: waiting for a timed-out call to give it
        # back is not this call's time, nor is a backoff under system.retries. An abandoned
        # call keeps the sandbox (and its place among the calls in flight) until it returns.
        slot = worker.wait_turn(request)
        try:
            with worker.sandbox:
                running = _Running(time.monotonic() + worker.timeout_s, request, calls, job, at)
                with self._running_lock:
                    self._running[me] = running
                try:
                    outcome: CallResult | ReplayResult = worker.settle(
                        request, worker.perform_holding_sandbox(request), slot)
                finally:
                    with self._running_lock:
                        self._running.pop(me, None)
        finally:
            if slot is not None:
                slot.finish()
        return _ABANDONED if running.abandoned else outcome

    # ---- the watchdog: timeouts ------------------------------------------------------------

    def _watch(self) -> None:
        """Abandon calls past `timeout_s`; a new lane takes their unit on from there."""
        assert self.worker.timeout_s is not None
        tick = min(0.05, max(0.005, self.worker.timeout_s / 20))
        while not self._closed:
            time.sleep(tick)
            self._abandon_late(time.monotonic())

    def _abandon_late(self, now: float) -> None:
        with self._running_lock:
            late = [(ident, r) for ident, r in self._running.items() if r.deadline <= now]
            for ident, running in late:
                running.abandoned = True
                del self._running[ident]
        for _, running in late:
            self._start_lane((running.calls, running.job,
                              self.worker.timed_out(running.request), running.worker))
