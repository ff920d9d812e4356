"""The HTML report of a run with trials
(docs/reliability.md#reading-oloproof-inspect-latest---flaky), opened in real headless Chromium:
pass^k drawn against k with the intervals Python computed, and a case's trials side by side."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_browser import run_beside_the_browser
from test_html import ARTIFACTS, EXAMPLES, Page, write_report

import oloproof
from oloproof.analysis.trial_rows import pass_hat_curve
from oloproof.stats import percent, percent_lower, percent_upper

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def flaky(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("html-trials") / "flaky"
    shutil.copytree(EXAMPLES / "flaky_agent", root)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(root / "oloproof.yaml")
        yield root / "oloproof.yaml"


def test_pass_hat_k_is_drawn_against_k_from_pythons_numbers(flaky: Path, browser: Any) -> None:
    path = write_report(flaky, "report.html")
    text = path.read_text(encoding="utf-8")
    assert "<script src" not in text and "http://" not in text.replace(
        "http://www.w3.org/2000/svg", ""), "one offline file"
    cases = oloproof.load_case_trials("latest", flaky)
    curve = pass_hat_curve(cases, 0, 0.95)  # answer_correct, k = 1 … 5
    view = Page(browser, path)
    try:
        page = view.page
        section = page.locator("#reliability")
        assert "pass^k against k" in section.inner_text()
        figure = section.locator("figure", has_text="answer_correct")
        rows = figure.locator("table.reliability-table tbody tr")
        assert rows.count() == 5
        for k, figures in enumerate(curve, start=1):
            cells = rows.nth(k - 1).locator("td").all_inner_texts()
            assert cells == [str(k), percent(figures.estimate),
                             f"[{percent_lower(figures.lower)}, {percent_upper(figures.upper)}]"]
        svg = figure.locator("svg.reliability")
        assert svg.locator("circle.est").count() == 5
        # One whisker and two caps per k.
        assert svg.locator("line.whisker").count() == 15
        label = svg.get_attribute("aria-label") or ""
        assert f"k=5 {percent(curve[-1].estimate)}" in label
        # pass^1 looks healthy, pass^5 does not: the picture a reader wants.
        assert curve[0].estimate > 0.8 > 0.5 > curve[-1].estimate
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        section.screenshot(path=str(ARTIFACTS / "html-report-reliability.png"))
        view.assert_offline()
        assert not view.errors and not view.dialogs
    finally:
        view.close()


def test_a_case_panel_shows_its_trials_side_by_side(flaky: Path, browser: Any) -> None:
    path = write_report(flaky, "report.html")
    view = Page(browser, path)
    try:
        panel = view.open_case("req-004")
        box = panel.locator(".trials-box")
        assert "Trials side by side (5 trials" in box.inner_text()
        assert box.locator("table.trials thead th").count() == 1 + 5 + 1
        divided = box.locator("table.trials tr.divided")
        assert divided.count() >= 1
        assert "The trials part at step" in box.inner_text()
        assert box.locator("table.trial-steps tr.differs").count() >= 1
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        box.screenshot(path=str(ARTIFACTS / "html-report-trials.png"))
        assert not view.errors and not view.dialogs
    finally:
        view.close()


def test_the_case_list_says_on_how_many_trials_a_case_failed(flaky: Path, browser: Any) -> None:
    """`failed answer_correct (2 of 5 trials)`, as `oloproof cases` and JUnit say it."""
    from click.testing import CliRunner

    from oloproof.cli.main import cli

    listed = CliRunner().invoke(cli, ["cases", "latest", "--json", "--config", str(flaky)])
    cases = {c["case"]: c for c in json.loads(listed.output)["cases"]}
    failing = {case_id: c["failed_trials"] for case_id, c in cases.items() if c["failed_trials"]}
    assert failing and any(0 < n < 5 for counts in failing.values() for n in counts.values())
    path = write_report(flaky, "report.html")
    view = Page(browser, path)
    try:
        for case_id, counts in list(failing.items())[:4]:
            view.page.fill("#case-search", case_id)
            row = view.page.locator(f'#case-rows tr[data-case="{case_id}"]')
            shown = row.locator("td.flag").inner_text()
            assert shown == "failed " + ", ".join(
                f"{name} ({n} of 5 trials)" for name, n in counts.items()), shown
        assert not view.errors and not view.dialogs
    finally:
        view.close()
