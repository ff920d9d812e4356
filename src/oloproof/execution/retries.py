"""Retrying what is transient, and slowing down for a rate limit (docs/failures.md#retries).

One mechanism for every call Oloproof makes of something that may fail for a while: the
system under test (`system.retries:` in the suite) and an LLM judge's model (its own policy).
The interface, for a caller of its own (a judge's client, say)::

    from oloproof.execution.retries import RetryPolicy, Throttle, call_with_retries

    policy = RetryPolicy.named(["openai:RateLimitError", "openai:APIConnectionError"],
                               attempts=3)              # LookupError if a name does not import
    throttle = Throttle()                               # one per process and per thing called
    tried = call_with_retries(policy, lambda: client.responses.create(...), throttle=throttle)
    tried.value        # what the last attempt returned (None when every attempt failed)
    tried.errors       # every failed attempt's exception, in order
    tried.attempts     # how many calls were made
    tried.result()     # the value, or the last attempt's exception raised again

    tried = await call_with_retries_async(policy, lambda: client.responses.create(...),
                                          throttle=throttle)   # the same, awaited

What it does:

- **Which exceptions.** `RetryPolicy.on` holds exception classes; an exception is retried when
  it is an instance of one of them (`isinstance`, so a subclass matches) and attempts are left.
  A call that ran past its time limit matches as a `TimeoutError` would (`builtins:TimeoutError`,
  or a base class of it such as `builtins:OSError`, retries timeouts; nothing else does).
- **How long to wait.** After attempt n fails, the wait is exponential with jitter,
  `backoff_s × 2^(n-1)` capped at `max_backoff_s`, of which a random half is taken off (so
  retries that failed together do not come back together). An exception that says how long
  to wait is honoured instead: a `retry_after` attribute (seconds), or on `.response` the HTTP
  headers `retry-after-ms` or `Retry-After` (seconds or an HTTP date) -- waited for in full,
  never less. One that asks for more than `max_backoff_s` is not retried (waiting less than a
  provider asked is not honouring it; waiting longer than the policy allows is not its to do).
- **No thundering herd.** An exception that says how long to wait, or carries an HTTP 429
  (`.status_code`, or `.response.status_code`), is a rate limit: the `Throttle` then lets no
  new call start until that wait has passed, and allows only as many calls in flight as were
  in flight beside the one refused (at least one) -- the provider's capacity, as observed. The
  limit rises by one after every `RECOVER_PAUSES` pauses' worth of time without a rate
  limit, so a provider's capacity that grows back is found again, each probe costing at most
  one pause. A `Throttle` is per process: on the `processes` and `ray` executors each worker
  process slows down on its own (a provider's limit shared by several machines is not
  coordinated between them).

The engine (`procedure.unit_calls`, `worker.Worker`) uses the parts -- `RetryPolicy.backoff`,
`Throttle.start` / `start_async` / `pause` -- because its attempts cross threads and timeouts;
`call_with_retries` is the same loop for a caller that simply calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import importlib
import math
import random
import threading
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar, cast

T = TypeVar("T")

#: After a rate limit, the limit of calls in flight rises by one each time this many pauses'
#: worth of time has passed without another (a probe costs at most one pause).
RECOVER_PAUSES = 10
#: How long a waiting call sleeps at most before it looks again (a safety net: it is woken).
_LOOK_AGAIN_S = 0.5


@dataclass(frozen=True, slots=True)
class Backoff:
    """What to do after a failed attempt: wait `seconds`, then try again. `rate_limited`: the
    exception said it is a rate limit (no new call of the same thing starts meanwhile)."""

    seconds: float
    rate_limited: bool = False


@dataclass(frozen=True)
class RetryPolicy:
    """Which exceptions are retried, how many attempts in all, and how long to wait between
    them (see the module docstring). `attempts=1` retries nothing."""

    attempts: int = 1
    on: tuple[type[BaseException], ...] = ()
    backoff_s: float = 1.0
    max_backoff_s: float = 30.0
    names: tuple[str, ...] = field(default=(), compare=False)  # `on` as written, for messages

    @classmethod
    def named(cls, names: Sequence[str], *, attempts: int = 3, backoff_s: float = 1.0,
              max_backoff_s: float = 30.0) -> RetryPolicy:
        """A policy over exception classes named `module:Class` (`builtins:TimeoutError`);
        LookupError naming the first that does not import or is not an exception class."""
        return cls(attempts, tuple(exception_class(name) for name in names), backoff_s,
                   max_backoff_s, tuple(names))

    def matches(self, exc: BaseException) -> bool:
        """Whether `exc` is of a class this policy retries."""
        return isinstance(exc, self.on)

    def backoff(self, exc: BaseException, attempt: int,
                rng: random.Random | None = None) -> Backoff | None:
        """After attempt number `attempt` (from 1) failed with `exc`: how long to wait before
        the next, or None when it is not retried (not a match, no attempt left, or the wait
        asked for is above `max_backoff_s`)."""
        if attempt >= self.attempts or not self.matches(exc):
            return None
        asked = retry_after(exc)
        if asked is not None:
            if asked > self.max_backoff_s:
                return None
            return Backoff(asked, rate_limited=True)
        ceiling = min(self.max_backoff_s, self.backoff_s * 2.0 ** (attempt - 1))
        seconds = ceiling * (1.0 - 0.5 * (rng or _RNG).random())
        return Backoff(seconds, rate_limited=_status(exc) == 429)


_RNG = random.Random()


def exception_class(name: str) -> type[BaseException]:
    """The exception class `module:Class` names (`builtins:TimeoutError`,
    `openai:RateLimitError`); LookupError saying why when there is none."""
    module_name, _, attribute = name.partition(":")
    if not module_name or not attribute:
        raise LookupError(f"{name!r} is not module:Class (e.g. builtins:TimeoutError)")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise LookupError(f"{name!r}: module {module_name!r} cannot be imported "
                          f"({type(exc).__name__}: {exc})") from None
    found: Any = module
    for part in attribute.split("."):
        found = getattr(found, part, None)
        if found is None:
            raise LookupError(f"{name!r}: module {module_name!r} has no {attribute!r}")
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise LookupError(f"{name!r} is a {type(found).__name__}, not an exception class")
    return found


def retry_after(exc: BaseException) -> float | None:
    """How long `exc` says to wait before trying again, in seconds: its `retry_after`, else
    its `.response`'s `retry-after-ms` or `Retry-After` header; None when it says nothing."""
    value = getattr(exc, "retry_after", None)
    if isinstance(value, int | float) and _is_number(value):
        return max(0.0, float(value))
    headers = getattr(getattr(exc, "response", None), "headers", None)
    if headers is None or not hasattr(headers, "get"):
        return None
    millis = _header(headers, "retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except ValueError:
            pass
    text = _header(headers, "retry-after")
    if text is None:
        return None
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - time.time()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _header(headers: Any, name: str) -> str | None:
    for key in (name, name.title(), name.upper()):  # (a plain dict is not case-blind)
        value = headers.get(key)
        if value is not None:
            return str(value).strip()
    return None


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) \
        and math.isfinite(value)


