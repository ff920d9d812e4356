"""`executor: ray` -- one Ray actor per worker, on a local Ray instance or a cluster
(docs/scaling.md#ray-a-local-instance-or-a-cluster).

Nothing here is cluster machinery: Ray schedules and places the actors, restarts one whose
process or node dies (`max_restarts`), and ships the project folder to a cluster's nodes
(`runtime_env.working_dir`). What is Oloproof's is the same as on `executor: processes`:
each actor holds one `WorkerHost` (its own system and sandbox, loaded from the suite file),
jobs go to it in batches (`dispatched.Dispatch`, one actor call per batch, at most two out per
actor), `$ref` states by reference and once per actor (`shipping.py`), and a batch whose actor
died is sent once more, then fails `worker_lost`.

- No `execution.ray.address`: a local Ray instance is started for the run
  (`ray.init(num_cpus=workers × num_cpus_per_worker)`) and shut down after it.
- `address: auto`, `ray://host:port` or `host:port`: the run joins that cluster, with the
  project folder as the actors' working directory, and leaves the cluster running.
- Ray already initialised in this process (a notebook, a test session): the run uses it and
  leaves it running.

`ray.init` installs a SIGTERM handler of its own; the caller's handlers are put back at once
(the library changes no signal handler of its host).

This module is `oloproof.execution.transports.ray`; the `import ray` in it is the Ray package
(imports are absolute), and the package's own modules are imported by their full names.
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import signal
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from oloproof.errors import ConfigError
from oloproof.execution.procedure import failed_unit
from oloproof.execution.shipping import Parcel, StateShipper, pack_results, unpack_results
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.execution.transports.dispatched import DispatchedTransport
from oloproof.execution.units import UnitJob
from oloproof.execution.worker_host import LoadFailure, WorkerHost, WorkerSpec

# How long joining a cluster may take before the run gives up (after a reachable address).
CONNECT_SECONDS = 30.0
# How long to wait for a TCP connection to the cluster's address.
PROBE_SECONDS = 3.0
# How many times Ray restarts an actor whose process or node died, and how long a restart may
# take before the actor's slot is given up.
MAX_RESTARTS = 4
RESTART_SECONDS = 60.0


class RayWorker:
    """The actor: one worker's system and sandbox (`WorkerHost`) on a Ray node."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.failure: LoadFailure | None = None
        self.host: WorkerHost | None = None
        try:
            self.host = WorkerHost(spec)
        except BaseException as exc:  # reported by `ready`, so the run can say what it was
            self.failure = LoadFailure.of(exc)

    async def ready(self) -> tuple[str, Any]:
        """("ready", the id of the Ray node it runs on) once the system is loaded, or
        ("failed", why)."""
        if self.failure is not None:
            return ("failed", self.failure)
        import ray

        return ("ready", ray.get_runtime_context().get_node_id())

    async def run_batch(self, parcel: Parcel) -> bytes:
        """Run a batch of jobs on this worker; their results, packed."""
        assert self.host is not None
        return pack_results(await self.host.run_batch(parcel))


def _with_handlers_kept(work: Any) -> Any:
    """Run `work()` and put back any signal handler it replaced (ray.init sets SIGTERM's)."""
    watched = [signal.SIGTERM, signal.SIGINT]
    main = threading.current_thread() is threading.main_thread()
    before = {s: signal.getsignal(s) for s in watched} if main else {}
    try:
        return work()
    finally:
        for number, handler in before.items():
            if signal.getsignal(number) is not handler and handler is not None:
                signal.signal(number, handler)


