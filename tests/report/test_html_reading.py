"""The HTML report as a reader meets it (issue 10 §1, §2, §4), in real headless Chromium:

- `r.html#case=ID` opens the case's panel and scrolls to it;
- the verdict squares have a legend drawn with the squares themselves;
- the status filters partition the cases: All = Failed + Missing + Excluded + Passed, each case
  under exactly one, on every criterion;
- a copy beside its source marks the words that differ, and only what the evaluators find
  different (the comparison is made once, in Python: arguments given in another key order are
  the same arguments, as `same_actions` says);
- bidirectional-control and zero-width characters in a case id are shown escaped and marked.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_browser import run_beside_the_browser
from test_html import EXAMPLES, Page, write_report

import oloproof
from oloproof.api import find_store
from oloproof.report.case_view import case_view
from oloproof.report.differences import word_marks
from oloproof.store.store import Store

pytestmark = pytest.mark.slow

BIDI_ID = "trip-\u202egnp.exe"
ZERO_WIDTH_ID = "order\u200b-7"

DESK = '''
"""A desk that refunds, unless the request says "decline"; with "reorder" it passes the same
tool arguments in another key order."""

from oloproof import AgentStep, AgentTrajectory, current_case, system


@system(name="polish-desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input):
    message = case_input["message"]
    if "boom" in message:
        raise RuntimeError("the refund service is down")
    answer = "declined" if "decline" in message else "refunded"
    order = case_input["order_id"]
    arguments = {"amount": 10, "order_id": order}
    if "reorder" in message:
        arguments = {"order_id": order, "amount": 10}
    current_case().agent_trajectory(AgentTrajectory(steps=(
        AgentStep(index=1, kind="tool_call", tool_name="issue_refund", arguments=arguments),
        AgentStep(index=2, kind="tool_result", tool_name="issue_refund", result={"ok": True}),
        AgentStep(index=3, kind="final", arguments={"answer": answer}),
    ), terminal_status="success"))
    return {"answer": answer, "note": "the order was " + answer + " today"}
'''

SUITE = """\
version: 1
project: polish
dataset: data/cases.jsonl
system: {name: polish-desk, version: v1, callable: app:run, records: [agent_trajectory/v1]}
evaluators:
  - {type: exact_match, criterion: answer_correct, field: answer, expected_field: answer}
  - {type: agent_tool_called, tool_name: issue_refund}
  - {type: metamorphic_relation, transform: reorder, relation: same_actions}
  - {type: metamorphic_relation, transform: decline, relation: same_output}
metamorphic:
  transforms:
    - {name: reorder, field: message, template: "{value} (reorder)"}
    - {name: decline, field: message, template: "{value} or decline it"}
