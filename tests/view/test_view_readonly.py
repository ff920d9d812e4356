"""The view never writes the store (docs/view.md): browsing every page and endpoint leaves the
store file's bytes and modification time as they were and makes no file beside it (no `-wal`,
no `-shm`); and a run that writes the store while the view reads it all the time finishes as
it would alone, its progress seen advancing on the way.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from conftest import ViewServer, files_state

import oloproof


def browse_everything(view: ViewServer) -> int:
    """Every page and endpoint of the view over its store; returns how many answers were 200."""
    runs = view.json("/api/runs")
    paths = ["/", "/runs", "/api/runs"]
    for run in runs:
        rid = run["run_id"]
        paths += [f"/runs/{rid}", f"/api/runs/{rid}", f"/api/runs/{rid}/progress",
                  f"/api/runs/{rid}/report", f"/api/runs/{rid}/cases?id=c001",
                  f"/api/runs/{rid}/cases?id=c002"]
    if len(runs) > 1:
        paths += [f"/compare?baseline={runs[1]['run_id']}&candidate={runs[0]['run_id']}",
                  f"/api/compare?baseline={runs[1]['run_id']}&candidate={runs[0]['run_id']}"]
    answered = 0
    for path in paths:
        status, _, _ = view.get(path)
        assert status == 200, (path, status)
        answered += 1
    return answered


def test_browsing_writes_nothing(new_probe: Callable[[], Any], monkeypatch: pytest.MonkeyPatch
                                 ) -> None:
    probe = new_probe()
    cases = probe.plain_cases(12)
    cases[3]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    monkeypatch.delenv("OLOPROOF_STORE", raising=False)
    monkeypatch.setenv("CI", "1")
    oloproof.run(probe.root / "oloproof.yaml", probe.root / "release.yaml")
    oloproof.run(probe.root / "oloproof.yaml", probe.root / "release.yaml", no_cache=True)
    before = files_state(probe.store)
    assert before["-wal"] is None and before["-shm"] is None  # the runs closed the store
    view = ViewServer(probe.store)
    try:
        assert browse_everything(view) >= 17
        time.sleep(0.05)  # a file time written late would show
        assert browse_everything(view) >= 17
    finally:
        view.close()
    assert files_state(probe.store) == before


@pytest.mark.slow
def test_a_run_writes_beside_the_view_unaffected(new_probe: Callable[[], Any],
                                                 spawn_oloproof: Callable[..., Any]) -> None:
    probe = new_probe()
    cases = probe.plain_cases(60, sleep=0.04)
    for i in (4, 17, 30):
        cases[i]["input"]["behave"] = "raise"
    cases[9]["input"]["answer"] = "no"
    probe.write_cases(cases)
    probe.set_system(concurrency=2)
    alone = spawn_oloproof("run", "--json", cwd=probe.root)
    out, err = alone.communicate(timeout=120)
    assert alone.returncode == 0, err
    document_alone = json.loads(out)

    view = ViewServer(probe.store)
    seen: list[tuple[str, int, int | None]] = []
    failures: list[str] = []
    stop = threading.Event()

    def keep_reading() -> None:
        while not stop.is_set():
            try:
                latest = view.json("/api/runs")[0]["run_id"]
                progress = view.json(f"/api/runs/{latest}/progress")
                seen.append((progress["status"], progress["done"], progress["total"]))
                for path in (f"/api/runs/{latest}/report", f"/runs/{latest}",
                             f"/api/runs/{latest}/cases?id=c005", f"/api/runs/{latest}"):
                    status, _, body = view.get(path)
                    not_yet = status == 404 and b"has no case" in body  # c005 not run yet
                    if status != 200 and not not_yet:
                        failures.append(f"{path}: {status} {body[:200]!r}")
            except AssertionError as error:
                failures.append(str(error))

    reader = threading.Thread(target=keep_reading, daemon=True)
    try:
        reader.start()
        time.sleep(0.2)
        beside = spawn_oloproof("run", "--json", "--no-cache", cwd=probe.root)
        out, err = beside.communicate(timeout=120)
        time.sleep(0.3)
    finally:
        stop.set()
        reader.join(timeout=30)
        view.close()
    assert beside.returncode == 0, err
    document = json.loads(out)
    assert failures == []
    # The same figures and gate as the run made with nobody reading.
    for key in ("gate", "decisions", "metrics", "slices", "errors", "failing_cases", "cases"):
        assert document[key] == document_alone[key], key
    assert document["cache"]["execution"] == {"hit": 0, "miss": 60}
    # Its progress was seen running, advancing, and then complete.
    running = [done for status, done, _ in seen if status == "running"]
    assert running and running == sorted(running), seen
    assert any(0 < done < 60 for done in running), seen
    assert all(total == 60 for _, _, total in seen if total is not None)
    assert seen[-1] == ("complete", 60, 60)