class RayWorkers(DispatchedTransport):
    """The `Transport` of Ray actors (see the module docstring)."""

    def __init__(self, suite: SuiteToRun, concurrency: int | None) -> None:
        self.suite = suite
        self.config = suite.execution.ray
        self.count = suite.execution.workers
        super().__init__(self.count)
        self._shipper = StateShipper()
        self._actors: list[Any] = []
        self._generation = [0] * self.count
        self._tasks: set[asyncio.Task[None]] = set()
        self._started_ray = False
        self._closed = False
        self._nodes: set[str] = set()  # the Ray nodes an actor was ready on
        # On a cluster the project folder is the actors' working directory; locally they read
        # it where it is.
        on_cluster = self.config.address is not None
        self.spec = WorkerSpec(suite.worker_loader, suite.path.name,
                               None if on_cluster else str(suite.project_dir), concurrency,
                               judge_share=self.count)

    # ---- starting ------------------------------------------------------------------------------

    async def start(self) -> None:
        """Start (or join) Ray, start the actors and wait until each has loaded the system."""
        import ray

        self._arrived = asyncio.Event()
        if self.config.address is not None:
            self._probe(self.config.address)  # even when Ray is up here: the file names it
        if not ray.is_initialized():
            self._init_ray(ray)
        remote = ray.remote(max_restarts=MAX_RESTARTS, max_task_retries=0)(RayWorker)
        try:
            self._actors = [
                remote.options(num_cpus=self.config.num_cpus_per_worker).remote(self.spec)
                for _ in range(self.count)]
            replies = await asyncio.gather(*(a.ready.remote() for a in self._actors))
        except BaseException:
            await self.close()
            raise
        for number, (kind, detail) in enumerate(replies, 1):
            if kind == "failed":
                await self.close()
                raise detail.error(f"in Ray actor {number}")
            self._nodes.add(detail)

    def _init_ray(self, ray: Any) -> None:
        address = self.config.address
        options: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False,
                                   "logging_level": "WARNING"}
        runtime_env = dict(self.config.runtime_env)
        if address is None:
            cpus = math.ceil(self.count * self.config.num_cpus_per_worker)
            if runtime_env:
                options["runtime_env"] = runtime_env
            # address="local": a new instance even where `ray start` left a cluster running
            # (plain `ray.init()` would join that one).
            _with_handlers_kept(lambda: ray.init(address="local", num_cpus=cpus, **options))
            self._started_ray = True
            return
        runtime_env.setdefault("working_dir", str(self.suite.project_dir))
        # The store and environments stay here: only the coordinator opens the store.
        runtime_env.setdefault("excludes", [".oloproof/", ".git/", ".venv/", "__pycache__/"])
        failure: list[BaseException] = []
        joined = threading.Event()

        def join() -> None:
            try:
                ray.init(address=address, runtime_env=runtime_env, **options)
            except BaseException as exc:
                failure.append(exc)
            joined.set()

        before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
        # (in a thread: a cluster that accepts connections but never answers must not hang
        # the run; Ray sets no signal handler outside the main thread)
        threading.Thread(target=join, name="oloproof-ray-join", daemon=True).start()
        if not joined.wait(CONNECT_SECONDS):
            raise self._unreachable(address, f"no answer within {CONNECT_SECONDS:g} s")
        for number, handler in before.items():
            if handler is not None and signal.getsignal(number) is not handler:
                signal.signal(number, handler)
        if failure:
            raise self._unreachable(address, f"{type(failure[0]).__name__}: {failure[0]}")
        self._started_ray = True  # (connected: disconnect when the run ends)

    def _probe(self, address: str) -> None:
        """A clear error within seconds when nothing listens at `host:port` (Ray itself
        would keep trying for a minute)."""
        if address == "auto":
            return  # Ray looks for a cluster started on this machine, and says so if none
        text = address if "://" in address else f"tcp://{address}"
        parts = urlsplit(text)
        if parts.hostname is None or parts.port is None:
            raise ConfigError(
                f"execution.ray.address {address!r} is not an address of a Ray cluster; give "
                "`auto` (a cluster started on this machine with `ray start --head`), "
                "`host:port` or `ray://host:port`, or leave it out for a local Ray instance",
                file=self.suite.path, line=self._address_line())
        try:
            with socket.create_connection((parts.hostname, parts.port), PROBE_SECONDS):
                pass
        except OSError as exc:
            raise self._unreachable(address, str(exc)) from None

    def _unreachable(self, address: str, why: str) -> ConfigError:
        return ConfigError(
            f"cannot reach the Ray cluster at execution.ray.address {address!r} ({why}); "
            "start one with `ray start --head` (then `address: auto` on that machine), "
            "check the host and port, or leave `address` out to start a local Ray instance "
            "for the run", file=self.suite.path, line=self._address_line())

    def _address_line(self) -> int | None:
        doc = getattr(self.suite, "doc", None)
        if doc is None:
            return None
        line: int | None = doc.line_of(("execution", "ray", "address"))
        return line

    # ---- the transport -------------------------------------------------------------------------

    @property
    def nodes(self) -> list[str] | None:
        """The ids of the Ray nodes the actors ran on (a restarted actor may run on another)."""
        return sorted(self._nodes)

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        for task in list(self._tasks):
            task.cancel()
        import ray

        for actor in self._actors:
            with contextlib.suppress(Exception):
                ray.kill(actor, no_restart=True)
        if self._started_ray:
            _with_handlers_kept(ray.shutdown)

    # ---- batches -------------------------------------------------------------------------------

    def _pump(self) -> None:
        sent = True
        while sent and self._dispatch.waiting and not self._closed:
            sent = False
            for slot, actor in enumerate(self._actors):
                jobs = self._dispatch.next_batch(slot)
                if jobs is None:
                    continue
                key = (slot, self._generation[slot])
                call = actor.run_batch.remote(self._shipper.pack(jobs, key))
                self._spawn(self._await_batch(slot, self._generation[slot], jobs, call))
                sent = True

    def _spawn(self, work: Any) -> None:
        task = asyncio.get_running_loop().create_task(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _await_batch(self, slot: int, generation: int, jobs: list[UnitJob],
                           call: Any) -> None:
        from ray.exceptions import RayActorError, RayTaskError

        try:
            results = unpack_results(await call)
        except RayActorError:
            if generation == self._generation[slot]:
                self._lost(slot)
            return
        except RayTaskError as exc:  # the batch raised on the actor: an engine bug
            results = [failed_unit(job, exc) for job in jobs]
        if generation == self._generation[slot] and not self._closed:
            self._deliver(self._dispatch.returned(slot, results))
            self._pump()

    def _lost(self, slot: int) -> None:
        """The actor died: Ray restarts it (its sandbox and states anew); its batches go
        again once to whichever actor is free."""
        self._shipper.forget((slot, self._generation[slot]))
        self._generation[slot] += 1
        self._deliver(self._dispatch.lost(slot, replaced=True))
        self._spawn(self._await_restart(slot))
        self._pump()

    async def _await_restart(self, slot: int) -> None:
        """Wait for Ray to bring the actor back (it answers `ready` again); an actor that does
        not come back within RESTART_SECONDS (out of restarts, its node gone) is given up.
        (While it restarts, a call fails as one to a dead actor does: only time tells.)"""
        from ray.exceptions import RayActorError

        kind, detail = "dead", ""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RESTART_SECONDS
        while not self._closed and loop.time() < deadline:
            try:
                kind, detail = await self._actors[slot].ready.remote()
                break
            except RayActorError:  # restarting, or gone
                await asyncio.sleep(0.2)
        if self._closed:
            return
        if kind == "ready":
            self._nodes.add(str(detail))
            self._dispatch.revive(slot)
            self._pump()
        else:
            self._deliver(self._dispatch.give_up(slot))
