"""The `oloproof` command group: every command is registered on `cli`, and `_Group` keeps the
exit codes' meaning under every failure (a closed pipe, Ctrl-C, an unexpected exception)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from oloproof.cli import crash
from oloproof.cli.exits import EXIT_INCOMPLETE, fail
from oloproof.errors import OloproofError


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
            fail(error, "--json" in self._argv)
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
