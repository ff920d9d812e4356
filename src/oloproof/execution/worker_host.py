"""A worker away from the coordinator: a worker process (`transports/processes.py`) or a
Ray actor (`transports/ray.py`) holding one copy of the system with its own sandbox.

It loads the system and the evaluators itself, from the suite file (`WorkerSpec`), receives
parcels of jobs (`shipping.py`) and runs them on a local transport over its one worker, as
`executor: local` would in the coordinator's process -- so timeouts are enforced here, where
the case runs, by the same watchdog, and a sync call that timed out keeps the sandbox until
it really returns.
"""

from __future__ import annotations

import asyncio
import traceback
from collections.abc import Callable
from dataclasses import dataclass

from oloproof.errors import ConfigError
from oloproof.evaluators.base import Evaluator
from oloproof.execution.retries import RetryPolicy, Throttle
from oloproof.execution.shipping import Parcel, StateHolder
from oloproof.execution.target import SystemTarget
from oloproof.execution.transports import Transport, local_transport
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.execution.worker import Worker

#: What a loader returns: the system (one copy), the suite's evaluators in order, the timeout,
#: the concurrency per worker and the retry policy (`system.retries`).
WorkerParts = tuple[SystemTarget, list[Evaluator], float | None, int, RetryPolicy | None]


@dataclass(frozen=True)
class WorkerSpec:
    """How a worker elsewhere loads what the coordinator loaded.

    `loader` is a module-level function (it crosses by reference), called with `config` (the
    suite file) and `project_dir` (None on a cluster node: the shipped working directory).
    """

    loader: Callable[[str, str | None], WorkerParts]
    config: str
    project_dir: str | None
    concurrency: int | None = None
    # How many workers share each judge's concurrency (docs/judges.md): each takes its part.
    judge_share: int = 1


@dataclass(frozen=True)
class LoadFailure:
    """Why a worker could not load the system: a configuration error, with its place."""

    message: str
    file: str | None = None
    line: int | None = None

    @classmethod
    def of(cls, exc: BaseException) -> LoadFailure:
        if isinstance(exc, ConfigError):
            return cls(exc.message, None if exc.file is None else str(exc.file), exc.line)
        detail = "".join(traceback.format_exception_only(type(exc), exc)).strip()
        return cls(f"the worker could not load the system: {detail}")

    def error(self, where: str) -> ConfigError:
        """The ConfigError to raise in the coordinator (`where`: which worker said so)."""
        return ConfigError(f"{self.message} ({where})", file=self.file, line=self.line)


class WorkerHost:
    """One worker's system, sandbox and states, and the local transport its jobs run on."""

    def __init__(self, spec: WorkerSpec) -> None:
        target, evaluators, timeout_s, concurrency, retries = spec.loader(spec.config,
                                                                          spec.project_dir)
        # (the rate-limit pause is this process's own: docs/failures.md#retries)
        self.worker = Worker(target, evaluators, timeout_s, retries=retries,
                             throttle=Throttle() if retries is not None else None)
        self.concurrency = spec.concurrency or concurrency
        self.judge_share = spec.judge_share
        self.holder = StateHolder()
        self._arrived: asyncio.Condition | None = None  # a parcel's states came in
        self._transport: Transport | None = None
        self._waiting: dict[int, asyncio.Future[UnitResult]] = {}
        self._collector: asyncio.Task[None] | None = None

    @property
    def transport(self) -> Transport:
        """The local transport over this worker (made on first use, on the running loop)."""
        if self._transport is None:
            self._transport = local_transport([self.worker], self.concurrency,
                                              self.judge_share)
        return self._transport

    def submit(self, parcel: Parcel) -> None:
        """Start the parcel's jobs; their results come out of `transport.results()`."""
        self.transport.submit(self.holder.unpack(parcel))

    async def run_batch(self, parcel: Parcel) -> list[UnitResult]:
        """Run a parcel's jobs and return their results, in the parcel's order (several
        batches may be running at once: results are routed to the batch they belong to)."""
        self.holder.receive(parcel)
        if self._arrived is None:
            self._arrived = asyncio.Condition()
        async with self._arrived:
            self._arrived.notify_all()
            await self._arrived.wait_for(lambda: not self.holder.lacks(parcel))
        jobs: list[UnitJob] = self.holder.unpack(parcel)
        loop = asyncio.get_running_loop()
        futures = [loop.create_future() for _ in jobs]
        for job, future in zip(jobs, futures, strict=True):
            self._waiting[job.unit] = future
        self.transport.submit(jobs)
        if self._collector is None or self._collector.done():
            self._collector = asyncio.create_task(self._collect())
        return list(await asyncio.gather(*futures))

    async def _collect(self) -> None:
        while self._waiting:
            for result in await self.transport.results():
                future = self._waiting.pop(result.unit, None)
                if future is not None and not future.done():
                    future.set_result(result)

    async def close(self) -> None:
        if self._transport is not None:
            await self._transport.close()

