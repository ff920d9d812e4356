"""The collector settings Oloproof makes only in a process of its own -- the `oloproof`
command's and a worker process's (docs/scaling.md#a-cpu-bound-suite) -- never in a host
program's: `oloproof.run()` leaves its caller's collector alone.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys
import threading
from typing import NoReturn

#: `os._exit` as the process started with it (a run guards `os._exit` while it executes).
_EXIT = os._exit

#: Allocations between two collections of the youngest generation (Python's default is 700).
YOUNG_THRESHOLD = 50_000


def collect_young_objects_less_often() -> None:
    """Collect the youngest generation after 50,000 allocations instead of 700 (the older
    generations' thresholds stay Python's).

    Importing the engine (pydantic's schemas and models) and a run's cases, results and rows
    allocate millions of objects that stay alive, so the default threshold only walks them
    again and again: the cyclic collector took 0.09-0.14 s of CPU of a 2,000-case
    `oloproof run`, 0.03 s with this (benchmarks/RESULTS.md); in a worker process, unpickling
    a batch's results on the coordinator's side took half the time (15 µs a case, not 30).
    Garbage cycles are still collected, in larger batches.
    """
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def exit_without_collecting() -> None:
    """At exit, after every other exit handler (the first registered runs last), freeze what
    is alive so the interpreter's shutdown does not walk it for garbage cycles.

    A run leaves pydantic's schemas, NumPy, SciPy and the run's objects alive, and the
    collections of the interpreter's shutdown took 0.2-0.25 s of a 2,000-case `oloproof run`
    (0.03 s frozen; benchmarks/RESULTS.md). Objects are still released by their reference
    counts as modules are torn down; only objects kept alive by a reference cycle at exit are
    not finalized, which Python does not promise either.
    """
    atexit.register(gc.freeze)


def exit_without_teardown(done: SystemExit) -> NoReturn:
    """End the command's own process as Python's exit would, without tearing the interpreter
    down: exit handlers run (`atexit`, so logging's, multiprocessing's, Ray's and `weakref`
    finalizers' too), standard output and error are flushed, then the process ends with the
    command's exit code (`os._exit`).

    Tearing the interpreter down releases every module's objects one by one: pydantic's
    schemas, NumPy, SciPy, Rich, the run's objects. That took 0.085 s of CPU of every command
    in a process forked from one that imported the engine (each release writes to memory the
    fork shares, so the pages are copied first: 13,700 page faults), most of such a
    command's CPU, and took part of a fresh `oloproof` process's exit too. What is skipped is
    what Python does not promise at exit either: finalizers of objects still alive (a file
    left open and unflushed by the system's own code loses what it buffered, as the Python
    tutorial warns).

    Where Python's own exit would do more than this, it is left to do it: while a thread that
    is not a daemon runs (Python waits for it first), for an exit code that is not a number
    (Python prints it), and when flushing the output fails (Python reports it, exit 120).
    """
    code = done.code
    if not (code is None or isinstance(code, int)) or any(
            not thread.daemon for thread in threading.enumerate()
            if thread is not threading.main_thread()):
        raise done
    atexit._run_exitfuncs()  # they run once: the list is empty afterwards
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        raise done from None
    _EXIT(0 if code is None else code)