"""


def _cases() -> list[dict[str, Any]]:
    ids = ["r-001", "r-002", BIDI_ID, ZERO_WIDTH_ID, "r-005", "r-006"]
    return [{"id": case_id, "input": {"order_id": f"ord-{i}", "message": f"Refund ord-{i}"
                                      + (" boom" if i == 6 else "")},
             "expected": {"answer": "refunded" if i != 5 else "declined"}}
            for i, case_id in enumerate(ids, 1)]


@pytest.fixture(scope="module")
def polish(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("html-reading") / "polish"
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(textwrap.dedent(DESK), encoding="utf-8")
    (root / "oloproof.yaml").write_text(SUITE, encoding="utf-8")
    (root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    (root / "data" / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in _cases()), encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(root / "oloproof.yaml")
        yield root / "oloproof.yaml"


@pytest.fixture(scope="module")
def support(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import shutil

    root = tmp_path_factory.mktemp("html-reading") / "support"
    shutil.copytree(EXAMPLES / "support_agent", root)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(root / "oloproof.yaml")
        yield root / "oloproof.yaml"


def _verdict_codes(config: Path) -> dict[str, str]:
    with Store(find_store(config), read_only=True) as store:
        run_id = store.resolve_run("latest")
        return {case_id: outcome["c"] for case_id, _, _, outcome in store.iter_run_cases(run_id)}


def _status(codes: str) -> str:
    """The one status a case has (the rule the legend states)."""
    if "F" in codes:
        return "failed"
    if "M" in codes:
        return "missing"
    return "passed" if "P" in codes or not codes else "excluded"


def _listed(page: Any) -> list[str]:
    return page.eval_on_selector_all("#case-rows tr[data-case]",
                                     "rows => rows.map(r => r.getAttribute('data-case'))")


def _chip_count(page: Any, status: str) -> int:
    text = page.locator(f'button.chip[data-status="{status}"] .count').inner_text()
    return int(text.replace(",", ""))


# ---- #case=ID -----------------------------------------------------------------------------------

@pytest.mark.browser
def test_a_case_address_opens_the_panel_and_scrolls_to_it(support: Path, browser: Any) -> None:
    path = write_report(support, "address.html")
    view = Page(browser, path, "#case=case_031")
    try:
        page = view.page
        panel = page.locator('#case-panel[data-case="case_031"][data-scrolled]')
        panel.wait_for()
        top = panel.evaluate("p => p.getBoundingClientRect().top")
        assert page.evaluate("window.scrollY") > 500, "the page scrolled down to the cases"
        # the panel at the top of the window; scrolling lands on a device pixel, so its top may
        # sit a fraction of a CSS pixel above 0
        assert -1 < top < page.evaluate("window.innerHeight") / 2, top
        assert "case_031" in panel.inner_text()
        # Another address while the page is open does the same.
        page.evaluate("window.scrollTo(0, 0)")
        page.evaluate("location.hash = '#case=case_002'")
        page.locator('#case-panel[data-case="case_002"]').wait_for()
        page.wait_for_function("document.getElementById('case-panel').getBoundingClientRect()"
                               ".top < window.innerHeight / 2")
        assert not view.errors
    finally:
        view.close()


# ---- the legend and the filters -------------------------------------------------------------

@pytest.mark.browser
def test_the_verdict_squares_have_a_legend_of_squares(support: Path, browser: Any) -> None:
    view = Page(browser, write_report(support, "legend.html"))
    try:
        legend = view.page.locator("#verdict-legend")
        text = legend.inner_text()
        for word in ("passed", "failed", "missing", "excluded"):
            assert word in text
        for code in "PFMX":
            assert legend.locator(f".strip span.{code}").count() == 1
        # The squares of a row are the legend's squares, one per criterion in the order named.
        criteria = text.split("(", 1)[1].split(")", 1)[0].split(", ")
        first_row = view.page.locator("#case-rows tr").first.locator(".strip span")
        assert first_row.count() == len(criteria) >= 2
    finally:
        view.close()


@pytest.mark.browser
@pytest.mark.parametrize("project", ["support", "polish"])
def test_the_status_filters_partition_the_cases(project: str, request: Any,
                                                browser: Any) -> None:
    config = request.getfixturevalue(project)
    codes = _verdict_codes(config)
    view = Page(browser, write_report(config, f"filters-{project}.html"))
    try:
        page = view.page
        criteria = page.eval_on_selector_all("#case-criterion option",
                                             "os => os.map(o => o.value)")
        for criterion in criteria:
            page.select_option("#case-criterion", value=criterion)
            at = int(criterion)
            expected: dict[str, set[str]] = {"failed": set(), "missing": set(),
                                             "excluded": set(), "passed": set()}
            for case_id, case_codes in codes.items():
                expected[_status(case_codes[at] if at >= 0 else case_codes)].add(case_id)
            counts = {s: _chip_count(page, s) for s in (*expected, "all")}
            assert counts["all"] == len(codes) == sum(counts[s] for s in expected), counts
            for status, ids in expected.items():
                page.click(f'button.chip[data-status="{status}"]')
                assert set(_listed(page)) == ids, (criterion, status)
                assert counts[status] == len(ids)
            page.click('button.chip[data-status="all"]')
        assert not view.errors
    finally:
        view.close()


# ---- a copy beside its source ---------------------------------------------------------------

def test_word_marks_mark_whole_words() -> None:
    left, right = word_marks("the order was declined today", "the order was refunded today")

    assert [p for p, marked in left if marked] == ["declined"]
    assert [p for p, marked in right if marked] == ["refunded"]
    assert "".join(p for p, _ in left) == "the order was declined today"
    left, right = word_marks("a b c", "a x y c")
    assert [p for p, marked in right if marked] == ["x y"], "a changed phrase is one mark"


@pytest.mark.browser
def test_a_copy_marks_the_words_that_differ(polish: Path, browser: Any) -> None:
    view = Page(browser, write_report(polish, "pair.html"))
    try:
        pair = view.open_case("r-001~decline").locator("#panel-pair")
        note = pair.locator("tr.changed", has_text="output note")
        marks = note.locator("mark").all_inner_texts()
        assert marks == ["refunded", "declined"], marks
        answer = pair.locator("tr.changed", has_text="output answer").locator("mark")
        assert answer.all_inner_texts() == ["refunded", "declined"]
        assert not view.errors
    finally:
        view.close()


@pytest.mark.browser
def test_arguments_in_another_key_order_are_the_same_actions(polish: Path,
                                                             browser: Any) -> None:
    config = polish
    with Store(find_store(config), read_only=True) as store:
        run_id = store.resolve_run("latest")
        python_view = case_view(store, run_id, "r-001~reorder")
    verdicts = {c["criterion"]: c["verdict"] for c in python_view["criteria"]}
    (action,) = [r for r in python_view["pair"]["rows"] if r["label"] == "action"]
    assert verdicts["same_actions_under_reorder"] == "passed"
    assert action["differs"] is False, "the evaluator's own comparison"

    view = Page(browser, write_report(config, "reorder.html"))
    try:
        pair = view.open_case("r-001~reorder").locator("#panel-pair")
        row = pair.locator("tr", has_text="action 1")
        assert row.get_attribute("class") != "changed"
        assert row.locator("mark").count() == 0
        # The input differs (the transform's words), and only the page's rows Python made.
        shown = pair.locator("tbody tr").count()
        assert shown == len(python_view["pair"]["rows"])
        assert pair.locator("tr.changed").count() == sum(
            r["differs"] for r in python_view["pair"]["rows"])
    finally:
        view.close()


def test_report_js_compares_nothing_itself() -> None:
    """The page renders Python's comparisons: no JSON-text equality of values in its script."""
    script = (Path(oloproof.__file__).parent / "report" / "assets" / "report.js").read_text(
        encoding="utf-8")
    for derived in ("function actions(", "function stepKey(", "function markedPair(",
                    "function flatten(", "jsonText(a) !== jsonText(b)"):
        assert derived not in script


