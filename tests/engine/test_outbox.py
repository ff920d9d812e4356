"""The hand-over from a sync system's lanes to the event loop (`Outbox`,
`execution/transports/base.py`).

A lane that finds `AHEAD` units waiting for the loop gives the loop time to take them before it
adds its own, so lanes that only compute cannot run a whole chunk ahead of the judging; and it
never waits longer than `AHEAD_WAIT_SECONDS`, so a loop that is gone cannot hold a lane.
"""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from oloproof.execution.transports import base


def _put_from_a_lane(outbox: base.Outbox[int], item: int, returned: list[float]) -> None:
    outbox.put(item)
    returned.append(time.monotonic())


async def _fill(outbox: base.Outbox[int], count: int) -> None:
    thread = threading.Thread(target=lambda: [outbox.put(i) for i in range(count)])
    thread.start()
    await asyncio.to_thread(thread.join)


def test_a_lane_waits_for_the_loop_to_take_what_is_ahead(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "AHEAD_WAIT_SECONDS", 30.0)  # only `ready()` can let it go

    async def scenario() -> tuple[bool, float, list[float], list[int], list[int]]:
        outbox: base.Outbox[int] = base.Outbox()
        await _fill(outbox, base.AHEAD)  # the lanes are AHEAD units ahead of the loop
        returned: list[float] = []
        lane = threading.Thread(target=_put_from_a_lane, args=(outbox, -1, returned))
        lane.start()
        await asyncio.sleep(0.2)
        waiting = not returned
        taken_at = time.monotonic()
        first = outbox.ready()
        await asyncio.to_thread(lane.join, 10)
        return waiting, taken_at, returned, first, outbox.ready()

    waiting, taken_at, returned, first, second = asyncio.run(scenario())
    assert waiting  # it did not add its unit while AHEAD were waiting
    assert first == list(range(base.AHEAD))
    assert returned and returned[0] >= taken_at  # it went on once the loop took them
    assert second == [-1]


def test_a_lane_never_waits_longer_than_the_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(base, "AHEAD_WAIT_SECONDS", 0.05)

    async def scenario() -> list[int]:
        outbox: base.Outbox[int] = base.Outbox()
        await _fill(outbox, base.AHEAD + 3)  # nobody takes: each extra put waits, then adds
        return outbox.ready()

    assert asyncio.run(scenario()) == list(range(base.AHEAD + 3))
