"""`oloproof import inspect|harbor` (runs of other harnesses stored as runs) and `oloproof
export atif|eee` (a stored run written in other tools' formats): docs/imports.md."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

import click

from oloproof.cli.exits import guard, report_console
from oloproof.cli.group import cli
from oloproof.cli.options import config_option, store_option

if TYPE_CHECKING:
    from oloproof.api.imports import ImportedRun

_policy_option = click.option(
    "--policy", default=None, type=click.Path(dir_okay=False),
    help="Decide each imported run under this policy, and exit with its gate's code "
         "(default: store it undecided by any rule, exit 0).")


@cli.group("import")
def import_group() -> None:
    """Store runs of other harnesses (Inspect AI, Harbor) as runs of this project.

    Each run is stored in the project's store (a folder without oloproof.yaml gets a store of
    imported runs), where `runs`, `gate`, `compare`, `report`, `view` and `inspect` read it
    like any run. Importing the same run twice stores it once. Unlike `traces import`, which
    writes a suite, nothing is written but the store. Mappings: docs/imports.md.
    """


@import_group.command("inspect")
@click.argument("logs", nargs=-1, required=True, type=click.Path(dir_okay=False))
@click.option("--pass-at", "pass_at", default=1.0, show_default=True, type=float,
              help="The value at or above which a score passes (C is 1, P 0.5, I and N 0): "
                   "1 counts full credit only, 0.5 a partial credit too.")
@_policy_option
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
def import_inspect(logs: tuple[str, ...], pass_at: float, policy: str | None, config: str,
                   store: str | None, as_json: bool) -> None:
    """Store each Inspect eval log (`.eval` or `.json`) as a run: a sample is a case, an
    epoch a trial, each scorer a criterion. A log that cannot be read exits 2, naming it."""
    from oloproof.api.imports import import_inspect as run_import

    _finish(guard(as_json, lambda: run_import(logs, pass_at=pass_at, policy=policy,
                                              config=config, store=store)), policy, as_json)


@import_group.command("harbor")
@click.argument("job_dir", type=click.Path(file_okay=False))
@click.option("--pass-at", "pass_at", default=1.0, show_default=True, type=float,
              help="The reward at or above which a trial passes.")
@_policy_option
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print what was imported as JSON.")
def import_harbor(job_dir: str, pass_at: float, policy: str | None, config: str,
                  store: str | None, as_json: bool) -> None:
    """Store a Harbor job folder as a run (one per agent and model): a task is a case, an
    attempt a trial, each reward a criterion. A trial with neither reward nor exception is
    missing (no_reward), never 0."""
    from oloproof.api.imports import import_harbor as run_import

    _finish(guard(as_json, lambda: run_import(job_dir, pass_at=pass_at, policy=policy,
                                              config=config, store=store)), policy, as_json)


def _finish(runs: list[ImportedRun], policy: str | None, as_json: bool) -> None:
    code = max((int(r.result.gate.exit_code) for r in runs), default=0) if policy else 0
    if as_json:
        click.echo(json.dumps([_json(r, policy is not None) for r in runs],
                              ensure_ascii=False))
        sys.exit(code)
    console = report_console()
    from oloproof.report.layout import print_wrapped
    from oloproof.report.terminal import render_decisions

    for run in runs:
        print_wrapped(console, _said(run))
        for warning in run.warnings:
            print_wrapped(console, f"Warning: {warning}")
        if policy is not None:
            document = run.result.document
            console.print(f"Gate: {document.gate.action} (exit {int(document.gate.exit_code)})")
            render_decisions(document.decisions, console, document.metrics, document.baseline)
    sys.exit(code)


def _said(run: ImportedRun) -> str:
    from oloproof.api.imports import INSPECT

    where = f"{run.source} ({run.system_name}, {run.system_version})"
    if run.already:
        return f"Already imported: {where} is run {run.run_id}; nothing was stored."
    earlier = (f" (an earlier import of it was interrupted: {', '.join(run.interrupted)}, "
               "left as it is)") if run.interrupted else ""
    summary = run.summary
    parts = [f"{summary.by_status[s]} {s}" for s in ("scored", "errored", "missing")
             if summary.by_status[s]]
    errored = ", ".join(f"{kind} {n}" for kind, n in sorted(summary.errored.items()))
    text = (f"Imported {where} as run {run.run_id}{earlier}: {run.result.document.cases} "
            f"case(s), "
            f"{summary.trials} trial(s) — {', '.join(parts)}"
            + (f" ({errored})" if errored else "") + ".")
    skipped = summary.skipped_text()
    text += f" Skipped scores: {skipped}." if skipped else ""
    if run.values:
        means = "; ".join(f"{name} {value.mean:.4g} ({value.partial} partial credit(s))"
                          for name, value in run.values.items())
        what = ("Inspect's accuracy where every epoch ran" if run.harness == INSPECT
                else "each case's mean over its scored trials, over cases")
        text += (f" Mean values ({what}): {means}; a trial passes at {run.pass_at:g} or more "
                 f"(--pass-at).")
    return text


def _json(run: ImportedRun, decided: bool) -> dict[str, object]:
    body: dict[str, object] = {
        "run_id": run.run_id, "source": str(run.source), "system_name": run.system_name,
        "system_version": run.system_version, "already": run.already,
        "trials": run.summary.trials, "by_status": dict(run.summary.by_status),
        "errored": dict(run.summary.errored),
        "skipped": [{"criterion": c, "reason": r, "count": n}
                    for (c, r), n in sorted(run.summary.skipped.items())],
        "warnings": run.warnings, "pass_at": run.pass_at, "interrupted": run.interrupted,
        "values": {name: {"mean": v.mean, "cases": v.cases, "partial": v.partial}
                   for name, v in run.values.items()},
    }
    if decided:
        body["gate"] = run.result.document.gate.model_dump(mode="json")
    return body


@cli.group("export")
def export_group() -> None:
    """Write a stored run in other tools' formats: ATIF trajectories, Every Eval Ever.

    Formats and what each holds: docs/imports.md#exporting-a-run.
    """


@export_group.command("atif")
@click.argument("run_ref", default="latest")
@click.option("--case", "case", default=None, help="Only this case's trajectory.")
@click.option("-o", "--output", "output", required=True, type=click.Path(dir_okay=False),
              help="The JSON file to write (its missing folders are made).")
@config_option
@store_option
def export_atif(run_ref: str, case: str | None, output: str, config: str,
                store: str | None) -> None:
    """Write a run's trajectories as ATIF (Harbor's Agent Trajectory Interchange Format):
    one document for one case of one trial, else a list, one per case and trial."""
    from oloproof.api.exports import export_atif as write

    done = guard(False, lambda: write(run_ref, output, case=case, config=config, store=store))
    click.echo(f"Wrote {done.written} ATIF trajectory(ies) to {done.files[0]}"
               + (f"; {done.left_out} trial(s) recorded no step, left out"
                  if done.left_out else "") + ".")


@export_group.command("eee")
@click.argument("run_ref", default="latest")
@click.option("-o", "--output", "output", required=True, type=click.Path(file_okay=False),
              help="The folder to write Every Eval Ever's data/… layout under.")
@click.option("--developer", default="unknown", show_default=True,
              help="The model's developer, a folder of the layout.")
@config_option
@store_option
def export_eee(run_ref: str, output: str, developer: str, config: str,
               store: str | None) -> None:
    """Write a run as Every Eval Ever (schema 0.3): the aggregate, each pass rate with its
    interval, and its samples file, one row per case, trial and criterion with a verdict
    (missing and errored trials are counted, never written as 0)."""
    from oloproof.api.exports import export_eee as write

    done = guard(False, lambda: write(run_ref, output, developer=developer, config=config,
                                      store=store))
    click.echo(f"Wrote {done.files[0]} and {done.files[1]} ({done.written} row(s)"
               + (f"; {done.left_out} without a verdict, left out" if done.left_out else "")
               + ").")
