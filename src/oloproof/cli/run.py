"""`oloproof run`: run the suite (or part of it), decide, store, print, and exit on the gate;
with the progress bar on a terminal, SIGTERM stopping the run as Ctrl-C does, and `os._exit`
guarded while the run executes (a system calling it fails the run, exit 5, instead of ending it
with exit 0: docs/failures.md#a-system-that-ends-the-process). `oloproof rescore`: the same from
a stored run's executions, calling no system."""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable
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
    from types import FrameType

    from oloproof.api import RunResult, VariantRuns
    from oloproof.report.progress import LiveProgress


def _suite_options(command: Callable[..., None]) -> Callable[..., None]:
    """--config and --policy, as `run` and `rescore` take them."""
    command = click.option("--policy", default=None, help="The release policy (default: "
                           "release.yaml beside the suite).")(command)
    return click.option("--config", default="oloproof.yaml", show_default=True,
                        help="The suite file.")(command)


def _report_options(command: Callable[..., None]) -> Callable[..., None]:
    """--json, --baseline, --junit, --markdown, --store and --slices, as `run` and `rescore`
    take them."""
    for option in (slices_option, store_option, markdown_option, junit_option,
                   baseline_option, click.option("--json", "as_json", is_flag=True,
                                                 help="Print the JSON document instead.")):
        command = option(command)
    return command


@cli.command("run")
@_suite_options
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
@click.option("--case", "cases", multiple=True, metavar="ID",
              help="Run only this case (repeatable; a subset run).")
@click.option("-k", "pattern", default=None, metavar="PATTERN",
              help="Run only the cases whose id or a metadata value holds PATTERN (ignoring "
              "case; a subset run).")
@click.option("--limit", type=click.IntRange(1), default=None, metavar="N",
              help="Run only the first N cases (of those chosen; a subset run).")
@click.option("--sample", type=click.IntRange(1), default=None, metavar="N",
              help="Run N cases drawn at random (of those chosen; a subset run).")
@click.option("--seed", default=None, help="The seed of --sample's draw (default 0: the same "
              "cases each time).")
@click.option("--variant", default=None, metavar="K=V,…",
              help="Run only this combination of system.variants (e.g. "
              "model=large,prompt=v2; default: every combination, a run each).")
@_report_options
def run_command(config: str, policy: str | None, no_cache: bool, concurrency: int | None,
                trials: int | None, workers: int | None, executor: str | None,
                cases: tuple[str, ...], pattern: str | None, limit: int | None,
                sample: int | None, seed: str | None, variant: str | None, as_json: bool,
                baseline: str | None, junit: str | None, markdown: str | None,
                store: str | None, slices: str) -> None:
    """Run the suite, decide, store, print, and exit on the gate.

    With --baseline REF (or `baseline:` in the policy) the run is paired case by case with
    that run for its non_inferiority rules; the run being made counts as `latest`, so
    `latest~1` (or `latest`) is the newest run before it. --case, -k, --limit and --sample
    run part of the suite: a subset run, which never exits 0. A suite with
    system.variants runs every combination, a run each, and exits with the worst of their
    gates' codes; --variant runs one.
    """
    from oloproof.execution.process_start import started_early

    # The worker processes of `executor: processes` start now and import the engine while this
    # process does (docs/scaling.md#a-cpu-bound-suite); the run takes them on.
    with started_early(config, executor, workers):
        from oloproof import api

        live = _live_progress() if not as_json else None

        def go() -> RunResult | VariantRuns:
            with live if live is not None else contextlib.nullcontext():
                return api.run(config, policy, no_cache=no_cache, concurrency=concurrency,
                               on_progress=live.update if live is not None else None,
                               store=store, trials=trials, workers=workers,
                               executor=executor, baseline=baseline, cases=cases or None,
                               pattern=pattern, limit=limit, sample=sample, seed=_seed(seed),
                               variant=variant)

        _run_and_report("oloproof run", go, config, store, as_json, junit, markdown, slices)


