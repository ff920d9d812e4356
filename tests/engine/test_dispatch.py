"""How far ahead of workers elsewhere the coordinator keeps them supplied
(execution/transports/dispatched.py): a batch sized by a worker's measured time per job, and
the engine handing over `ahead` more units than a chunk, so that a worker never runs dry while
the coordinator plans or takes results (docs/scaling.md#a-cpu-bound-suite)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import oloproof
from oloproof.execution import transports
from oloproof.execution.engine import CHUNK
from oloproof.execution.transports import dispatched
from oloproof.execution.transports.dispatched import (
    BATCH_SECONDS,
    IN_FLIGHT,
    MAX_BATCH,
    Dispatch,
)
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.execution.worker import Worker

EXAMPLES = Path(oloproof.__file__).parent / "examples"


def _jobs(n: int, first: int = 0) -> list[UnitJob]:
    return [UnitJob(unit, [], []) for unit in range(first, first + n)]


def _back(jobs: list[UnitJob]) -> list[UnitResult]:
    return [UnitResult(job.unit, []) for job in jobs]


def test_a_job_is_timed_over_the_jobs_its_worker_had_out_before_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Every job takes the worker 1 ms. The second batch waits behind the first: timed over its
    # own jobs alone it would seem to take 2 ms a job, and the next batches be half the size.
    dispatch = Dispatch(1)
    dispatch.add(_jobs(100_000))
    first = dispatch.next_batch(0)
    second = dispatch.next_batch(0)
    assert first is not None and second is not None and len(first) == len(second) == 1
    assert dispatch.next_batch(0) is None, f"at most {IN_FLIGHT} batches out"
    sent = dispatch._workers[0].batches[0].sent  # (both were sent at once)
    now = [sent + 0.001]
    monkeypatch.setattr(dispatched.time, "monotonic", lambda: now[0])
    dispatch.returned(0, _back(first))
    now[0] = sent + 0.002
    dispatch.returned(0, _back(second))

    third = dispatch.next_batch(0)

    assert third is not None  # (0.2 s of 1 ms jobs; timed over its own jobs, 0.2 s of 1.3 ms)
    assert MAX_BATCH > 200 and abs(len(third) - BATCH_SECONDS / 0.001) <= 1


def test_batches_are_never_more_than_a_fair_share_of_what_waits() -> None:
    dispatch = Dispatch(2)
    dispatch.add(_jobs(40))
    sizes = []
    for worker in (0, 1, 0, 1):
        batch = dispatch.next_batch(worker)
        assert batch is not None
        sizes.append(len(batch))
        dispatch.returned(worker, _back(batch))
    assert sizes[0] == 1  # (the first batch measures how long a job takes)
    assert all(size <= 40 // (IN_FLIGHT * 2) + 1 for size in sizes)


class LazyTransport:
    """Runs nothing until the engine asks for results, then the oldest jobs handed over (as
    workers elsewhere would, some time later); counts how many were out at most."""

    workers = 2
    retried = 0
    nodes = None
    ahead = 0
    most_out = 0

    def __init__(self, workers: Sequence[Worker], concurrency: int, **_: Any) -> None:
        self.worker = workers[0]
        self._out: list[UnitJob] = []

    def busy(self) -> int:
        return 0

    def submit(self, jobs: Sequence[UnitJob]) -> None:
        self._out.extend(jobs)
        LazyTransport.most_out = max(LazyTransport.most_out, len(self._out))

    async def results(self) -> list[UnitResult]:
        return self.ready(100)

    def ready(self, at_most: int | None = None) -> list[UnitResult]:
        jobs, self._out = self._out[:at_most], self._out[len(self._out[:at_most]):]
        return [self.worker.run_unit(job) for job in jobs]

    async def close(self) -> None:
        return None


def _support_agent(root: Path, cases: int) -> Path:
    project = shutil.copytree(EXAMPLES / "support_agent", root)
    dataset = project / "data" / "cases.jsonl"
    lines = [json.loads(line) for line in dataset.read_text().splitlines() if line.strip()]
    with dataset.open("w", encoding="utf-8") as out:
        for n in range(cases):
            case = dict(lines[n % len(lines)], id=f"{lines[n % len(lines)]['id']}-{n}")
            out.write(json.dumps(case) + "\n")
    return project


@pytest.mark.parametrize("ahead", [0, 700])
def test_the_engine_hands_over_a_chunk_and_what_the_workers_hold_ahead(
        ahead: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _support_agent(tmp_path / "p", 3 * CHUNK + ahead)
    monkeypatch.setattr(transports, "local_transport", LazyTransport)
    monkeypatch.setattr(LazyTransport, "ahead", ahead)
    LazyTransport.most_out = 0

    result = oloproof.run(project / "oloproof.yaml", policy=project / "release.yaml")

    assert result.to_json()["cases"] == 3 * CHUNK + ahead
    # Never more than the chunk being planned beyond a chunk and `ahead`; and as many as that
    # once the run is under way (a chunk is planned when no more than those are out).
    assert CHUNK + ahead < LazyTransport.most_out <= 2 * CHUNK + ahead


def test_what_a_dispatched_transport_holds_ahead_is_every_worker_s_batches() -> None:
    assert Dispatch(3).ahead == 3 * IN_FLIGHT * MAX_BATCH
