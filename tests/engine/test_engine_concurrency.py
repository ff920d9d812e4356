"""Concurrency (docs/stateful-agents.md#a-sandbox-oloproof-resets) and the recorder
(docs/agents-and-tools.md#recording-a-trajectory).

Async systems run on the run's event loop, up to `concurrency` cases at once; sync systems run
in a thread pool of that size. Bounds on time are generous on purpose: they separate "in
parallel" from "one after another", nothing finer. The probe logs when each call began.
"""

from __future__ import annotations

import threading
import time

import pytest

import oloproof


def _run(probe, monkeypatch, **kwargs):
    monkeypatch.chdir(probe.path)
    started = time.monotonic()
    result = oloproof.run("oloproof.yaml", **kwargs)
    return result, time.monotonic() - started


def _most_at_once(starts: list[float], duration: float) -> int:
    """A lower bound on the calls in flight together: starts closer than one call's duration."""
    starts = sorted(starts)
    return max(sum(1 for t in starts if s <= t < s + duration * 0.9) for s in starts)


def test_an_async_system_runs_its_cases_concurrently(probe, monkeypatch):
    probe.write_cases(probe.plain_cases(100, sleep=0.05))
    probe.set_system(callable="app:run_async", concurrency=50)

    result, _ = _run(probe, monkeypatch)

    assert result.gate.exit_code == 0
    # each call logged current_case().case_id: every case was seen once, by its own id
    assert sorted(probe.calls()) == [f"c{i:03d}" for i in range(1, 101)]
    # side by side: at least 10 calls in flight together (one after another: 1). The run's
    # wall time is no evidence here: a loaded machine stretches it past any fixed bound
    assert _most_at_once(probe.call_times(), 0.05) >= 10


def test_an_async_system_never_runs_more_than_concurrency_cases_at_once(probe, monkeypatch):
    probe.write_cases(probe.plain_cases(20, sleep=0.1))
    probe.set_system(callable="app:run_async", concurrency=5)

    _run(probe, monkeypatch)

    assert _most_at_once(probe.call_times(), 0.1) <= 5


def test_a_sync_system_runs_in_a_thread_pool(probe, monkeypatch):
    probe.write_cases(probe.plain_cases(16, sleep=0.2))
    probe.set_system(concurrency=8)

    result, _ = _run(probe, monkeypatch)

    assert result.gate.exit_code == 0
    assert sorted(probe.calls()) == [f"c{i:03d}" for i in range(1, 17)]
    assert 2 <= _most_at_once(probe.call_times(), 0.2) <= 8


def test_the_concurrency_option_overrides_the_suite(probe, monkeypatch):
    probe.write_cases(probe.plain_cases(6, sleep=0.1))
    probe.set_system(concurrency=8)

    _run(probe, monkeypatch, concurrency=1)

    assert _most_at_once(probe.call_times(), 0.1) == 1


@pytest.mark.parametrize("callable_", ["app:run", "app:run_async"])
def test_a_case_past_timeout_s_is_missing_and_the_run_goes_on(probe, monkeypatch, callable_):
    cases = probe.plain_cases(4)
    cases[1]["input"]["sleep"] = 30
    probe.write_cases(cases)
    probe.set_system(callable=callable_, timeout_s=0.2)

    result, elapsed = _run(probe, monkeypatch)

    assert elapsed < 10
    assert result.to_json()["errors"] == [{
        "case": "c002", "kind": "timeout",
        "message": "the system did not return within timeout_s=0.2 s"}]
    answer = result.metric("answer_correct")
    assert (answer.passed, answer.observed, answer.missing) == (3, 3, 1)


def test_current_case_outside_a_case_raises_a_clear_error():
    with pytest.raises(oloproof.RecordingError, match="outside a case"):
        oloproof.current_case()


def test_current_case_outside_a_case_raises_in_a_thread_too():
    failures: list[BaseException] = []

    def probe_outside() -> None:
        try:
            oloproof.current_case()
        except oloproof.OloproofError as error:
            failures.append(error)

    thread = threading.Thread(target=probe_outside)
    thread.start()
    thread.join()

    assert len(failures) == 1 and "outside a case" in str(failures[0])
