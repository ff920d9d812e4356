"""The command line's entry point: the `oloproof` group with every command registered on it.
Parse, call the library, print; nothing here decides anything.

Start-up imports only Click and the standard library, so `oloproof --help` answers at once;
each command imports the engine (pydantic, NumPy, SciPy, Rich) when it runs. The commands are
in one module per group, each registering its commands on `group.cli` when imported: `init`,
`run`, `stored` (runs, tag, inspect, cases), `deciding` (gate, compare, plan), `reports`
(report, view), `labels`, `traces` and `imports` (import, export).
"""

from __future__ import annotations

from oloproof.cli import crash, deciding, imports, init, labels, reports, run, stored, traces
from oloproof.cli.group import cli

#: The modules whose import registers the commands on `cli`.
COMMANDS = (deciding, imports, init, labels, reports, run, stored, traces)


def main() -> None:
    """Entry point of the `oloproof` command."""
    crash.report_fatal_signals()
    _collect_young_objects_less_often()
    _exit_without_collecting()
    cli(prog_name="oloproof")


def _collect_young_objects_less_often() -> None:
    """The command's own process: collect the youngest generation after 50,000 allocations
    instead of 700 (the older generations' thresholds stay Python's).

    Importing the engine (pydantic's schemas and models) and a run's cases, results and rows
    allocate millions of objects that stay alive, so the default threshold only walks them
    again and again: the cyclic collector took 0.09-0.14 s of CPU of a 2,000-case
    `oloproof run`, 0.03 s with this (benchmarks/RESULTS.md). Garbage cycles are still
    collected, in larger batches; the library leaves its host's collector alone.
    """
    import gc

    _, older, oldest = gc.get_threshold()
    gc.set_threshold(50_000, older, oldest)


def _exit_without_collecting() -> None:
    """At exit, after every other exit handler (the first registered runs last), freeze what
    is alive so the interpreter's shutdown does not walk it for garbage cycles.

    The command's own process only: a run leaves pydantic's schemas, NumPy, SciPy and the
    run's objects alive, and the collections of the interpreter's shutdown took 0.2-0.25 s of
    a 2,000-case `oloproof run` (0.03 s frozen; benchmarks/RESULTS.md). Objects are still
    released by their reference counts as modules are torn down; only objects kept alive by
    a reference cycle at exit are not finalized, which Python does not promise either.
    """
    import atexit
    import gc

    atexit.register(gc.freeze)


if __name__ == "__main__":  # pragma: no cover
    main()
