"""Batches for workers elsewhere, and what happens to them when a worker is lost
(docs/scaling.md#processes-every-core-of-this-machine).

`Dispatch` is the bookkeeping the `processes` and `ray` transports share, with no I/O of its
own: jobs wait in one queue; a worker gets a batch when it has fewer than `IN_FLIGHT` batches
out (two: one running, one ready behind it, so a worker never waits for the coordinator);
results are matched back to their batch; a lost worker's unfinished jobs are sent once more,
each alone to a worker that has nothing else out (so a job that kills its worker takes no
bystander with it the second time) -- a job whose worker is lost a second time comes back as
a `worker_lost` failure (its cases are errored, missing, and not cached).

Batch size. A call per case is too dear (a Ray actor call costs about a millisecond), so
batches hold up to `MAX_BATCH` jobs; but a batch is also the unit of loss and of balance at
the end of a run, so it is sized to about `BATCH_SECONDS` of the worker's measured time per
job, and never more than a fair share of what is left in the queue. The batch behind the one
running is what a worker has to go on with while the coordinator takes its results and sends
the next: it must outlast the coordinator's pauses (planning a chunk of cases, its store's
writer holding the interpreter, its process waiting for a core), some tens of milliseconds.
A case of a cheap CPU-bound system takes a worker process about a quarter of a millisecond, so
64 jobs were 16 ms of work and the workers of the support_agent example ran dry about 12% of
the time (docs/scaling.md#a-cpu-bound-suite); `MAX_BATCH` is 256. The queue is kept stocked
beyond what the workers hold (`ahead`): the engine plans that many more units in advance.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field

from oloproof.errors import ErrorKind
from oloproof.execution.units import CaseError, UnitJob, UnitResult

IN_FLIGHT = 2
MAX_BATCH = 256
BATCH_SECONDS = 0.2


@dataclass
class Batch:
    """Jobs sent to one worker in one go, and those of them not back yet."""

    jobs: dict[int, UnitJob]
    size: int
    retry: bool = False  # a job sent again after a loss, alone
    sent: float = field(default_factory=time.monotonic)
    ahead: int = 0  # jobs the worker had out when this batch was sent (it runs them first)


@dataclass
class _WorkerBatches:
    """One worker as the dispatch sees it: its batches out, and whether it is alive (or dead,
    with a replacement starting)."""

    batches: list[Batch] = field(default_factory=list)
    alive: bool = True
    coming: bool = False  # dead, a replacement starting


class Dispatch:
    """Jobs waiting, batches out per worker, losses counted (see the module docstring)."""

    def __init__(self, workers: int) -> None:
        self._queue: deque[UnitJob] = deque()
        self._retry: deque[UnitJob] = deque()
        self._workers = [_WorkerBatches() for _ in range(workers)]
        self._losses: dict[int, int] = {}
        self.retried = 0
        self._seconds_per_job: float | None = None

    @property
    def workers(self) -> int:
        return len(self._workers)

    @property
    def ahead(self) -> int:
        """How many jobs the workers may hold between them: what the queue should hold
        beyond them so that a batch is never cut short for want of jobs."""
        return len(self._workers) * IN_FLIGHT * MAX_BATCH

    def add(self, jobs: list[UnitJob]) -> None:
        self._queue.extend(jobs)

    @property
    def waiting(self) -> int:
        return len(self._queue) + len(self._retry)

    def busy(self) -> int:
        return sum(1 for s in self._workers if s.alive and s.batches)

    def in_flight(self, worker: int) -> int:
        return sum(len(b.jobs) for b in self._workers[worker].batches)

    def idle(self) -> bool:
        """Nothing waiting and nothing out."""
        return not self.waiting and not any(s.batches for s in self._workers)

    # ---- sending ------------------------------------------------------------------------

    def next_batch(self, worker: int) -> list[UnitJob] | None:
        """The next batch for `worker` if it may take one now (alive, under IN_FLIGHT out)."""
        state = self._workers[worker]
        if not state.alive or any(b.retry for b in state.batches):
            return None
        if self._retry:
            if state.batches:
                return None  # a retry goes to a worker with nothing else out
            job = self._retry.popleft()
            state.batches.append(Batch({job.unit: job}, 1, retry=True))
            return [job]
        if len(state.batches) >= IN_FLIGHT or not self._queue:
            return None
        size = self._batch_size()
        jobs = [self._queue.popleft() for _ in range(min(size, len(self._queue)))]
        ahead = sum(len(b.jobs) for b in state.batches)
        state.batches.append(Batch({job.unit: job for job in jobs}, len(jobs), ahead=ahead))
        return jobs

    def _batch_size(self) -> int:
        alive = max(1, sum(1 for s in self._workers if s.alive))
        fair = math.ceil(len(self._queue) / (IN_FLIGHT * alive))
        if self._seconds_per_job is None:
            by_time = 1  # the first batch measures how long a job takes
        else:
            by_time = int(BATCH_SECONDS / max(self._seconds_per_job, 1e-6))
        return max(1, min(MAX_BATCH, by_time, fair))

    # ---- results and losses -------------------------------------------------------------

    def returned(self, worker: int, results: list[UnitResult]) -> list[UnitResult]:
        """Take results from `worker`; the ones that were still expected (a job sent again
        after a loss may come back twice: the coordinator keeps the first)."""
        state = self._workers[worker]
        for result in results:
            for batch in state.batches:
                if batch.jobs.pop(result.unit, None) is not None:
                    break
        now = time.monotonic()
        done = [b for b in state.batches if not b.jobs]
        for batch in done:
            state.batches.remove(batch)
            self._measure(batch, now)
        return results

    def _measure(self, batch: Batch, now: float) -> None:
        # A batch waits behind the jobs the worker had out when it was sent: its time from
        # sending is theirs and its own. (Divided by its own size alone, the estimate was up to
        # twice the time a job takes, and batches half the size they were meant to be.)
        per_job = (now - batch.sent) / max(1, batch.size + batch.ahead)
        self._seconds_per_job = per_job if self._seconds_per_job is None else (
            0.7 * self._seconds_per_job + 0.3 * per_job)

    def lost(self, worker: int, *, replaced: bool) -> list[UnitResult]:
        """`worker` died: its unfinished jobs are to be sent again, except those that had lost
        a worker before, which fail `worker_lost` (returned). `replaced`: a new
        worker is starting for the slot (`revive` once it is ready); else the slot stays dead."""
        state = self._workers[worker]
        failed: list[UnitResult] = []
        again: list[UnitJob] = []
        for batch in state.batches:
            for job in batch.jobs.values():
                losses = self._losses.get(job.unit, 0) + 1
                self._losses[job.unit] = losses
                if losses >= 2:
                    failed.append(UnitResult(job.unit, [], failure=CaseError(
                        ErrorKind.WORKER_LOST, "the worker running this case was lost twice "
                        "(killed, crashed or out of memory); the case is not cached, so the "
                        "next run tries it again")))
                else:
                    again.append(job)
                    self.retried += len(job.cases)
        state.batches = []
        state.alive, state.coming = False, replaced
        self._retry.extend(again)
        if not any(s.alive or s.coming for s in self._workers):
            # No worker left to try anything: what waits fails as lost.
            while self._retry or self._queue:
                job = (self._retry or self._queue).popleft()
                failed.append(UnitResult(job.unit, [], failure=CaseError(
                    ErrorKind.WORKER_LOST, "every worker of the run was lost; the case is not "
                    "cached, so the next run tries it again")))
        return failed

    def revive(self, worker: int) -> None:
        """A replacement for `worker` is ready."""
        state = self._workers[worker]
        state.alive, state.coming = True, False

    def give_up(self, worker: int) -> list[UnitResult]:
        """The replacement for `worker` could not start: the slot stays dead."""
        return self.lost(worker, replaced=False)


class DispatchedTransport:
    """The half of a `Transport` the `processes` and `ray` transports share: jobs go into a
    `Dispatch`, results come out of one queue. A subclass sends batches (`_pump`), calls
    `_deliver` with what came back, and sets `_broken` if the run cannot go on."""

    def __init__(self, workers: int) -> None:
        self._dispatch = Dispatch(workers)
        self._ready: list[UnitResult] = []
        self._arrived: asyncio.Event | None = None  # made on the run's loop, by `start`
        self._broken: BaseException | None = None

    def _pump(self) -> None:
        raise NotImplementedError

    @property
    def workers(self) -> int:
        return self._dispatch.workers

    @property
    def ahead(self) -> int:
        return self._dispatch.ahead

    def busy(self) -> int:
        return self._dispatch.busy()

    @property
    def retried(self) -> int:
        return self._dispatch.retried

    @property
    def nodes(self) -> list[str] | None:
        return None  # (worker processes run on this machine; Ray's transport says where)

    def submit(self, jobs: Sequence[UnitJob]) -> None:
        self._dispatch.add(list(jobs))
        self._pump()

    async def results(self) -> list[UnitResult]:
        assert self._arrived is not None
        while not self._ready:
            if self._broken is not None:
                raise self._broken
            self._arrived.clear()
            await self._arrived.wait()
        return self.ready()

    def ready(self) -> list[UnitResult]:
        ready, self._ready = self._ready, []
        return ready

    def _deliver(self, results: list[UnitResult]) -> None:
        if results:
            self._ready.extend(results)
            assert self._arrived is not None
            self._arrived.set()
