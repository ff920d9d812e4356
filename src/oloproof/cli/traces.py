"""`oloproof traces import`: a suite over the traces of an OTLP/JSON file."""

from __future__ import annotations

import json

import click

from oloproof.cli.exits import guard
from oloproof.cli.group import cli


@cli.group()
def traces() -> None:
    """Suites over the traces agents recorded in production.

    How traces become trajectories: docs/traces.md.
    """


@traces.command("import")
@click.argument("file", type=click.Path(dir_okay=False))
@click.option("--out", "out", required=True, type=click.Path(file_okay=False),
              help="The directory to write the suite into (new, or without a suite).")
@click.option("--project", "project", default=None,
              help="The suite's project name (default: the file's name).")
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
def traces_import(file: str, out: str, project: str | None, as_json: bool) -> None:
    """Write a suite over the traces of an OTLP/JSON file: one case per trace, judged from
    its recording (nothing is re-run). A file that cannot be read exits 2, naming the line,
    trace and span."""
    import gc

    from oloproof.traces.suite_writer import import_traces

    # The command's own process: the file's millions of small objects all stay alive until
    # the suite is written, so the cyclic collector would only walk them again and again
    # (it more than doubled the time of reading 100,000 spans; benchmarks/RESULTS.md).
    gc.disable()
    summary = guard(as_json, lambda: import_traces(file, out, project=project))
    if as_json:
        click.echo(json.dumps(summary.to_json(), ensure_ascii=False))
        return
    click.echo(f"Imported {summary.traces} trace(s) from {file} into {out}: "
               f"{summary.traces} case(s), {summary.steps} step(s)"
               + (f", usage in {summary.with_usage}" if summary.with_usage else "") + ".")
    if summary.skipped:
        counts = ", ".join(f"{n} × {kind}" for kind, n in summary.skipped.items())
        click.echo(f"Not understood, left out of the trajectories: {counts}.")
    if summary.without_steps:
        click.echo(f"{len(summary.without_steps)} trace(s) gave no step (no GenAI or "
                   "OpenInference span made one), so every trajectory criterion is missing "
                   "on them (empty_trajectory): " + ", ".join(summary.without_steps[:5])
                   + (" ..." if len(summary.without_steps) > 5 else ""))
    click.echo("Fill in `expected` in data/cases.jsonl to judge answers and tool sequences;"
               f" then: cd {out} && oloproof run")
