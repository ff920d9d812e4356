"""The Python surface (SPEC §3.6): everything `oloproof run` does is one call.

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


def test_a_run_lets_threads_switch_promptly_and_restores_the_interval_after(project):
    """The store's writer thread gets the GIL back within 1 ms during a run (api.py)."""
    before = sys.getswitchinterval()
    seen: list[float] = []

    oloproof.run("oloproof.yaml", on_progress=lambda _: seen.append(sys.getswitchinterval()))

    assert len(seen) == 10 and max(seen) <= 0.001
    assert sys.getswitchinterval() == before
