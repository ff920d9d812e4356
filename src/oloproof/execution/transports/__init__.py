"""Transports: how unit jobs reach workers and how their results come back to the coordinator,
one transport per module, each behind the `Transport` interface of `base.py`.

The coordinator sees only that interface (`submit(jobs)`, `await results()`, `ready()`,
`await close()`). `open_transport` starts the workers a run's executor asks for:

- `local`: the suite's systems (one per worker, from `system.factory`) in this process, behind
  `local_transport`: `threads.ThreadLanes` for a sync system (threads that run the calls,
  judged on the event loop's thread), `loop.LoopLanes` for an async one (tasks on this event
  loop). A Stateful worker gets one lane (its cases run one at a time around its sandbox);
  otherwise a worker has up to `concurrency` lanes. Lane k serves worker k mod `workers`, so
  the lanes that start first are spread over the workers.
- `processes`: one worker process per worker on this machine (`processes.ProcessWorkers`).
- `ray`: one Ray actor per worker, on a local Ray instance or a cluster (`ray.RayWorkers`).

The last two ship jobs in batches to workers elsewhere (`dispatched.py`: the batches out per
worker, a lost worker's jobs sent again), each of which runs them on one of the local
transports. Workers elsewhere are started before the run is registered, and each must report
that it loaded the system and the evaluators before any case is sent, so a system that cannot
be imported there, a factory that raises or a cluster that cannot be reached is a
configuration error, with nothing run and nothing stored. Their modules are imported only by a
run that uses them.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from oloproof.errors import ConfigError
from oloproof.execution.judging import JudgePanel, VerdictLookup
from oloproof.execution.resets import StateCopies
from oloproof.execution.retries import Throttle
from oloproof.execution.simulating import SimulatorPanel, Users
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.execution.transports.base import Transport
from oloproof.execution.transports.loop import LoopLanes
from oloproof.execution.transports.threads import ThreadLanes
from oloproof.execution.worker import Worker

if TYPE_CHECKING:
    from oloproof.execution.process_start import StartedProcess


def local_transport(workers: Sequence[Worker], concurrency: int,
                    judge_share: int = 1, verdicts: VerdictLookup | None = None) -> Transport:
    """The transport of the workers in this process: threads for a sync system, tasks for an
    async one; a single lane per worker when it holds a sandbox. A suite with judge criteria
    gets the judges of this process (`judge_share`: how many processes share each judge's
    concurrency, and each simulator's; `verdicts`: the store's judge cache, in the
    coordinator's process), a suite with simulators the simulators of this process, which
    play its workers' simulated users (docs/conversations.md)."""
    first = workers[0]
    lanes = 1 if first.stateful else max(1, concurrency)
    panel = JudgePanel.of(first.evaluators, judge_share, verdicts)
    simulators = SimulatorPanel.of(first.simulators, judge_share)
    if simulators is not None:
        for worker in workers:
            worker.users = Users(simulators)
    if first.is_async:
        return LoopLanes(workers, lanes, panel, simulators)
    return ThreadLanes(workers, lanes, panel, simulators)


async def open_transport(suite: SuiteToRun, concurrency: int | None = None,
                         verdicts: VerdictLookup | None = None,
                         started: list[StartedProcess] | None = None) -> Transport:
    """The started workers of the suite's executor (`suite.execution`); `verdicts` is the
    store's judge cache, which the judges of `executor: local` look a fresh execution's verdict
    up in (workers elsewhere have no store: docs/judges.md#the-judge-cache). `started`: worker
    processes started while the suite loaded (`process_start.take_started`), which `processes`
    takes on."""
    execution = suite.execution
    system = suite.config.system
    lanes = concurrency or system.concurrency
    if execution.executor == "local":
        copies = StateCopies()  # one copy of each `$ref` base for all the workers
        # One throttle for all of them: they are one system, called from one process.
        throttle = Throttle() if suite.retries is not None else None
        workers = [Worker(target, suite.evaluators, system.timeout_s, copies,
                          retries=suite.retries, throttle=throttle,
                          simulators=suite.config.simulators)
                   for target in suite.targets]
        return local_transport(workers, lanes, verdicts=verdicts)
    if execution.executor == "processes":
        from oloproof.execution.transports.processes import ProcessWorkers
        from oloproof.execution.worker_host import WorkerSpec

        spec = WorkerSpec(suite.worker_loader, suite.path.name, str(suite.project_dir),
                          concurrency, judge_share=execution.workers)
        pool = ProcessWorkers(spec, execution.workers, suite.path, started)
        await pool.start()
        return pool
    if execution.executor == "ray":
        from oloproof.execution.transports.ray import RayWorkers

        actors = RayWorkers(suite, concurrency)
        await actors.start()
        return actors
    raise ConfigError(f"unknown executor {execution.executor!r}", file=suite.path)


__all__ = ["Transport", "local_transport", "open_transport"]
