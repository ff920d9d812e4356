"""Acceptance 3 — broken cases never stop a run.

A case whose system raises, returns something that is not a JSON object, runs past
`timeout_s`, or records an invalid trajectory is *errored*: it is missing (not failed, not
dropped) for every criterion that needed its output, the run completes, and the error is shown
under "What broke", by `inspect --failures` (with the traceback) and in the JSON `errors`.
"""

from __future__ import annotations

import json
import time

import pytest
from terminal_text import table

BROKEN = {
    "c002": ("raise", "system_error"),
    "c003": ("non_object", "system_error"),
    "c004": ("sleep", "timeout"),
    "c005": ("gap", "system_error"),
    "c006": ("partly_named", "system_error"),
}
TIMEOUT_S = 0.3


@pytest.fixture(scope="module")
def broken(new_probe, cli):
    """Eight cases, five of them broken in different ways, run once from the command line."""
    probe = new_probe()
    cases = probe.plain_cases(8)
    for case in cases:
        behave = BROKEN.get(case["id"], (None,))[0]
        if behave == "sleep":
            case["input"]["sleep"] = 1.0  # past timeout_s, but not for long
        elif behave is not None:
            case["input"]["behave"] = behave
    probe.write_cases(cases)
    probe.set_system(timeout_s=TIMEOUT_S)
    run = cli("run", cwd=probe.path)
    return probe, run


def test_the_run_completes_and_decides_on_what_was_measured(broken):
    probe, (code, out, _) = broken

    assert "· complete ·" in out.splitlines()[0]
    assert code == 3, "3 healthy cases cannot show a 50% floor: insufficient evidence"
    assert "Gate: BLOCK (exit 3)" in out
    assert sorted(probe.calls()) == [f"c{i:03d}" for i in range(1, 9)], "every case was tried"


def test_errored_cases_are_missing_in_the_n_column(broken):
    _, (_, out, _) = broken

    rows = {r["Metric"]: r["N"] for r in table(out, "Metrics")}
    assert rows["answer_correct"] == "3 / 3 observed · 5 missing · 0 excluded"
    assert rows["agent_tool_lookup_called"] == "3 / 3 observed · 5 missing · 0 excluded"
    assert rows["steps_p50"] == "p50 of 3 observed · 5 missing · 0 excluded"


def test_what_broke_groups_the_errors_by_kind(broken):
    _, (_, out, _) = broken

    report = out[out.index("What broke"): out.index("Gate:")]
    assert "5 case(s) errored" in report
    for case_id, (_, kind) in BROKEN.items():
        assert kind in report and case_id in report
    assert "system_error × 1: RuntimeError" in report
    assert "timeout × 1" in report
    assert "RuntimeError: the order service is down" in report
    assert f"timeout_s={TIMEOUT_S:g}" in report
    assert out.index("What broke") < out.index("Gate:") < out.index("Decisions")


def test_every_criterion_that_needed_the_output_is_missing_never_failed(broken, cli):
    probe, _ = broken

    code, out, _ = cli("inspect", "latest", "--failures", "--json", cwd=probe.path)

    assert code == 0
    views = {view["case"]: view for view in json.loads(out)}
    assert set(BROKEN) <= set(views)
    for case_id in BROKEN:
        verdicts = {c["criterion"]: (c["verdict"], c["reason"]) for c in views[case_id]["criteria"]}
        assert verdicts == {"answer_correct": ("missing", "case_errored"),
                            "agent_tool_lookup_called": ("missing", "case_errored")}, case_id


def test_inspect_failures_lists_each_errored_case_with_its_traceback(broken, cli):
    probe, _ = broken

    code, out, err = cli("inspect", "latest", "--failures", cwd=probe.path)

    assert code == 0, err
    for case_id, (_, kind) in BROKEN.items():
        assert f"Case {case_id}" in out
        assert f"errored ({kind})" in out
    raised = out[out.index("Case c002"): out.index("Case c003")]
    assert "Traceback (most recent call last)" in raised
    assert 'raise RuntimeError("the order service is down")' in raised
    assert "app.py" in raised, "the traceback reaches into the system's own code"


def test_json_errors_list_case_kind_and_message(broken, cli):
    probe, _ = broken

    code, out, _ = cli("inspect", "latest", "--json", cwd=probe.path)

    assert code == 0
    document = json.loads(out)
    errors = {e["case"]: e for e in document["errors"]}
    assert set(errors) == set(BROKEN)
    for case_id, (_, kind) in BROKEN.items():
        assert set(errors[case_id]) >= {"case", "kind", "message"}
        assert errors[case_id]["kind"] == kind
    assert errors["c002"]["message"] == "RuntimeError: the order service is down"
    assert "not a JSON object" in errors["c003"]["message"]
    metric = next(m for m in document["metrics"] if m["id"] == "answer_correct")
    assert (metric["observed"], metric["missing"], metric["excluded"]) == (3, 5, 0)
    assert metric["observed"] + metric["missing"] + metric["excluded"] == 8, "nothing dropped"


def test_an_invalid_trajectory_errors_the_case_naming_the_steps(broken, cli):
    probe, _ = broken

    _, out, _ = cli("inspect", "latest", "--json", cwd=probe.path)

    errors = {e["case"]: e["message"] for e in json.loads(out)["errors"]}
    assert "step 2 has index 3" in errors["c005"], "a gap in the indices, named by step"
    assert "steps without an agent: 3" in errors["c006"], "a partly named trajectory"


def test_a_timed_out_case_leaves_no_traceback_on_stderr(broken):
    _, (_, _, err) = broken

    assert "Traceback" not in err, err


def test_a_hung_system_does_not_keep_the_command_from_exiting(probe, cli):
    """A thread cannot be killed, but it must not hold the process open after the report."""
    cases = probe.plain_cases(3)
    cases[1]["input"]["sleep"] = 60  # hangs, as far as this run can tell
    probe.write_cases(cases)
    probe.set_system(timeout_s=TIMEOUT_S)
    started = time.monotonic()

    code, out, _ = cli("run", cwd=probe.path, timeout=4)  # fails if still running after 4 s

    assert time.monotonic() - started < 4
    assert code == 3 and "timeout × 1" in out


def test_errors_read_in_dataset_order_whatever_order_the_cases_finish(new_probe, cli):
    probe = new_probe()
    cases = probe.plain_cases(4, behave="raise")
    for n, case in enumerate(cases):  # c001 finishes last, c004 first
        case["input"]["sleep"] = 0.1 * (len(cases) - 1 - n)
    probe.write_cases(cases)

    _, out, _ = cli("run", cwd=probe.path)
    _, listed, _ = cli("run", "--json", cwd=probe.path)

    assert "cases: c001, c002, c003, c004" in out, out
    assert [e["case"] for e in json.loads(listed)["errors"]] == ["c001", "c002", "c003", "c004"]
