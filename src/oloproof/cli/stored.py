"""The commands that read stored runs: `runs` (the list), `tag`, `inspect` (a run, one case
whole, its failures, its flaky cases) and `cases` (one line per case)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import click

from oloproof.cli.exits import EXIT_CONFIG, _console, _fail, _guard
from oloproof.cli.group import cli
from oloproof.cli.options import (
    _case_selection,
    _config_option,
    _criterion_option,
    _slices_option,
    _store_option,
    _verdict_option,
)
from oloproof.errors import UsageError


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
    from oloproof.report.case_list import render_case_list, select_cases
    from oloproof.report.case_panel import render_case
    from oloproof.report.case_view import case_view, iter_case_views
    from oloproof.report.terminal import render_run
    from oloproof.store.store import Store

    selection = _case_selection(True, criterion, verdict)

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
    from oloproof.report.case_list import render_case_list, select_cases
    from oloproof.store.store import Store

    selection = _case_selection(failures, criterion, verdict)

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
