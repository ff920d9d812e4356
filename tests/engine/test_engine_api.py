"""The Python surface (docs/getting-started.md#the-same-from-python): everything `oloproof run` does
is one call.

`oloproof.run(...)` returns the run's result, `oloproof.load_run(...)` reads a stored run, and
`oloproof.redecide(...)` decides a stored run under another policy. These run in this process.
"""

from __future__ import annotations

import json
import sys

import pytest
from scipy.stats import beta

import oloproof


@pytest.fixture
def project(probe, monkeypatch):
    """Ten cases, c004 answered wrongly; the working directory is the project."""
    cases = probe.plain_cases(10)
    cases[3]["input"]["answer"] = "no"
    probe.write_cases(cases)
    monkeypatch.chdir(probe.path)
    return probe


def test_run_returns_the_gate_metrics_and_the_json_document(project):
    result = oloproof.run("oloproof.yaml", policy="release.yaml")

    assert (result.gate.action, result.gate.exit_code) == ("ALLOW", 0)
    answer = result.metric("answer_correct")
    assert (answer.passed, answer.observed, answer.missing) == (9, 10, 0)
    assert answer.lower == pytest.approx(beta.ppf(0.025, 9, 2), abs=1e-12), "unrounded"
    assert answer.upper == pytest.approx(beta.ppf(0.975, 10, 1), abs=1e-12)
    document = result.to_json()
    assert json.loads(json.dumps(document)) == document, "plain JSON data"
    assert document["run_id"] == result.run_id and document["status"] == "complete"
    assert document["gate"] == {"action": "ALLOW", "exit_code": 0}
    assert len(project.calls()) == 10


def test_load_run_reads_the_stored_run_and_agrees_with_it(project):
    ran = oloproof.run("oloproof.yaml", policy="release.yaml")

    stored = oloproof.load_run("latest")

    assert stored.run_id == ran.run_id
    assert stored.gate == ran.gate
    assert stored.metric("answer_correct").lower == ran.metric("answer_correct").lower
    for key in ("decisions", "metrics", "slices", "cache", "errors"):
        assert stored.to_json()[key] == ran.to_json()[key], key


def test_a_second_run_from_python_uses_the_cache_and_no_cache_does_not(project):
    oloproof.run("oloproof.yaml")
    project.forget_calls()

    cached = oloproof.run("oloproof.yaml")
    assert cached.to_json()["cache"]["execution"] == {"hit": 10, "miss": 0}
    assert project.calls() == []

    fresh = oloproof.run("oloproof.yaml", no_cache=True)
    assert fresh.to_json()["cache"]["execution"] == {"hit": 0, "miss": 10}
    assert len(project.calls()) == 10


def test_redecide_applies_another_policy_without_running(project):
    oloproof.run("oloproof.yaml")
    project.forget_calls()
    strict = project.write_policy("strict.yaml", {"version": 1, "rules": [
        {"id": "no-wrong-answer", "metric": "answer_correct", "kind": "observed_count",
         "max_failures": 0}]})

    result = oloproof.redecide("latest", policy=strict)

    assert (result.gate.action, result.gate.exit_code) == ("BLOCK", 1)
    assert result.decisions[0].reasons == ["observed_failures_exceed_limit"]
    assert project.calls() == []


def test_a_configuration_error_raises_before_any_call(project):
    project.suite["evaluators"][0]["expected_feild"] = "answer"
    project.write_suite()

    with pytest.raises(oloproof.ConfigError) as raised:
        oloproof.run("oloproof.yaml")

    error = raised.value
    assert error.file.endswith("oloproof.yaml") and error.line is not None
    assert "expected_feild" in error.message and "expected_field" in error.message
    assert error.to_json()["kind"] == "configuration"
    assert project.calls() == []


def test_metric_names_the_metrics_that_exist_when_asked_for_another(project):
    result = oloproof.run("oloproof.yaml")

    with pytest.raises(KeyError, match="answer_correct"):
        result.metric("answer_accuracy")


def test_load_run_without_a_store_is_a_clear_error(project):
    with pytest.raises(oloproof.StoreError, match="oloproof run"):
        oloproof.load_run("latest")


HOST_PROGRAM = """
import gc, json, signal, sys
import oloproof

# A host that tuned its own interpreter before calling the library.
keep = [{"n": i, "xs": [i]} for i in range(50_000)]
gc.freeze()
gc.set_threshold(1234, 17, 9)
sys.setswitchinterval(0.0123)
def on_term(signum, frame): pass
def on_int(signum, frame): pass
signal.signal(signal.SIGTERM, on_term)
signal.signal(signal.SIGINT, on_int)

mine = {id(d) for d in keep} | {id(d["xs"]) for d in keep}

def settings(count=False):
    # The host's own objects are still frozen: none is back in a collected generation.
    unfrozen = sum(1 for o in gc.get_objects() if id(o) in mine) if count else 0
    return {"unfrozen": unfrozen, "thresholds": list(gc.get_threshold()),
            "enabled": gc.isenabled(), "switch": sys.getswitchinterval(),
            "sigterm": signal.getsignal(signal.SIGTERM) is on_term,
            "sigint": signal.getsignal(signal.SIGINT) is on_int}

before = settings(count=True)
frozen = gc.get_freeze_count()
during = []
result = oloproof.run(sys.argv[1], on_progress=lambda _: during.append(settings()))
print(json.dumps({"before": before, "during": during, "after": settings(count=True),
                  "frozen": [frozen, gc.get_freeze_count()], "status": result.status}))
"""


