"""The command line: parse, call the library, print. Nothing here decides anything.

Start-up imports only Click and the standard library, so `oloproof --help` answers at once;
each command imports the engine (pydantic, NumPy, SciPy, Rich) when it runs.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import sys
import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click

from oloproof.cli import crash
from oloproof.errors import (
    ConfigError,
    OloproofError,
    TraceError,
    UsageError,
)

if TYPE_CHECKING:
    from rich.console import Console

    from oloproof.api import RunResult
    from oloproof.report.ci_files import CiFiles
    from oloproof.report.progress import LiveProgress

EXIT_CONFIG = 2
EXIT_INCOMPLETE = crash.EXIT_INCOMPLETE


_LABELS = {"configuration": "Configuration error", "store": "Store error",
           "usage": "Usage error", "trace": "Trace error",
           "stopped": "Run stopped", "recording": "Recording error"}


def _fail(error: OloproofError, as_json: bool, ci: CiFiles | None = None) -> NoReturn:
    code = (EXIT_CONFIG if isinstance(error, ConfigError | UsageError | TraceError)
            else EXIT_INCOMPLETE)
    label = _LABELS.get(error.kind, "Error")
    if ci is not None:  # the CI files say what happened, not what an earlier run did
        ci.failed(f"`{ci.command}` failed (exit {code})", f"{label}: {error}")
    if as_json:
        click.echo(json.dumps({"error": error.to_json()}, ensure_ascii=False))
    else:
        from oloproof.report.escape import safe

        # An error may quote a case id or a span's name: shown as every report shows them.
        click.echo(safe(f"{label}: {error}"), err=True)
    sys.exit(code)


def _ci_files(command: str, junit: str | None, markdown: str | None,
              as_json: bool) -> CiFiles | None:
    """The command's --junit / --markdown files, checked (exit 2 before anything runs) and
    holding a stand-in until the command writes its results or its failure in them."""
    if junit is None and markdown is None:
        return None
    from oloproof.report.ci_files import CiFiles

    files = CiFiles(command, junit, markdown)
    _guard(as_json, files.begin)
    return files


def _guarded(as_json: bool, ci: CiFiles | None, action: Callable[[], Any]) -> Any:
    """`action()`, with an error it raises said in the CI files too (see `_fail`)."""
    try:
        return action()
    except OloproofError as error:
        _fail(error, as_json, ci)
    except BaseException as error:
        if ci is not None:  # the one-paragraph crash (or Ctrl-C) is printed by `_Group`
            stopped = isinstance(error, KeyboardInterrupt)
            ci.failed(f"`{ci.command}` " + ("was stopped (exit 5)" if stopped
                                            else "failed unexpectedly (exit 5)"),
                      "Stopped (Ctrl-C) before the command finished." if stopped else
                      f"{type(error).__name__}: {error}. This is a bug in Oloproof; the "
                      "command's output says where its traceback was written.")
        raise


def _closed_pipe() -> NoReturn:
    raise BrokenPipeError(errno.EPIPE, "the reader closed the output pipe")


def _console(stream: Any = None) -> Console:
    """The report's console, except that a closed pipe is raised, not turned into exit 1.

    Rich answers a closed pipe with SystemExit(1), which would read as "blocked with a FAIL";
    raised instead, it reaches `_Group.invoke`, which keeps the command's own exit code.
    """
    from oloproof.report.layout import make_console

    console = make_console(stream)
    setattr(console, "on_broken_pipe", _closed_pipe)  # noqa: B010 (an instance's handler)
    return console


def _print_then_exit(show: Callable[[], None], code: int) -> NoReturn:
    """Print, then exit on the gate, even when the reader stopped early (`| head`).

    A closed pipe is the reader's choice, not a failure of the run: the run is stored and
    the exit code still says what the gate decided.
    """
    crash.exit_code_if_pipe_closes(code)
    show()
    sys.stdout.flush()
    sys.exit(code)


def _guard(as_json: bool, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except OloproofError as error:
        _fail(error, as_json)


class _Group(click.Group):
    """Click's group, with exit codes that keep their meaning under every failure.

    Usage errors exit 2 (Click's default) with Click's message; errors Oloproof raises on
    purpose are handled by each command. What is left is handled here: a closed output pipe
    keeps the command's exit code, Ctrl-C outside a run exits 5, and an unexpected exception
    exits 5 with one paragraph and the traceback written to a file (never Python's exit 1).
    """

    _argv: list[str] = []

    def main(self, args: Sequence[str] | None = None, *rest: Any, **extra: Any) -> Any:
        self._argv = list(args) if args is not None else sys.argv[1:]
        return super().main(args, *rest, **extra)

    def make_context(self, info_name: str | None, args: list[str],
                     parent: click.Context | None = None, **extra: Any) -> click.Context:
        try:
            return super().make_context(info_name, args, parent, **extra)
        except BrokenPipeError:  # `oloproof --help | head -1`
            raise click.exceptions.Exit(crash.pipe_closed()) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            sys.exit(crash.pipe_closed())
        except (click.exceptions.ClickException, click.exceptions.Exit,
                click.exceptions.Abort):
            raise
        except KeyboardInterrupt:
            click.echo("\nStopped (Ctrl-C) before the command finished.", err=True)
            sys.exit(EXIT_INCOMPLETE)
        except OloproofError as error:  # raised on purpose, but not caught by its command
            _fail(error, "--json" in self._argv)
        except Exception as error:
            self._crash(error)

    def _crash(self, error: Exception) -> NoReturn:
        report = crash.write_crash_report(error, self._argv)
        paragraph = crash.crash_paragraph(error, self._argv, report)
        if "--json" in self._argv:  # like a configuration error: the document on stdout
            try:
                click.echo(json.dumps({"error": {
                    "kind": "internal", "message": paragraph,
                    "file": str(report) if report is not None else None, "line": None,
                    "case": None, "field": None}}, ensure_ascii=False))
            except BrokenPipeError:
                crash.pipe_closed()
        else:
            click.echo(paragraph, err=True)
        if report is None:
            import traceback

            traceback.print_exception(error)
        sys.exit(EXIT_INCOMPLETE)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="oloproof")
def cli() -> None:
    """Oloproof: evaluate tool-using agents from what they recorded, and gate a release."""


# ---- init ----------------------------------------------------------------------------------

@cli.command()
@click.argument("directory", required=False, default=".")
@click.option("--example", "example", default=None,
              help="Copy a packaged example instead of the starter project; `list` names them.")
@click.option("--force", is_flag=True,
              help="Replace files the project would write that DIRECTORY already holds.")
def init(directory: str, example: str | None, force: bool) -> None:
    """Scaffold a small working project (or copy a packaged example) into DIRECTORY.

    Never overwrites a file: if DIRECTORY holds any file the project would write, nothing is
    written and the files are named (exit 2); --force replaces them and lists what it replaced.
    A .gitignore holding `.oloproof/` keeps the store out of Git (an existing .gitignore gets
    the line appended, with --force).
    """
    from oloproof.cli import scaffold

    examples = scaffold.packaged_examples()
    if example == "list":
        for name in examples:
            if name == "starter":
                continue
            readme = examples[name] / "README.md"
            lines = readme.read_text(encoding="utf-8").splitlines() if readme.is_file() else []
            # The first sentence of prose (headings name the example, already shown).
            prose = " ".join(ln.strip() for ln in lines if not ln.startswith("#"))
            summary = prose.strip().split(". ")[0].rstrip(".") + "."
            # Wrapped to the terminal (COLUMNS, else 80), under the name's column.
            width = max(40, shutil.get_terminal_size((80, 24)).columns)
            click.echo(textwrap.fill(f"{name:16} {summary}", width=width,
                                     subsequent_indent=" " * 17, break_on_hyphens=False))
        return
    name = example or "starter"
    if name not in examples:
        click.echo(f"Usage error: no example named {name!r}; examples: "
                   + ", ".join(n for n in examples if n != "starter"), err=True)
        sys.exit(EXIT_CONFIG)
    replaced = _guard(False, lambda: scaffold.write(
        scaffold.plan(examples[name], Path(directory)), force=force))
    shown = directory if directory != "." else "this directory"
    click.echo(f"Created {'example ' + name if example else 'a starter project'} in {shown}.")
    if replaced:
        click.echo("Replaced (--force): " + ", ".join(replaced))
    click.echo(("  cd " + directory + " && " if directory != "." else "  ") + "oloproof run")


# ---- run -----------------------------------------------------------------------------------

_store_option = click.option("--store", default=None, help="Path to the store (default: the "
                             "project's .oloproof/store.sqlite).")
_baseline_option = click.option(
    "--baseline", "baseline", default=None, metavar="REF",
    help="The baseline run non_inferiority rules compare with (latest, latest~N, an id "
    "prefix or suffix, tag:NAME, version:V), instead of `baseline:` in the policy.")
_junit_option = click.option("--junit", "junit", default=None, metavar="FILE",
                             help="Also write the results as JUnit XML (for CI).")
_markdown_option = click.option("--markdown", "markdown", default=None, metavar="FILE",
                                help="Also write a GitHub-flavoured Markdown summary "
                                "(a pull-request comment, $GITHUB_STEP_SUMMARY).")


def _write_ci(target: Any, ci: CiFiles | None, as_json: bool,
              config: str = "oloproof.yaml", store: str | None = None) -> None:
    """Write the --junit / --markdown files of a run or a comparison (before its report is
    printed, so a CI step that reads them finds them whatever the exit code)."""
    if ci is None:
        return
    from oloproof import api

    written = _guarded(as_json, ci, lambda: api.write_ci_reports(
        target, junit=ci.junit, markdown=ci.markdown, config=config, store=store))
    if not as_json:
        for path in written:
            click.echo(f"Wrote {path}", err=True)


_slices_option = click.option(
    "--slices", "slices", type=click.Choice(["differing", "all"]), default="differing",
    show_default=True,
    help="Slice rows to show: those that differ from the rest of the suite (marked *), or all.")


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
@_baseline_option
@_junit_option
@_markdown_option
@_store_option
@_slices_option
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

    ci = _ci_files("oloproof run", junit, markdown, as_json)
    _sigterm_stops_the_run()
    def run_it() -> RunResult:
        if not as_json:
            return go()
        # stdout carries the document alone: what else is printed while the run runs -- a
        # system's own print(), Ray's "(raylet) A worker died ..." notices -- goes to stderr.
        with contextlib.redirect_stdout(sys.stderr):
            return go()

    result = _guarded(as_json, ci, run_it)
    _write_ci(result, ci, as_json, config, store)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
        else:
            # Imported here, not before the run: the run imports it beside its first cases.
            from oloproof.report.terminal import render_run

            render_run(result.document, _console(), slices="all" if slices == "all" else
                       "differing")

    _print_then_exit(show, result.gate.exit_code)


def _live_progress() -> LiveProgress | None:
    """The progress bar of a run on a terminal, or None (SPEC §4.4: never when `CI` is set).

    Where no bar can be shown — `CI` set, or stderr not a terminal and neither
    `TTY_COMPATIBLE` nor `FORCE_COLOR` saying it is one (Rich's own rules) — Rich is not
    imported before the run: the run imports the report beside its first cases.
    """
    if os.environ.get("CI") or not (sys.stderr.isatty() or os.environ.get("TTY_COMPATIBLE")
                                    or os.environ.get("FORCE_COLOR") is not None):
        return None
    from oloproof.report.progress import LiveProgress, wants_live_progress

    err_console = _console(sys.stderr)
    return LiveProgress(err_console) if wants_live_progress(err_console) else None


def _sigterm_stops_the_run() -> None:
    """In the command's own process, SIGTERM stops a run as Ctrl-C does (what finished is
    stored, exit 5). The library never installs a handler: that is its host's business."""
    import signal

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)


# ---- runs, gate, inspect -------------------------------------------------------------------

_config_option = click.option("--config", default="oloproof.yaml", show_default=True,
                              help="The suite file (to find the project's store).")


@cli.command()
@_config_option
@_store_option
@click.option("--limit", type=int, default=20, show_default=True)
def runs(config: str, store: str | None, limit: int) -> None:
    """The project's runs, newest first, each with its gate in words."""
    from oloproof import api
    from oloproof.store.store import Store

    path = _guard(False, lambda: api.find_store(config, store))
    if not path.is_file():
        if store is None and not Path(config).is_file() and not os.environ.get("OLOPROOF_STORE"):
            click.echo(f"Configuration error: no {config} here; run this in a project directory "
                       "(or pass --config / --store)", err=True)
            sys.exit(EXIT_CONFIG)
        click.echo("No runs yet: `oloproof run` makes the first one.")
        return
    with _guard(False, lambda: Store(path, read_only=True)) as db:
        rows = db.list_runs(limit)
    from oloproof.report.terminal import render_runs

    render_runs(rows, _console())


@cli.command("tag")
@click.argument("run_ref", metavar="RUN")
@click.argument("name", metavar="NAME")
@_config_option
@_store_option
def tag_command(run_ref: str, name: str, config: str, store: str | None) -> None:
    """Tag a run, so that a baseline can name it.

    RUN (a run reference) is tagged NAME: `baseline: {tag: NAME}` in a policy, --baseline
    tag:NAME, or tag:NAME wherever a run is named, then names it. A tag is on one run at a
    time: tagging another run moves it there. `oloproof runs` shows the tags. `oloproof tag
    latest shipped`.
    """
    from oloproof import api

    done = _guard(False, lambda: api.tag(run_ref, name, config, store))
    click.echo(f"Tagged {done.run_id} {done.name}"
               + (f" (moved from {done.moved_from})" if done.moved_from else "") + ".")


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--policy", default=None, help="Decide under this policy instead of the run's own.")
@_baseline_option
@_junit_option
@_markdown_option
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True)
def gate(run_ref: str, policy: str | None, baseline: str | None, junit: str | None,
         markdown: str | None, config: str, store: str | None, as_json: bool) -> None:
    """Re-decide a stored run (optionally under another policy) without running anything.

    --baseline REF names the run non_inferiority rules compare with; a reference naming the
    run itself (`latest` for `gate latest`) means the newest run before it.
    """
    from oloproof import api

    ci = _ci_files("oloproof gate", junit, markdown, as_json)
    result = _guarded(as_json, ci, lambda: api.redecide(run_ref, policy, config, store,
                                                        baseline))
    _write_ci(result, ci, as_json, config, store)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
            return
        console = _console()
        from oloproof.report.layout import print_wrapped
        from oloproof.report.terminal import render_decisions

        document = result.document
        print_wrapped(console, f"Run {document.run_id} · {document.status} · decided under "
                      + (policy or "the policy it ran with"))
        g = document.gate
        console.print(f"Gate: {g.action} (exit {int(g.exit_code)})")
        render_decisions(document.decisions, console, document.metrics, document.baseline)
        if document.baseline is not None:
            from oloproof.report.comparison import render_baseline_summary

            render_baseline_summary(document.baseline, console)

    _print_then_exit(show, result.gate.exit_code)


