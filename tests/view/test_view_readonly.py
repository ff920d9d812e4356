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
from view_support import ViewServer, files_state

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
def test_a_run_writes_beside_the_view_unaffected(new_probe: Callable[[], Any], cli: Any,
                                                 forked_oloproof: Callable[..., Any]) -> None:
    probe = new_probe()
    # More cases than the engine's first chunk and its next one: until the run nears its end,
    # its writer only stages the cache rows (merged in batches of at least 1,000).
    n = 700
    cases = probe.plain_cases(n, sleep=0.008)
    for i in (4, 17, 30):
        cases[i]["input"]["behave"] = "raise"
    cases[9]["input"]["answer"] = "no"
    probe.write_cases(cases)
    probe.set_system(concurrency=2)
    code, out, err = cli("run", "--json", cwd=probe.root, timeout=120)
    assert code == 0, err
    document_alone = json.loads(out)

    # Another version: every execution and judgment of the run beside the view is new, so
    # while it runs they are only in the rows it staged.
    probe.set_system(version="v2")
    view = ViewServer(probe.store)
    seen: list[tuple[str, int, int | None]] = []
    shown: list[dict[str, Any]] = []  # c006's details, asked for while the run ran
    failures: list[str] = []
    stop = threading.Event()

    def keep_reading() -> None:
        while not stop.is_set():
            try:
                latest = view.json("/api/runs")[0]["run_id"]
                progress = view.json(f"/api/runs/{latest}/progress")
                seen.append((progress["status"], progress["done"], progress["total"]))
                for path in (f"/api/runs/{latest}/report", f"/runs/{latest}",
                             f"/api/runs/{latest}/cases?id=c006", f"/api/runs/{latest}"):
                    status, _, body = view.get(path)
                    not_yet = status == 404 and b"has no case" in body  # c006 not run yet
                    if status != 200 and not not_yet:
                        failures.append(f"{path}: {status} {body[:200]!r}")
                    if "cases?id=" in path and status == 200 and progress["status"] == "running":
                        shown.append(json.loads(body))
            except AssertionError as error:
                failures.append(str(error))

    reader = threading.Thread(target=keep_reading, daemon=True)
    try:
        reader.start()
        time.sleep(0.2)
        beside = forked_oloproof("run", "--json", cwd=probe.root)  # a process of its own
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
    assert document["cache"]["execution"] == {"hit": 0, "miss": n}
    # Its progress was seen running, advancing, and then complete.
    running = [done for status, done, _ in seen if status == "running"]
    assert running and running == sorted(running), seen
    assert any(0 < done < n for done in running), seen
    assert all(total == n for _, _, total in seen if total is not None)
    assert seen[-1] == ("complete", n, n)
    # A case that finished while the run went on is shown whole, though the run had only
    # staged its rows (merged when it ends): its input, its output, its verdicts.
    assert shown, seen
    for detail in shown:
        assert detail["input"] == cases[5]["input"] and detail["output"] == {"answer": "yes"}
        assert len(detail["trajectory"]["steps"]) == 4
        assert [c["verdict"] for c in detail["criteria"]] == ["passed", "passed"]
        assert detail["criteria"][1]["details"]["calls"] == 1  # the judgment's own details
