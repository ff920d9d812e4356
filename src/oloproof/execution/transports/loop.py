"""`LoopLanes`: the transport of an async system's workers in this process, on the event loop.

`lanes` tasks per worker, each running units whole (`Worker.run_unit_async`); results go to the
coordinator through `base.Outbox`, and a unit whose judge criteria need a verdict is handed to
`base.Judging` so the lanes go on meanwhile.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from oloproof.execution.judging import JudgePanel
from oloproof.execution.procedure import UnitCalls, judged
from oloproof.execution.transports.base import Judging, LocalLanes, Outbox
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.execution.worker import Worker


class LoopLanes(LocalLanes):
    """`lanes` tasks per worker on the event loop running whole units of async workers (an
    async Stateful system with 32 workers runs 32 sandboxes at once on this one loop)."""

    def __init__(self, workers: Sequence[Worker], lanes: int,
                 panel: JudgePanel | None = None) -> None:
        super().__init__(workers, lanes)
        self._jobs: asyncio.Queue[UnitJob | None] = asyncio.Queue()
        self._outbox: Outbox[UnitResult] = Outbox()
        self._tasks: list[asyncio.Task[None]] = []
        self._closed = False
        self._judging = None if panel is None else Judging(panel, self._judged)

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
                else:  # judge calls go on beside the lanes (`Judging`)
                    called = await worker.run_calls_async(job)
                    if isinstance(called, UnitCalls) and judging.send(called):
                        continue
                    result = judged(called, worker.evaluators)
            finally:
                self._busy.stop(at)
            self._outbox.put(result)
