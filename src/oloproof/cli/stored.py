"""The commands that read stored runs: `runs` (the list), `tag`, `inspect` (a run, one case
whole, its failures, its flaky cases) and `cases` (one line per case)."""

from __future__ import annotations

import json

import click

from oloproof.cli.exits import fail, guard, report_console
from oloproof.cli.group import cli
from oloproof.cli.options import (
    config_option,
    criterion_option,
    slices_option,
    store_option,
    verdict_option,
)
from oloproof.errors import UsageError


@cli.command()
@config_option
@store_option
@click.option("--limit", type=int, default=20, show_default=True)
def runs(config: str, store: str | None, limit: int) -> None:
    """The project's runs, newest first, each with its gate in words."""
    from oloproof import api

    rows = guard(False, lambda: api.list_runs(limit, config, store))
    if not rows and limit != 0:
        click.echo("No runs yet: `oloproof run` makes the first one.")
        return
    from oloproof.report.terminal import render_runs

    render_runs(rows, report_console())


@cli.command("tag")
@click.argument("run_ref", metavar="RUN")
@click.argument("name", metavar="NAME")
@config_option
@store_option
def tag_command(run_ref: str, name: str, config: str, store: str | None) -> None:
    """Tag a run, so that a baseline can name it.

    RUN (a run reference) is tagged NAME: `baseline: {tag: NAME}` in a policy, --baseline
    tag:NAME, or tag:NAME wherever a run is named, then names it. A tag is on one run at a
    time: tagging another run moves it there. `oloproof runs` shows the tags. `oloproof tag
    latest shipped`.
    """
    from oloproof import api

    done = guard(False, lambda: api.tag(run_ref, name, config, store))
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
@criterion_option
@verdict_option
@slices_option
@config_option
@store_option
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
        fail(UsageError("--trial N shows one trial of one case: give --case ID too"), as_json)
    from oloproof import api
    from oloproof.report.case_list import render_case_list
    from oloproof.report.case_panel import render_case
    from oloproof.report.terminal import render_run

    def work() -> None:
        console = report_console()
        if case_id is not None:
            view = api.case_view(case_id, run_ref, config, store, trial=trial)
            if as_json:
                click.echo(json.dumps(view, ensure_ascii=False, default=str))
            else:
                render_case(view, console)
            return
        if flaky:
            from oloproof.report.flaky import render_flaky

            found = api.flaky_cases(run_ref, config, store)
            if as_json:
                click.echo(json.dumps(found.to_json(), ensure_ascii=False))
            else:
                render_flaky(console, found.run_id, found.criteria, found.trials, found.total,
                             found.cases)
            return
        if failures or criterion is not None or verdict is not None:
            listed = api.list_cases(run_ref, config, store, failures=True,
                                    criterion=criterion, verdict=verdict)
            views = api.case_views(listed.run_id, config, store,
                                   cases=[c.case for c in listed.cases])
            if as_json:
                click.echo(json.dumps(views, ensure_ascii=False, default=str))
                return
            if not listed.cases:
                console.print(f"No case {listed.selection.describe()} in run {listed.run_id}.")
                return
            render_case_list(console, listed.run_id, listed.criteria, listed.cases,
                             listed.total, listed.selection)
            for view in views:
                console.print()
                render_case(view, console)
            return
        document = api.load_run(run_ref, config, store).document
        if as_json:
            click.echo(json.dumps(document.to_json(), ensure_ascii=False))
        else:
            render_run(document, console, slices="all" if slices == "all" else "differing")

    guard(as_json, work)


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--failures", is_flag=True, help="Only failed, errored or missing cases.")
@criterion_option
@verdict_option
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True)
def cases(run_ref: str, failures: bool, criterion: str | None, verdict: str | None,
          config: str, store: str | None, as_json: bool) -> None:
    """The case ids of a stored run, one line each with its verdict per criterion."""
    from oloproof import api
    from oloproof.report.case_list import render_case_list

    listed = guard(as_json, lambda: api.list_cases(run_ref, config, store, failures=failures,
                                                   criterion=criterion, verdict=verdict))
    if as_json:
        click.echo(json.dumps(listed.to_json(), ensure_ascii=False))
        return
    render_case_list(report_console(), listed.run_id, listed.criteria, listed.cases,
                     listed.total, listed.selection)
