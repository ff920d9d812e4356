"""The `--junit` and `--markdown` files of one command, from its start to its end
(docs/ci.md#output-files).

Before the command does anything, both paths are checked (`output_files.check_output_path`:
a directory, FIFO or device is a usage error, a missing folder too) and each file is given a
stand-in saying the command has not finished: a JUnit testcase in error, a Markdown heading.
The results replace it when the command ends with them (`api.write_ci_reports`); a command
that fails with an error replaces it with that error (`failed`); one killed, or crashed past
every handler, leaves the stand-in. Either way an earlier run's results never stay in the
file looking current.
"""

from __future__ import annotations

from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from oloproof.errors import OloproofError
from oloproof.report.junit import unfinished_junit
from oloproof.report.markdown import unfinished_markdown
from oloproof.report.output_files import check_output_path, write_output

_NOT_FINISHED = ("It is still running, or it stopped before writing its results (stopped, "
                 "killed or crashed): see its output and exit code.")


@dataclass
class CiFiles:
    """The CI files `command` (e.g. `oloproof run`) was asked to write."""

    command: str
    junit: str | Path | None = None
    markdown: str | Path | None = None

    def begin(self) -> None:
        """Check every path (raising `UsageError` before anything is written), then put the
        stand-in in each file."""
        for path in (self.junit, self.markdown):
            if path is not None:
                check_output_path(path)
        self._write(f"`{self.command}` has not finished", _NOT_FINISHED)

    def failed(self, headline: str, message: str) -> None:
        """The command failed: say so in each file (`headline`: our words, e.g. `oloproof run
        failed (exit 5)`; `message`: the error). Best effort: the error being reported
        matters more than a second one met writing it, and the stand-in stays."""
        with suppress(OloproofError):  # the stand-in is already there
            self._write(headline, message)

    def _write(self, headline: str, message: str) -> None:
        if self.junit is not None:
            write_output(self.junit, unfinished_junit(self.command, headline, message))
        if self.markdown is not None:
            write_output(self.markdown, unfinished_markdown(headline, message))
