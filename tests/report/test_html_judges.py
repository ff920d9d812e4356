"""The HTML report of a judged run (docs/judges.md), opened in real headless Chromium: the judge
checked against people, and a case panel with the judge's verdict, reason, model, latency and
what it was shown."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from test_html import EXAMPLES, Page, _report, browser  # noqa: F401 - the fixture

import oloproof

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("html-judges") / "judged"
    shutil.copytree(EXAMPLES / "judged_agent", root)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        oloproof.run(root / "oloproof.yaml")
        yield root / "oloproof.yaml"


def test_the_judge_checked_and_its_verdict_on_a_case(judged: Path,
                                                     browser: Any) -> None:  # noqa: F811
    path = _report(judged, "report.html")
    view = Page(browser, path)
    try:
        page = view.page
        checks = page.locator("#judge-checks").inner_text()
        assert "reply_truthful" in checks and "as people would judge it 66.7%" in checks
        assert "checked" in checks
        metric = page.locator("#metric-reply_truthful").inner_text()
        assert "[23.5%, 100.0%] corrected" in metric
        panel = view.open_case("req-023")
        box = panel.locator("#panel-judges")
        text = box.inner_text()
        assert "by judge grader" in text and "judges:lenient" in text
        assert "the reply matches the refund it describes" in text
        assert " ms" in text
        assert "what the judge was shown" in text.lower() and "processor_timeout" in text
        view.assert_offline()
        assert not view.errors and not view.dialogs
    finally:
        view.close()
