"""A system that calls `sys.exit` or raises `KeyboardInterrupt` (docs/failures.md#system-exit).

Neither is an `Exception`, so code that catches `Exception` lets them through: inside a lane's
thread one ended the thread and its unit never came back (the run hung, even with
`timeout_s`); on the event loop one stopped the run. `argparse` inside a tool is enough: it
calls `sys.exit(2)` on arguments it does not accept. The engine contains both as an error of
the case (`system_exit`), like any exception of the system, and the run goes on.

Only Ctrl-C at the terminal (or the command's SIGTERM) stops a run. A signal reaches Python in
the main thread only, through the handler installed for it, so a `KeyboardInterrupt` raised in
any other thread is the system's own, and one raised in the main thread is the signal's only
when the handler installed for SIGINT or SIGTERM raised it (its frame is the innermost one of
the traceback: `asyncio.run`'s own handler on a second Ctrl-C, the command's SIGTERM handler).
Where SIGINT still has Python's default handler (written in C, it leaves no frame of its own),
a `KeyboardInterrupt` in the main thread cannot be told from Ctrl-C, and stops the run.

`os._exit` is no exception: it ends the process where it is called, at once. On `executor:
local` that process is the run's own, so `os._exit(0)` in a system ended `oloproof run` with
exit 0 and nothing printed. The command line's own process guards it while a run executes
(`os_exit_guarded`, docs/failures.md#a-system-that-ends-the-process): the call raises
`ProcessExit` where it was made, so its case errors (`process_exit`), and the attempt is
noted (`exit_attempts`) even if the system swallows the exception or calls it from a thread of
its own, so the run is `failed` (exit 5). A child process the system forked still exits as it
means to. The library path (`oloproof.run()` in a caller's process) changes nothing of its
host's: there `os._exit` ends the host. No guard catches a segmentation fault or a SIGKILL.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from types import CodeType
from typing import Any, NoReturn

from oloproof.recording.recorder import case_being_run

SYSTEM_EXITS = (SystemExit, KeyboardInterrupt)
#: What a call of the system may raise that becomes the case's error (never a cancellation:
#: `asyncio.CancelledError` is how a timeout or a stopping run ends a call).
CONTAINED = (Exception, SystemExit, KeyboardInterrupt)


def from_a_signal(exc: BaseException) -> bool:
    """Whether `exc` is Ctrl-C (or SIGTERM) stopping the run, not the system exiting."""
    if not isinstance(exc, KeyboardInterrupt):
        return False
    if threading.current_thread() is not threading.main_thread():
        return False
    innermost = exc.__traceback__
    while innermost is not None and innermost.tb_next is not None:
        innermost = innermost.tb_next
    for number in (signal.SIGINT, signal.SIGTERM):
        handler = signal.getsignal(number)
        if handler is signal.default_int_handler:
            return True  # no frame tells the two apart: stopping is the safe reading
        code = _code_of(handler)
        if code is not None and innermost is not None and innermost.tb_frame.f_code is code:
            return True
    return False


def exit_text(exc: BaseException) -> str:
    """What the system did, in words (`SystemExit(2)`: `sys.exit(2)` or argparse refusing its
    arguments; `os._exit(0)`, which would have ended the process)."""
    if isinstance(exc, ProcessExit):
        return (f"the system called os._exit({exc.code!r}), which would have ended this "
                "process at once, the run with it; it is this case's error, and the run is "
                "failed")
    if isinstance(exc, SystemExit):
        return (f"the system raised SystemExit({exc.code!r}) (sys.exit, or argparse refusing "
                "its arguments); it is contained as this case's error and the run goes on")
    return ("the system raised KeyboardInterrupt from its own code (not Ctrl-C); it is "
            "contained as this case's error and the run goes on")


def _code_of(handler: Any) -> CodeType | None:
    """The code object a Python signal handler runs (through partials and bound methods)."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    handler = getattr(handler, "__func__", handler)
    code = getattr(handler, "__code__", None)
    return code if isinstance(code, CodeType) else None


class ProcessExit(SystemExit):
    """Raised where the system called `os._exit(code)` in a process whose `os._exit` is
    guarded (`os_exit_guarded`): a `SystemExit`, so the call that made it is contained."""


@dataclass(frozen=True)
class ExitAttempt:
    """An `os._exit` the guard stopped: its code, the case whose call made it (None outside
    one), the thread it was made in."""

    code: object
    case: str | None
    thread: str


_attempts: list[ExitAttempt] = []
_attempts_lock = threading.Lock()


def exit_attempts() -> list[ExitAttempt]:
    """Every `os._exit` the guard stopped in this process so far, in order."""
    with _attempts_lock:
        return list(_attempts)


@contextlib.contextmanager
def os_exit_guarded() -> Iterator[None]:
    """While the block runs, `os._exit` in this process raises `ProcessExit` where it is called
    and notes the attempt (the command line's own process only: a library run changes nothing
    of its host's). In a child forked meanwhile it is `os._exit` itself."""
    real: Callable[[int], NoReturn] = os._exit
    pid = os.getpid()

    def guard(code: int) -> NoReturn:
        if os.getpid() != pid:  # a child the system forked ends as it means to
            real(code)
        attempt = ExitAttempt(code, case_being_run(), threading.current_thread().name)
        with _attempts_lock:
            _attempts.append(attempt)
        raise ProcessExit(code)

    setattr(os, "_exit", guard)  # noqa: B010 (typeshed types os._exit as a function)
    try:
        yield
    finally:
        setattr(os, "_exit", real)  # noqa: B010


def ended_warning(attempts: Sequence[ExitAttempt]) -> str:
    """What a run whose system called `os._exit` says, naming the cases (or the threads)."""
    where = []
    for attempt in attempts:  # (a stored run decided again knows the cases, not the codes)
        call = "os._exit" if attempt.code is None else f"os._exit({attempt.code!r})"
        where.append(f"{call} while running case {attempt.case}" if attempt.case is not None
                     else f"{call} in thread {attempt.thread!r}, outside any case's call")
    return (f"the system called {'; '.join(where)}. On `executor: local` the system runs in "
            "this command's own process, where that call would have ended the run at once, "
            "with no word and exit 0; it was stopped where it was made instead (the case's "
            "error, process_exit), so this run is failed and its gate cannot allow a release "
            "(exit 5). Run it on `executor: processes` to keep such an exit to one worker "
            "(docs/failures.md#a-system-that-ends-the-process)")
