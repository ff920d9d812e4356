"""One exception hierarchy users can catch, and the kinds of error an execution can have.

Every error Oloproof raises on purpose is one of these, and `oloproof` exports each of them
(`from oloproof import UsageError`):

* OloproofError            every error raised on purpose: message, file, line, case, field
  + ConfigError            the suite, policy, dataset or system declaration is not usable (exit 2)
  + UsageError             a command names what does not exist: a run, a case, a trial (exit 2)
  + TraceError             a trace cannot be read; names the trace and span too (exit 2)
  + StoreError             the store cannot be read or written, or has no such run (exit 5)
  + RecordingError         a system recorded something invalid (raised inside the system)
  | - UnstorableRecording  what it recorded cannot be stored as it is
  + RunStopped             the run was interrupted (Ctrl-C); what finished is stored (exit 5)

Three `ValueError` subclasses stand outside the tree because no user meets them: each is
raised and caught inside Oloproof, and said as one of the errors above or as a case's error
kind. `oloproof.storable.Unstorable` (a value the store cannot keep) becomes the case's
`unstorable_output` error; `oloproof.suite.json_lines.LineRefused` (a dataset line or state
file JSON reads, but not as written) becomes a `ConfigError` naming the file and line;
`oloproof.state.diff.PatchError` (a state patch that does not fit its state) is only raised on a
patch Oloproof made itself, so seeing it is a bug in Oloproof.
`RecordedError` stands outside it too: an imported run's system raises it for a trial its own
harness recorded as errored, and the engine stores it as that trial's error of its kind.

Every error carries what it concerns (file, line, case, field) so that a message can say where
the problem is and what to do about it. `ErrorKind` is the closed set of reasons a case's
execution errored (docs/failures.md#error-kinds), used by the engine, the store, the run
document and every report; it lives here, in the lowest layer, so the engine names a kind
without importing the run document's models.
"""

from __future__ import annotations

import errno
import os
from enum import StrEnum
from pathlib import Path

__all__ = [
    "ConfigError",
    "ErrorKind",
    "OloproofError",
    "RecordingError",
    "RunStopped",
    "StoreError",
    "TraceError",
    "UnstorableRecording",
    "UsageError",
    "broken_link",
    "install_extra",
]

class ErrorKind(StrEnum):
    """Why an execution errored (docs/failures.md#error-kinds): one closed set, stored with
    each error, counted by kind in the run document and shown by kind in every report."""

    SYSTEM_ERROR = "system_error"  # the system (its call, reset or recording) raised
    TIMEOUT = "timeout"  # the call did not return within timeout_s
    WORKER_LOST = "worker_lost"  # the worker running it died, twice
    NO_TRACE = "no_trace"  # system.trace: otel, and no span of the case was recorded
    SNAPSHOT_FAILED = "snapshot_failed"  # the call returned; the sandbox's snapshot() failed
    JUDGE_ERROR = "judge_error"  # a judge's call failed
    JUDGE_UNPARSEABLE = "judge_unparseable"  # a judge answered something that is not a verdict
    SYSTEM_EXIT = "system_exit"  # the system raised SystemExit or KeyboardInterrupt
    PROCESS_EXIT = "process_exit"  # the system called os._exit where the command guards it
    UNSTORABLE_OUTPUT = "unstorable_output"  # what the case returned cannot be stored as it is
    INTERNAL_ERROR = "internal_error"  # a bug in Oloproof while running the case
    LIMIT = "limit"  # an imported run's agent was stopped by a token, message or time limit

    @classmethod
    def of(cls, text: str) -> ErrorKind:
        """The kind a stored name stands for, names stored before the kinds were one set
        included (an unknown name is an internal error: never silently another kind)."""
        try:
            return cls(text)
        except ValueError:
            return _EARLIER_KINDS.get(text, cls.INTERNAL_ERROR)


# The names errors were stored under before the kinds were one closed set.
_EARLIER_KINDS = {
    "exception": ErrorKind.SYSTEM_ERROR,
    "invalid_output": ErrorKind.SYSTEM_ERROR,
    "invalid_artifact": ErrorKind.SYSTEM_ERROR,
    "reset_failed": ErrorKind.SYSTEM_ERROR,
    "engine_error": ErrorKind.INTERNAL_ERROR,
}



