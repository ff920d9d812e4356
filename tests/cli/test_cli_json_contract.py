"""The JSON document of `oloproof run --json` (docs/cli.md#the-json-document): a contract for CI and
scripts.

One run of a twelve-case suite exercises every part of it: a wrong answer, an errored case
(missing everywhere), cases without `expected.tools` (excluded from agent_tool_sequence with a
reason), a quantile whose upper bound does not exist (null), and two slices.
"""

from __future__ import annotations

import json
import math

import pytest
from scipy.stats import beta

LEVEL = 0.95


def exact_interval(passed: int, observed: int, missing: int) -> tuple[float, float]:
    """Clopper–Pearson widened for missing cases
    (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases), computed here
    independently."""
    n, alpha = observed + missing, 1 - LEVEL
    low_k, high_k = passed, passed + missing
    lower = 0.0 if low_k == 0 else beta.ppf(alpha / 2, low_k, n - low_k + 1)
    upper = 1.0 if high_k == n else beta.ppf(1 - alpha / 2, high_k + 1, n - high_k)
    return float(lower), float(upper)


@pytest.fixture(scope="module")
def run(new_probe, cli):
    probe = new_probe()
    cases = probe.plain_cases(12)
    for i, case in enumerate(cases):
        case["metadata"] = {"channel": "chat" if i % 2 else "email"}
        if i < 8:
            case["expected"]["tools"] = ["lookup"]
    cases[3]["input"]["behave"] = "raise"  # c004 errors
    cases[4]["input"]["answer"] = "no"  # c005 answers wrongly
    probe.write_cases(cases)
    probe.suite["evaluators"].append({"type": "agent_tool_sequence"})
    probe.suite["metrics"].append({"id": "steps_p90", "type": "quantile",
                                   "source": "agent_steps", "quantile": 0.9})
    probe.suite["slices"] = ["metadata.channel", "first_tool"]
    probe.suite["min_slice_support"] = 3
    probe.write_suite()
    code, out, err = cli("run", "--json", cwd=probe.path)
    return probe, code, out, err


@pytest.fixture(scope="module")
def document(run):
    return json.loads(run[2])


def _metric(document, metric_id):
    return next(m for m in document["metrics"] if m["id"] == metric_id)


def test_stdout_is_exactly_one_json_document(run):
    _, _, out, err = run

    document, end = json.JSONDecoder().raw_decode(out)
    assert out[end:].strip() == ""
    assert isinstance(document, dict)
    assert "\x1b" not in out and err == ""


def test_what_else_is_printed_during_the_run_goes_to_stderr(new_probe, cli):
    """A system's own print() (or Ray's notice that a worker died) never gets into the
    document's stream."""
    probe = new_probe()
    probe.write_cases(probe.plain_cases(10))
    probe.set_system(concurrency=1)  # (one line at a time: print() writes in pieces)
    app = probe.path / "app.py"
    app.write_text(app.read_text(encoding="utf-8").replace(
        "    _log(current_case().case_id)\n    time.sleep(",
        "    _log(current_case().case_id)\n    print('thinking about', case_input['question'])"
        "\n    time.sleep(", 1), encoding="utf-8")

    code, out, err = cli("run", "--json", cwd=probe.path)

    assert code == 0, err
    assert json.loads(out)["status"] == "complete"
    assert sorted(err.splitlines()) == sorted(f"thinking about {i}" for i in range(1, 11))


def test_identity_status_and_gate(run, document):
    _, code, _, _ = run

    assert document["run_id"].startswith("run_") and len(document["run_id"]) == 30
    assert document["status"] == "complete"
    assert document["gate"] == {"action": "ALLOW", "exit_code": 0}
    assert code == document["gate"]["exit_code"]


def test_decisions_carry_the_numbers_they_compared(document):
    answer = _metric(document, "answer_correct")

    assert document["decisions"] == [{"rule": "answers", "metric": "answer_correct",
                                      "state": "PASS", "reasons": ["lower_bound_meets_minimum"],
                                      "kind": "interval", "bound": answer["lower"],
                                      "bound_side": "lower", "threshold": 0.5,
                                      "threshold_side": "min"}]


