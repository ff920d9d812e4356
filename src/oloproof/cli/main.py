"""The command line: parse, call the library, print. Nothing here decides anything."""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any, NoReturn

import click

from oloproof import api
from oloproof.errors import ConfigError, OloproofError, RunStopped, StoreError, UsageError
from oloproof.report.terminal import make_console, render_run

EXIT_CONFIG = 2
EXIT_INCOMPLETE = 5


def _fail(error: OloproofError, as_json: bool) -> NoReturn:
    code = EXIT_CONFIG if isinstance(error, ConfigError | UsageError) else EXIT_INCOMPLETE
    if as_json:
        click.echo(json.dumps({"error": error.to_json()}, ensure_ascii=False))
    else:
        label = {"configuration": "Configuration error", "store": "Store error",
                 "usage": "Usage error",
                 "stopped": "Run stopped", "recording": "Recording error"}.get(error.kind, "Error")
        click.echo(f"{label}: {error}", err=True)
    sys.exit(code)


def _print_then_exit(show: Callable[[], None], code: int) -> NoReturn:
    """Print, then exit on the gate, even when the reader stopped early (`| head`).

    A closed pipe is the reader's choice, not a failure of the run: the run is stored and
    the exit code still says what the gate decided.
    """
    try:
        show()
        sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    sys.exit(code)


def _guard(as_json: bool, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except OloproofError as error:
        _fail(error, as_json)


class _Group(click.Group):
    """Usage errors exit 2 (Click's default) with Click's message; ours are handled above."""


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="oloproof")
def cli() -> None:
    """Oloproof: evaluate tool-using agents from what they recorded, and gate a release."""


# ---- init ----------------------------------------------------------------------------------

def _examples() -> dict[str, Path]:
    root = resources.files("oloproof") / "examples"
    found = {}
    for entry in root.iterdir():
        if entry.is_dir() and (entry / "oloproof.yaml").is_file():
            found[entry.name] = Path(str(entry))
    return dict(sorted(found.items()))


@cli.command()
@click.argument("directory", required=False, default=".")
@click.option("--example", "example", default=None,
              help="Copy a packaged example instead of the starter project; `list` names them.")
