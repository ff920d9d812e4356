"""The HTML report of a run of conversations (docs/conversations.md), opened in real headless
Chromium: "What broke" names the simulator's failures, and a case's panel shows the
conversation turn by turn with what the simulator's audit found. The view's tests run the
same check on the page `oloproof view` serves (tests/view/test_view_browser.py)."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_browser import run_beside_the_browser
from test_html import EXAMPLES, Page, write_report

pytestmark = pytest.mark.slow


def copy_conversations(root: Path) -> Path:
    """The conversations example, copied to `root`: its oloproof.yaml."""
    shutil.copytree(EXAMPLES / "conversations", root,
                    ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
    return root / "oloproof.yaml"


def check_the_conversation_panels(view: Any) -> None:
    """What the page of the conversations example's run shows (`view`: a page with `page`
    and `open_case`): c14's simulator failed its audit, c03's passed it."""
    broke = view.page.locator("#simulator-failures").inner_text()
    assert "The simulator failed a check in 1 of 20 simulated conversation(s)" in broke
    assert "leaked_instructions × 1" in broke and "c14" in broke
    panel = view.open_case("c14").locator("#panel-conversation")
    text = panel.inner_text()
    assert "simulated by customer (seed " in text and "4 user turns · ended user_done" in text
    rows = panel.locator("table.conversation tr")
    assert rows.count() == 8
    assert rows.nth(0).inner_text().split(None, 1) == [
        "user", "my desk chair arrived broken, refund please"]
    assert rows.nth(5).inner_text().split(None, 1) == [
        "agent", "Done: order ord-014 (desk chair) has been refunded."]
    assert "[done]" in rows.nth(6).inner_text()
    assert ("The simulator failed leaked_instructions: the simulator's failure, not the "
            "agent's; every criterion of the agent is missing (simulator:leaked_instructions)"
            ) in text
    panel = view.open_case("c03").locator("#panel-conversation")
    text = panel.inner_text()
    assert "The simulator passed its audit" in text
    assert text.count("please wait a little longer") == 5


@pytest.fixture(scope="module")
def conversations(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    config = copy_conversations(tmp_path_factory.mktemp("html-conversations") / "talks")
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        run_beside_the_browser(config)
        yield config


def test_the_case_panel_shows_the_conversation_turn_by_turn(conversations: Path,
                                                            browser: Any) -> None:
    view = Page(browser, write_report(conversations, "report.html"))
    try:
        check_the_conversation_panels(view)
        view.assert_offline()
        assert not view.errors and not view.dialogs
    finally:
        view.close()
