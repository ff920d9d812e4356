"""Jobs and results are plain data: a run whose every job and result crosses `pickle` (as it
would to a process or a Ray actor) gives the same run document as a run in threads.

The transport below stands for one that ships units elsewhere: it pickles each `UnitJob`,
runs it on the worker from the copy, and pickles the `UnitResult` back.
"""

from __future__ import annotations

import json
import pickle
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import oloproof
from oloproof.execution import transports
from oloproof.execution.units import UnitJob, UnitResult
from oloproof.execution.worker import Worker

EXAMPLES = Path(oloproof.__file__).parent / "examples"


class PicklingTransport:
    """Runs each job from a pickled copy and hands back a pickled copy of its result."""

    shipped: list[tuple[int, int]] = []  # (job bytes, result bytes) per unit

    workers = 1
    retried = 0
    ahead = 0
    nodes = None

    def __init__(self, workers: Sequence[Worker], concurrency: int, **_: Any) -> None:
        self.worker = workers[0]
        self._ready: list[UnitResult] = []

    def busy(self) -> int:
        return 0

    def submit(self, jobs: Sequence[UnitJob]) -> None:
        for job in jobs:
            sent = pickle.dumps(job)
            result = self.worker.run_unit(pickle.loads(sent))
            back = pickle.dumps(result)
            self.shipped.append((len(sent), len(back)))
            self._ready.append(pickle.loads(back))

    async def results(self) -> list[UnitResult]:
        return self.ready()

    def ready(self) -> list[UnitResult]:
        ready, self._ready = self._ready, []
        return ready

    async def close(self) -> None:
        return None


def _comparable(result: oloproof.RunResult, project: Path) -> Any:
    document = result.to_json()
    document.pop("run_id")
    # (the projects are in two directories: the labels files are named by their paths)
    return json.loads(json.dumps(document).replace(str(project), "<project>"))


@pytest.mark.parametrize("example", ["stateful-agent", "support_agent"])
def test_a_run_through_pickled_units_gives_the_same_document(
    example: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    threads = shutil.copytree(EXAMPLES / example, tmp_path / "threads")
    pickled = shutil.copytree(EXAMPLES / example, tmp_path / "pickled")
    expected = oloproof.run(threads / "oloproof.yaml", policy=threads / "release.yaml")

    PicklingTransport.shipped = []
    monkeypatch.setattr(transports, "local_transport", PicklingTransport)
    got = oloproof.run(pickled / "oloproof.yaml", policy=pickled / "release.yaml")

    assert _comparable(got, pickled) == _comparable(expected, threads)
    assert len(PicklingTransport.shipped) == expected.to_json()["cases"] // (
        3 if example == "stateful-agent" else 1)  # one job per unit (a source and its copies)
