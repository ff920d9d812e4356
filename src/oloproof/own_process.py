"""The collector settings Oloproof makes only in a process of its own -- the `oloproof`
command's and a worker process's (docs/scaling.md#a-cpu-bound-suite) -- never in a host
program's: `oloproof.run()` leaves its caller's collector alone.
"""

from __future__ import annotations

import atexit
import gc

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
