"""How sync systems are called: in the loop's thread while they are fast and CPU-bound, in
worker threads as soon as a call waits (I/O) or when a timeout must be enforceable."""

from __future__ import annotations

import json
from pathlib import Path

import oloproof
from oloproof.execution.calls import INLINE_WARM_UP, INLINE_WINDOW

APP = '''
import threading, time

def run(case_input):
    start = time.monotonic()
    if case_input["sleep"]:
        time.sleep(case_input["sleep"])
    else:
        sum(i * i for i in range(2000))  # a little CPU work
    return {"thread": threading.current_thread().name, "start": start, "end": time.monotonic()}
'''


def project(root: Path, sleep: float, timeout: float | None = None, cases: int = 24) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(APP)
    system = {"name": "modes", "version": "v1", "callable": "app:run", "concurrency": 8}
    if timeout is not None:
        system["timeout_s"] = timeout
    suite = {"version": 1, "dataset": "data/cases.jsonl", "system": system,
             "evaluators": [{"type": "regex", "field": "thread", "pattern": "."}]}
    (root / "oloproof.yaml").write_text(json.dumps(suite))
    (root / "release.yaml").write_text("version: 1\nrules: []\n")
    lines = [json.dumps({"id": f"c{i}", "input": {"sleep": sleep, "n": i}}) for i in range(cases)]
    (root / "data" / "cases.jsonl").write_text("\n".join(lines) + "\n")
    return root / "oloproof.yaml"


def outputs(config: Path) -> list[dict]:
    from oloproof.store.store import Store

    store = Store(config.parent / ".oloproof" / "store.sqlite")
    try:
        rows = store.conn.execute("SELECT output FROM executions").fetchall()
    finally:
        store.close()
    return [json.loads(r[0]) for r in rows]


def test_a_fast_cpu_bound_system_is_called_in_the_loops_thread(tmp_path: Path) -> None:
    config = project(tmp_path / "cpu", sleep=0)
    assert oloproof.run(config).gate.exit_code == 0
    threads = {o["thread"] for o in outputs(config)}
    assert threads == {"MainThread"}


def test_a_system_that_waits_moves_to_worker_threads_and_overlaps(tmp_path: Path) -> None:
    config = project(tmp_path / "io", sleep=0.02, cases=60)
    oloproof.run(config)
    rows = outputs(config)
    on_workers = [o for o in rows if o["thread"] == "oloproof-case"]
    # at most the warm-up calls and the first window of eight ran inline
    assert len(on_workers) >= len(rows) - (INLINE_WARM_UP + INLINE_WINDOW)
    spans = sorted((o["start"], o["end"]) for o in on_workers)
    overlapping = max(sum(1 for s, e in spans if s <= start < e) for start, _ in spans)
    assert overlapping >= 4  # several calls in flight at once


def test_with_a_timeout_every_call_runs_on_a_worker_thread(tmp_path: Path) -> None:
    config = project(tmp_path / "timeout", sleep=0, timeout=5)
    oloproof.run(config)
    assert {o["thread"] for o in outputs(config)} == {"oloproof-case"}
