"""Acceptance 5 — the execution and judgment caches (docs/concepts.md#caches-what-invalidates-what).

The execution cache is keyed by the system's name and version and the case's input: an
unchanged suite is not executed again. The judgment cache adds the evaluator's configuration
and the case's `expected`: editing an expected answer re-judges without re-executing.
The probe system logs every call, so "the system was not called" is checked, not assumed.
"""

from __future__ import annotations

import json


def _cache(cli, probe, *args: str) -> dict:
    code, out, err = cli("run", "--json", *args, cwd=probe.path)
    assert code in (0, 1, 3), err
    return json.loads(out)["cache"]


def test_a_second_run_calls_the_system_zero_times(probe, cli):
    first = cli("run", cwd=probe.path)
    assert "Cache: execution 0 hit/10 miss; judgment 0 hit/20 miss" in first.out
    assert len(probe.calls()) == 10
    probe.forget_calls()

    code, out, _ = cli("run", cwd=probe.path)

    assert code == 0
    assert "Cache: execution 10 hit/0 miss; judgment 20 hit/0 miss" in out
    assert probe.calls() == []


def test_changing_an_expected_value_rejudges_without_executing(probe, cli):
    cli("run", cwd=probe.path)
    cases = probe.plain_cases(10)
    cases[2]["expected"]["answer"] = "no"  # c003 is now answered wrongly
    probe.write_cases(cases)
    probe.forget_calls()

    code, out, _ = cli("run", "--json", cwd=probe.path)

    document = json.loads(out)
    assert code == 0
    assert document["cache"]["execution"] == {"hit": 10, "miss": 0}
    # one case's `expected` changed: both of its judgments (two evaluators) are redone
    assert document["cache"]["judgment"] == {"hit": 18, "miss": 2}
    assert probe.calls() == []
    answer = next(m for m in document["metrics"] if m["id"] == "answer_correct")
    assert (answer["passed"], answer["observed"]) == (9, 10), "the new expectation is applied"


def test_changing_an_evaluator_rejudges_its_criterion_only(probe, cli):
    cli("run", cwd=probe.path)
    probe.suite["evaluators"][0]["case_sensitive"] = False
    probe.write_suite()
    probe.forget_calls()

    cache = _cache(cli, probe)

    assert cache["execution"] == {"hit": 10, "miss": 0}
    assert cache["judgment"] == {"hit": 10, "miss": 10}
    assert probe.calls() == []


def test_changing_the_system_version_executes_again(probe, cli):
    cli("run", cwd=probe.path)
    probe.set_system(version="v2")
    probe.forget_calls()

    cache = _cache(cli, probe)

    assert cache["execution"] == {"hit": 0, "miss": 10}
    assert sorted(probe.calls()) == [f"c{i:03d}" for i in range(1, 11)]


def test_changing_one_input_executes_only_that_case(probe, cli):
    cli("run", cwd=probe.path)
    cases = probe.plain_cases(10)
    cases[4]["input"]["question"] = "rephrased"
    probe.write_cases(cases)
    probe.forget_calls()

    cache = _cache(cli, probe)

    assert cache["execution"] == {"hit": 9, "miss": 1}
    assert probe.calls() == ["c005"]


def test_no_cache_forces_execution(probe, cli):
    cli("run", cwd=probe.path)
    probe.forget_calls()

    cache = _cache(cli, probe, "--no-cache")

    assert cache["execution"] == {"hit": 0, "miss": 10}
    assert len(probe.calls()) == 10


def test_errored_cases_are_not_cached(probe, cli):
    cases = probe.plain_cases(10)
    cases[0]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    cli("run", cwd=probe.path)
    probe.forget_calls()

    cache = _cache(cli, probe)

    assert cache["execution"] == {"hit": 9, "miss": 1}
    assert probe.calls() == ["c001"], "a broken case is tried again on the next run"
