"""The commands that decide from stored runs, running nothing: `gate` (re-decide a run),
`compare` (a candidate against its baseline), `board` (many candidates against one baseline)
and `plan` (what would settle each undecided rule)."""

from __future__ import annotations

import json
from functools import partial

import click

from oloproof.cli.exits import ci_files, guard, guarded, print_then_exit, report_console, write_ci
from oloproof.cli.group import cli
from oloproof.cli.options import (
    baseline_option,
    config_option,
    junit_option,
    markdown_option,
    store_option,
)


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--policy", default=None, help="Decide under this policy instead of the run's own.")
@baseline_option
@junit_option
@markdown_option
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True)
def gate(run_ref: str, policy: str | None, baseline: str | None, junit: str | None,
         markdown: str | None, config: str, store: str | None, as_json: bool) -> None:
    """Re-decide a stored run (optionally under another policy) without running anything.

    --baseline REF names the run non_inferiority rules compare with; a reference naming the
    run itself (`latest` for `gate latest`) means the newest run before it.
    """
    from oloproof import api

    ci = ci_files("oloproof gate", junit, markdown, as_json)
    result = guarded(as_json, ci, lambda: api.redecide(run_ref, policy, config, store,
                                                        baseline))
    write_ci(result, ci, as_json, config, store)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(result.to_json(), ensure_ascii=False))
            return
        console = report_console()
        from oloproof.report.layout import print_wrapped
        from oloproof.report.terminal import render_decisions, render_gate, render_record

        document = result.document
        print_wrapped(console, f"Run {document.run_id} · {document.status} · decided under "
                      + (policy or "the policy it ran with"))
        render_record(document, console)
        render_gate(document, console)
        render_decisions(document.decisions, console, document.metrics, document.baseline)
        if document.baseline is not None:
            from oloproof.report.comparison import render_baseline_summary

            render_baseline_summary(document.baseline, console)

    print_then_exit(show, result.gate.exit_code)


@cli.command("compare")
@click.argument("baseline_ref", metavar="BASELINE")
@click.argument("candidate_ref", metavar="CANDIDATE", default="latest")
@junit_option
@markdown_option
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the comparison document instead.")
@click.option("--simulator", type=click.Choice(["any"]), default=None,
              help="Pair the runs even if their simulated users were played by different "
                   "simulators (docs/conversations.md).")
def compare_command(baseline_ref: str, candidate_ref: str, junit: str | None,
                    markdown: str | None, config: str, store: str | None,
                    as_json: bool, simulator: str | None) -> None:
    """Compare a CANDIDATE run with its BASELINE run, case by case; runs nothing.

    Cases pair by id (a case whose input or expected changed is listed, not paired). Per
    criterion: both passed, fixed, broken, both failed, a side missing; the difference in pass
    rate (candidate − baseline) with its interval; McNemar's exact p (descriptive). Then the
    broken cases, each with what changed. `oloproof compare latest~1 latest`.
    """
    from oloproof.comparison import compare

    ci = ci_files("oloproof compare", junit, markdown, as_json)
    comparison = guarded(as_json, ci, lambda: compare(baseline_ref, candidate_ref, config,
                                                       store, simulator))
    write_ci(comparison, ci, as_json, config, store)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(comparison.to_json(), ensure_ascii=False))
            return
        from oloproof.report.comparison import render_comparison

        render_comparison(comparison, report_console())

    print_then_exit(show, 0)


@cli.command("plan")
@click.argument("run_ref", default="latest")
@click.option("--policy", default=None, help="Plan under this policy instead of the run's own.")
@baseline_option
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the plan document instead.")
def plan_command(run_ref: str, policy: str | None, baseline: str | None, config: str,
                 store: str | None, as_json: bool) -> None:
    """For each undecided rule, how many observed cases would settle it if the rate stayed at
    its estimate, and how many would with an 80% chance — a projection, not a promise. Runs
    nothing."""
    from oloproof import api

    plan = guard(as_json, lambda: api.plan(run_ref, policy, config, store, baseline))

    def show() -> None:
        if as_json:
            click.echo(json.dumps(plan.to_json(), ensure_ascii=False))
            return
        from oloproof.report.plan import render_plan

        render_plan(plan, report_console())

    print_then_exit(show, 0)


@cli.command("board")
@click.argument("runs", nargs=-1, metavar="[RUN]...")
@click.option("--baseline", default=None, metavar="REF",
              help="The run every candidate is paired with (default: the policy's baseline:).")
@click.option("--policy", default=None,
              help="Decide can_ship under this policy (default: the newest candidate's own).")
@click.option("--criterion", default=None,
              help="The success criterion of the front (default: the policy's first "
                   "non_inferiority rule's).")
@click.option("--cost-cap", "cost_cap", type=float, default=None, metavar="COST",
              help="The most one case can cost (default: the policy's cost_cap).")
@click.option("--markdown", default=None, metavar="FILE", help="Also write the board as "
              "GitHub-flavoured Markdown.")
@click.option("--html", default=None, metavar="FILE", help="Also write the board as an HTML "
              "page with the cost–success chart.")
@config_option
@store_option
@click.option("--json", "as_json", is_flag=True, help="Print the board as JSON instead.")
def board_command(runs: tuple[str, ...], baseline: str | None, policy: str | None,
                  criterion: str | None, cost_cap: float | None, markdown: str | None,
                  html: str | None, config: str, store: str | None, as_json: bool) -> None:
    """Many candidate runs against one baseline, with intervals that hold together.

    Default RUNs: the newest complete run of every variant stored. Per candidate: the rates
    and paired differences its policy's rules read, cost per case and per success, latency
    p50/p95, can_ship (the policy would ALLOW it, every rule decided on the board's
    simultaneous intervals) and the candidates that dominate it on cost and success
    (docs/board.md). Runs nothing.
    """
    from oloproof import api

    found = guard(as_json, lambda: api.board(runs, baseline, policy, criterion, cost_cap,
                                             config, store))
    from oloproof.report.board import board_html, board_markdown
    from oloproof.report.output_files import write_output

    for path, text in ((markdown, board_markdown(found)), (html, board_html(found))):
        if path is not None:
            written = guard(as_json, partial(write_output, path, text))
            if not as_json:
                click.echo(f"Wrote {written}", err=True)

    def show() -> None:
        if as_json:
            click.echo(json.dumps(found.to_json(), ensure_ascii=False))
            return
        from oloproof.report.board import render_board

        render_board(found, report_console())

    print_then_exit(show, 0)
