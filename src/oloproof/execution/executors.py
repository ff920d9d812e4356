"""Start the workers a run's executor asks for, behind the one `Transport` the engine reads.

- `local`: the suite's systems (one per worker, from `system.factory`) in this process, on
  threads (a sync system) or on this event loop (an async one): `lanes.local_transport`.
- `processes`: one worker process per worker on this machine (`processes.py`).
- `ray`: one Ray actor per worker, on a local Ray instance or a cluster (`ray_workers.py`).

Workers elsewhere are started before the run is registered, and each must report that it
loaded the system and the evaluators before any case is sent, so a system that cannot be
imported there, a factory that raises or a cluster that cannot be reached is a configuration
error, with nothing run and nothing stored.
"""

from __future__ import annotations

from oloproof.errors import ConfigError
from oloproof.execution.lanes import Transport, local_transport
from oloproof.execution.resets import StateCopies
from oloproof.execution.retries import Throttle
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.execution.worker import Worker


async def open_transport(suite: SuiteToRun, concurrency: int | None = None) -> Transport:
    """The started workers of the suite's executor (`suite.execution`)."""
    execution = suite.execution
    system = suite.config.system
    lanes = concurrency or system.concurrency
    if execution.executor == "local":
        copies = StateCopies()  # one copy of each `$ref` base for all the workers
        # One throttle for all of them: they are one system, called from one process.
        throttle = Throttle() if suite.retries is not None else None
        workers = [Worker(target, suite.evaluators, system.timeout_s, copies,
                          retries=suite.retries, throttle=throttle)
                   for target in suite.targets]
        return local_transport(workers, lanes)
    if execution.executor == "processes":
        from oloproof.execution.processes import ProcessWorkers
        from oloproof.execution.worker_host import WorkerSpec

        spec = WorkerSpec(suite.worker_loader, suite.path.name, str(suite.project_dir),
                          concurrency, judge_share=execution.workers)
        pool = ProcessWorkers(spec, execution.workers, suite.path)
        await pool.start()
        return pool
    if execution.executor == "ray":
        from oloproof.execution.ray_workers import RayWorkers

        actors = RayWorkers(suite, concurrency)
        await actors.start()
        return actors
    raise ConfigError(f"unknown executor {execution.executor!r}", file=suite.path)