def test_a_run_leaves_the_host_interpreter_as_it_found_it(project):
    """No garbage-collector, switch-interval or signal change, not even during the run."""
    import subprocess

    out = subprocess.run([sys.executable, "-c", HOST_PROGRAM, "oloproof.yaml"],
                         capture_output=True, text=True, check=True, timeout=120)
    seen = json.loads(out.stdout.strip().splitlines()[-1])

    before = seen["before"]
    assert before["unfrozen"] == 0 and before["thresholds"] == [1234, 17, 9]
    assert before["switch"] == 0.0123 and before["sigterm"] and before["sigint"]
    assert seen["status"] == "complete" and len(seen["during"]) == 10
    assert all(during == before for during in seen["during"])
    assert seen["after"] == before
    frozen_before, frozen_after = seen["frozen"]
    # (a few frozen objects of the interpreter's own may be freed meanwhile, never unfrozen)
    assert frozen_before >= 100_000 and frozen_after >= 0.99 * frozen_before


def test_run_inside_a_running_event_loop_is_refused_before_anything_is_stored(project):
    import asyncio

    async def notebook_cell():
        return oloproof.run("oloproof.yaml")

    with pytest.raises(oloproof.OloproofError, match="run_async"):
        asyncio.run(notebook_cell())

    assert not project.store.exists(), "nothing was stored: no orphan run"
    assert project.calls() == []


def test_run_async_runs_on_the_callers_event_loop(project):
    import asyncio

    cases = project.plain_cases(10, sleep=0.05)  # a sync system that blocks: in threads
    cases[3]["input"]["answer"] = "no"
    project.write_cases(cases)

    async def async_test():
        ticks = 0

        async def beside():  # the host's own task keeps running while the run is awaited
            nonlocal ticks
            while True:
                await asyncio.sleep(0.001)
                ticks += 1

        other = asyncio.create_task(beside())
        result = await oloproof.run_async("oloproof.yaml", policy="release.yaml")
        other.cancel()
        return result, ticks

    result, ticks = asyncio.run(async_test())

    assert (result.status, result.gate.action) == ("complete", "ALLOW")
    assert result.metric("answer_correct").passed == 9
    assert oloproof.load_run("latest").run_id == result.run_id
    assert len(project.calls()) == 10
    assert ticks > 0


def test_an_async_system_runs_on_the_loop_run_async_is_awaited_on(probe, monkeypatch):
    import asyncio

    probe.write_cases(probe.plain_cases(8, sleep=0.01))
    probe.set_system(callable="app:run_async", concurrency=4)
    monkeypatch.chdir(probe.path)

    async def host():
        return await oloproof.run_async("oloproof.yaml")

    result = asyncio.run(host())
    assert result.status == "complete" and len(probe.calls()) == 8


def test_cancelling_run_async_marks_the_run_stopped(probe, monkeypatch):
    import asyncio

    probe.write_cases(probe.plain_cases(40, sleep=0.05))
    probe.set_system(callable="app:run_async", concurrency=2)
    monkeypatch.chdir(probe.path)

    async def host():
        task = asyncio.create_task(oloproof.run_async("oloproof.yaml"))
        while not probe.calls():  # the run is under way (however slow the machine)
            assert not task.done(), task
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(host())

    stored = oloproof.load_run("latest")
    assert stored.status == "stopped"
    assert stored.gate.exit_code == 5


def test_an_unexpected_error_during_a_run_marks_it_failed_and_is_raised(project):
    class HostBug(Exception):
        pass

    def on_progress(progress):
        if progress.done == 4:
            raise HostBug("the progress display broke")

    with pytest.raises(HostBug) as raised:
        oloproof.run("oloproof.yaml", on_progress=on_progress)

    stored = oloproof.load_run("latest")
    assert stored.status == "failed"
    assert (stored.gate.action, stored.gate.exit_code) == ("BLOCK", 5)
    assert any(stored.run_id in note and "failed" in note
               for note in getattr(raised.value, "__notes__", []))
    # what finished is stored: the next run reuses it
    again = oloproof.run("oloproof.yaml")
    assert again.to_json()["cache"]["execution"]["hit"] >= 3


def test_run_ids_are_ulids_of_the_time_they_were_made() -> None:
    import re
    import time

    from oloproof.api import new_run_id

    before = time.time_ns() // 1_000_000
    made = [new_run_id() for _ in range(200)]
    after = time.time_ns() // 1_000_000
    alphabet = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
    for run_id in made:
        assert re.fullmatch(r"run_[0-7][0-9A-HJKMNP-TV-Z]{25}", run_id), run_id
        value = 0
        for char in run_id[4:]:
            value = value * 32 + alphabet.index(char)
        assert before <= value >> 80 <= after
    assert len(set(made)) == 200
    time.sleep(0.002)
    assert new_run_id() > max(made)