@cli.command("rescore")
@click.argument("run", default="latest")
@_suite_options
@_report_options
def rescore_command(run: str, config: str, policy: str | None, as_json: bool,
                    baseline: str | None, junit: str | None, markdown: str | None,
                    store: str | None, slices: str) -> None:
    """Score a stored RUN's outputs again with the suite's current evaluators and judges,
    calling no system: a new run, stored and decided (default RUN: latest).

    A case whose system or case changed since RUN, that errored there, or that the dataset no
    longer holds, is listed and left out.
    """
    from oloproof import api

    live = _live_progress() if not as_json else None

    def go() -> RunResult:
        with live if live is not None else contextlib.nullcontext():
            return api.rescore(run, config, policy, store=store, baseline=baseline,
                               on_progress=live.update if live is not None else None)

    _run_and_report("oloproof rescore", go, config, store, as_json, junit, markdown, slices)


def _seed(seed: str | None) -> int | str | None:
    """A --seed as the draw takes it: a whole number, or the text."""
    if seed is None:
        return None
    return int(seed) if seed.lstrip("-").isdigit() else seed


def _run_and_report(command: str, go: Callable[[], RunResult | VariantRuns], config: str,
                    store: str | None, as_json: bool, junit: str | None,
                    markdown: str | None, slices: str) -> None:
    """Run (`go`), write the CI files, print the report or the JSON document, exit on the
    gate."""
    ci = ci_files(command, junit, markdown, as_json)
    _sigterm_stops_the_run()
    from oloproof.execution.exits import os_exit_guarded

    def run_it() -> RunResult | VariantRuns:
        # In the command's own process only: a library run changes nothing of its host's.
        with os_exit_guarded():
            if not as_json:
                return go()
            # stdout carries the document alone: what else is printed while the run runs --
            # a system's own print(), Ray's "(raylet) A worker died ..." notices -- goes to
            # stderr.
            with contextlib.redirect_stdout(sys.stderr):
                return go()

    result = guarded(as_json, ci, run_it)
    write_ci(result, ci, as_json, config, store)
    from oloproof.api import RunResult  # (imported by the run)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
        elif not isinstance(result, RunResult):
            _show_variant_runs(result)
        else:
            # Imported here, not before the run: the run imports it beside its first cases.
            from oloproof.report.terminal import render_run

            render_run(result.document, report_console(), slices="all" if slices == "all" else
                       "differing")

    print_then_exit(show, result.gate.exit_code if isinstance(result, RunResult)
                    else result.exit_code)


def _show_variant_runs(runs: VariantRuns) -> None:
    """The runs of every variant, a line each, then where to read them
    (docs/board.md#running-every-variant)."""
    from oloproof.report.escape import safe

    first = runs[0].document.system
    click.echo(f"{len(runs)} runs of {safe(first.name)} {safe(first.version)}, one per variant "
               "of system.variants:")
    width = max(len(safe(v)) for v in runs.variants)
    for result, variant in zip(runs, runs.variants, strict=True):
        gate = result.gate
        click.echo(f"  {safe(variant):<{width}}  {result.run_id}  {result.status}  "
                   f"{gate.action} (exit {int(gate.exit_code)})")
    click.echo(f"Exit {runs.exit_code}: the worst of the runs' gates.")
    click.echo(f"One run's report: oloproof inspect variant:{safe(runs.variants[0])}")
    click.echo("Every candidate side by side: oloproof board")


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
    stored, exit 5). The library never installs a handler: that is its host's business.

    SIGTERM is handed to SIGINT's handler, so it takes Ctrl-C's path exactly: while the run
    runs, `asyncio.run`'s handler cancels the run's task, which stops at an `await`. Raising
    `KeyboardInterrupt` from this handler instead raised it wherever the main thread was,
    inside a `queue.Queue.put` to the store's writer for one, which lost the writer's next
    wake-up (`threading.Condition.notify` interrupted after it woke a waiter): the stopped
    run then waited for the writer forever (docs/architecture.md#tests). Where SIGINT is
    ignored (a background job of a script) there is no Ctrl-C path to take: the stop is
    raised from the event loop between two callbacks, as the loop raises an interruption,
    or where the main thread is when no loop runs.
    """
    import asyncio
    import signal

    def stop(signum: int, frame: FrameType | None) -> None:
        on_ctrl_c = signal.getsignal(signal.SIGINT)
        if callable(on_ctrl_c):  # asyncio.run's while the run runs; default_int_handler else
            on_ctrl_c(signal.SIGINT, frame)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            raise KeyboardInterrupt from None
        loop.call_soon_threadsafe(_interrupt)

    signal.signal(signal.SIGTERM, stop)


def _interrupt() -> None:
    """A callback that stops the event loop's run as Ctrl-C would (`_sigterm_stops_the_run`)."""
    raise KeyboardInterrupt
