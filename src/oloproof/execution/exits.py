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
"""

from __future__ import annotations

import functools
import signal
import threading
from types import CodeType
from typing import Any

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
    arguments)."""
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