# ---- invisible characters in case ids -------------------------------------------------------

@pytest.mark.browser
def test_bidi_and_zero_width_characters_in_case_ids_are_shown_escaped(polish: Path,
                                                                      browser: Any) -> None:
    view = Page(browser, write_report(polish, "bidi.html"))
    try:
        page = view.page
        rows = page.locator("#case-rows").inner_text()
        assert "\u202e" not in rows and "\u200b" not in rows
        assert "trip-\\u202egnp.exe" in rows and "order\\u200b-7" in rows
        marks = page.locator("#case-rows .unsafe-char").all_inner_texts()
        # Each id and its two copies (their ids and "copy of" notes name it again).
        assert set(marks) == {"\\u200b", "\\u202e"} and marks.count("\\u202e") >= 3
        title = page.locator("#case-rows .unsafe-char").first.get_attribute("title")
        assert title and "U+" in title
        # The panel of such a case, reached by its address, names it the same way.
        page.evaluate(f"location.hash = '#case=' + encodeURIComponent({json.dumps(BIDI_ID)})")
        panel = page.locator("#case-panel[data-case]").filter(has_text="trip-")
        panel.wait_for()
        panel_text = page.locator("#case-panel").inner_text()
        assert "trip-\\u202egnp.exe" in panel_text and "\u202e" not in panel_text
        assert page.evaluate("document.body.innerText").count("\u202e") == 0
        assert not view.errors
    finally:
        view.close()


# ---- thresholds as the rule writes them (issue 12 §7) ---------------------------------------

ODD_POLICY = """\
version: 1
rules:
  - {id: answers, metric: answer_correct, min: 0.6725}
  - {id: short, metric: steps_p95, max: 10.25}
"""


@pytest.fixture(scope="module")
def odd_threshold(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    import shutil

    root = tmp_path_factory.mktemp("html-reading") / "odd"
    shutil.copytree(EXAMPLES / "support_agent", root)
    (root / "odd.yaml").write_text(ODD_POLICY, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(root / "oloproof.yaml", root / "odd.yaml")
        yield root / "oloproof.yaml"


@pytest.mark.browser
def test_thresholds_read_as_the_rule_writes_them_beside_their_bound(odd_threshold: Path,
                                                                     browser: Any,
                                                                     cli: Any) -> None:
    code, out, err = cli("gate", "latest", cwd=odd_threshold.parent, env={"COLUMNS": "120"})
    assert code == 3, err
    terminal = " ".join(out.split())
    # 33 / 40: lower 67.221…%, which a one-decimal rounding of the threshold would hide.
    said = "INSUFFICIENT_EVIDENCE · lower 67.22% < min 67.25% ≤ upper 92.67%"
    assert said in terminal
    code, out, _ = cli("plan", "latest", cwd=odd_threshold.parent, env={"COLUMNS": "120"})
    assert code == 0 and "threshold 67.25%" in out and "67.3%" not in out

    view = Page(browser, write_report(odd_threshold, "odd.html"))
    try:
        decisions = view.page.locator("#decisions")
        answers = decisions.locator("tr", has_text="answers")
        cells = answers.locator("td").all_inner_texts()
        assert " ".join(cells[2].split()) == said
        assert cells[4] == "min 67.25%"
        short = decisions.locator("tr", has_text="short").locator("td").all_inner_texts()
        assert short[4] == "max 10.25 steps" and "max 10.25 steps" in short[2]
    finally:
        view.close()
