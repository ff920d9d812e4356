"""`oloproof.execution.retries`: the one retry mechanism (the system's calls, a judge's calls).

Unit tests of its interface: which exceptions match, how long each wait is, what a rate limit
says, and the throttle that lets no call start while one backs off after a rate limit.
"""

from __future__ import annotations

import asyncio
import email.utils
import random
import threading
import time
from typing import Any

import pytest

from oloproof.execution.retries import (
    RECOVER_PAUSES,
    RetryPolicy,
    Throttle,
    call_with_retries,
    call_with_retries_async,
    exception_class,
    retry_after,
)


class Flaky(Exception):
    pass


class Limited(Exception):
    def __init__(self, seconds: float) -> None:
        super().__init__("429")
        self.retry_after = seconds


class _Response:
    def __init__(self, headers: dict[str, str], status: int = 429) -> None:
        self.headers = headers
        self.status_code = status


class HttpError(Exception):
    def __init__(self, headers: dict[str, str], status: int = 429) -> None:
        super().__init__(f"HTTP {status}")
        self.response = _Response(headers, status)


POLICY = RetryPolicy(attempts=3, on=(Flaky, Limited, HttpError, TimeoutError), backoff_s=1.0,
                     max_backoff_s=30.0)


def test_named_classes_are_imported_and_bad_names_say_why() -> None:
    policy = RetryPolicy.named(["builtins:TimeoutError", "builtins:ConnectionError"])
    assert policy.on == (TimeoutError, ConnectionError) and policy.attempts == 3
    for name, says in [("nosuchmodule:Error", "cannot be imported"),
                       ("builtins:NoSuchError", "has no 'NoSuchError'"),
                       ("builtins:len", "not an exception class"),
                       ("TimeoutError", "is not module:Class")]:
        with pytest.raises(LookupError, match=says):
            exception_class(name)


def test_a_match_is_by_isinstance_and_attempts_are_counted() -> None:
    assert POLICY.backoff(Flaky(), 1) is not None and POLICY.backoff(Flaky(), 2) is not None
    assert POLICY.backoff(Flaky(), 3) is None, "three attempts in all"
    assert POLICY.backoff(ValueError(), 1) is None
    assert RetryPolicy(3, (OSError,)).backoff(TimeoutError(), 1) is not None, "a subclass"


def test_the_wait_is_exponential_with_jitter_and_capped() -> None:
    policy = RetryPolicy(attempts=10, on=(Flaky,), backoff_s=1.0, max_backoff_s=5.0)
    rng = random.Random(7)
    for attempt, ceiling in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 5.0), (9, 5.0)]:
        waits = [policy.backoff(Flaky(), attempt, rng).seconds for _ in range(200)]
        assert all(ceiling / 2 <= w <= ceiling for w in waits), (attempt, min(waits))
        assert max(waits) - min(waits) > ceiling / 4, "jittered"


def test_retry_after_is_honoured_in_full_and_names_a_rate_limit() -> None:
    wait = POLICY.backoff(Limited(2.5), 1)
    assert wait is not None and wait.seconds == 2.5 and wait.rate_limited
    assert POLICY.backoff(Limited(31), 1) is None, "more than max_backoff_s: not retried"


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"Retry-After": "7"}, 7.0), ({"retry-after": "0.5"}, 0.5),
    ({"retry-after-ms": "250", "Retry-After": "9"}, 0.25), ({"Retry-After": "soon"}, None),
    ({}, None),
])
def test_the_http_headers_say_how_long(headers: dict[str, str], seconds: float | None) -> None:
    assert retry_after(HttpError(headers)) == seconds


def test_an_http_date_counts_from_now() -> None:
    later = email.utils.formatdate(time.time() + 20, usegmt=True)
    assert 18 <= (retry_after(HttpError({"Retry-After": later})) or 0) <= 21