@cli.command("compare")
@click.argument("baseline_ref", metavar="BASELINE")
@click.argument("candidate_ref", metavar="CANDIDATE", default="latest")
@_junit_option
@_markdown_option
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison document instead.")
def compare_command(baseline_ref: str, candidate_ref: str, junit: str | None,
                    markdown: str | None, config: str, store: str | None,
                    as_json: bool) -> None:
    """Compare a CANDIDATE run with its BASELINE run, case by case; runs nothing.

    Cases pair by id (a case whose input or expected changed is listed, not paired). Per
    criterion: both passed, fixed, broken, both failed, a side missing; the difference in pass
    rate (candidate − baseline) with its interval; McNemar's exact p (descriptive). Then the
    broken cases, each with what changed. `oloproof compare latest~1 latest`.
    """
    from oloproof.comparison import compare

    ci = _ci_files("oloproof compare", junit, markdown, as_json)
    comparison = _guarded(as_json, ci, lambda: compare(baseline_ref, candidate_ref, config,
                                                       store))
    _write_ci(comparison, ci, as_json, config, store)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(comparison.to_json(), ensure_ascii=False))
            return
        from oloproof.report.comparison import render_comparison

        render_comparison(comparison, _console())

    _print_then_exit(show, 0)


@cli.command("plan")
@click.argument("run_ref", default="latest")
@click.option("--policy", default=None, help="Plan under this policy instead of the run's own.")
@_baseline_option
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan document instead.")
def plan_command(run_ref: str, policy: str | None, baseline: str | None, config: str,
                 store: str | None, as_json: bool) -> None:
    """For each undecided rule, how many observed cases would settle it if the rate stayed at
    its estimate, and how many would with an 80% chance — a projection, not a promise. Runs
    nothing."""
    from oloproof import api

    plan = _guard(as_json, lambda: api.plan(run_ref, policy, config, store, baseline))

    def show() -> None:
        if as_json:
            click.echo(json.dumps(plan.to_json(), ensure_ascii=False))
            return
        from oloproof.report.plan import render_plan

        render_plan(plan, _console())

    _print_then_exit(show, 0)


