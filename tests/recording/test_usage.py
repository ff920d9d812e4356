"""Tokens and cost (docs/traces.md#tokens-and-cost): `current_case().usage(...)` sums into
`usage/v1`; quantile sources `tokens` and `cost`; the run's totals in the document and the terminal
report."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

import oloproof
from oloproof import RecordingError, current_case
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
from oloproof.report.terminal import make_console, render_run

APP = '''
from oloproof import current_case

def run(request):
    for call in request.get("calls", []):
        current_case().usage(**call)
    return {"answer": "ok"}
'''


def recorder() -> CaseRecorder:
    return CaseRecorder("c1")


def test_usage_sums_each_field_and_keeps_absent_fields_absent() -> None:
    rec = recorder()
    token = set_current(rec)
    try:
        current_case().usage(input_tokens=100, output_tokens=20)
        current_case().usage(input_tokens=50, cost=0.004)
        current_case().usage()
    finally:
        reset_current(token)
    assert rec.artifacts["usage/v1"] == {"input_tokens": 150, "output_tokens": 20, "cost": 0.004}
    only_cost = recorder()
    only_cost.usage(cost=1)
    assert only_cost.artifacts["usage/v1"] == {"cost": 1}


@pytest.mark.parametrize(("fields", "message"), [
    ({"input_tokens": -1}, "input_tokens must be a whole number ≥ 0"),
    ({"output_tokens": 2.5}, "output_tokens must be a whole number ≥ 0"),
    ({"input_tokens": True}, "input_tokens must be a whole number ≥ 0"),
    ({"cost": float("nan")}, "cost must be a number ≥ 0"),
    ({"cost": -0.1}, "cost must be a number ≥ 0"),
])
def test_bad_usage_is_a_recording_error_naming_the_field(fields: dict[str, Any],
                                                         message: str) -> None:
    rec = recorder()
    with pytest.raises(RecordingError, match=message):
        rec.usage(**fields)
    assert "usage/v1" not in rec.artifacts


def test_record_usage_by_kind_is_checked_too() -> None:
    rec = recorder()
    with pytest.raises(RecordingError, match="unknown field 'tokens'"):
        rec.record("usage/v1", {"tokens": 3})
    rec.record("usage/v1", {"input_tokens": 3})
    rec.usage(input_tokens=4)  # usage() adds to what record() stored
    assert rec.artifacts["usage/v1"] == {"input_tokens": 7}
    rec.close()
    with pytest.raises(RecordingError, match="after the case had finished"):
        rec.usage(cost=1.0)


def project(root: Path, cases: list[dict[str, Any]]) -> Path:
    root.mkdir()
    (root / "app.py").write_text(APP, encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases),
                                      encoding="utf-8")
    suite = {
        "version": 1, "project": "usage", "dataset": "cases.jsonl",
        "system": {"name": "s", "version": "1", "callable": "app:run",
                   "records": ["usage/v1"]},
        "evaluators": [{"type": "exact_match", "criterion": "ok", "field": "answer",
                        "expected_field": "answer"}],
        "metrics": [{"id": "tokens_p50", "type": "quantile", "source": "tokens",
                     "quantile": 0.5},
                    {"id": "cost_p90", "type": "quantile", "source": "cost", "quantile": 0.9}],
    }
    (root / "oloproof.yaml").write_text(yaml.safe_dump(suite), encoding="utf-8")
    (root / "release.yaml").write_text(
        "version: 1\nrules:\n  - {id: cheap, metric: cost_p90, max: 0.02}\n", encoding="utf-8")
    return root / "oloproof.yaml"


def test_tokens_and_cost_quantiles_and_the_runs_totals(tmp_path: Path) -> None:
    cases = [{"id": f"c{i}", "input": {"calls": [
        {"input_tokens": 100 * i, "output_tokens": 10},
        {"cost": round(0.001 * i, 6)}]}, "expected": {"answer": "ok"}} for i in range(1, 31)]
    cases.append({"id": "none", "input": {}, "expected": {"answer": "ok"}})
    config = project(tmp_path / "p", cases)
    result = oloproof.run(config)
    doc = result.document
    tokens, cost = doc.metric("tokens_p50"), doc.metric("cost_p90")
    values = sorted(100 * i + 10 for i in range(1, 31))
    assert tokens.unit == "tokens" and tokens.observed == 30 and tokens.missing == 1
    assert tokens.missing_by_reason == {"no_usage": 1}
    assert tokens.estimate == values[14]  # the 15th of 30 ordered values
    assert cost.unit == "cost" and cost.missing_by_reason == {"no_cost": 1}
    assert cost.estimate == pytest.approx(0.027)
    usage = doc.usage
    assert usage is not None
    assert usage.cases == 30
    assert usage.input_tokens == sum(100 * i for i in range(1, 31))
    assert usage.output_tokens == 300
    assert usage.cost == pytest.approx(sum(0.001 * i for i in range(1, 31)))
    assert doc.to_json()["usage"] == usage.to_json()
    # The rule `max: 0.02` caps what a case costs: the p90's interval is above it.
    (decision,) = doc.decisions
    assert decision.state == "FAIL"
    out = io.StringIO()
    render_run(doc, make_console(out))
    assert ("Usage: 46,500 input tokens · 300 output tokens · cost 0.465 (recorded by 30 "
            "executions)") in " ".join(out.getvalue().split())
    # The same totals when the stored run is read back.
    assert oloproof.load_run(result.run_id, config).document.usage == usage


def test_a_run_without_usage_writes_no_usage_key(tmp_path: Path) -> None:
    config = project(tmp_path / "p", [{"id": "a", "input": {}, "expected": {"answer": "ok"}}])
    suite = yaml.safe_load(config.read_text())
    suite["system"]["records"] = []
    config.write_text(yaml.safe_dump(suite))
    with pytest.raises(oloproof.ConfigError, match=r"records: \[usage/v1\]"):
        oloproof.run(config)
    suite["metrics"] = []
    config.write_text(yaml.safe_dump(suite))
    (tmp_path / "p" / "release.yaml").write_text("version: 1\nrules: []\n")
    doc = oloproof.run(config).document
    assert doc.usage is None and "usage" not in doc.to_json()


def test_the_html_report_carries_the_same_totals(tmp_path: Path) -> None:
    cases = [{"id": "a", "input": {"calls": [{"input_tokens": 7, "cost": 0.5}]},
              "expected": {"answer": "ok"}}]
    config = project(tmp_path / "p", cases)
    result = oloproof.run(config)
    from oloproof.api import write_html_report

    page = write_html_report(result.run_id, tmp_path / "r.html", config, compress=False)
    html = Path(page).read_text(encoding="utf-8")
    assert "Usage: 7 input tokens · cost 0.5 (recorded by 1 execution)" in html
    assert "S.usage_text" in html  # the page draws it
