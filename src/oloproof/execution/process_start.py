"""Starting the worker processes of `executor: processes` before the run needs them
(docs/scaling.md#a-cpu-bound-suite).

A worker process imports the engine (0.4-0.5 s of CPU) before it can load the system: two or
more are forked from one interpreter that imports it once (`zygote.py`), one alone is a fresh
interpreter of its own. A run starts its workers as soon as the suite file says
`executor: processes` (`spawn_workers`, called back by `load_suite`), so that they import while
the run's own process loads the rest of the suite. The command line starts them earlier still:
`oloproof run` knows from `--executor` (or from a first look at the suite file) that the run
will want them before it imports the engine itself, which takes the run's process as long again;
`started_early` starts them then, and the run takes them on (`take_started`) instead of
starting its own. Only the command does this, in its own process: a library call starts its
workers when its suite has loaded.

This module imports nothing of the engine (`oloproof.execution.transports` does), and what
starting a process needs only when it starts one: a run on `local` pays for a first look at
its suite file, no more.
"""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import subprocess
    from multiprocessing.connection import Connection

    from oloproof.execution.zygote import ForkedProcess, Zygote


class StartedProcess:
    """A worker process started and importing the engine, not yet told what to load."""

    process: subprocess.Popen[bytes] | ForkedProcess
    outgoing: Connection
    incoming: Connection

    def __init__(self, zygote: Zygote | None = None, index: int = 0) -> None:
        """A fresh interpreter of its own, or the `index`th worker `zygote` forks."""
        if zygote is not None:
            self.process = zygote.processes[index]
            self.outgoing, self.incoming = zygote.pipes[index]
            return
        from multiprocessing.connection import Connection  # (a run on `local` has no use)

        to_child_r, to_child_w = worker_pipe()
        from_child_r, from_child_w = worker_pipe()
        try:
            self.process = _popen([str(to_child_r), str(from_child_w)],
                                  (to_child_r, from_child_w))
        except BaseException:
            for fd in (to_child_w, from_child_r):
                os.close(fd)
            raise
        finally:
            os.close(to_child_r)
            os.close(from_child_w)
        self.outgoing = Connection(to_child_w, readable=False)
        self.incoming = Connection(from_child_r, writable=False)

    def discard(self) -> None:
        """Stop a process that was never given a system to load (it has run nothing)."""
        with contextlib.suppress(OSError):
            self.process.kill()
        self.process.wait()
        for end in (self.outgoing, self.incoming):
            with contextlib.suppress(OSError):
                end.close()


def worker_pipe() -> tuple[int, int]:
    """A pipe between the coordinator and a worker (read end, write end), with room for a
    megabyte where the system allows it (Linux), not 64 KB: a batch's results are about 4 KB
    a case, and a writer whose message does not fit waits, its event loop with it, until the
    reader's thread is given the interpreter's lock -- as much as a tenth of a worker's time on
    the support_agent example (docs/scaling.md#a-cpu-bound-suite)."""
    read, write = os.pipe()
    if sys.platform == "linux":
        import fcntl

        with contextlib.suppress(OSError):  # (over the system's limit: the default size)
            fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, PIPE_BYTES)
    return read, write


#: The size asked for a worker's pipes (Linux's largest for an unprivileged process, by default).
PIPE_BYTES = 1 << 20


def _popen(args: list[str], fds: tuple[int, ...]) -> subprocess.Popen[bytes]:
    """`python -m oloproof.execution.transports.processes ARGS`, given the descriptors `fds`."""
    import subprocess

    env = dict(os.environ)
    package_root = str(Path(__file__).resolve().parents[2])  # holds oloproof/
    env["PYTHONPATH"] = os.pathsep.join(
        [package_root] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    return subprocess.Popen(
        [sys.executable, "-m", "oloproof.execution.transports.processes", *args],
        pass_fds=fds, stdin=subprocess.DEVNULL, stdout=_stdout_for_workers(), env=env,
        close_fds=True,
    )


def _stdout_for_workers() -> int | None:
    """A worker's prints go to the coordinator's stderr (its stdout may be a JSON document)."""
    try:
        return sys.__stderr__.fileno() if sys.__stderr__ is not None else None
    except (OSError, ValueError):
        return None


def spawn_workers(count: int) -> list[StartedProcess]:
    """`count` worker processes, started now; each waits for the system it is to load. Two or
    more are forked from one interpreter that imports the engine once (`zygote.py`)."""
    started: list[StartedProcess] = []
    try:
        if count >= 2:
            from oloproof.execution.zygote import Zygote

            zygote = Zygote(count, _popen, worker_pipe)
            started = [StartedProcess(zygote, index) for index in range(count)]
        for _ in range(count - len(started)):
            started.append(StartedProcess())
    except BaseException:
        discard_all(started)
        raise
    return started


def discard_all(started: list[StartedProcess]) -> None:
    """Stop worker processes a run started and will not use (its suite failed to load)."""
    for one in started:
        one.discard()


#: The worker processes `started_early` started and no run has taken yet.
_EARLY: ContextVar[list[StartedProcess] | None] = ContextVar("oloproof_early_workers",
                                                             default=None)


def take_started(count: int) -> list[StartedProcess]:
    """`count` worker processes for a run whose suite says `executor: processes`: those the
    command started early, as many as it needs (the others are stopped), and more started now
    if it started fewer."""
    early = _EARLY.get()
    taken: list[StartedProcess] = []
    if early:
        taken, rest = early[:count], early[count:]
        early.clear()
        discard_all(rest)
    return taken + spawn_workers(count - len(taken))


@contextlib.contextmanager
def started_early(config: str, executor: str | None, workers: int | None) -> Iterator[None]:
    """The command's: start the worker processes that a run of the suite file `config` will
    ask for (`--executor` and `--workers`, else the file's `execution:`), before anything else
    is imported, for the run to take on; those it does not take are stopped on the way out."""
    count = processes_wanted(config, executor, workers)
    started = spawn_workers(count) if count else []
    token = _EARLY.set(started)
    try:
        yield
    finally:
        _EARLY.reset(token)
        discard_all(started)  # (what the run took is no longer in the list)


def processes_wanted(config: str, executor: str | None, workers: int | None) -> int:
    """How many worker processes a run of `config` will start (one per core at most), from a
    first look at the file: 0 when it will not run on `processes`, or when the file does not
    plainly say (loading the suite says what is wrong, and starts them if it must)."""
    if executor is None or workers is None:
        execution = _execution_section(config)
        if executor is None:
            executor = execution.get("executor", "local")
        if workers is None:
            workers = execution.get("workers", 1)
    if executor != "processes" or type(workers) is not int or workers < 1:
        return 0
    return min(workers, os.cpu_count() or 1)


def _execution_section(config: str) -> dict[str, Any]:
    """The suite file's `execution:` mapping as it is written (empty if there is none, or if
    the file cannot be read as YAML)."""
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        with open(config, encoding="utf-8") as file:
            data = yaml.load(file, Loader=loader)  # (a safe loader)
    except (OSError, ValueError, yaml.YAMLError):
        return {}
    execution = data.get("execution") if isinstance(data, dict) else None
    return execution if isinstance(execution, dict) else {}
