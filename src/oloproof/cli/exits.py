"""How a command ends, and what it prints on the way: an error Oloproof raised on purpose said
in one line (exit 2 for a mistake in what was given, 5 for what could not complete), and in the
command's CI files too; a report printed, then the gate's exit code even when the reader closed
the pipe; the console every report prints to.
"""

from __future__ import annotations

import errno
import json
import sys
from collections.abc import Callable
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

    from oloproof.report.ci_files import CiFiles

EXIT_CONFIG = 2
EXIT_INCOMPLETE = crash.EXIT_INCOMPLETE


_LABELS = {"configuration": "Configuration error", "store": "Store error",
           "usage": "Usage error", "trace": "Trace error",
           "stopped": "Run stopped", "recording": "Recording error"}


def fail(error: OloproofError, as_json: bool, ci: CiFiles | None = None) -> NoReturn:
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


def ci_files(command: str, junit: str | None, markdown: str | None,
              as_json: bool) -> CiFiles | None:
    """The command's --junit / --markdown files, checked (exit 2 before anything runs) and
    holding a stand-in until the command writes its results or its failure in them."""
    if junit is None and markdown is None:
        return None
    from oloproof.report.ci_files import CiFiles

    files = CiFiles(command, junit, markdown)
    guard(as_json, files.begin)
    return files


def guarded(as_json: bool, ci: CiFiles | None, action: Callable[[], Any]) -> Any:
    """`action()`, with an error it raises said in the CI files too (see `fail`)."""
    try:
        return action()
    except OloproofError as error:
        fail(error, as_json, ci)
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


def report_console(stream: Any = None) -> Console:
    """The report's console, except that a closed pipe is raised, not turned into exit 1.

    Rich answers a closed pipe with SystemExit(1), which would read as "blocked with a FAIL";
    raised instead, it reaches `_Group.invoke`, which keeps the command's own exit code.
    """
    from oloproof.report.layout import make_console

    console = make_console(stream)
    setattr(console, "on_broken_pipe", _closed_pipe)  # noqa: B010 (an instance's handler)
    return console


def print_then_exit(show: Callable[[], None], code: int) -> NoReturn:
    """Print, then exit on the gate, even when the reader stopped early (`| head`).

    A closed pipe is the reader's choice, not a failure of the run: the run is stored and
    the exit code still says what the gate decided.
    """
    crash.exit_code_if_pipe_closes(code)
    show()
    sys.stdout.flush()
    sys.exit(code)


def guard(as_json: bool, action: Callable[[], Any]) -> Any:
    try:
        return action()
    except OloproofError as error:
        fail(error, as_json)


def write_ci(target: Any, ci: CiFiles | None, as_json: bool,
              config: str = "oloproof.yaml", store: str | None = None) -> None:
    """Write the --junit / --markdown files of a run or a comparison (before its report is
    printed, so a CI step that reads them finds them whatever the exit code)."""
    if ci is None:
        return
    from oloproof import api

    written = guarded(as_json, ci, lambda: api.write_ci_reports(
        target, junit=ci.junit, markdown=ci.markdown, config=config, store=store))
    if not as_json:
        for path in written:
            click.echo(f"Wrote {path}", err=True)
