"""The accounting adds up in every output (docs/failures.md#accounting): on one run with
retries, trials, metamorphic copies and fault replays, the terminal's Executions line, the JSON
`executions` block, the HTML report, the Markdown summary and the JUnit file say the same
`cases = ran + cached`, errored by kind and retried, and the attempts counted are the calls
the system logged. The next run re-runs only what errored, and says from which run."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case

# Per trial: c002 (and its copy) fails once and is retried; c003 raises, c004 times out, each
# with its copy, on every trial; c001 and c005 answer. Every answered case is replayed with
# its refund failing (fault_recovery): replays are part of judging, not executions.
CASES = [case("c001"), case("c002", "flaky", fails=1), case("c003", "raise"),
         case("c004", "slow_first", sleep=0.8, fails=99), case("c005")]
LINE = ("20 executions (10 cases × 2 trials) · 20 ran · 8 errored (system_error 4, timeout 4) "
        "· 4 retried")
AGAIN = ("20 executions (10 cases × 2 trials) · 8 ran · 12 cached · 8 errored (system_error 4, "
         "timeout 4)")


def _project(root: Path) -> FailingProject:
    project = FailingProject(root, "app:desk")
    project.suite["trials"] = 2
    project.suite["system"].update(
        timeout_s=0.3,
        retries={"attempts": 3, "on": ["app:Transient"], "backoff_s": 0.01,
                 "max_backoff_s": 0.05})
    project.suite["metamorphic"] = {"transforms": [
        {"name": "polite", "field": "q", "template": "{value}, please"}]}
    project.suite["evaluators"] += [
        {"type": "fault_recovery", "tool": "refund", "fault": "error",
         "escalate_tools": ["escalate"]},
        {"type": "metamorphic_relation", "transform": "polite", "relation": "same_output"}]
    project.policy["rules"] = [{"id": "infra", "kind": "max_errored", "max_count": 8}]
    return project.write(CASES)


def _flat(text: str) -> str:
    return " ".join(text.split())


def _html_summary(path: Path) -> dict[str, Any]:
    page = path.read_text(encoding="utf-8")
    found = re.search(r'<script type="application/json" id="oloproof-data">(.*?)</script>',
                      page, re.S)
    assert found, "the page embeds its data"
    summary: dict[str, Any] = json.loads(found.group(1))["summary"]
    return summary


@pytest.mark.timeout(180)
def test_the_accounting_adds_up_in_every_output(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p")

    code, out, err = cli("run", "--markdown", "summary.md", "--junit", "junit.xml",
                         cwd=project.path, timeout=150)

    assert code in (0, 3), (out, err)  # (the answers' rate cannot be shown: not the point)
    assert f"Executions: {LINE}" in _flat(out)
    assert "PASS · 8 of 20 executions errored ≤ max 8" in _flat(out)

    code, out, err = cli("gate", "--json", cwd=project.path)
    document = json.loads(out)
    executions = document["executions"]
    assert executions == {"cases": 20, "ran": 20, "cached": 0,
                          "errored": {"system_error": 4, "timeout": 4}, "retried": 4,
                          "attempts": 24}
    assert executions["cases"] == executions["ran"] + executions["cached"]
    assert len(project.starts()) == executions["attempts"], \
        "each attempt is one call of the system, as its own log counts them"
    kinds: dict[str, int] = {}
    for error in document["errors"]:
        kinds[error["kind"]] = kinds.get(error["kind"], 0) + 1
    assert kinds == executions["errored"]
    assert {e["case"] for e in document["errors"]} == {"c003", "c003~polite", "c004",
                                                       "c004~polite"}
    recovers = next(m for m in document["metrics"]
                    if m["id"] == "recovers_from_error_at_refund")
    assert (recovers["observed"], recovers["missing"]) == (6, 4), \
        "each answered trial of a source case was replayed and judged, the errored are missing"

    markdown = (project.path / "summary.md").read_text(encoding="utf-8")
    assert f"Executions: {LINE}" in _flat(markdown)

    root = ET.parse(project.path / "junit.xml").getroot()
    rules = root.find("testsuite[@name='oloproof.rules']")
    assert rules is not None
    properties = {p.get("name"): p.get("value") for p in rules.iter("property")}
    assert properties["executions"] == LINE
    assert (properties["errored.system_error"], properties["errored.timeout"]) == ("4", "4")
    cases = root.find("testsuite[@name='oloproof.cases']")
    assert cases is not None
    errors = {c.get("name"): c.find("error").get("type")  # type: ignore[union-attr]
              for c in cases.iter("testcase") if c.find("error") is not None}
    assert errors == {"c003": "system_error", "c003~polite": "system_error",
                      "c004": "timeout", "c004~polite": "timeout"}

    code, out, err = cli("report", "latest", "--html", "report.html", cwd=project.path)
    assert code == 0, err
    summary = _html_summary(project.path / "report.html")
    assert summary["executions_text"] == LINE
    broke = {(g["kind"], g["executions"]) for g in summary["what_broke"]["groups"]}
    assert broke == {("system_error", 4), ("timeout", 4)}
    (budget,) = summary["decisions"]
    assert (budget["metric"], budget["state"], budget["text"]) == (
        "executions", "PASS", "8 of 20 executions errored ≤ max 8")
    (rule,) = summary["policy"]["rules"]
    assert (rule["metric"], rule["text"]) == ("executions", "at most 8 errored execution(s)")

    # Again: only what errored runs, and the cache line names the run it errored in.
    project.forget_calls()
    code, out, err = cli("run", cwd=project.path, timeout=150)
    assert f"Executions: {AGAIN}" in _flat(out), out
    assert f"(8 re-run: errored in {document['run_id']})" in _flat(out)
    assert len(project.starts()) == 8
    code, out, _ = cli("gate", "--json", cwd=project.path)
    again = json.loads(out)
    assert again["executions"] == {"cases": 20, "ran": 8, "cached": 12,
                                   "errored": {"system_error": 4, "timeout": 4}, "retried": 0,
                                   "attempts": 8}
    assert (again["cache"]["rerun"], again["cache"]["rerun_from"]) == (8, document["run_id"])
