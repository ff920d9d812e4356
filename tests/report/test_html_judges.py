"""The HTML report of a judged run (docs/judges.md), opened in real headless Chromium: the judge
checked against people, and a case panel with the judge's verdict, reason, model, latency and
what it was shown."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_browser import run_beside_the_browser
from test_html import EXAMPLES, Page, write_report

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def judged(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("html-judges") / "judged"
    shutil.copytree(EXAMPLES / "judged_agent", root)
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(root / "oloproof.yaml")
        yield root / "oloproof.yaml"


def test_the_judge_checked_and_its_verdict_on_a_case(judged: Path,
                                                     browser: Any) -> None:
    path = write_report(judged, "report.html")
    view = Page(browser, path)
    try:
        page = view.page
        checks = page.locator("#judge-checks").inner_text()
        assert "reply_truthful" in checks and "as people would judge it 66.7%" in checks
        assert "checked" in checks
        # the labels' own interval beside the corrected one, with what the judge cost
        assert "labels alone 66.7% [47.1%, 82.8%]" in " ".join(checks.split())
        assert "the judge cost 1.2 points of width" in " ".join(checks.split())
        metric = page.locator("#metric-reply_truthful").inner_text()
        assert "[46.4%, 83.2%] corrected" in metric
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


def test_the_split_of_three_samples_in_the_case_panel(tmp_path: Path,
                                                      browser: Any) -> None:
    """`samples: 3`: the panel shows how the three answers split beside the majority."""
    root = tmp_path / "sampled"
    shutil.copytree(EXAMPLES / "judged_agent", root)
    (root / "judges.py").write_text(
        "def lenient(request):\n"
        "    # the second of every three answers says fail\n"
        "    verdict = 'fail' if request.sample == 2 else 'pass'\n"
        "    return {'verdict': verdict, 'reason': f'answer {request.sample}'}\n",
        encoding="utf-8")
    suite = (root / "oloproof.yaml").read_text(encoding="utf-8")
    suite = suite.replace("    callable: judges:lenient\n",
                          "    callable: judges:lenient\n    temperature: 1.0\n")
    suite = suite.replace("    minimum_agreement: 0.5\n", "    minimum_agreement: 0.5\n"
                          "    samples: 3\n")
    assert suite.count("samples: 3") == 1 and suite.count("temperature: 1.0") == 1
    (root / "oloproof.yaml").write_text(suite, encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(root / "oloproof.yaml")
    view = Page(browser, write_report(root / "oloproof.yaml", "report.html"))
    try:
        text = view.open_case("req-023").locator("#panel-judges").inner_text()
        assert "samples 2 pass / 1 fail" in text
        assert "answer 1" in text or "answer 3" in text  # a reason of the majority's
        assert not view.errors
    finally:
        view.close()
