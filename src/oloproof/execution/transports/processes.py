"""`executor: processes` -- one worker process per worker on this machine
(docs/scaling.md#processes-every-core-of-this-machine).

Each worker is a process of its own (`python -m oloproof.execution.transports.processes`, so
nothing of the caller's `__main__` is imported again; two or more forked from one such
interpreter, `--zygote`, that imports the engine once: `zygote.py`) that loads the system
itself -- the factory if given, else the callable -- and the evaluators, then runs the jobs it
is sent on a local transport (`worker_host.py`): timeouts are enforced there, where the case
runs. The coordinator and a worker talk over two pipes, one message a parcel of jobs one way
(`shipping.py`: `$ref` states by reference, each sent once per worker) and a group of finished
results the other, sent as they finish by a thread of the worker's own (its loop never waits
on the pipe). Only the coordinator opens the store.

A worker that dies (SIGKILL, a crash, out of memory) is seen at once: its pipe closes. Its
unfinished jobs are sent once more to another worker (`dispatched.Dispatch`), a replacement
process is started in its place, and a job that loses its worker twice fails `worker_lost`. A
worker ignores SIGINT -- the Ctrl-C a terminal sends the whole process group is the
coordinator's to handle -- and exits as soon as the coordinator is gone (its pipe closes), so a
killed run leaves no worker behind. `close()` stops every worker.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import pickle
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from oloproof.errors import ConfigError
from oloproof.execution.process_start import StartedProcess, discard_all
from oloproof.execution.shipping import PROTOCOL, StateShipper
from oloproof.execution.transports.base import Transport
from oloproof.execution.transports.dispatched import DispatchedTransport
from oloproof.execution.units import UnitResult
from oloproof.execution.worker_host import LoadFailure, WorkerHost, WorkerSpec
from oloproof.own_process import collect_young_objects_less_often

# How long a stopping worker may take to exit on its own before it is killed.
STOP_GRACE_SECONDS = 1.0


class _Child:
    """One worker process and its two pipes, as the coordinator sees it."""

    def __init__(self, slot: int, spec: WorkerSpec, started: StartedProcess | None = None
                 ) -> None:
        self.slot = slot
        started = started if started is not None else StartedProcess()
        self.process = started.process
        self.outgoing = started.outgoing
        self.incoming = started.incoming
        self.dead = False
        # (a process that died while it imported has closed its pipe: its exit is reported
        # when the coordinator reads its reply)
        with contextlib.suppress(OSError):
            self.send(("spec", list(sys.path), spec))

    def send(self, message: Any) -> None:
        self.outgoing.send_bytes(pickle.dumps(message, protocol=PROTOCOL))

    def receive(self) -> Any:
        return pickle.loads(self.incoming.recv_bytes())

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.send(("stop", None))
        with contextlib.suppress(OSError):
            self.outgoing.close()

    def reap(self, grace: float) -> None:
        """Wait up to `grace` seconds for the process to exit, then kill it."""
        try:
            self.process.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        with contextlib.suppress(OSError):
            self.incoming.close()


class ProcessWorkers(DispatchedTransport):
    """The `Transport` of worker processes (see the module docstring)."""

    def __init__(self, spec: WorkerSpec, workers: int, suite_path: Path,
                 started: list[StartedProcess] | None = None) -> None:
        super().__init__(workers)
        self.spec = spec
        self.suite_path = suite_path
        # Processes started before the run (`process_start`): the first workers' own.
        self._started = list(started or ())
        self._shipper = StateShipper()
        self._children: list[_Child | None] = [None] * workers
        self._loop: asyncio.AbstractEventLoop | None = None
        self._closed = False
        self._replacing: set[asyncio.Task[None]] = set()

    # ---- starting -------------------------------------------------------------------------

    async def start(self) -> None:
        """Start every worker and wait until each has loaded the system (or say why not)."""
        self._loop = asyncio.get_running_loop()
        self._arrived = asyncio.Event()
        # (more started than the run has workers: it has fewer units than were asked for)
        discard_all(self._started[len(self._children):])
        del self._started[len(self._children):]
        started = await asyncio.gather(
            *(self._start_child(slot) for slot in range(len(self._children))),
            return_exceptions=True)
        problems = [s for s in started if isinstance(s, BaseException)]
        if problems:
            for child in started:
                if isinstance(child, _Child):
                    child.stop()
                    child.reap(STOP_GRACE_SECONDS)
            raise problems[0]
        for child in started:
            assert isinstance(child, _Child)
            self._listen(child)

    async def _start_child(self, slot: int) -> _Child:
        child = _Child(slot, self.spec, self._started.pop() if self._started else None)
        try:
            reply = await asyncio.to_thread(child.receive)
        except (EOFError, OSError):
            code = await asyncio.to_thread(child.process.wait)
            child.reap(0)
            raise ConfigError(
                f"worker process {slot + 1} exited (code {code}) before it had loaded the "
                "system; its error, if it printed one, is above", file=self.suite_path,
            ) from None
        if reply[0] == "failed":
            failure: LoadFailure = reply[1]
            child.stop()
            child.reap(STOP_GRACE_SECONDS)
            raise failure.error(f"in worker process {slot + 1}")
        self._children[slot] = child
        return child

    def _listen(self, child: _Child) -> None:
        threading.Thread(target=self._read, args=(child,), name="oloproof-worker-reader",
                         daemon=True).start()

    def _read(self, child: _Child) -> None:
        """In a thread: results from one worker until its pipe closes."""
        assert self._loop is not None
        try:
            while True:
                kind, payload = child.receive()
                if kind == "results":
                    self._call(self._take, child, payload)
        except (EOFError, OSError, pickle.UnpicklingError):
            self._call(self._lose, child)

    def _call(self, function: Any, *args: Any) -> None:
        assert self._loop is not None
        with contextlib.suppress(RuntimeError):  # the loop is closed: the run is over
            self._loop.call_soon_threadsafe(function, *args)

    # ---- the transport ----------------------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        for task in self._replacing:
            task.cancel()
        children = [c for c in self._children if c is not None]
        for child in children:
            child.stop()
        await asyncio.to_thread(_reap_all, children)

    # ---- batches out, results in, workers lost --------------------------------------------

    def _pump(self) -> None:
        """Send batches round the workers until none may take another."""
        sent = True
        while sent and self._dispatch.waiting:
            sent = False
            for slot, child in enumerate(self._children):
                if child is None or child.dead:
                    continue
                jobs = self._dispatch.next_batch(slot)
                if jobs is None:
                    continue
                try:
                    child.send(("parcel", self._shipper.pack(jobs, child)))
                except (OSError, ValueError):
                    self._lose(child)
                    continue
                sent = True

    def _take(self, child: _Child, results: list[UnitResult]) -> None:
        if child.dead or self._children[child.slot] is not child:
            return
        self._deliver(self._dispatch.returned(child.slot, results))
        self._pump()

    def _lose(self, child: _Child) -> None:
        if child.dead or self._closed:
            return
        child.dead = True
        self._shipper.forget(child)
        with contextlib.suppress(OSError):
            child.outgoing.close()
        threading.Thread(target=child.reap, args=(0,), daemon=True).start()
        self._deliver(self._dispatch.lost(child.slot, replaced=True))
        task = asyncio.get_running_loop().create_task(self._replace(child.slot))
        self._replacing.add(task)
        task.add_done_callback(self._replacing.discard)
        self._pump()

    async def _replace(self, slot: int) -> None:
        try:
            child = await self._start_child(slot)
        except ConfigError:
            self._children[slot] = None
            self._deliver(self._dispatch.give_up(slot))
            return
        if self._closed:
            child.stop()
            child.reap(STOP_GRACE_SECONDS)
            return
        self._listen(child)
        self._dispatch.revive(slot)
        self._pump()


def _reap_all(children: list[_Child]) -> None:
    for child in children:
        child.reap(STOP_GRACE_SECONDS)


# ---- the worker process ------------------------------------------------------------------------


def _serve(read_fd: int, write_fd: int) -> None:
    """A worker process: load the system, then run parcels until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    # A process of Oloproof's own, as the command's is: its collector set as the command's
    # (every object a batch's cases and results make would otherwise be walked again and again).
    collect_young_objects_less_often()
    incoming = Connection(read_fd, writable=False)
    outgoing = Connection(write_fd, readable=False)

    def send(message: Any) -> None:  # (before the results' writer starts)
        outgoing.send_bytes(pickle.dumps(message, protocol=PROTOCOL))

    try:
        _, path, spec = pickle.loads(incoming.recv_bytes())
    except (EOFError, OSError):
        os._exit(0)
    sys.path[:0] = [entry for entry in path if entry not in sys.path]
    try:
        host = WorkerHost(spec)
    except BaseException as exc:  # reported to the coordinator, which says what it was
        send(("failed", LoadFailure.of(exc)))
        return
    send(("ready", os.getpid()))
    pending: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    writer = threading.Thread(target=_write, args=(pending, outgoing), name="oloproof-results",
                              daemon=True)
    writer.start()

    def stop() -> None:
        pending.put(None)  # what is queued is written first (the coordinator has it all)
        writer.join(STOP_GRACE_SECONDS)
        sys.stdout.flush()
        os._exit(0)  # a call abandoned after a timeout may still be running in a thread

    asyncio.run(_run_parcels(
        host, incoming, lambda message: pending.put(pickle.dumps(message, PROTOCOL)), stop))