def init(directory: str, example: str | None) -> None:
    """Scaffold a small working project (or copy a packaged example) into DIRECTORY."""
    examples = _examples()
    if example == "list":
        for name in examples:
            if name == "starter":
                continue
            readme = examples[name] / "README.md"
            lines = readme.read_text(encoding="utf-8").splitlines() if readme.is_file() else []
            # The first sentence of prose (headings name the example, already shown).
            prose = " ".join(ln.strip() for ln in lines if not ln.startswith("#"))
            summary = prose.strip().split(". ")[0].rstrip(".") + "."
            click.echo(f"{name:16} {summary}")
        return
    name = example or "starter"
    if name not in examples:
        click.echo(f"Configuration error: no example named {name!r}; examples: "
                   + ", ".join(n for n in examples if n != "starter"), err=True)
        sys.exit(EXIT_CONFIG)
    target = Path(directory)
    if target.exists() and (target / "oloproof.yaml").exists():
        click.echo(f"Configuration error: {target / 'oloproof.yaml'} already exists; choose an "
                   "empty directory", err=True)
        sys.exit(EXIT_CONFIG)
    shutil.copytree(examples[name], target, dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__", ".oloproof", "*.pyc"))
    shown = directory if directory != "." else "this directory"
    click.echo(f"Created {'example ' + name if example else 'a starter project'} in {shown}.")
    click.echo(("  cd " + directory + " && " if directory != "." else "  ") + "oloproof run")


# ---- run -----------------------------------------------------------------------------------

_store_option = click.option("--store", default=None, help="Path to the store (default: the "
                             "project's .oloproof/store.sqlite).")


@cli.command("run")
@click.option("--config", default="oloproof.yaml", show_default=True, help="The suite file.")
@click.option("--policy", default=None, help="The release policy (default: release.yaml beside "
              "the suite).")
@click.option("--no-cache", is_flag=True, help="Execute every case again.")
@click.option("--concurrency", type=click.IntRange(1, 4096), default=None,
              help="Cases in flight at once (overrides system.concurrency).")
@click.option("--json", "as_json", is_flag=True, help="Print the JSON document instead.")
@_store_option
def run_command(config: str, policy: str | None, no_cache: bool, concurrency: int | None,
                as_json: bool, store: str | None) -> None:
    """Run the suite, decide, store, print, and exit on the gate."""
    from oloproof.report.progress import LiveProgress, wants_live_progress

    console = make_console()
    err_console = make_console(sys.stderr)
    live = LiveProgress(err_console) if (not as_json and wants_live_progress(err_console)) \
        else None

    def go() -> api.RunResult:
        if live is None:
            return api.run(config, policy, no_cache=no_cache, concurrency=concurrency,
                           store=store)
        with live:
            return api.run(config, policy, no_cache=no_cache, concurrency=concurrency,
                           on_progress=live.update, store=store)

    try:
        result = go()
    except RunStopped as stop:
        _fail(stop, as_json)
    except OloproofError as error:
        _fail(error, as_json)
    def show() -> None:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
        else:
            render_run(result.to_json(), console)

    _print_then_exit(show, result.gate.exit_code)


# ---- runs, gate, inspect -------------------------------------------------------------------

_config_option = click.option("--config", default="oloproof.yaml", show_default=True,
                              help="The suite file (to find the project's store).")


@cli.command()
@_config_option
@_store_option
@click.option("--limit", type=int, default=20, show_default=True)
def runs(config: str, store: str | None, limit: int) -> None:
    """The project's runs, newest first, each with its gate in words."""
    from oloproof.store.store import Store

    path = _guard(False, lambda: api.find_store(config, store))
    if not path.is_file():
        if store is None and not Path(config).is_file() and not os.environ.get("OLOPROOF_STORE"):
            click.echo(f"Configuration error: no {config} here; run this in a project directory "
                       "(or pass --config / --store)", err=True)
            sys.exit(EXIT_CONFIG)
        click.echo("No runs yet: `oloproof run` makes the first one.")
        return
    db = _guard(False, lambda: Store(path))
    try:
        rows = db.list_runs(limit)
    finally:
        db.close()
    console = make_console()
    from rich.table import Table

    table = Table(title="Runs (newest first)", title_justify="left")
    for column in ("Run", "Started", "Status", "System", "Cases", "Gate"):
        table.add_column(column, no_wrap=True)
    import datetime as dt

    for r in rows:
        started = dt.datetime.fromtimestamp(r["started_at"]).strftime("%Y-%m-%d %H:%M:%S")
        summary = r["summary"] or {}
        gate = summary.get("gate")
        words = (f"{gate['action']} (exit {gate['exit_code']})" if gate
                 else "not decided: the run did not complete")
        table.add_row(r["run_id"], started, r["status"],
                      f"{r['system_name']} {r['system_version']}",
                      str(r["n_cases"] if r["n_cases"] is not None else "—"), words)
    console.print(table)


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--policy", default=None, help="Decide under this policy instead of the run's own.")
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True)
def gate(run_ref: str, policy: str | None, config: str, store: str | None, as_json: bool) -> None:
    """Re-decide a stored run (optionally under another policy) without running anything."""
    result = _guard(as_json, lambda: api.redecide(run_ref, policy, config, store))
    if as_json:
        click.echo(json.dumps(result.to_json(), ensure_ascii=False))
    else:
        console = make_console()
        from oloproof.report.terminal import render_decisions

        document = result.to_json()
        console.print(f"Run {document['run_id']} · {document['status']} · decided under "
                      + (policy or "the policy it ran with"))
        g = document["gate"]
        console.print(f"Gate: {g['action']} (exit {g['exit_code']})")
        render_decisions(document["decisions"], console)
    sys.exit(result.gate.exit_code)


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--case", "case_id", default=None, help="Show one case whole.")
@click.option("--failures", is_flag=True, help="Every failed, errored or missing case.")
@_config_option
@_store_option
@click.option("--json", "as_json", is_flag=True)
def inspect(run_ref: str, case_id: str | None, failures: bool, config: str, store: str | None,
            as_json: bool) -> None:
    """A stored run, one case whole, or every failed/errored/missing case."""
    from oloproof.report.case_panel import render_case
    from oloproof.report.case_view import case_view, iter_case_views
    from oloproof.store.store import Store

    def work() -> None:
        path = api.find_store(config, store)
        if not path.is_file():
            raise StoreError("no store here yet: run `oloproof run` first", file=path)
        db = Store(path)
        try:
            run_id = db.resolve_run(run_ref)
            console = make_console()
            if case_id is not None:
                view = case_view(db, run_id, case_id)
                if as_json:
                    click.echo(json.dumps(view, ensure_ascii=False, default=str))
                else:
                    render_case(view, console)
                return
            if failures:
                views = iter_case_views(db, run_id, only_failures=True)
                if as_json:
                    click.echo(json.dumps(views, ensure_ascii=False, default=str))
                    return
                if not views:
                    console.print("No failed, errored or missing case in this run.")
                for view in views:
                    render_case(view, console)
                    console.print()
                return
            document = api.load_run(run_id, config, store).to_json()
            if as_json:
                click.echo(json.dumps(document, ensure_ascii=False))
            else:
                render_run(document, console)
        finally:
            db.close()

    _guard(as_json, work)


# ---- labels --------------------------------------------------------------------------------

@cli.group()
def labels() -> None:
    """People's labels for metamorphic pairs."""


@labels.command("export")
@click.option("--transform", "transform", required=True, help="The transform's name.")
@click.option("--config", default="oloproof.yaml", show_default=True)
@click.option("--output", "-o", default=None, help="File to write (default: stdout).")
def labels_export(transform: str, config: str, output: str | None) -> None:
    """Write the current pairs of a transform (both texts and the digest) to label."""
    from oloproof.suite.pairs import export_pairs

    rows = _guard(False, lambda: export_pairs(Path(config), transform))
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if output:
        Path(output).write_text(text, encoding="utf-8")
        click.echo(f"Wrote {len(rows)} pairs to {output}; fill in each `kept` and save it as "
                   "the transform's validity_labels file.", err=True)
    else:
        click.echo(text, nl=False)


# ---- report --------------------------------------------------------------------------------

@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--html", "html_path", required=True, help="The HTML file to write.")
@_config_option
@_store_option
def report(run_ref: str, html_path: str, config: str, store: str | None) -> None:
    """Write one self-contained offline HTML report of a run."""
    from oloproof.api import write_html_report

    written = _guard(False, lambda: write_html_report(run_ref, Path(html_path), config, store))
    click.echo(f"Wrote {written}")


def main() -> None:
    """Entry point of the `oloproof` command."""
    cli(prog_name="oloproof")


if __name__ == "__main__":  # pragma: no cover
    main()
