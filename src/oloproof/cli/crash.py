"""What the command line does when something goes wrong that nobody planned for.

Exit codes keep their meaning under every failure (docs/ci.md#exit-codes): an unexpected internal
error is not "blocked with a FAIL" (1), so it exits 5 — the command could not complete — with
one paragraph on stderr, and the traceback goes to a file the paragraph names, not onto the
user's screen. A closed output pipe (`oloproof run | head -1`) is the reader's choice, not a
failure: the command still exits with the code it meant to (the gate's, for `run` and `gate`).
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

EXIT_INCOMPLETE = 5

# The exit code a command means to end with if its reader closes the pipe while it prints.
_code_if_pipe_closes = 0


def exit_code_if_pipe_closes(code: int) -> None:
    """Declare the exit code to keep when stdout's reader goes away during printing."""
    global _code_if_pipe_closes
    _code_if_pipe_closes = code


def pipe_closed() -> int:
    """Stop writing to a closed stdout; returns the exit code the command meant to end with.

    stdout is pointed at /dev/null, so the interpreter's last flush at exit cannot fail again.
    """
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # stdout has no file descriptor (captured): nothing to do
        pass
    return _code_if_pipe_closes


def report_fatal_signals() -> None:
    """Have Python's fault report written to stderr if the process itself crashes.

    A segmentation fault (or another fatal signal) in native code kills the process before any
    exception handler runs, so the command ends with the signal's own exit code (139 for
    SIGSEGV), not 5. Without this it ended without a word; with it, stderr shows
    `Fatal Python error: Segmentation fault` and the Python line that was running -- a
    system's factory, or the system itself on `executor: local`, which runs it in this
    process (`executor: processes` keeps such a crash to one worker: docs/scaling.md)."""
    import faulthandler

    if faulthandler.is_enabled():
        return
    # (stderr may be no file: captured, or closed)
    with contextlib.suppress(AttributeError, OSError, ValueError):
        faulthandler.enable(file=sys.stderr, all_threads=False)


def crash_directory(cwd: Path | None = None) -> Path:
    """Where a traceback is written: the project's `.oloproof/` when there is one, else the
    temporary directory."""
    import tempfile

    here = (cwd or Path.cwd()) / ".oloproof"
    if here.is_dir() and os.access(here, os.W_OK):
        return here
    return Path(tempfile.gettempdir())


def write_crash_report(error: BaseException, argv: list[str]) -> Path | None:
    """Write the traceback of `error` to a new file; its path, or None if nothing could be
    written."""
    import datetime as dt
    import platform
    import tempfile
    import traceback

    stamp = dt.datetime.now().strftime("%Y%m%d-%H%M%S")
    text = (
        f"oloproof {' '.join(argv)}\n"
        f"cwd: {Path.cwd()}\n"
        f"python {platform.python_version()} on {platform.platform()}\n\n"
        + "".join(traceback.format_exception(error))
    )
    for directory in dict.fromkeys([crash_directory(), Path(tempfile.gettempdir())]):
        path = directory / f"oloproof-crash-{stamp}-{os.getpid()}.txt"
        try:
            with path.open("x", encoding="utf-8") as handle:
                handle.write(text)
        except OSError:
            continue
        return path
    return None


def crash_paragraph(error: BaseException, argv: list[str], report: Path | None) -> str:
    """The one paragraph shown for an unexpected error."""
    command = " ".join(["oloproof", *argv])
    if len(command) > 60:
        command = command[:57] + "..."
    what = f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
    where = (f"the traceback is in {report}" if report is not None
             else "the traceback could not be written to a file, so it follows")
    # What Oloproof itself noted on the way out (a run says it is marked `failed`).
    notes = [note[len(_NOTE):].strip().rstrip(".") for note in getattr(error, "__notes__", ())
             if isinstance(note, str) and note.startswith(_NOTE)]
    noted = "".join(f" {note[:1].upper()}{note[1:]}." for note in notes if note)
    return (
        f"Internal error: `{command}` failed unexpectedly ({what}).{noted} This is a bug in "
        f"Oloproof, not a verdict on your system: {where} — please attach it to a bug report. "
        f"Exit {EXIT_INCOMPLETE}: the command could not complete."
    )


_NOTE = "oloproof:"