class OloproofError(Exception):
    """Base class of every error Oloproof raises on purpose."""

    kind = "oloproof"

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        case: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.file = str(file) if file is not None else None
        self.line = line
        self.case = case
        self.field = field

    def location(self) -> str:
        """Where the problem is, as `file:line` (or as much of it as is known)."""
        parts: list[str] = []
        if self.file:
            parts.append(self.file if self.line is None else f"{self.file}:{self.line}")
        elif self.line is not None:
            parts.append(f"line {self.line}")
        if self.case:
            parts.append(f"case {self.case!r}")
        if self.field:
            parts.append(f"field {self.field!r}")
        return ", ".join(parts)

    def __str__(self) -> str:
        where = self.location()
        return f"{where}: {self.message}" if where else self.message

    def to_json(self) -> dict[str, object]:
        """The `{"error": ...}` body of the JSON document."""
        return {
            "kind": self.kind,
            "message": self.message,
            "file": self.file,
            "line": self.line,
            "case": self.case,
            "field": self.field,
        }


class ConfigError(OloproofError):
    """The suite, the policy, the dataset or the system declaration is not usable.

    Raised before any system call; the command line exits 2.
    """

    kind = "configuration"


class RecordingError(OloproofError):
    """A system recorded something invalid (an artifact that fails validation, twice, ...)."""

    kind = "recording"


class UnstorableRecording(RecordingError):
    """A system recorded an artifact the store cannot keep as it is (nesting deeper than the
    store keeps, a value JSON has no form for): its case errors `unstorable_output`."""


class StoreError(OloproofError):
    """The local store cannot be read or written, or a run reference does not resolve."""

    kind = "store"


class UsageError(OloproofError):
    """A command names something that does not exist (a run reference, a case id); exit 2."""

    kind = "usage"


class RunStopped(OloproofError):
    """The run was interrupted (Ctrl-C); what finished is stored."""

    kind = "stopped"


class TraceError(OloproofError):
    """A trace (an OTLP/JSON file, a list of spans or messages) cannot be read.

    Names the file and line where it can, and the trace and span (or message) concerned.
    """

    kind = "trace"

    def __init__(
        self,
        message: str,
        *,
        file: str | Path | None = None,
        line: int | None = None,
        trace: str | None = None,
        span: str | None = None,
    ) -> None:
        super().__init__(message, file=file, line=line)
        self.trace = trace
        self.span = span

    def location(self) -> str:
        parts = [super().location()]
        if self.trace:
            parts.append(f"trace {self.trace}")
        if self.span:
            parts.append(self.span)
        return ", ".join(p for p in parts if p)

    def to_json(self) -> dict[str, object]:
        body = super().to_json()
        body["trace"] = self.trace
        body["span"] = self.span
        return body


def install_extra(extra: str) -> str:
    """How to install one of Oloproof's optional extras, for a message that needs it: from the
    checkout Oloproof was installed from (`pip install -e '.[EXTRA]'`), or the packages the
    extra brings, as this installation's metadata lists them. Never `oloproof[EXTRA]` from the
    public registry: a package of that name there is another project."""
    import importlib.metadata  # (here: importing it costs more than most commands' work)

    try:
        requirements = importlib.metadata.requires("oloproof") or []
    except importlib.metadata.PackageNotFoundError:
        requirements = []
    marker = f'extra == "{extra}"'
    brings = [req.split(";")[0].strip() for req in requirements
              if marker in req.replace("'", '"')]
    text = f"install the `{extra}` extra from your Oloproof checkout: pip install -e '.[{extra}]'"
    if brings:
        text += " (or what it brings: pip install " + " ".join(f"'{b}'" for b in brings) + ")"
    return text


def broken_link(path: Path) -> str | None:
    """What is wrong with `path` if it is a symbolic link that leads nowhere, in words: "a
    symbolic link to X, which does not exist", or "…, which leads back to itself" for a loop
    of links (`.oloproof -> .oloproof`). None when `path` is not such a link."""
    if not path.is_symlink():
        return None
    try:
        path.stat()
    except FileNotFoundError:
        return f"a symbolic link to {os.readlink(path)}, which does not exist"
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return (f"a symbolic link to {os.readlink(path)}, which leads back to itself "
                    "(a loop of links)")
        raise
    return None


class RecordedError(Exception):
    """An execution another harness recorded as errored (docs/imports.md), raised by an
    imported run's system so that the engine stores it as an errored execution of its `kind`
    (`system_error`, `timeout`, `limit`), with the harness's own message and traceback."""

    def __init__(self, message: str, *, error_kind: ErrorKind,
                 traceback: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.error_kind = error_kind
        self.traceback = traceback
