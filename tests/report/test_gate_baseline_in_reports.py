"""What a reviewer reads says what the terminal says (issue 42 point 3): the HTML report and the
view's run page carry the comparison against the baseline the run's gate was decided against,
without being asked for it (`report --baseline` still names any other run)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from shared_browser import run_beside_the_browser

import oloproof


def _embedded(page: str) -> dict[str, Any]:
    found = re.search(r'<script type="application/json" id="oloproof-data">(.*?)</script>',
                      page, re.S)
    assert found is not None
    return dict(json.loads(found.group(1)))


@pytest.fixture
def gated(new_probe: Any) -> Any:
    """A baseline run, then a candidate whose desk breaks c003, decided against it (each run
    on a thread of its own, `run_beside_the_browser`: this file's last test opens pages)."""
    probe = new_probe()
    cases = probe.plain_cases(8)
    probe.write_cases(cases)
    probe.baseline = run_beside_the_browser(probe.path / "oloproof.yaml").run_id
    cases[2]["input"]["answer"] = "no"  # the input changes, so c003 runs again, and fails
    cases[2]["expected"] = {"answer": "yes"}
    probe.write_cases(cases)
    probe.policy["baseline"] = "latest~1"
    probe.policy["rules"].append({"id": "no-worse", "metric": "answer_correct",
                                  "kind": "non_inferiority", "margin": 0.5})
    probe.write_policy()
    probe.set_system(version="v2")
    probe.candidate = run_beside_the_browser(probe.path / "oloproof.yaml")
    return probe


def test_the_html_report_shows_the_gate_s_baseline(gated: Any, cli: Any) -> None:
    probe = gated
    candidate = probe.candidate
    assert candidate.document.baseline is not None
    assert candidate.document.baseline.baseline == probe.baseline
    assert cli("report", "latest", "--html", "out/r.html", cwd=probe.path).code == 0
    summary = _embedded((probe.path / "out" / "r.html").read_text(encoding="utf-8"))["summary"]
    comparison = summary["comparison"]
    assert comparison["baseline"] == probe.baseline and comparison["gate_used"] is True
    assert comparison == dict(
        oloproof.compare(probe.baseline, candidate.run_id,
                         config=probe.path / "oloproof.yaml").to_json(),
        criteria=comparison["criteria"], method_note=comparison["method_note"],
        changes=comparison["changes"], gate_used=True)
    row = next(r for r in comparison["criteria"] if r["criterion"] == "answer_correct")
    assert row["broken"] == 0 and comparison["changed"] == ["c003"]
    # Another baseline, named, is shown instead, and is not the gate's.
    assert cli("report", "latest", "--html", "out/other.html", "--baseline", probe.baseline,
               cwd=probe.path).code == 0
    other = _embedded((probe.path / "out" / "other.html").read_text(encoding="utf-8"))
    assert other["summary"]["comparison"]["gate_used"] is False


def test_the_view_s_run_page_shows_it_too(gated: Any) -> None:
    pytest.importorskip("starlette")
    from oloproof.store.store import Store
    from oloproof.view import pages

    with Store(gated.store, read_only=True) as db:
        data = pages.report_data(db, gated.candidate.run_id)
        page = pages.run_page(db, gated.candidate.run_id, "/api")
        assert pages.report_data(db, gated.baseline)["summary"].get("comparison") is None
    assert data["summary"]["comparison"]["baseline"] == gated.baseline
    assert data["summary"]["comparison"]["gate_used"] is True
    assert _embedded(page)["summary"]["comparison"]["baseline"] == gated.baseline


# ---- in a real browser -----------------------------------------------------------------------

def _drawn(browser: Any, path: Any) -> tuple[str, dict[str, bool], list[str]]:
    """The page at `path` drawn by headless Chromium: its text, whether the marks are shown,
    and the errors the page raised."""
    errors: list[str] = []
    page = browser.new_page()
    try:
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.goto(path.resolve().as_uri())
        page.wait_for_selector("#app[data-ready]", timeout=15_000)
        shown = {selector: page.locator(selector).count() > 0
                 and page.locator(selector).first.is_visible()
                 for selector in ("#gate-baseline", "#subset-note", "#subset",
                                  "#rescored", "#not-rescored", "#comparison")}
        return page.locator("#app").inner_text(), shown, errors
    finally:
        page.close()


@pytest.mark.slow
@pytest.mark.browser
def test_the_page_draws_the_marks(gated: Any, cli: Any, browser: Any) -> None:
    probe = gated
    assert cli("report", "latest", "--html", "gated.html", cwd=probe.path).code == 0
    cases = probe.plain_cases(8)  # (c003 as the baseline had it: changed since the candidate)
    cases[5]["expected"] = {"answer": "no"}  # c006's case changed since: not rescored
    probe.write_cases(cases)
    assert cli("rescore", probe.candidate.run_id, cwd=probe.path).code == 3
    assert cli("report", "latest", "--html", "rescored.html", cwd=probe.path).code == 0
    text, shown, errors = _drawn(browser, probe.path / "gated.html")
    assert errors == [] and shown["#comparison"] and shown["#gate-baseline"]
    assert not shown["#subset-note"] and not shown["#rescored"]
    text, shown, errors = _drawn(browser, probe.path / "rescored.html")
    assert errors == []
    assert shown["#subset-note"] and shown["#subset"] and shown["#rescored"]
    assert shown["#not-rescored"]
    assert "subset of 6 of 8 cases: not a release decision" in text
    assert f"Rescored from {probe.candidate.run_id}" in " ".join(text.split())
    assert "the case changed since" in text and "c003, c006" in text
