"""The shared part of every transport: the `Transport` interface the coordinator reads, and
what the local transports share (`LocalLanes`, their workers and which of them are busy;
`Outbox`, the hand-over of results to the event loop; `Judging`, judge calls beside the lanes).

A transport is how unit jobs reach a worker and how its results come back to the coordinator:
`submit(jobs)` hands over a batch of jobs, `await results()` returns the results that are ready
(waiting for at least one), and `await close()` stops. The implementations are the package's
other modules, one transport each (`execution/transports/__init__.py` lists them).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Generic, Protocol, TypeVar

from oloproof.execution.judging import JudgePanel
from oloproof.execution.procedure import UnitCalls, failed_unit, judge_asks
from oloproof.execution.simulating import SimulatorPanel
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

    @property
    def ahead(self) -> int:
        """How many more jobs than a chunk the coordinator should have handed over and not
        yet taken back: what workers elsewhere hold between them (0 in this process)."""
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


class Judging:
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


class Busy:
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


class LocalLanes:
    """What the transports of this process's workers share: the workers, `lanes` per worker,
    which workers are running a unit (`Busy`), and the simulators that play their cases'
    users (closed with the transport)."""

    def __init__(self, workers: Sequence[Worker], lanes: int,
                 simulators: SimulatorPanel | None = None) -> None:
        self._workers = list(workers)
        self.lanes = lanes * len(self._workers)
        self._busy = Busy(len(self._workers))
        self._simulators = simulators

    async def close_simulators(self) -> None:
        """Close the simulators' clients (once every call is done with them)."""
        if self._simulators is not None:
            simulators, self._simulators = self._simulators, None
            await simulators.close()

    @property
    def workers(self) -> int:
        return len(self._workers)

    def busy(self) -> int:
        return self._busy.count()

    @property
    def ahead(self) -> int:
        return 0  # (jobs wait in this process's own queue, taken as a lane is free)

    @property
    def retried(self) -> int:
        return 0  # a worker in this process is never lost without the process

    @property
    def nodes(self) -> list[str] | None:
        return None


# A lane wakes the event loop once this many results wait; smaller batches are collected by the
# loop itself every POLL_SECONDS (a result waits at most that long). A lane that finds AHEAD
# waiting waits up to AHEAD_WAIT_SECONDS for the loop to take them (never longer: a loop that
# is gone must not hold a lane).
WAKE_AT = 64
POLL_SECONDS = 0.005
AHEAD = 64
AHEAD_WAIT_SECONDS = 0.05


Item = TypeVar("Item")


class Outbox(Generic[Item]):
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
