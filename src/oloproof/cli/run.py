"""`oloproof run`: run the suite, decide, store, print, and exit on the gate; with the progress
bar on a terminal, and SIGTERM stopping the run as Ctrl-C does."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING

import click

from oloproof.cli.exits import ci_files, guarded, print_then_exit, report_console, write_ci
from oloproof.cli.group import cli
from oloproof.cli.options import (
    baseline_option,
    junit_option,
    markdown_option,
    slices_option,
    store_option,
)

if TYPE_CHECKING:
    from oloproof.api import RunResult
    from oloproof.report.progress import LiveProgress


@cli.command("run")
@click.option("--config", default="oloproof.yaml", show_default=True, help="The suite file.")
@click.option("--policy", default=None, help="The release policy (default: release.yaml beside "
              "the suite).")
@click.option("--no-cache", is_flag=True, help="Execute every case again.")
@click.option("--concurrency", type=click.IntRange(1, 4096), default=None,
              help="Cases in flight at once (overrides system.concurrency).")
@click.option("--trials", type=click.IntRange(1, 1000), default=None,
              help="Run every case this many times (overrides `trials:` in the suite).")
@click.option("--workers", type=click.IntRange(1, 4096), default=None,
              help="Copies of the system, each with its own sandbox (overrides "
              "execution.workers).")
@click.option("--executor", type=click.Choice(["local", "processes", "ray"]), default=None,
              help="Where the workers run: this process, worker processes on this machine, "
              "or Ray actors (overrides execution.executor).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document instead.")
@baseline_option
@junit_option
@markdown_option
@store_option
@slices_option
def run_command(config: str, policy: str | None, no_cache: bool, concurrency: int | None,
                trials: int | None, workers: int | None, executor: str | None, as_json: bool,
                baseline: str | None, junit: str | None, markdown: str | None,
                store: str | None, slices: str) -> None:
    """Run the suite, decide, store, print, and exit on the gate.

    With --baseline REF (or `baseline:` in the policy) the run is paired case by case with
    that run for its non_inferiority rules; the run being made counts as `latest`, so
    `latest~1` (or `latest`) is the newest run before it.
    """
    from oloproof import api

    live = _live_progress() if not as_json else None

    def go() -> RunResult:
        if live is None:
            return api.run(config, policy, no_cache=no_cache, concurrency=concurrency,
                           store=store, trials=trials, workers=workers, executor=executor,
                           baseline=baseline)
        with live:
            return api.run(config, policy, no_cache=no_cache, concurrency=concurrency,
                           on_progress=live.update, store=store, trials=trials,
                           workers=workers, executor=executor, baseline=baseline)

    ci = ci_files("oloproof run", junit, markdown, as_json)
    _sigterm_stops_the_run()
    def run_it() -> RunResult:
        if not as_json:
            return go()
        # stdout carries the document alone: what else is printed while the run runs -- a
        # system's own print(), Ray's "(raylet) A worker died ..." notices -- goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            return go()

    result = guarded(as_json, ci, run_it)
    write_ci(result, ci, as_json, config, store)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
        else:
            # Imported here, not before the run: the run imports it beside its first cases.
            from oloproof.report.terminal import render_run

            render_run(result.document, report_console(), slices="all" if slices == "all" else
                       "differing")

    print_then_exit(show, result.gate.exit_code)


def _live_progress() -> LiveProgress | None:
    """The progress bar of a run on a terminal, or None (docs/cli.md#oloproof-run: never when `CI`
    is set).

    Where no bar can be shown — `CI` set, or stderr not a terminal and neither
    `TTY_COMPATIBLE` nor `FORCE_COLOR` saying it is one (Rich's own rules) — Rich is not
    imported before the run: the run imports the report beside its first cases.
    """
    if os.environ.get("CI") or not (sys.stderr.isatty() or os.environ.get("TTY_COMPATIBLE")
                                    or os.environ.get("FORCE_COLOR") is not None):
        return None
    from oloproof.report.progress import LiveProgress, wants_live_progress

    err_console = report_console(sys.stderr)
    return LiveProgress(err_console) if wants_live_progress(err_console) else None


def _sigterm_stops_the_run() -> None:
    """In the command's own process, SIGTERM stops a run as Ctrl-C does (what finished is
    stored, exit 5). The library never installs a handler: that is its host's business."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
