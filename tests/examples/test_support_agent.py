"""The support_agent example prints exactly the guide's figures
(docs/agents-and-tools.md#the-support_agent-example)."""

from __future__ import annotations

import pytest
from _run_example import example_fixtures
from terminal_text import row, table

from oloproof.stats import percent, percent_lower, percent_upper

METRICS = [
    ("answer_correct", "82.5%", "[67.2%, 92.7%]", "33 / 40 observed · 0 missing · 0 excluded"),
    ("agent_tool_lookup_order_called", "100.0%", "[86.8%, 100.0%]",
     "39 / 39 observed · 1 missing · 0 excluded"),
    ("agent_no_tool_loop", "74.4%", "[56.1%, 87.4%]", "29 / 39 observed · 1 missing · 0 excluded"),
    ("agent_tool_sequence", "60.0%", "[43.3%, 75.2%]", "24 / 40 observed · 0 missing · 0 excluded"),
    ("agent_constraints_satisfied", "92.5%", "[79.6%, 98.5%]",
     "37 / 40 observed · 0 missing · 0 excluded"),
    ("agent_steps_le_10", "97.5%", "[86.8%, 100.0%]", "39 / 40 observed · 0 missing · 0 excluded"),
    ("steps_p95", "10 steps", "[10, no bound] steps",
     "p95 of 39 observed · 1 missing · 0 excluded"),
    ("tool_calls_p50", "2 calls", "[2, 3] calls", "p50 of 39 observed · 1 missing · 0 excluded"),
]

SLICES = [
    ("first_tool=search", "agent_no_tool_loop", "0.0%", "[0.0%, 57.9%]",
     "0 / 6 observed · 1 missing"),
    ("first_tool=search", "agent_tool_sequence", "0.0%", "[0.0%, 41.0%]", "0 / 7 observed"),
    ("repeated_action=false", "answer_correct", "93.1%", "[77.2%, 99.2%]", "27 / 29"),
    ("repeated_action=true", "answer_correct", "60.0%", "[26.2%, 87.9%]", "6 / 10"),
]

DECISIONS = [
    ("answer-floor", "answer_correct", "INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold"),
    ("tool-sequence-floor", "agent_tool_sequence", "INSUFFICIENT_EVIDENCE",
     "interval_overlaps_threshold"),
    ("no-deletion", "agent_constraints_satisfied", "FAIL", "observed_failures_exceed_limit"),
]


project, terminal, document, every_slice = example_fixtures("support_agent", exit_code=1)


def test_gate_blocks_with_exit_1(terminal: str) -> None:
    assert "Gate: BLOCK (exit 1)" in terminal


@pytest.mark.parametrize(("metric", "estimate", "interval", "n"), METRICS)
def test_metric_row(terminal: str, metric: str, estimate: str, interval: str, n: str) -> None:
    shown = row(terminal, "Metrics", Metric=metric)
    assert [shown["Estimate"], shown["Interval"], shown["N"]] == [estimate, interval, n]


@pytest.mark.parametrize(("group", "metric", "estimate", "interval", "n"), SLICES)
def test_slice_row(every_slice: str, group: str, metric: str, estimate: str, interval: str,
                   n: str) -> None:
    shown = row(every_slice, "Slices", Slice=group, Metric=metric)
    assert [shown["Estimate"], shown["Interval"]] == [estimate, interval]
    assert shown["N"].startswith(n)


def test_the_run_shows_the_slice_rows_that_differ_and_says_how_to_see_all(
        terminal: str, every_slice: str, document: dict) -> None:
    shown = table(terminal, "Slices")
    marked = [r for r in document["slices"] if r["mark"] == "*"]

    assert len(shown) == len(marked) == 12 and all(r["Mark"] == "*" for r in shown)
    assert len(table(every_slice, "Slices")) == len(document["slices"]) == 80
    assert "12 of 80 rows: those marked *" in terminal
    run_id = terminal.split()[1]  # "Run run_… · complete"
    assert f"oloproof inspect {run_id} --slices all" in terminal


@pytest.mark.parametrize(("rule", "metric", "state", "reason"), DECISIONS)
def test_decision_row(terminal: str, rule: str, metric: str, state: str, reason: str) -> None:
    shown = row(terminal, "Decisions", Rule=rule)
    assert [shown["Metric"], shown["State"].split(" · ")[0], shown["Reasons"]] == \
        [metric, state, reason]


@pytest.mark.parametrize(("rule", "comparison"), [
    ("answer-floor", "INSUFFICIENT_EVIDENCE · lower 67.2% < min 70.0% ≤ upper 92.7%"),
    ("tool-sequence-floor", "INSUFFICIENT_EVIDENCE · lower 43.3% < min 70.0% ≤ upper 75.2%"),
    ("no-deletion", "FAIL · 3 failures > max 0"),
])
def test_each_decision_shows_the_comparison_it_made(terminal: str, rule: str,
                                                     comparison: str) -> None:
    assert row(terminal, "Decisions", Rule=rule)["State"] == comparison


def test_json_bounds_round_outward_to_the_figures(document: dict) -> None:
    assert document["gate"] == {"action": "BLOCK", "exit_code": 1}
    by_id = {m["id"]: m for m in document["metrics"]}
    for metric, estimate, interval, _ in METRICS:
        row = by_id[metric]
        if row["kind"] == "rate":
            assert percent(row["estimate"]) == estimate
            assert f"[{percent_lower(row['lower'])}, {percent_upper(row['upper'])}]" == interval
    assert by_id["steps_p95"]["estimate"] == 10 and by_id["steps_p95"]["lower"] == 10
    assert by_id["steps_p95"]["upper"] is None
    assert (by_id["tool_calls_p50"]["lower"], by_id["tool_calls_p50"]["upper"]) == (2, 3)
    assert by_id["answer_correct"]["lower"] == pytest.approx(0.67221, abs=1e-5)
    assert by_id["answer_correct"]["upper"] == pytest.approx(0.92662, abs=1e-5)
    rows = {(s["slice"], s["value"], s["metric"]): s for s in document["slices"]}
    search_loop = rows[("first_tool", "search", "agent_no_tool_loop")]
    assert (search_loop["passed"], search_loop["observed"], search_loop["missing"]) == (0, 6, 1)
    assert search_loop["upper"] == pytest.approx(0.57872, abs=1e-5)
    assert search_loop["support"] == 7
    decisions = [(d["rule"], d["metric"], d["state"], d["reasons"][0])
                 for d in document["decisions"]]
    assert decisions == DECISIONS


def test_truncated_case_joins_no_repeated_action_group(document: dict) -> None:
    rows = {(s["slice"], s["value"], s["metric"]): s for s in document["slices"]}
    false = rows[("repeated_action", "false", "answer_correct")]
    true = rows[("repeated_action", "true", "answer_correct")]
    assert false["observed"] + true["observed"] == 39  # 40 cases, the truncated one in neither