_criterion_option = click.option("--criterion", default=None,
                                 help="Only cases failed or missing on this criterion.")
_verdict_option = click.option("--verdict", type=click.Choice(["failed", "missing"]),
                               default=None, help="Only cases with a verdict of this kind.")


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--case", "case_id", default=None, help="Show one case whole.")
@click.option("--trial", type=click.IntRange(min=1), default=None,
              help="With --case: that trial of the case whole (a run with --trials).")
@click.option("--failures", is_flag=True,
              help="Every failed, errored or missing case: one line each, then each whole.")
@click.option("--flaky", is_flag=True,
              help="With trials: the cases whose trials disagree, c / k per criterion, most "
              "divided first.")
@_criterion_option
@_verdict_option
@_slices_option
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True)
def inspect(run_ref: str, case_id: str | None, trial: int | None, failures: bool,
            flaky: bool, criterion: str | None, verdict: str | None, slices: str, config: str,
            store: str | None, as_json: bool) -> None:
    """A stored run, one case whole, or its failed/errored/missing cases.

    --criterion and --verdict narrow --failures (and imply it): `--criterion answer_correct
    --verdict missing` shows the cases missing on answer_correct. With trials, --case shows
    trial 1 whole beside every trial's verdicts and steps; `--case ID --trial N` shows trial
    N whole.
    """
    if trial is not None and case_id is None:
        _fail(UsageError("--trial N shows one trial of one case: give --case ID too"), as_json)
    from oloproof import api
    from oloproof.report.case_list import CaseSelection, render_case_list, select_cases
    from oloproof.report.case_panel import render_case
    from oloproof.report.case_view import case_view, iter_case_views
    from oloproof.report.terminal import render_run
    from oloproof.store.store import Store

    selection = CaseSelection(failures=True, criterion=criterion,
                              verdict="failed" if verdict == "failed" else
                              "missing" if verdict == "missing" else None)

    def work() -> None:
        with Store(api.find_store(config, store), read_only=True) as db:
            run_id = db.resolve_run(run_ref)
            console = _console()
            if case_id is not None:
                view = case_view(db, run_id, case_id, trial)
                if as_json:
                    click.echo(json.dumps(view, ensure_ascii=False, default=str))
                else:
                    render_case(view, console)
                return
            if flaky:
                from oloproof.report.flaky import flaky_cases, render_flaky

                criteria, trials, total, found = flaky_cases(db, run_id)
                if as_json:
                    click.echo(json.dumps({"run_id": run_id, "trials": trials,
                                           "criteria": criteria, "cases": total,
                                           "flaky": [f.to_json(criteria) for f in found]},
                                          ensure_ascii=False))
                else:
                    render_flaky(console, run_id, criteria, trials, total, found)
                return
            if failures or criterion is not None or verdict is not None:
                criteria, chosen, total = select_cases(db, run_id, selection)
                views = iter_case_views(db, run_id, cases=[c.case for c in chosen])
                if as_json:
                    click.echo(json.dumps(views, ensure_ascii=False, default=str))
                    return
                if not chosen:
                    console.print(f"No case {selection.describe()} in run {run_id}.")
                    return
                render_case_list(console, run_id, criteria, chosen, total, selection)
                for view in views:
                    console.print()
                    render_case(view, console)
                return
            document = api.load_run(run_id, config, store).document
            if as_json:
                click.echo(json.dumps(document.to_json(), ensure_ascii=False))
            else:
                render_run(document, console, slices="all" if slices == "all" else "differing")

    _guard(as_json, work)


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--failures", is_flag=True, help="Only failed, errored or missing cases.")
@_criterion_option
@_verdict_option
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True)
def cases(run_ref: str, failures: bool, criterion: str | None, verdict: str | None,
          config: str, store: str | None, as_json: bool) -> None:
    """The case ids of a stored run, one line each with its verdict per criterion."""
    from oloproof import api
    from oloproof.report.case_list import CaseSelection, render_case_list, select_cases
    from oloproof.store.store import Store

    selection = CaseSelection(failures=failures, criterion=criterion,
                              verdict="failed" if verdict == "failed" else
                              "missing" if verdict == "missing" else None)

    def work() -> None:
        with Store(api.find_store(config, store), read_only=True) as db:
            run_id = db.resolve_run(run_ref)
            criteria, chosen, total = select_cases(db, run_id, selection)
        if as_json:
            click.echo(json.dumps({"run_id": run_id, "criteria": criteria,
                                   "cases": [c.to_json(criteria) for c in chosen]},
                                  ensure_ascii=False))
            return
        render_case_list(_console(), run_id, criteria, chosen, total, selection)

    _guard(as_json, work)