def _write(pending: queue.SimpleQueue[bytes | None], outgoing: Connection) -> None:
    """In a thread: a worker's results to the coordinator, in order. The worker's event loop
    only queues them, and never waits on a full pipe, which it did while the coordinator's
    reading thread waited for its interpreter's lock (docs/scaling.md#a-cpu-bound-suite)."""
    try:
        while (data := pending.get()) is not None:
            outgoing.send_bytes(data)
    except OSError:
        os._exit(0)  # the coordinator is gone: stop at once, whatever is running


async def _run_parcels(host: WorkerHost, incoming: Connection, send: Any,
                       stop: Callable[[], None]) -> None:
    loop = asyncio.get_running_loop()
    inbox: asyncio.Queue[bytes] = asyncio.Queue()

    def read() -> None:
        try:
            while True:
                data = incoming.recv_bytes()
                loop.call_soon_threadsafe(inbox.put_nowait, data)
        except (EOFError, OSError):
            os._exit(0)  # the coordinator is gone: stop at once, whatever is running

    threading.Thread(target=read, name="oloproof-parcels", daemon=True).start()
    transport = host.transport

    sender = asyncio.create_task(send_results(transport, send))
    while True:
        kind, payload = pickle.loads(await inbox.get())
        if kind == "stop":
            break
        host.submit(payload)
    sender.cancel()
    stop()


async def send_results(transport: Transport, send: Any) -> None:
    """A worker's results, sent to the coordinator as they finish (judged as they are listed)."""
    while True:
        results = list(await transport.results())
        send(("results", results))
        # The loop's turn for the parcels that came meanwhile: `results()` returns without
        # waiting while the lanes have finished more, so without this a parcel already here
        # was taken in only once the lanes had run out of work, and the worker waited for
        # nothing (docs/scaling.md#a-cpu-bound-suite).
        await asyncio.sleep(0)


def _import_before_forking() -> None:
    """What a worker imports as it loads any suite's system, imported once by the zygote: the
    built-in evaluator types (the loader's own module is above `execution/`, which never
    imports it: docs/architecture.md#import-order)."""
    from oloproof.evaluators.registry import REGISTRY

    REGISTRY.names("type")


if __name__ == "__main__":
    if sys.argv[1] == "--zygote":  # the engine imported once, the workers forked (zygote.py)
        from oloproof.execution.zygote import fork_workers

        _import_before_forking()
        fork_workers([int(fd) for fd in sys.argv[2:]], _serve)
    else:
        _serve(int(sys.argv[1]), int(sys.argv[2]))