def _status(exc: BaseException) -> int | None:
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


# ---- the throttle -------------------------------------------------------------------------------


@dataclass(slots=True)
class Slot:
    """A call allowed to start; `others` were in flight beside it when it did."""

    others: int
    throttle: Throttle | None = None

    def finish(self) -> None:
        """The call has returned (however it ended): another may take its place."""
        if self.throttle is not None:
            throttle, self.throttle = self.throttle, None
            throttle.finished()


class Throttle:
    """The calls in flight of one thing called, in one process, and the pause after a rate
    limit (see the module docstring). Thread-safe; `start` blocks a thread, `start_async`
    awaits on the caller's loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._paused_until = 0.0  # time.monotonic()
        self._limit: int | None = None  # calls in flight allowed; None: no limit
        self._in_flight = 0
        self._pause_s = 0.0  # the last pause's length
        self._moved = 0.0  # when the limit last moved
        self._loop_waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []

    @property
    def limit(self) -> int | None:
        """How many calls may be in flight (None: as many as are made)."""
        return self._limit

    @property
    def paused_until(self) -> float:
        """Until when (time.monotonic()) no new call starts."""
        return self._paused_until

    def _wait_or_start(self, now: float, not_before: float) -> float | Slot:
        """(Lock held.) A slot if a call may start now, else how long to wait (0: until a
        call finishes)."""
        wait = max(not_before, self._paused_until) - now
        if wait > 0:
            return wait
        limit = self._limit
        if limit is not None and self._pause_s > 0 \
                and now - self._moved >= RECOVER_PAUSES * self._pause_s:
            limit = self._limit = limit + 1
            self._moved = now
        if limit is not None and self._in_flight >= limit:
            return 0.0
        self._in_flight += 1
        return Slot(self._in_flight - 1, self)

    def start(self, not_before: float = 0.0) -> Slot:
        """Wait (this thread) until a call may start, not before `not_before`
        (time.monotonic()); the slot to `finish()` when it has returned."""
        with self._changed:
            while True:
                got = self._wait_or_start(time.monotonic(), not_before)
                if isinstance(got, Slot):
                    return got
                self._changed.wait(min(got, _LOOK_AGAIN_S) if got > 0 else _LOOK_AGAIN_S)

    async def start_async(self, not_before: float = 0.0) -> Slot:
        """`start`, awaited on the running loop."""
        loop = asyncio.get_running_loop()
        while True:
            with self._lock:
                got = self._wait_or_start(time.monotonic(), not_before)
                if isinstance(got, Slot):
                    return got
                waiter: asyncio.Future[None] = loop.create_future()
                self._loop_waiters.append((loop, waiter))
            try:
                await asyncio.wait_for(asyncio.shield(waiter),
                                       min(got, _LOOK_AGAIN_S) if got > 0 else _LOOK_AGAIN_S)
            except TimeoutError:
                pass
            finally:
                with self._lock:
                    if (loop, waiter) in self._loop_waiters:
                        self._loop_waiters.remove((loop, waiter))

    def finished(self) -> None:
        """A call has returned (`Slot.finish` calls this)."""
        with self._changed:
            self._in_flight -= 1
            self._changed.notify()
            self._wake_one()

    def pause(self, seconds: float, others: int) -> None:
        """A call was refused for a rate limit, with `others` calls in flight beside it: no
        new call starts for `seconds`, and no more calls than `others` (at least one) are in
        flight from now on, until the limit recovers."""
        with self._changed:
            now = time.monotonic()
            self._paused_until = max(self._paused_until, now + seconds)
            limit = max(1, others)
            self._limit = limit if self._limit is None else min(self._limit, limit)
            self._pause_s, self._moved = max(seconds, 1e-3), now
            self._changed.notify_all()

    def _wake_one(self) -> None:
        while self._loop_waiters:
            loop, waiter = self._loop_waiters.pop(0)
            if not waiter.done():
                try:
                    loop.call_soon_threadsafe(_set_done, waiter)
                except RuntimeError:  # (that loop is closed)
                    continue
                return


def _set_done(waiter: asyncio.Future[None]) -> None:
    if not waiter.done():
        waiter.set_result(None)


# ---- calling with retries ---------------------------------------------------------------------


@dataclass
class Tried(Generic[T]):
    """What calling with retries came to: the last attempt's value (None when every attempt
    failed), every failed attempt's exception in order, and how many calls were made."""

    value: T | None
    errors: list[BaseException]
    attempts: int
    ok: bool

    def result(self) -> T:
        """The value; the last attempt's exception, raised again, when none succeeded."""
        if not self.ok:
            raise self.errors[-1]
        return cast(T, self.value)  # (a call may return None: T then includes it)