def test_a_429_without_a_wait_is_a_rate_limit_with_the_usual_wait() -> None:
    wait = POLICY.backoff(HttpError({}), 1)
    assert wait is not None and wait.rate_limited and 0.5 <= wait.seconds <= 1.0
    plain = POLICY.backoff(HttpError({}, status=503), 1)
    assert plain is not None and not plain.rate_limited


def test_call_with_retries_keeps_every_error_and_counts_attempts() -> None:
    failures = [Flaky("one"), Flaky("two")]

    def call() -> str:
        if failures:
            raise failures.pop(0)
        return "done"

    fast = RetryPolicy(attempts=3, on=(Flaky,), backoff_s=0.01, max_backoff_s=0.01)
    tried = call_with_retries(fast, call)
    assert (tried.ok, tried.value, tried.attempts) == (True, "done", 3)
    assert [str(e) for e in tried.errors] == ["one", "two"]

    never = call_with_retries(fast, lambda: (_ for _ in ()).throw(Flaky("always")))
    assert (never.ok, never.attempts, len(never.errors)) == (False, 3, 3)
    with pytest.raises(Flaky, match="always"):
        never.result()
    other = call_with_retries(fast, lambda: (_ for _ in ()).throw(KeyError("x")))
    assert (other.ok, other.attempts) == (False, 1), "an undeclared error is not retried"


def test_a_rate_limit_pauses_every_new_call_of_the_throttle() -> None:
    """While one call backs off after a rate limit, no other call starts (measured)."""
    throttle = Throttle()
    policy = RetryPolicy(attempts=2, on=(Limited,))
    starts: list[float] = []
    refused_at: list[float] = []
    lock = threading.Lock()

    def call() -> None:
        with lock:
            starts.append(time.monotonic())
            first = not refused_at
            if first:
                refused_at.append(time.monotonic())
        if first:
            raise Limited(0.3)
        time.sleep(0.01)

    threads = [threading.Thread(target=call_with_retries, args=(policy, call),
                                kwargs={"throttle": throttle}) for _ in range(6)]
    for thread in threads:
        thread.start()
        time.sleep(0.02)
    for thread in threads:
        thread.join()
    (refused,) = refused_at
    during = [t for t in starts if refused + 0.01 < t < refused + 0.3]
    assert during == [], "no call started while the rate limit's wait ran"
    assert len(starts) == 7 and max(starts) >= refused + 0.3


def test_after_a_rate_limit_no_more_calls_are_in_flight_than_were_accepted(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # A pause of 0 s recovers one call after RECOVER_PAUSES × 1 ms: on a loaded machine that
    # can pass before the fifth call asks, and it starts. This is about the limit alone.
    import oloproof.execution.retries as retries

    monkeypatch.setattr(retries, "RECOVER_PAUSES", 10**9)
    throttle = Throttle()
    slots = [throttle.start() for _ in range(5)]
    throttle.pause(0.0, slots[4].others)  # the fifth was refused with 4 others in flight
    assert throttle.limit == 4
    slots[4].finish()
    started = threading.Event()

    def fifth() -> None:
        throttle.start().finish()
        started.set()

    threading.Thread(target=fifth).start()
    assert not started.wait(0.1), "four in flight: the fifth waits"
    slots[0].finish()
    assert started.wait(2), "one finished: the fifth starts"
    for slot in slots[1:4]:
        slot.finish()


def test_the_limit_recovers_one_call_at_a_time() -> None:
    throttle = Throttle()
    throttle.pause(0.01, 2)
    assert throttle.limit == 2
    time.sleep(0.01 * RECOVER_PAUSES + 0.02)
    throttle.start().finish()
    assert throttle.limit == 3


def test_the_async_form_waits_on_the_loop() -> None:
    async def main() -> Any:
        failures = [Limited(0.2)]

        async def call() -> str:
            if failures:
                raise failures.pop()
            return "ok"

        began = time.monotonic()
        tried = await call_with_retries_async(RetryPolicy(2, (Limited,)), call,
                                              throttle=Throttle())
        return tried, time.monotonic() - began

    tried, took = asyncio.run(main())
    assert tried.result() == "ok" and tried.attempts == 2 and took >= 0.2
