"""How sync systems are called: on worker threads, `concurrency` at once, from the first case.

Real agents block on network calls, so a sync system never runs in the event loop's thread:
each of `concurrency` lanes runs units' calls (and replays) in a thread of its own. Judging
is the engine's own work and happens on the event loop's thread, as for an async system, so
a lane runs the system and little else.
"""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

import oloproof

APP = '''
import threading, time

# Blocking calls wait here until eight are in flight at once (or fail after 30 s): a run that
# started fewer at a time fails the test, whatever the machine's load.
_EIGHT_AT_ONCE = threading.Barrier(8, timeout=30)


def run(case_input):
    start = time.monotonic()
    if case_input["sleep"]:
        _EIGHT_AT_ONCE.wait()
        time.sleep(case_input["sleep"])
    else:
        sum(i * i for i in range(2000))  # a little CPU work
    return {"thread": threading.current_thread().name, "start": start, "end": time.monotonic()}


JUDGED_ON = []


def judged_on(case, output, artifacts):
    JUDGED_ON.append(threading.current_thread().name)
    return True
'''


def project(root: Path, sleep: float, timeout: float | None = None, cases: int = 24) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(APP)
    system = {"name": "modes", "version": "v1", "callable": "app:run", "concurrency": 8}
    if timeout is not None:
        system["timeout_s"] = timeout
    suite = {"version": 1, "dataset": "data/cases.jsonl", "system": system,
             "evaluators": [{"type": "regex", "field": "thread", "pattern": "."},
                            {"type": "custom", "name": "judged_on",
                             "callable": "app:judged_on"}]}
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


def _in_flight_at(spans: list[tuple[float, float]], moment: float) -> int:
    return sum(1 for start, end in spans if start <= moment < end)


def test_a_blocking_sync_system_runs_concurrency_calls_at_once_from_the_first_case(
    tmp_path: Path,
) -> None:
    config = project(tmp_path / "io", sleep=0.2)

    result = oloproof.run(config)

    assert result.gate.exit_code == 0
    assert result.to_json()["errors"] == []  # no call waited 30 s for seven others
    rows = outputs(config)
    assert len(rows) == 24
    assert {o["thread"] for o in rows} == {"oloproof-case"}
    spans = sorted((o["start"], o["end"]) for o in rows)
    # The first eight calls all began before the first of them returned: no warm-up spent
    # one after another in the loop's thread.
    first_end = min(end for _, end in spans)
    assert sum(1 for start, _ in spans if start < first_end) == 8
    assert max(_in_flight_at(spans, start) for start, _ in spans) == 8


def test_a_fast_cpu_bound_system_also_runs_on_worker_threads(tmp_path: Path) -> None:
    config = project(tmp_path / "cpu", sleep=0)
    assert oloproof.run(config).gate.exit_code == 0
    assert {o["thread"] for o in outputs(config)} == {"oloproof-case"}


def test_with_a_timeout_every_call_runs_on_a_worker_thread(tmp_path: Path) -> None:
    config = project(tmp_path / "timeout", sleep=0, timeout=5)
    oloproof.run(config)
    assert {o["thread"] for o in outputs(config)} == {"oloproof-case"}


def test_a_sync_system_is_judged_on_the_thread_of_the_run_not_on_its_lanes(
    tmp_path: Path,
) -> None:
    for name, timeout in (("plain", None), ("with_timeout", 5.0)):
        config = project(tmp_path / name, sleep=0, timeout=timeout)

        result = oloproof.run(config)

        assert result.metric("judged_on").passed == 24
        assert {o["thread"] for o in outputs(config)} == {"oloproof-case"}
        judged_on = sys.modules["app"].JUDGED_ON
        assert judged_on == [threading.current_thread().name] * 24