def test_rate_metrics_carry_counts_and_unrounded_bounds(document):
    answer = _metric(document, "answer_correct")

    assert answer["kind"] == "rate"
    assert (answer["passed"], answer["observed"], answer["missing"], answer["excluded"]) == \
        (10, 11, 1, 0)
    assert answer["excluded_by_reason"] == {}
    assert answer["estimate"] == pytest.approx(10 / 11)
    lower, upper = exact_interval(10, 11, 1)
    assert answer["lower"] == pytest.approx(lower, abs=1e-9)
    assert answer["upper"] == pytest.approx(upper, abs=1e-9)
    assert round(answer["lower"], 3) != answer["lower"], "bounds are not rounded"


def test_exclusions_are_counted_by_reason(document):
    sequence = _metric(document, "agent_tool_sequence")

    assert (sequence["passed"], sequence["observed"], sequence["missing"],
            sequence["excluded"]) == (7, 7, 1, 4)
    assert sequence["excluded_by_reason"] == {"no_declared_tools": 4}
    lower, upper = exact_interval(7, 7, 1)
    assert (sequence["lower"], sequence["upper"]) == (pytest.approx(lower), upper)


def test_quantiles_carry_unit_bounds_and_null_for_no_bound(document):
    p50, p90 = _metric(document, "steps_p50"), _metric(document, "steps_p90")

    for row in (p50, p90):
        assert row["kind"] == "quantile" and row["unit"] == "steps"
        assert (row["observed"], row["missing"], row["excluded"]) == (11, 1, 0)
        assert row["estimate"] == 4
    assert (p50["quantile"], p50["lower"], p50["upper"]) == (0.5, 4, 4)
    assert (p90["quantile"], p90["lower"], p90["upper"]) == (0.9, 4, None)


def test_slices_restate_metrics_per_group(document):
    rows = {(r["slice"], r["value"], r["metric"]): r for r in document["slices"]}
    chat = rows[("metadata.channel", "chat", "answer_correct")]  # c002 c004 ... c012

    for row in document["slices"]:
        assert {"slice", "value", "metric", "estimate", "lower", "upper", "observed",
                "missing", "excluded", "support", "mark"} <= set(row)
        assert row["support"] == row["observed"] + row["missing"]
        assert row["mark"] in (None, "*")
    assert (chat["passed"], chat["observed"], chat["missing"], chat["excluded"]) == (5, 5, 1, 0)
    assert chat["lower"] == pytest.approx(exact_interval(5, 5, 1)[0])
    assert {value for (kind, value, _) in rows if kind == "first_tool"} == {"lookup"}


def test_cache_counts(document):
    cache = document["cache"]
    assert cache["execution"] == {"hit": 0, "miss": 12}
    assert cache["judgment"]["hit"] == 0
    assert cache["judgment"]["miss"] == 12 * 3, "one per case and evaluator (errored included)"


def test_errors_list_each_errored_case(document):
    assert document["errors"] == [{"case": "c004", "kind": "system_error",
                                   "message": "RuntimeError: the order service is down"}]


def test_every_number_is_finite_json(document):
    def walk(value):
        if isinstance(value, float):
            assert math.isfinite(value)
        elif isinstance(value, dict):
            for item in value.values():
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(document)


def test_inspect_json_prints_the_stored_document(run, document, cli):
    probe = run[0]

    code, out, _ = cli("inspect", "latest", "--json", cwd=probe.path)

    assert code == 0
    assert json.loads(out) == document


def test_a_reader_that_stops_early_does_not_turn_the_exit_code_into_a_fail(probe, cli,
                                                                          forked_oloproof):
    process = forked_oloproof("run", "--json", cwd=probe.path)
    assert process.stdout is not None
    process.stdout.close()  # like `oloproof run --json | true`: nobody reads the document

    process.wait(timeout=60)

    _, out, _ = cli("runs", cwd=probe.path)
    assert "ALLOW (exit 0)" in out, "the run completed, was stored, and allowed"
    assert process.returncode != 1