# ---- labels --------------------------------------------------------------------------------

@cli.group()
def labels() -> None:
    """People's labels: of judge criteria and of metamorphic pairs."""


@labels.command("sample")
@click.option("--criterion", required=True, help="The judge criterion to label.")
@click.option("--n", "n", type=click.IntRange(min=1), default=None,
              help="How many cases to sample (not needed to add to an existing file).")
@click.option("--seed", default=None, help="The seed of the draw (default: a new one, "
              "recorded in the file; an existing file's own).")
@click.option("--output", "-o", required=True, help="The labels file to write.")
@click.option("--run", "run_ref", default="latest", show_default=True,
              help="The run whose shown text to sample.")
@_config_option
@_store_option
def labels_sample(criterion: str, n: int | None, seed: str | None, output: str,
                  run_ref: str, config: str, store: str | None) -> None:
    """Draw a uniform sample of a run's cases for people to label (docs/judges.md).

    Each sampled case is written as the judge was shown it, never with its verdict, `label`
    left empty. With a file that already holds the sample, only the sampled cases whose shown
    text changed are added: the labels of unchanged text still apply.
    """
    from oloproof import api
    from oloproof.report.labelling import sample_labels
    from oloproof.report.output_files import check_output_path, write_output
    from oloproof.store.store import Store
    from oloproof.suite.judge_labels import read_labels_file

    target = _guard(False, lambda: check_output_path(output))
    existing = _guard(False, lambda: read_labels_file(target)) \
        if target.is_file() and target.stat().st_size > 0 else None
    chosen_seed: int | str | None = None if seed is None else \
        (int(seed) if seed.lstrip("-").isdigit() else seed)

    def work() -> Any:
        with Store(api.find_store(config, store), read_only=True) as db:
            return sample_labels(db, run_ref, criterion, n, chosen_seed, existing,
                                 Path(output), Path(config).parent)

    made = _guard(False, work)
    _guard(False, lambda: write_output(output, made.labels.text()))
    sample = made.labels.sample
    if existing is None:
        click.echo(f"Sampled {len(made.added)} of {sample['cases']} cases of {made.run_id} for "
                   f"{criterion} (seed {sample['seed']}); wrote {output}. Label them with "
                   f"`oloproof labels review {output}`.")
    elif not made.added:
        click.echo(f"No sampled case of {made.run_id} showed new text: the rows of {output} "
                   f"still apply to all {made.kept}.")
    else:
        click.echo(f"{len(made.added)} sampled case(s) of {made.run_id} showed new text, "
                   f"added to {output} to label ({made.kept} unchanged, their labels still "
                   "apply):")
        for row in made.added:
            click.echo(f"  {row.case}" + (f" trial {row.trial}" if row.trial else ""))
    for case_id, why in sorted(made.unshown.items()):
        click.echo(f"  {case_id}: the judge was shown nothing ({why}); it stays unlabelled "
                   "and counts as missing", err=True)
    for note in made.notes:
        click.echo(f"Note: {note}", err=True)


