"""`oloproof report RUN --baseline REF --html FILE`
(docs/compare.md#both-runs-side-by-side-the-html-report) in real headless Chromium: the comparison
after the decisions, broken cases first, each opening both runs' case panels side by side; offline,
nothing from a case becomes markup. Screenshots go to `tests/artifacts/`."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from compare_desk import Desk

ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"
HOSTILE = "<img src=x onerror=alert(1)> & | `x`"

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Path:
    desk = Desk(tmp_path_factory.mktemp("html"), n=20)
    desk.cases[6]["input"]["note"] = HOSTILE  # c7, which breaks
    desk.write()
    desk.wrong("c1", "c2")
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong("c1", "c7", "c9")
    desk.cases = desk.cases[:-1]
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    code, _out, err = cli("report", "latest", "--baseline", "latest~1", "--html", "r.html",
                         cwd=desk.root)
    assert code == 0, err
    return desk.root / "r.html"


def _open(browser: Any, path: Path, hash_: str = "") -> tuple[Any, list[str], list[str]]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    requests: list[str] = []
    errors: list[str] = []
    url = path.resolve().as_uri()

    def route(r: Any) -> None:
        requests.append(r.request.url)
        if r.request.url.split("#")[0] == url:
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: m.type == "error" and errors.append(m.text))
    page.on("dialog", lambda d: (errors.append("dialog " + d.message), d.dismiss()))
    page.goto(url + hash_)
    page.wait_for_selector("#app[data-ready]", timeout=15_000)
    return page, requests, errors


def test_broken_cases_come_first_and_open_both_panels(report: Path, browser: Any) -> None:
    page, requests, errors = _open(browser, report)
    section = page.locator("#comparison")
    assert section.is_visible()
    rows = page.locator("#compare-cases tbody tr")
    order = [rows.nth(i).get_attribute("data-compare-case") for i in range(rows.count())]
    assert order == ["c7", "c9", "c2"]  # broken (by case id), then fixed
    assert "broken" in rows.nth(0).inner_text() and "fixed" in rows.nth(2).inner_text()
    criteria = page.locator('#compare-criteria tr[data-criterion="answer_correct"]').inner_text()
    assert "\t19\t" in criteria  # 19 paired (c20 dropped)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    section.screenshot(path=str(ARTIFACTS / "compare_summary.png"))
    rows.nth(0).locator("button").click()
    panel = page.locator('#compare-panel[data-case="c7"]')
    panel.wait_for(timeout=10_000)
    baseline = panel.locator('[data-side="baseline"]')
    candidate = panel.locator('[data-side="candidate"]')
    assert "answer_correct: passed" in baseline.inner_text()
    assert "answer_correct: failed" in candidate.inner_text()
    assert "baseline run_" in baseline.inner_text() and "candidate run_" in candidate.inner_text()
    box_b, box_c = baseline.bounding_box(), candidate.bounding_box()
    assert box_b is not None and box_c is not None and box_b["x"] < box_c["x"]  # side by side
    panel.screenshot(path=str(ARTIFACTS / "compare_panels.png"))
    assert errors == []
    assert {u.split("#")[0] for u in requests} == {report.resolve().as_uri()}


def test_a_hash_opens_a_case_in_both_runs_and_case_text_stays_text(report: Path,
                                                                    browser: Any) -> None:
    page, _, errors = _open(browser, report, "#compare=c7")
    panel = page.locator('#compare-panel[data-case="c7"]')
    panel.wait_for(timeout=10_000)
    for side in ("baseline", "candidate"):
        assert HOSTILE in panel.locator(f'[data-side="{side}"]').inner_text()
    assert page.locator("#compare-panel img").count() == 0
    assert errors == []
