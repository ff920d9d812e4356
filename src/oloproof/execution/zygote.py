"""One interpreter that imports the engine once and forks a run's first worker processes from
it (docs/scaling.md#a-cpu-bound-suite): the imports, most of what a worker costs to start,
are paid once a run, not once per worker.

`Zygote` is the coordinator's side: it starts the interpreter (`python -m
oloproof.execution.transports.processes --zygote ...`) with a pair of pipes for each worker,
made here as for a worker started alone (`process_start.StartedProcess`), so each forked
worker talks to the coordinator over pipes of its own. The interpreter imports the engine,
freezes what the imports made (`gc.freeze`, in a process of our own: the workers' collector
never walks it, nor copies its pages by touching them), forks one worker per pair, closes
their ends, and waits for them: it reaps each worker and says how it exited, then exits once
all have (`fork_workers`). It ignores SIGINT, as a worker does: the terminal's Ctrl-C is the
coordinator's to handle.

A forked worker is the zygote's child, not the coordinator's, so the coordinator sees it
through `ForkedProcess`, which answers as the `subprocess.Popen` of a worker started alone
does (`pid`, `poll`, `wait`, `kill`), from what the zygote says over its status pipe. A worker
is lost as any worker is, by its pipe closing; a replacement is a fresh interpreter started
alone. When the coordinator is gone the workers exit (their pipes close), the zygote reaps
them and exits too: a killed run leaves nothing behind. The zygote reaps every worker, so
their CPU counts, through it, in the coordinator's `RUSAGE_CHILDREN` as a worker's started
alone does.

The coordinator's side imports nothing of the engine (`process_start` imports it when it
starts two workers or more).
"""

from __future__ import annotations

import contextlib
import os
import pickle
import signal
import subprocess
import threading
from collections.abc import Callable
from multiprocessing.connection import Connection


class Zygote:
    """The coordinator's side of one zygote: its process, and each forked worker's pipes and
    process (`processes[i]`, `pipes[i]`: the coordinator's ends, to the worker and from it)."""

    def __init__(self, count: int,
                 popen: Callable[[list[str], tuple[int, ...]], subprocess.Popen[bytes]],
                 worker_pipe: Callable[[], tuple[int, int]]) -> None:
        status_r, status_w = os.pipe()
        ours: list[int] = [status_r]
        theirs: list[int] = [status_w]
        try:
            for _ in range(count):
                to_child_r, to_child_w = worker_pipe()
                from_child_r, from_child_w = worker_pipe()
                ours += [to_child_w, from_child_r]
                theirs += [to_child_r, from_child_w]
            self.process = popen(["--zygote"] + [str(fd) for fd in theirs], tuple(theirs))
        except BaseException:
            for fd in ours:
                os.close(fd)
            raise
        finally:
            for fd in theirs:
                os.close(fd)
        self.pipes: list[tuple[Connection, Connection]] = [
            (Connection(ours[1 + 2 * i], readable=False),
             Connection(ours[2 + 2 * i], writable=False)) for i in range(count)]
        self.processes = [ForkedProcess(self, index) for index in range(count)]
        self._status = Connection(status_r, writable=False)
        self._changed = threading.Condition()
        self.pids: list[int | None] = [None] * count
        self.codes: dict[int, int] = {}  # a forked worker's pid: its exit code, as Popen's
        self.ended = False  # the zygote has exited and been reaped
        threading.Thread(target=self._listen, name="oloproof-zygote", daemon=True).start()

    def _listen(self) -> None:
        """In a thread: what the zygote says, until it exits (then it is reaped)."""
        try:
            while True:
                kind, key, value = pickle.loads(self._status.recv_bytes())
                with self._changed:
                    if kind == "pid":
                        self.pids[key] = value
                    else:
                        self.codes[key] = value
                    self._changed.notify_all()
        except (EOFError, OSError, pickle.UnpicklingError):
            pass
        self.process.wait()
        self._status.close()
        with self._changed:
            self.ended = True
            self._changed.notify_all()

    def until(self, done: Callable[[], bool], timeout: float | None = None) -> bool:
        """Wait until `done()` (False if `timeout` seconds passed first)."""
        with self._changed:
            return self._changed.wait_for(done, timeout)


