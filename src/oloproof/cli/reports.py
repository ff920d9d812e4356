"""`oloproof report` (the offline HTML report of a run) and `oloproof view` (the store served
read-only in a browser)."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from oloproof.cli.exits import fail, guard
from oloproof.cli.group import cli
from oloproof.cli.options import config_option, store_option
from oloproof.errors import UsageError, install_extra


@cli.command()
@click.argument("run_ref", default="latest")
@click.option("--html", "html_path", required=True, help="The HTML file to write.")
@click.option("--baseline", "baseline", default=None, metavar="REF",
              help="Add the comparison with this baseline run: broken cases first, each "
              "opening both runs' case panels side by side.")
@config_option
@store_option
def report(run_ref: str, html_path: str, baseline: str | None, config: str,
           store: str | None) -> None:
    """Write one self-contained offline HTML report of a run."""
    from oloproof.api import write_html_report

    written = guard(False, lambda: write_html_report(run_ref, Path(html_path), config, store,
                                                      baseline=baseline))
    click.echo(f"Wrote {written}")


@cli.command()
@click.option("--port", type=click.IntRange(0, 65535), default=7777, show_default=True,
              help="The port to listen on (0: a free one).")
@click.option("--host", default="127.0.0.1", show_default=True,
              help="The address to listen on; another than 127.0.0.1 makes the store's texts "
              "readable from elsewhere.")
@click.option("--open", "open_browser", is_flag=True, help="Open the view in the browser.")
@click.option("--no-token", is_flag=True, help="Serve without a token: anyone on this machine "
              "can then read the store (the command warns).")
@config_option
@store_option
def view(port: int, host: str, open_browser: bool, no_token: bool, config: str,
         store: str | None) -> None:
    """Serve the project's runs in a browser, read-only, until Ctrl-C: every run, two side by
    side, a run in progress as it goes (needs the `view` extra: pip install -e '.[view]' in
    the checkout). The address it prints carries a token, which every request needs."""
    try:
        from oloproof.view.serve import serve
    except ImportError as exc:
        fail(UsageError(f"`oloproof view` needs the view extra ({exc.name} is not installed): "
                         f"{install_extra('view')}"), False)
    from oloproof.store.location import find_store

    path = guard(False, lambda: find_store(config, store))
    if not path.is_file():
        click.echo(f"No store at {path} yet: the view says so until `oloproof run` makes one.",
                   err=True)
    def say(line: str) -> None:
        click.echo(line, err=line.startswith("Warning"))
        sys.stdout.flush()  # a pipe reading the address gets it at once

    guard(False, lambda: serve(path, host=host, port=port, open_browser=open_browser,
                                say=say, token=not no_token))
