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
from oloproof.own_process import collect_young_objects_less_often, exit_without_collecting

#: The modules whose import registers the commands on `cli`.
COMMANDS = (deciding, imports, init, labels, reports, run, stored, traces)


def main() -> None:
    """Entry point of the `oloproof` command."""
    crash.report_fatal_signals()
    # (the command's own process: docs/architecture.md#decisions-worth-knowing)
    collect_young_objects_less_often()
    exit_without_collecting()
    cli(prog_name="oloproof")


if __name__ == "__main__":  # pragma: no cover
    main()