@labels.command("review")
@click.argument("file", type=click.Path(dir_okay=False))
def labels_review(file: str) -> None:
    """Label a sample in the terminal: one case at a time, p pass, f fail, s skip, q quit;
    saved after every key. The judge's verdict is never shown."""
    from oloproof.cli.review import run_review

    done = _guard(False, lambda: run_review(Path(file)))
    click.echo(f"\nLabelled {done.labelled}, skipped {done.skipped}; {done.left} left "
               f"unlabelled. Saved {file}.")


@labels.command("export")
@click.option("--transform", "transform", required=True, help="The transform's name.")
@click.option("--config", default="oloproof.yaml", show_default=True)
@click.option("--output", "-o", default=None, help="File to write (default: stdout).")
@click.option("--force", is_flag=True, help="Replace an output file that already holds labels.")
def labels_export(transform: str, config: str, output: str | None, force: bool) -> None:
    """Write the current pairs of a transform (both texts and the digest) to label.

    An output file that already holds something is never replaced without --force: it may be
    people's labels.
    """
    from oloproof.report.output_files import check_output_path, write_output
    from oloproof.suite.pairs import export_pairs

    if output:
        target = _guard(False, lambda: check_output_path(output))
        if not force and target.is_file() and target.stat().st_size > 0:
            _fail(UsageError(f"{output} already holds {_count_lines(target)} line(s), perhaps "
                             "people's labels, and exporting would replace them; write to "
                             "another file, or pass --force to replace it"), False)
    rows = _guard(False, lambda: export_pairs(Path(config), transform))
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if output:
        _guard(False, lambda: write_output(output, text))
        click.echo(f"Wrote {len(rows)} pairs to {output}; fill in each `kept` and save it as "
                   "the transform's validity_labels file.", err=True)
    else:
        click.echo(text, nl=False)


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


