"""Transports: how unit jobs reach a worker and how its results come back to the coordinator.

The coordinator sees only the `Transport` interface: `submit(jobs)` hands over a batch of
jobs, `await results()` returns the results that are ready (waiting for at least one), and
`await close()` stops. Two local transports run the workers of this process (one, or
`execution.workers` of them on `executor: local`, each with its own system and sandbox):

- `ThreadLanes`, for a sync system: a plain pool of `lanes` threads, started as the first jobs
  arrive, each taking the next job from a shared queue and running its calls and replays
  (`procedure.unit_calls`) in that thread; what the calls returned is kept and judged
  (`procedure.judge_unit`) on the event loop's thread, one unit at a time as the coordinator
  takes the results. So a lane runs the system and little else, as an async system's calls
  do on the loop: a system that reads a file or a socket hands the interpreter to another
  thread at every read, and each hand-over costs more the more a lane runs between them
  (judging on the lanes cost the I/O-doing desk of `benchmarks/case_overhead.py` 9–14% more
  at `concurrency: 8`; measured in `benchmarks/RESULTS.md`). Every call runs on a lane, from
  the first case: real agents block on the network, and `concurrency` threads overlap their
  waits from the start. (A run used to start with one lane and add more when the process
  looked idle; that guess failed whenever anything else in the process was busy —
  importing, loading — and a blocking system then ran at half its concurrency.)
  Calls come back in bulk: a lane wakes the event loop only once `WAKE_AT` units' calls are
  waiting, and the loop collects smaller batches itself every `POLL_SECONDS`, so the
  coordinator takes the interpreter once per batch, not once per case. A lane that finds
  `AHEAD` waiting gives the loop up to `AHEAD_WAIT_SECONDS` to take them before it adds its
  own: lanes that only compute would otherwise pass the interpreter among themselves and run
  a whole chunk ahead of the judging, its trajectories kept alive meanwhile. With
  `timeout_s`, a watchdog thread abandons a call that runs too long and lets a fresh lane
  carry on with the rest of its unit; the abandoned thread keeps the sandbox (if any) until
  its call really returns, then ends.
- `LoopLanes`, for an async system: `lanes` tasks on the event loop, each running units
  whole.

A Stateful worker gets one lane (its cases run one at a time around its sandbox); otherwise a
worker has up to `concurrency` lanes. Lane k serves worker k mod `workers`, so the lanes that
start first are spread over the workers. The `processes` and `ray` executors are transports
too (`pool.py`): they ship jobs in batches to workers elsewhere, each of which runs them on
one of these local transports.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from oloproof.execution.calls import CallResult, ReplayResult
from oloproof.execution.judging import JudgePanel
from oloproof.execution.procedure import (
    Calls,
    Request,
    UnitCalls,
    failed_unit,
    judge_asks,
    judged,
    unit_calls,
)
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.execution.worker import Worker


class Transport(Protocol):
    """Where the coordinator sends jobs that need the system, and gets their results."""

    def submit(self, jobs: Sequence[UnitJob]) -> None:
        """Hand over a batch of jobs (they run in any order)."""
        ...

    async def results(self) -> Iterable[UnitResult]:
        """Every result ready now; waits until there is at least one. (The results may be
        made as they are iterated: take each in turn.)"""
        ...

    def ready(self) -> Iterable[UnitResult]:
        """Every result ready now, without waiting (what finished when a run stops)."""
        ...

    async def close(self) -> None:
        """Stop: no new job starts (a call already running in a thread runs to its end)."""
        ...

    @property
    def workers(self) -> int:
        """How many workers (copies of the system) this transport has."""
        ...

    def busy(self) -> int:
        """How many workers are running a unit now."""
        ...

    @property
    def retried(self) -> int:
        """How many cases were sent again because the worker running them was lost."""
        ...

    @property
    def nodes(self) -> list[str] | None:
        """The ids of the cluster nodes the workers ran on (Ray); None where there are none."""
        ...


def local_transport(workers: Sequence[Worker], concurrency: int,
                    judge_share: int = 1) -> Transport:
    """The transport of the workers in this process: threads for a sync system, tasks for an
    async one; a single lane per worker when it holds a sandbox. A suite with judge criteria
    gets the judges of this process (`judge_share`: how many processes share each judge's
    concurrency)."""
    first = workers[0]
    lanes = 1 if first.stateful else max(1, concurrency)
    panel = JudgePanel.of(first.evaluators, judge_share)
    if first.is_async:
        return LoopLanes(workers, lanes, panel)
    return ThreadLanes(workers, lanes, panel)


class _Judging:
    """The judge calls of a transport's units (docs/judges.md): a unit whose calls came back
    and whose judge criteria still need a verdict is sent to its judges in a task of its own,
    so the lanes go on with the next units while the judges answer (the judges' concurrency
    bounds their calls, not the lanes); once answered, it is handed back to be judged."""

    def __init__(self, panel: JudgePanel, done: Callable[[UnitCalls | UnitResult], None]
                 ) -> None:
        self.panel = panel
        self._done = done
        self._tasks: set[asyncio.Task[None]] = set()

    def send(self, item: UnitCalls) -> bool:
        """Send the unit to its judges if it needs any (True), else leave it (False)."""
        asks = judge_asks(item, self.panel)
        if not asks:
            return False
        task = asyncio.get_running_loop().create_task(self._answer(item, asks))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return True

    async def _answer(self, item: UnitCalls, asks: Any) -> None:
        try:
            await self.panel.answer(asks)
        except Exception as exc:  # an engine bug must not lose the unit: its cases error
            self._done(failed_unit(item.job, exc))
            return
        self._done(item)

    async def close(self) -> None:
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.panel.close()


class _Busy:
    """How many units each worker is running (read by the progress display)."""

    def __init__(self, workers: int) -> None:
        self._running = [0] * workers
        self._lock = threading.Lock()

    def start(self, worker: int) -> None:
        with self._lock:
            self._running[worker] += 1

    def stop(self, worker: int) -> None:
        with self._lock:
            self._running[worker] -= 1

    def count(self) -> int:
        return sum(1 for n in self._running if n > 0)


# A lane wakes the event loop once this many results wait; smaller batches are collected by the
# loop itself every POLL_SECONDS (a result waits at most that long). A lane that finds AHEAD
# waiting waits up to AHEAD_WAIT_SECONDS for the loop to take them (never longer: a loop that
# is gone must not hold a lane).
WAKE_AT = 64
POLL_SECONDS = 0.005
AHEAD = 64
AHEAD_WAIT_SECONDS = 0.05


Item = TypeVar("Item")


class _Outbox(Generic[Item]):
    """What waits for the coordinator (results, or units' calls to judge), and the wake-ups
    that tell it about them.

    An item put from the loop's own thread (an async lane) wakes the coordinator at once; one
    put from another thread wakes it only when `WAKE_AT` are waiting, the coordinator looking
    for smaller batches every `POLL_SECONDS` while it waits; and one put from another thread
    while `AHEAD` are waiting first gives the coordinator up to `AHEAD_WAIT_SECONDS` to take
    them.
    """

    def __init__(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._lock = threading.Lock()
        self._room = threading.Condition(self._lock)
        self._items: list[Item] = []
        self._wake_pending = False
        self._waiter: asyncio.Future[None] | None = None

    def put(self, item: Item) -> None:
        """From any thread: add an item; wake the loop when it is time to."""
        if threading.get_ident() == self._loop_thread:
            with self._lock:
                self._items.append(item)
            self._wake()
            return
        with self._room:
            if len(self._items) >= AHEAD:
                self._room.wait(AHEAD_WAIT_SECONDS)
            self._items.append(item)
            if self._wake_pending or len(self._items) < WAKE_AT:
                return
            self._wake_pending = True
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run was stopped
            self._loop.call_soon_threadsafe(self._wake)

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def ready(self) -> list[Item]:
        with self._room:
            items, self._items = self._items, []
            self._wake_pending = False
            self._room.notify_all()
        return items

    async def take(self) -> list[Item]:
        """The items ready, waiting until there is one (looking at least every
        POLL_SECONDS)."""
        while True:
            items = self.ready()
            if items:
                return items
            self._waiter = self._loop.create_future()
            poll = self._loop.call_later(POLL_SECONDS, self._wake)
            try:
                await self._waiter
            finally:
                poll.cancel()
                self._waiter = None


# ---- sync systems: threads that run units' calls -----------------------------------------------

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


class ThreadLanes:
    """`lanes` threads per worker running the calls of sync workers' units, judged on the
    event loop's thread (see the module docstring)."""

    def __init__(self, workers: Sequence[Worker], lanes: int,
                 panel: JudgePanel | None = None) -> None:
        self._workers = list(workers)
        self.worker = self._workers[0]  # what every worker shares: timeout, evaluators
        self.lanes = lanes * len(self._workers)
        self._busy = _Busy(len(self._workers))
        self._jobs: queue.SimpleQueue[UnitJob | None] = queue.SimpleQueue()
        self._outbox: _Outbox[UnitCalls | UnitResult] = _Outbox()
        self._started = 0
        self._closed = False
        self._running: dict[int, _Running] = {}
        self._running_lock = threading.Lock()
        self._lanes_lock = threading.Lock()  # starting lanes and closing, one at a time
        self._watchdog: threading.Thread | None = None
        self._judging = None if panel is None else _Judging(panel, self._outbox.put)

    @property
    def workers(self) -> int:
        return len(self._workers)

    def busy(self) -> int:
        return self._busy.count()

    @property
    def retried(self) -> int:
        return 0  # a worker in this process is never lost without the process

    @property
    def nodes(self) -> list[str] | None:
        return None

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


# ---- async systems: tasks on the loop ---------------------------------------------------------


class LoopLanes:
    """`lanes` tasks per worker on the event loop running whole units of async workers (an
    async Stateful system with 32 workers runs 32 sandboxes at once on this one loop)."""

    def __init__(self, workers: Sequence[Worker], lanes: int,
                 panel: JudgePanel | None = None) -> None:
        self._workers = list(workers)
        self.lanes = lanes * len(self._workers)
        self._jobs: asyncio.Queue[UnitJob | None] = asyncio.Queue()
        self._outbox: _Outbox[UnitResult] = _Outbox()
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._busy = _Busy(len(self._workers))
        self._judging = None if panel is None else _Judging(panel, self._judged)

    def _judged(self, item: UnitCalls | UnitResult) -> None:
        self._outbox.put(judged(item, self._workers[0].evaluators))

    def submit(self, jobs: Sequence[UnitJob]) -> None:
        for job in jobs:
            self._jobs.put_nowait(job)
        while len(self._tasks) < min(self.lanes, len(self._tasks) + len(jobs)):
            at = len(self._tasks) % len(self._workers)
            self._tasks.append(asyncio.create_task(self._serve(at)))

    async def results(self) -> list[UnitResult]:
        return await self._outbox.take()

    def ready(self) -> list[UnitResult]:
        return self._outbox.ready()

    @property
    def workers(self) -> int:
        return len(self._workers)

    def busy(self) -> int:
        return self._busy.count()

    @property
    def retried(self) -> int:
        return 0

    @property
    def nodes(self) -> list[str] | None:
        return None

    async def close(self) -> None:
        # A cancellation can be swallowed (3.11's `wait_for` returns a result that was ready
        # instead of raising), so a lane also stops at the flag or at its end-of-jobs marker.
        self._closed = True
        for task in self._tasks:
            task.cancel()
            self._jobs.put_nowait(None)
        await asyncio.gather(*self._tasks, return_exceptions=True)
        if self._judging is not None:
            await self._judging.close()

    async def _serve(self, at: int) -> None:
        worker = self._workers[at]
        while not self._closed:
            job = await self._jobs.get()
            if job is None or self._closed:
                return
            self._busy.start(at)
            judging = self._judging
            try:
                if judging is None:
                    result = await worker.run_unit_async(job)
                else:  # judge calls go on beside the lanes (`_Judging`)
                    called = await worker.run_calls_async(job)
                    if isinstance(called, UnitCalls) and judging.send(called):
                        continue
                    result = judged(called, worker.evaluators)
            finally:
                self._busy.stop(at)
            self._outbox.put(result)
