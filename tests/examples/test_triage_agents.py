"""The triage_agents example prints exactly the guide's figures
(docs/agents-and-tools.md#the-triage_agents-example, issue 4)."""

from __future__ import annotations

from pathlib import Path

import pytest
from _run_example import example_fixtures, run_cli
from terminal_text import row

from oloproof.stats import percent, percent_lower, percent_upper

METRICS = [
    ("answer_correct", "96.7%", "[82.7%, 100.0%]", "29 / 30 observed · 0 missing · 0 excluded"),
    ("agent_route", "86.7%", "[69.2%, 96.3%]", "26 / 30 observed · 0 missing · 0 excluded"),
    ("agent_tool_permissions", "93.1%", "[73.4%, 99.2%]",
     "27 / 29 observed · 1 missing · 0 excluded"),
    ("agent_handoffs_le_2", "86.7%", "[69.2%, 96.3%]", "26 / 30 observed · 0 missing · 0 excluded"),
]
DECISIONS = [
    ("answer-floor", "answer_correct", "PASS", "lower_bound_meets_minimum"),
    ("routing-floor", "agent_route", "INSUFFICIENT_EVIDENCE", "interval_overlaps_threshold"),
    ("no-overreach", "agent_tool_permissions", "FAIL", "observed_failures_exceed_limit"),
]


project, terminal, document, every_slice = example_fixtures("triage_agents", exit_code=1)


def test_gate(terminal: str) -> None:
    assert "Gate: BLOCK (exit 1)" in terminal


@pytest.mark.parametrize(("metric", "estimate", "interval", "n"), METRICS)
def test_metric_row(terminal: str, metric: str, estimate: str, interval: str, n: str) -> None:
    shown = row(terminal, "Metrics", Metric=metric)
    assert [shown["Estimate"], shown["Interval"], shown["N"]] == [estimate, interval, n]


@pytest.mark.parametrize(("rule", "metric", "state", "reason"), DECISIONS)
def test_decision_row(terminal: str, rule: str, metric: str, state: str, reason: str) -> None:
    shown = row(terminal, "Decisions", Rule=rule)
    assert [shown["Metric"], shown["State"].split(" · ")[0], shown["Reasons"]] == \
        [metric, state, reason]


def test_json_agrees(document: dict) -> None:
    by_id = {m["id"]: m for m in document["metrics"]}
    for metric, estimate, interval, _ in METRICS:
        row = by_id[metric]
        assert percent(row["estimate"]) == estimate
        assert f"[{percent_lower(row['lower'])}, {percent_upper(row['upper'])}]" == interval
    assert [(d["rule"], d["metric"], d["state"], d["reasons"][0])
            for d in document["decisions"]] == DECISIONS


def test_truncated_trace_joins_no_route_group(document: dict) -> None:
    routes = [s for s in document["slices"] if s["slice"] == "route"
              and s["metric"] == "answer_correct"]
    assert sum(s["observed"] + s["missing"] for s in routes) == 29


def test_inspect_shows_agents_and_route(project: Path, terminal: str) -> None:
    done = run_cli(project, "inspect", "latest", "--case", "case_012")
    assert done.returncode == 0, done.stderr
    assert "route: triage>billing>person" in done.stdout
    assert "hands control to person" in done.stdout