# ---- traces --------------------------------------------------------------------------------

@cli.group()
def traces() -> None:
    """Suites over the traces agents recorded in production (SPEC §16)."""


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
    summary = _guard(as_json, lambda: import_traces(file, out, project=project))
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


# ---- report --------------------------------------------------------------------------------

@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--html", "html_path", required=True, help="The HTML file to write.")
@click.option("--baseline", "baseline", default=None, metavar="REF",
              help="Add the comparison with this baseline run: broken cases first, each "
              "opening both runs' case panels side by side.")
@_config_option
@_store_option
def report(run_ref: str, html_path: str, baseline: str | None, config: str,
           store: str | None) -> None:
    """Write one self-contained offline HTML report of a run."""
    from oloproof.api import write_html_report

    written = _guard(False, lambda: write_html_report(run_ref, Path(html_path), config, store,
                                                      baseline=baseline))
    click.echo(f"Wrote {written}")


# ---- view ----------------------------------------------------------------------------------

@cli.command()
@click.option("--port", type=click.IntRange(0, 65535), default=7777, show_default=True,
              help="The port to listen on (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on; another than 127.0.0.1 makes the store's texts "
              "readable from elsewhere.")
@click.option("--open", "open_browser", is_flag=True, help="Open the view in the browser.")
@_config_option
@_store_option
def view(port: int, host: str, open_browser: bool, config: str, store: str | None) -> None:
    """Serve the project's runs in a browser, read-only, until Ctrl-C: every run, two side by
    side, a run in progress as it goes (needs the `view` extra: pip install 'oloproof[view]')."""
    try:
        from oloproof.view.serve import serve
    except ImportError as exc:
        _fail(UsageError(f"`oloproof view` needs the view extra ({exc.name} is not installed): "
                         "pip install 'oloproof[view]'"), False)
    from oloproof.store.location import find_store

    path = _guard(False, lambda: find_store(config, store))
    if not path.is_file():
        click.echo(f"No store at {path} yet: the view says so until `oloproof run` makes one.",
                   err=True)
    def say(line: str) -> None:
        click.echo(line, err=line.startswith("Warning"))
        sys.stdout.flush()  # a pipe reading the address gets it at once

    _guard(False, lambda: serve(path, host=host, port=port, open_browser=open_browser,
                                say=say))


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