def call_with_retries(policy: RetryPolicy, call: Callable[[], T], *,
                      throttle: Throttle | None = None,
                      rng: random.Random | None = None) -> Tried[T]:
    """Call `call()` until it returns, or raises what `policy` does not retry, or the attempts
    are used up; waiting between attempts as `policy` says, and as `throttle` (if given)
    allows. An exception that is not an `Exception` (Ctrl-C, SystemExit) is never caught."""
    errors: list[BaseException] = []
    not_before = 0.0
    for attempt in range(1, max(1, policy.attempts) + 1):
        slot = throttle.start(not_before) if throttle is not None else None
        if slot is None and not_before > 0:
            time.sleep(max(0.0, not_before - time.monotonic()))
        try:
            value = call()
        except Exception as exc:
            errors.append(exc)
            wait = policy.backoff(exc, attempt, rng)
            if wait is None:
                return Tried(None, errors, attempt, False)
            if wait.rate_limited and throttle is not None and slot is not None:
                throttle.pause(wait.seconds, slot.others)
            not_before = time.monotonic() + wait.seconds
        else:
            return Tried(value, errors, attempt, True)
        finally:
            if slot is not None:
                slot.finish()
    return Tried(None, errors, max(1, policy.attempts), False)  # (unreachable: no attempt left)


async def call_with_retries_async(policy: RetryPolicy, call: Callable[[], Awaitable[T]], *,
                                  throttle: Throttle | None = None,
                                  rng: random.Random | None = None) -> Tried[T]:
    """`call_with_retries` for a call that returns an awaitable (awaited on the running
    loop; the waits are `asyncio.sleep`, so other tasks run meanwhile)."""
    errors: list[BaseException] = []
    not_before = 0.0
    for attempt in range(1, max(1, policy.attempts) + 1):
        slot = await throttle.start_async(not_before) if throttle is not None else None
        if slot is None and not_before > 0:
            await asyncio.sleep(max(0.0, not_before - time.monotonic()))
        try:
            value = await call()
        except Exception as exc:
            errors.append(exc)
            wait = policy.backoff(exc, attempt, rng)
            if wait is None:
                return Tried(None, errors, attempt, False)
            if wait.rate_limited and throttle is not None and slot is not None:
                throttle.pause(wait.seconds, slot.others)
            not_before = time.monotonic() + wait.seconds
        else:
            return Tried(value, errors, attempt, True)
        finally:
            if slot is not None:
                slot.finish()
    return Tried(None, errors, max(1, policy.attempts), False)
