"""Which interval a judged criterion's rules decide on, declared before the run
(docs/judges.md#which-interval-decides-correction); the labels' own interval beside the
corrected one in every report; PPI++ where the policy allows approximate methods
(docs/judges.md#an-approximate-interval-ppi)."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    label_all,
    server_fixture,
    with_labels_file,
)

from oloproof.stats import rate_interval
from oloproof.suite.judge_labels import read_labels_file

LIES = {2, 5, 9, 14, 17, 21}


def _labelled(cli: Callable[..., Any], project: JudgedProject, n: int) -> None:
    code, out, err = cli("run", "--json", cwd=project.root)
    assert code in (0, 1, 3, 4), (out, err)
    code, _, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", str(n),
                       "--seed", "7", "-o", "labels/truthful.jsonl", cwd=project.root)
    assert code == 0, err
    label_all(project.root / "labels" / "truthful.jsonl")


def _run(cli: Callable[..., Any], root: Path, *args: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("run", "--json", *args, cwd=root)
    assert code in (0, 1, 3, 4), (out, err)
    return code, json.loads(out)


@pytest.fixture
def project(judged: JudgedProject) -> JudgedProject:
    return with_labels_file(judged, desk_cases(24, lies=LIES), minimum_agreement=0.5)


def test_the_corrected_interval_decides_by_default_with_the_labels_beside_it(
        cli: Callable[..., Any], project: JudgedProject) -> None:
    _labelled(cli, project, 16)
    _, document = _run(cli, project.root)
    row = document["metrics"][0]
    judge = row["judge"]
    assert judge["correction"] == "judge" and row["method"] == "stratified_by_verdict"
    assert (row["estimate"], row["lower"], row["upper"]) == (
        judge["corrected_estimate"], judge["corrected_lower"], judge["corrected_upper"])
    labelled = read_labels_file(project.root / "labels" / "truthful.jsonl").rows
    passes = sum(r.label == "pass" for r in labelled)
    people = rate_interval(passes, 16, 0, 0.95)
    assert (judge["people_lower"], judge["people_upper"]) == (people.lower, people.upper)
    assert judge["people_method"] == "clopper_pearson"
    assert judge["width_saved"] == pytest.approx(
        (judge["people_upper"] - judge["people_lower"]) - (row["upper"] - row["lower"]))
    assert judge["stratified_lower"] <= row["estimate"] <= judge["stratified_upper"]
    assert 0.1 < judge["safeguard"] < 0.2
    assert "rectifier" not in judge and "judge_lower" not in judge


def test_people_only_decides_on_the_labels_alone_and_gate_keeps_it(
        cli: Callable[..., Any], project: JudgedProject) -> None:
    _labelled(cli, project, 16)
    _, by_judge = _run(cli, project.root)
    project.suite["evaluators"][0]["correction"] = "people_only"
    project.write()
    code, document = _run(cli, project.root)
    row, judge = document["metrics"][0], document["metrics"][0]["judge"]
    assert judge["correction"] == "people_only" and row["method"] == "clopper_pearson"
    assert (row["estimate"], row["lower"], row["upper"]) == (
        judge["people_estimate"], judge["people_lower"], judge["people_upper"])
    # the corrected interval is still reported, and is the one the default run decided on
    before = by_judge["metrics"][0]
    assert (judge["corrected_lower"], judge["corrected_upper"]) == (before["lower"],
                                                                    before["upper"])
    decision = document["decisions"][0]
    assert decision["bound"] in (row["lower"], row["upper"])
    # which interval decides judges no case again, and runs nothing again
    assert document["cache"]["execution"]["miss"] == 0
    assert document["cache"]["judge"]["miss"] == 0
    # the stored run keeps the choice: gate re-decides it on the labels alone
    code_again, out, _ = cli("gate", "latest", "--json", cwd=project.root)
    regated = json.loads(out)
    assert code_again == code and regated["decisions"] == document["decisions"]
    assert regated["metrics"][0]["method"] == "clopper_pearson"


def test_every_report_shows_both_intervals(cli: Callable[..., Any],
                                           project: JudgedProject) -> None:
    _labelled(cli, project, 16)
    summary = project.root / "summary.md"
    code, out, err = cli("run", "--markdown", str(summary), cwd=project.root)
    assert code in (0, 1, 3, 4), err
    terminal = " ".join(out.split())
    assert "[" in terminal and "] corrected" in terminal
    assert "(stratified_by_verdict) · labels alone" in terminal
    assert "of width → checked" in terminal
    markdown = summary.read_text(encoding="utf-8")
    assert "### Judges, checked against people" in markdown
    assert "labels alone" in markdown and "corrected" in markdown
    html = project.root / "report.html"
    code, _, err = cli("report", "latest", "--html", str(html), cwd=project.root)
    assert code == 0, err
    page = html.read_text(encoding="utf-8")
    assert "labels alone" in page and "stratified_by_verdict" in page


def test_a_correction_other_than_judge_or_people_only_is_refused(
        cli: Callable[..., Any], project: JudgedProject) -> None:
    project.suite["evaluators"][0]["correction"] = "both"
    project.write()
    code, _, err = cli("run", cwd=project.root)
    assert code == 2
    assert "oloproof.yaml" in err and "correction" in err
    assert "'judge' or 'people_only'" in err


def test_ppi_plus_where_the_policy_allows_it_and_the_labels_are_many(
        cli: Callable[..., Any], judged: JudgedProject) -> None:
    """130 requests, 20 of them lies a lenient judge passes; 110 labelled (at least 100, with
    at least 10 disagreements): with allow_approximate_methods PPI++ is the corrected
    interval, approximate, and a rule decides on it; without, the exact one."""
    (judged.root / "lenient.py").write_text(
        "def grade(request):\n    return {'verdict': 'pass', 'reason': 'sounds fine'}\n",
        encoding="utf-8")
    judged.suite["judges"] = [{"name": "house", "callable": "lenient:grade"}]
    with_labels_file(judged, desk_cases(130, lies=set(range(3, 130, 6))), minimum_agreement=0.5)
    _labelled(cli, judged, 110)
    _, exact = _run(cli, judged.root)
    row = exact["metrics"][0]
    assert row["method"] == "stratified_by_verdict" and not row.get("approximate")
    assert row["judge"]["judge_only"] >= 10
    judged.policy["allow_approximate_methods"] = True
    judged.write()
    _, tuned = _run(cli, judged.root)
    row = tuned["metrics"][0]
    judge = row["judge"]
    assert row["method"] == "ppi_plus_plus" and row["approximate"] is True
    assert judge["corrected_approximate"] is True and "safeguard" not in judge
    assert row["upper"] - row["lower"] < exact["metrics"][0]["upper"] - \
        exact["metrics"][0]["lower"]
    assert tuned["decisions"][0]["reasons"] != ["insufficient_clusters"]
    assert tuned["decisions"][0]["state"] in ("PASS", "FAIL", "INSUFFICIENT_EVIDENCE")
    # named approximate where it is printed, the labels' own exact interval beside it
    _, out, _ = cli("run", cwd=judged.root)  # every case and verdict from the cache
    printed = " ".join(out.split())
    assert "≈ corrected" in printed and "(ppi_plus_plus, approximate) · labels alone" in printed
    assert "≈ corrected by PPI++" in printed