class ForkedProcess:
    """A worker forked by a zygote, answering as its `subprocess.Popen` would."""

    def __init__(self, zygote: Zygote, index: int) -> None:
        self.zygote = zygote
        self.index = index

    @property
    def pid(self) -> int:
        """The worker's process id (waits for the zygote to have forked it)."""
        zygote = self.zygote
        zygote.until(lambda: zygote.pids[self.index] is not None or zygote.ended)
        pid = zygote.pids[self.index]
        if pid is None:
            raise ProcessLookupError("the zygote exited before it forked this worker")
        return pid

    @property
    def returncode(self) -> int | None:
        """Its exit code once it has exited (negative: the signal that ended it), as Popen's;
        the zygote's own, for a worker it never forked."""
        zygote = self.zygote
        pid = zygote.pids[self.index]
        if pid is not None and pid in zygote.codes:
            return zygote.codes[pid]
        if zygote.ended:  # it died first: before it forked this one (or, killed, it left this
            return zygote.process.returncode  # one to run on until its pipes close)
        return None

    def _done(self) -> bool:
        """Exited, and the zygote reaped too if this was the last of its workers."""
        zygote = self.zygote
        if zygote.ended:
            return True
        if self.returncode is None:
            return False
        return any(pid is None or pid not in zygote.codes for pid in zygote.pids)

    def poll(self) -> int | None:
        return self.returncode if self._done() else None

    def wait(self, timeout: float | None = None) -> int:
        if not self.zygote.until(self._done, timeout):
            raise subprocess.TimeoutExpired(f"worker {self.index + 1} of a zygote",
                                            timeout or 0.0)
        code = self.returncode
        assert code is not None
        return code

    def kill(self) -> None:
        """SIGKILL the worker (once the zygote has forked it), unless it has exited."""
        try:
            pid = self.pid
        except ProcessLookupError:
            return
        with self.zygote._changed:
            if pid not in self.zygote.codes:  # (a zygote that died leaves its workers running)
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)


# ---- the zygote process ------------------------------------------------------------------------


def fork_workers(fds: list[int], serve: Callable[[int, int], None]) -> None:
    """The zygote (its engine imported): fork a worker per pair of `fds[1:]` that runs
    `serve(read_fd, write_fd)`, say each one's pid and then exit code on `fds[0]`, and exit
    once every worker has."""
    import gc
    import sys
    import traceback

    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the coordinator's to handle
    status_fd, pairs = fds[0], [(fds[i], fds[i + 1]) for i in range(1, len(fds), 2)]
    status = Connection(status_fd, readable=False)

    def say(*message: object) -> None:
        with contextlib.suppress(OSError):  # the coordinator is gone: reap all the same
            status.send_bytes(pickle.dumps(message))

    gc.freeze()  # (no collection first: the imports leave no garbage to speak of, 17 ms wasted)
    sys.stdout.flush()
    sys.stderr.flush()
    children: set[int] = set()
    for index, (read_fd, write_fd) in enumerate(pairs):
        pid = os.fork()
        if pid == 0:  # the worker
            code = 0
            try:
                status.close()
                for other in fds[1 + 2 * (index + 1):]:
                    os.close(other)
                serve(read_fd, write_fd)
            except BaseException:
                traceback.print_exc()
                code = 1
            finally:
                with contextlib.suppress(BaseException):
                    sys.stdout.flush()
                    sys.stderr.flush()
                os._exit(code)
        os.close(read_fd)
        os.close(write_fd)
        children.add(pid)
        say("pid", index, pid)
    while children:
        pid, status_code = os.wait()
        children.discard(pid)
        say("exit", pid, os.waitstatus_to_exitcode(status_code))
    os._exit(0)
