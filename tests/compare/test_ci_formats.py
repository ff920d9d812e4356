"""Results where CI systems read them (docs/ci.md#what-the-job-produces, issue 14 acceptance 4): the
JUnit file read back by a real JUnit library, the Markdown rendered by markdown-it-py into tables,
both with hostile case text (`<`, `&`, `|`, backticks, newlines, bidi controls) kept inert."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compare_desk import Desk
from junitparser import Error, Failure, JUnitXml, Skipped
from markdown_it import MarkdownIt

# A case id and an error message a hostile dataset or system could carry.
HOSTILE_ID = "c<b>&amp;|`x`\u202egnp.exe"
HOSTILE_ERROR = "boom <script>alert(1)</script> & | `rm -rf` \n| injected | row |\n\u202eevil"


def _markdown_html(text: str) -> str:
    return str(MarkdownIt("commonmark").enable("table").render(text))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """Twelve cases: c1 and c2 answer wrongly, the hostile case raises a hostile error; a
    baseline where all answered right, so the candidate breaks c1, c2 and c3."""
    desk = Desk(tmp_path_factory.mktemp("ci"), n=11)
    desk.cases.append({"id": HOSTILE_ID, "input": {"q": 12, "error": HOSTILE_ERROR},
                       "expected": {"answer": "yes"}})
    desk.policy = {"version": 1, "rules": [
        {"id": "answers", "metric": "answer_correct", "min": 0.99},     # FAIL
        {"id": "looks-up", "metric": "agent_tool_lookup_called", "min": 0.95},  # IE
    ], "warn_on": ["INSUFFICIENT_EVIDENCE"],
        "block_on": ["FAIL"]}
    desk.write()
    assert cli("run", cwd=desk.root)[0] in (0, 1)
    desk.version("v2")
    desk.wrong("c1", "c2", "c3")
    desk.raising(HOSTILE_ID)
    return desk


@pytest.fixture(scope="module")
def written(project: Desk, cli: Any) -> dict[str, Any]:
    (project.root / "out").mkdir()  # output folders are never created (docs/ci.md)
    code, out, err = cli("run", "--junit", "out/results.xml", "--markdown", "out/summary.md",
                         "--json", cwd=project.root)
    assert code == 1, err  # blocked with a FAIL
    return {"run": json.loads(out), "junit": project.root / "out" / "results.xml",
            "markdown": project.root / "out" / "summary.md"}


def test_junit_has_a_suite_of_rules_and_a_suite_of_cases(written: dict[str, Any]) -> None:
    xml = JUnitXml.fromfile(str(written["junit"]))
    suites = {suite.name: suite for suite in xml}
    assert set(suites) == {"oloproof.rules", "oloproof.cases"}
    rules = {case.name: case for case in suites["oloproof.rules"]}
    assert set(rules) == {"answers", "looks-up"}
    answers = rules["answers"].result
    assert len(answers) == 1 and isinstance(answers[0], Failure)
    assert answers[0].type == "FAIL"
    assert "upper_bound_below_minimum" in answers[0].message
    assert "< min 99.0%" in answers[0].message  # the bound and the threshold
    # INSUFFICIENT_EVIDENCE does not block under this policy: skipped, not failed.
    looks = rules["looks-up"].result
    assert len(looks) == 1 and isinstance(looks[0], Skipped)
    assert "interval_overlaps_threshold" in looks[0].message
    cases = {case.name: case for case in suites["oloproof.cases"]}
    assert len(cases) == 12
    failed = cases["c1"].result
    assert isinstance(failed[0], Failure) and failed[0].message == "failed answer_correct"
    assert cases["c4"].is_passed
    assert suites["oloproof.cases"].failures == 3 and suites["oloproof.cases"].errors == 1


def test_junit_carries_hostile_text_escaped(written: dict[str, Any]) -> None:
    raw = written["junit"].read_text(encoding="utf-8")
    assert "<script>" not in raw and "\u202e" not in raw
    xml = JUnitXml.fromfile(str(written["junit"]))
    cases = {case.name: case for suite in xml for case in suite
             if suite.name == "oloproof.cases"}
    shown_id = HOSTILE_ID.replace("\u202e", "\\u202e")
    assert shown_id in cases  # the id itself, `<`, `&`, `|` and backticks as text
    error = cases[shown_id].result[0]
    assert isinstance(error, Error)
    assert error.type == "system_error"
    assert "<script>alert(1)</script>" in (error.text or "")  # the text, not markup
    assert "\\u202eevil" in (error.text or "")


def test_gate_and_run_write_the_same_files_from_the_stored_run(project: Desk, cli: Any,
                                                               written: dict[str, Any]) -> None:
    code, _, err = cli("gate", "latest", "--junit", "gate.xml", "--markdown", "gate.md",
                       cwd=project.root)
    assert code == 1, err
    assert (project.root / "gate.xml").read_text() == written["junit"].read_text()
    assert (project.root / "gate.md").read_text() == written["markdown"].read_text()


def test_markdown_renders_tables_with_hostile_text_inert(written: dict[str, Any]) -> None:
    text = written["markdown"].read_text(encoding="utf-8")
    assert text.startswith("## Oloproof: BLOCK (exit 1)")
    html = _markdown_html(text)
    assert html.count("<table>") == 2  # decisions and metrics
    assert "<script>" not in html and "<b>" not in html and "\u202e" not in html
    # The hostile error's `| injected | row |` did not make a table row of its own.
    assert "<td>injected</td>" not in html
    tables = html.split("<table>")
    decisions = tables[1]
    assert "<td>answers</td>" in decisions and "<strong>FAIL</strong>" in decisions
    # The hostile case id and error show as text (escaped in HTML), never as markup or code.
    assert "c&lt;b&gt;&amp;amp;|`x`\\u202egnp.exe" in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<code>rm" not in html


def test_compare_writes_junit_and_markdown(project: Desk, cli: Any,
                                           written: dict[str, Any]) -> None:
    code, _, err = cli("compare", "latest~1", "latest", "--junit", "cmp.xml", "--markdown",
                       "cmp.md", cwd=project.root)
    assert code == 0, err
    xml = JUnitXml.fromfile(str(project.root / "cmp.xml"))
    suites = {suite.name: suite for suite in xml}
    criteria = {case.name: case for case in suites["oloproof.comparison"]}
    broken = criteria["answer_correct"].result
    assert isinstance(broken[0], Failure) and broken[0].message.startswith("3 broken, 0 fixed")
    cases = {case.name: case for case in suites["oloproof.compared_cases"]}
    assert {"c1", "c2", "c3"} <= set(cases)
    assert isinstance(cases["c1"].result[0], Failure)
    assert "trajectories part at step 2" in (cases["c1"].result[0].text or "")
    html = _markdown_html((project.root / "cmp.md").read_text(encoding="utf-8"))
    assert html.count("<table>") == 1 and "<td>answer_correct</td>" in html
    assert "Broken cases: 3" in html


def test_the_library_writes_them_too(project: Desk, written: dict[str, Any],
                                     tmp_path: Path) -> None:
    import oloproof

    result = oloproof.load_run("latest", project.config)
    paths = oloproof.write_ci_reports(result, junit=tmp_path / "r.xml",
                                      markdown=tmp_path / "r.md", config=project.config)
    assert [p.name for p in paths] == ["r.xml", "r.md"]
    assert (tmp_path / "r.xml").read_text() == written["junit"].read_text()
