"""`oloproof view` in real headless Chromium (docs/view.md): the runs page → a run → a failing
case → two runs compared, a deep link to a case, the report's hostile-text test on the view's
page, a judged run, a pytest session's run, and a run started while its page is open, advancing
on screen without a reload.

One server (a thread of this process) and one browser serve the module. Screenshots go to
tests/artifacts/, or to docs/images/ with OLOPROOF_DOC_SCREENSHOTS=1 (the committed images of
docs/view.md, refreshed on purpose).
"""

from __future__ import annotations

import itertools
import shutil
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from pytest_session import run_pytest, write
from test_html import EXAMPLES, check_hostile_text_stays_text, write_hostile_project
from test_html_conversations import check_the_conversation_panels, copy_conversations
from view_support import (
    HOSTILE,
    ViewPage,
    ViewServer,
    files_state,
    run_project,
    screenshot_dir,
)

from oloproof.api import find_store

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture
def tab(browser: Any, view: ViewServer) -> Iterator[ViewPage]:
    page = ViewPage(browser, view.url)
    yield page
    page.close()


def test_the_printed_address_lets_the_browser_in_once(browser: Any, view: ViewServer) -> None:
    """The address `oloproof view` prints opens the runs page at the view's own address (the
    token now in a cookie); a tab without it gets the page that says how to get in."""
    stranger = ViewPage(browser, view.origin)  # no token: as another user's browser
    try:
        answer = stranger.page.goto(view.origin + "/runs/latest")
        assert answer is not None and answer.status == 401
        text = stranger.page.inner_text("body")
        assert "This view asks for its token" in text and "?token=" in text
        assert "run_" not in text
    finally:
        stranger.close()
    tab = ViewPage(browser, view.url)  # opens view.url, as a user does
    try:
        assert tab.page.url == view.origin + "/" and "token" not in tab.page.url
        page = tab.open("/runs/latest")  # a later page: the cookie is enough
        assert "/runs/run_" in page.url
        tab.assert_clean()
    finally:
        tab.close()


def _shot(target: Any, name: str, **options: Any) -> None:
    target.screenshot(path=str(screenshot_dir() / name), **options)


def test_runs_then_a_run_then_a_case_then_compare(desk: Any, view: ViewServer,
                                                  tab: ViewPage) -> None:
    before = files_state(find_store(desk.config))
    page = tab.open("/")
    rows = page.locator("#run-rows tr")
    assert rows.count() == 2
    newest, older = (rows.nth(i).get_attribute("data-run") for i in range(2))
    first = rows.nth(0).inner_text()
    assert "complete" in first and "desk" in first and "v2" in first
    assert "ALLOW (exit 0)" in first  # 15 of 19 answered right: above the 50% minimum
    assert not page.locator(".pager").is_visible()  # one page of runs: no pager
    cells = rows.nth(0).locator("td")
    assert [cells.nth(i).inner_text() for i in (8, 9, 10, 11)] == ["1", "19", "4", "1"]
    # The filter: by version, then by anything a row shows. (By "desk v1", the system and its
    # version: "v1" alone is also in one run id in sixty, which is in the text a row shows.)
    page.fill("#run-filter", "desk v1")
    page.wait_for_selector('#app[data-listed="1"]')
    assert page.locator("#run-rows tr").first.get_attribute("data-run") == older
    assert "shipped-1.0" in page.locator("#run-rows tr").first.inner_text()  # its tag
    page.fill("#run-filter", "shipped")
    page.wait_for_selector('#app[data-listed="1"]')
    assert page.locator("#run-rows tr").first.get_attribute("data-run") == older
    page.fill("#run-filter", "")
    page.wait_for_selector('#app[data-listed="2"]')
    _shot(page, "view-runs.png")

    # A run: its report, with the case panel.
    page.locator(f'#run-rows tr[data-run="{newest}"] a').click()
    page.wait_for_url(f"**/runs/{newest}")
    page.wait_for_selector("#app[data-ready]")
    assert "Gate: ALLOW" in page.locator("#gate").inner_text()
    assert "answer_correct" in page.locator("#metrics").inner_text()
    assert "system_error × 1" in page.locator("#errors").inner_text()
    _shot(page, "view-run.png")
    page.click('button.chip[data-status="failed"]')
    assert [page.locator("#case-rows tr").nth(i).get_attribute("data-case")
            for i in range(page.locator("#case-rows tr").count())] == ["c1", "c7", "c9"]
    page.locator('#case-rows tr[data-case="c7"]').click()
    panel = page.locator('#case-panel[data-case="c7"]')
    panel.wait_for()
    assert page.url.endswith("#case=c7")  # a deep link
    assert HOSTILE in panel.inner_text() and "answer_correct: failed" in panel.inner_text()
    assert panel.locator("ol.timeline > li.step").count() == 3
    _shot(panel, "view-case.png")

    # Back to the list: pick both runs, compare them.
    page.locator("#all-runs").click()
    page.wait_for_url(view.origin + "/")
    page.wait_for_selector("#app[data-ready]")
    assert page.locator("#compare-picked").is_disabled()
    page.check(f'input[data-pick="{newest}"]')
    page.check(f'input[data-pick="{older}"]')
    assert f"baseline {older} · candidate {newest}" in page.locator("#pair-note").inner_text()
    page.click("#compare-picked")
    page.wait_for_url("**/compare?**")
    page.wait_for_selector("#app[data-ready]")
    section = page.locator("#comparison")
    assert f"Compared with baseline {older}" in section.inner_text()
    compared = page.locator("#compare-cases tbody tr")
    assert [compared.nth(i).get_attribute("data-compare-case")
            for i in range(compared.count())] == ["c7", "c9", "c2"]  # broken first
    _shot(section, "view-compare.png")
    compared.nth(0).locator("button").click()
    both = page.locator('#compare-panel[data-case="c7"]')
    both.wait_for()
    assert "answer_correct: passed" in both.locator('[data-side="baseline"]').inner_text()
    assert "answer_correct: failed" in both.locator('[data-side="candidate"]').inner_text()
    assert page.locator("img").count() == 0
    tab.assert_clean()
    assert files_state(find_store(desk.config)) == before  # browsing wrote nothing


def test_a_deep_link_opens_its_case(desk: Any, tab: ViewPage) -> None:
    tab.open("/runs/latest#case=c9")  # a reference, redirected to the run's own address
    panel = tab.page.locator('#case-panel[data-case="c9"]')
    panel.wait_for()
    assert "/runs/run_" in tab.page.url and tab.page.url.endswith("#case=c9")
    assert "answer_correct: failed" in panel.inner_text()
    tab.open("/runs/latest~1#case=c20")  # only the baseline has c20
    tab.page.locator('#case-panel[data-case="c20"]').wait_for()
    tab.assert_clean()


def test_the_reports_hostile_text_test_passes_on_the_view(
        tmp_path_factory: pytest.TempPathFactory, browser: Any) -> None:
    config = write_hostile_project(tmp_path_factory.mktemp("view-hostile") / "hostile")
    run_project(config)
    server = ViewServer(find_store(config))
    tab = ViewPage(browser, server.url)
    try:
        tab.open("/runs/latest")
        check_hostile_text_stays_text(tab)
        runs = tab.open("/")
        assert runs.locator("img, b, i").count() == 0
        tab.assert_clean()
    finally:
        tab.close()
        server.close()


def test_a_run_of_conversations_shows_them_as_the_report_does(
        tmp_path_factory: pytest.TempPathFactory, browser: Any) -> None:
    """The conversations example in the view: What broke names the simulator's failure, and a
    case's panel (read from the API) the conversation turn by turn with the audit's verdict,
    as tests/report/test_html_conversations.py reads them in the file."""
    config = copy_conversations(tmp_path_factory.mktemp("view-conversations") / "talks")
    run_project(config)
    server = ViewServer(find_store(config))
    tab = ViewPage(browser, server.url)
    try:
        tab.open("/runs/latest")
        check_the_conversation_panels(tab)
        tab.assert_clean()
    finally:
        tab.close()
        server.close()


def test_a_judged_run_shows_its_judge_as_the_report_does(
        tmp_path_factory: pytest.TempPathFactory, browser: Any) -> None:
    """The judged_agent example in the view: the runs page lists it, its page shows the judge
    checked against people and the corrected interval, and a case's panel (read from the API)
    the judge's verdict, reason and what it was shown — as tests/report/test_html_judges.py
    reads them in the file."""
    root = tmp_path_factory.mktemp("view-judged") / "judged"
    shutil.copytree(EXAMPLES / "judged_agent", root)
    run_project(root / "oloproof.yaml")
    server = ViewServer(find_store(root / "oloproof.yaml"))
    tab = ViewPage(browser, server.url)
    try:
        runs = tab.open("/")
        assert runs.locator("#run-rows tr").count() == 1
        page = tab.open("/runs/latest")
        checks = page.locator("#judge-checks").inner_text()
        assert "reply_truthful" in checks and "as people would judge it 66.7%" in checks
        assert "labels alone 66.7% [47.1%, 82.8%]" in " ".join(checks.split())
        assert "[46.4%, 83.2%] corrected" in page.locator("#metric-reply_truthful").inner_text()
        text = tab.open_case("req-023").locator("#panel-judges").inner_text()
        assert "by judge grader" in text and "the reply matches the refund it describes" in text
        assert "what the judge was shown" in text.lower()
        tab.assert_clean()
    finally:
        tab.close()
        server.close()


#: A session of three marked tests (docs/pytest.md#the-stored-run): one that always passes,
#: a seeded coin flip and one whose service refuses every third call.
SESSION_TESTS = '''
import random

import pytest

COIN = random.Random(41)
SERVICE = {"calls": 0}


@pytest.mark.oloproof(trials=30, min=0.8)
def test_always_passes():
    pass


@pytest.mark.oloproof(trials=50, min=0.8)
def test_coin_flip():
    assert COIN.random() < 0.5, "tails"


@pytest.mark.oloproof(trials=30, min=0.8)
def test_flaky_service():
    SERVICE["calls"] += 1
    if SERVICE["calls"] % 3 == 0:
        raise ConnectionError("the agent's service refused the connection")
'''


def test_a_pytest_session_shows_each_tests_decision_and_no_rule_on_its_summary(
        tmp_path_factory: pytest.TempPathFactory, browser: Any) -> None:
    """A pytest session's run in the view (docs/pytest.md#the-stored-run): each marked test a
    rule with the decision the session made and its threshold in words; the run's one metric,
    `passes`, drawn as a summary — no rule's threshold or state on its bar, since each rule
    decides on one test's trials, never on it —; a test's errored trials in its panel."""
    root = tmp_path_factory.mktemp("view-pytest") / "session"
    write(root, {"test_agent.py": SESSION_TESTS})
    ran = run_pytest(root, "-p", "no:asyncio", "-p", "no:anyio")
    assert ran.code == 1 and len(ran.results) == 3, ran.out
    states = {nodeid: result["state"] for nodeid, result in ran.results.items()}
    assert sorted(states.values()) == ["FAIL", "INSUFFICIENT_EVIDENCE", "PASS"], states
    server = ViewServer(root / ".oloproof" / "store.sqlite")
    tab = ViewPage(browser, server.url)
    try:
        runs = tab.open("/")
        assert "\tpytest\tsession\t" in runs.locator("#run-rows tr").first.inner_text()
        page = tab.open("/runs/latest")
        assert "Gate: BLOCK" in page.locator("#gate").inner_text()
        rows = page.locator("#decisions tbody tr")
        shown = {rows.nth(i).locator("td").first.inner_text(): rows.nth(i).inner_text()
                 for i in range(rows.count())}
        assert set(shown) == set(ran.results)
        for nodeid, result in ran.results.items():
            run, most = len(result["outcomes"]), result["trials"]
            assert f"{result['state']} · " in shown[nodeid]
            assert f"{run} of {most} trials" in shown[nodeid]
            assert f"case {nodeid}: min 80.0% over at most {most} trials, stopped at the " \
                "first decision" in " ".join(shown[nodeid].split())
        bar = page.locator("#metric-passes svg.bar")
        assert bar.locator("rect.iv").first.get_attribute("class") == "iv "  # no rule's state
        assert bar.locator("line.thr").count() == 0
        flaky = next(n for n in ran.results if n.endswith("test_flaky_service"))
        panel = tab.open_case(flaky).inner_text()
        assert "ConnectionError: the agent's service refused the connection" in panel
        tab.assert_clean()
    finally:
        tab.close()
        server.close()


#: The live run's holds: its calls from case 5 on wait until the test lets them go, from case
#: 21 on wait again, and from case 36 on a third time; so whatever the machine's load, the run
#: cannot advance before the page watches it, and each stage is reached, and drawn, before the
#: next begins.
HOLDS = {5: "advance", 21: "more", 36: "finish"}


def _held_at(case_number: int) -> str | None:
    starts = [n for n in HOLDS if n <= case_number]
    return HOLDS[max(starts)] if starts else None


def test_a_run_started_while_its_page_is_open_advances_on_screen(
        new_probe: Callable[[], Any], spawn_oloproof: Callable[..., Any], browser: Any) -> None:
    probe = new_probe()
    cases = probe.plain_cases(40, sleep=0.2)
    for number, case in enumerate(cases, 1):
        gate = _held_at(number)
        if gate is not None:
            case["input"]["wait_for"] = gate
    for i in (3, 11):
        cases[i - 1]["input"]["behave"] = "raise"
    probe.write_cases(cases)
    probe.set_system(concurrency=1, timeout_s=300)  # a held call is no timeout

    def let_go(gate: str) -> None:
        (probe.root / gate).touch()

    def done_reaches(n: int) -> None:
        page.wait_for_function(
            f"() => +(document.getElementById('progress') || {{dataset: {{}}}}).dataset.done "
            f"=== {n}", timeout=60_000)

    server = ViewServer(probe.store)  # before the project's first run: no store yet
    tab = ViewPage(browser, server.url)
    run = None
    try:
        page = tab.open("/")
        page.evaluate("window.__sameDocument = true")
        assert "No runs yet" in page.locator("#run-rows").inner_text()
        run = spawn_oloproof("run", cwd=probe.root)
        running = page.locator('#run-rows tr[data-status="running"]')
        running.wait_for(timeout=60_000)  # the runs page shows it, without a reload
        assert page.evaluate("window.__sameDocument") is True
        assert "running, not decided" in running.inner_text()
        running.locator("a").click()
        done_reaches(4)  # cases 1-4 (case 3 raised); case 5 is held
        page.wait_for_function(
            "() => (document.getElementById('progress-errored') || {}).textContent"
            "?.includes('system_error 1')", timeout=30_000)
        assert "so far — running, not decided" in page.locator("#metrics").inner_text()
        assert page.locator("#gate").get_attribute("data-running") == "1"
        text = page.locator("#progress").inner_text()
        assert "4 of 40 cases done" in text and "time to finish: about" in text
        # Watch the progress as it is drawn: each redraw's time and cases done; and each
        # redraw of the figures so far, with the cases done they were drawn at.
        page.evaluate("""() => {
          window.__drawn = [];
          const done = () => +document.getElementById("progress").dataset.done;
          window.__figures = [[performance.now(),
            document.getElementById("metrics").textContent, done()]];
          let figures = document.getElementById("summary-part");
          new MutationObserver(() => {
            const p = document.getElementById("progress");
            if (p && p.dataset.done) window.__drawn.push([performance.now(), +p.dataset.done]);
            const now = document.getElementById("summary-part");
            if (p && now !== figures) {
              figures = now;
              window.__figures.push([performance.now(),
                document.getElementById("metrics").textContent, done()]);
            }
          }).observe(document.getElementById("app"), { childList: true, subtree: true });
          window.__sameDocument = true;
        }""")
        let_go("advance")
        done_reaches(20)
        page.wait_for_function(  # the figures at 20 cases drawn too
            "() => window.__figures[window.__figures.length - 1][2] === 20", timeout=30_000)
        _shot(page, "view-live.png")
        let_go("more")
        done_reaches(35)
        page.wait_for_function(  # the figures at 35 cases drawn too
            "() => window.__figures[window.__figures.length - 1][2] === 35", timeout=30_000)
        assert "errored: 2 (system_error 2)" in page.locator("#progress").inner_text()
        assert "so far — running, not decided" in page.locator("#metrics").inner_text()
        drawn = page.evaluate("window.__drawn")
        figures = page.evaluate("window.__figures")
        let_go("finish")
        assert run.wait(timeout=120) == 0
        page.wait_for_function("() => (document.getElementById('gate') || {}).textContent"
                               "?.includes('Gate:')", timeout=30_000)
        assert page.evaluate("window.__sameDocument") is True  # never reloaded
        assert "Gate: ALLOW" in page.locator("#gate").inner_text()
        assert page.locator("#progress").count() == 0
        # The progress advanced on screen, and was redrawn at least once a second (every
        # 0.4 s it is asked for, held or not).
        done = [d for _, d in drawn]
        assert done == sorted(done) and done[0] < done[-1] == 35, done
        assert {20, 35} <= set(done), done
        gaps = sorted(b[0] - a[0] for a, b in itertools.pairwise(drawn))
        assert gaps[len(gaps) // 2] <= 1000, gaps
        # The figures so far moved with it: drawn at each stage (4, 20, 35 cases), reading
        # differently at each, and redrawn while the cases came, not only when they stopped.
        at = [d for _, _, d in figures]
        assert at == sorted(at) and {4, 20, 35} <= set(at), at
        assert len({text for _, text, _ in figures}) >= 3, figures
        assert any(d not in (4, 20, 35) for d in at), at
        tab.assert_clean()
    finally:
        if run is not None and run.poll() is None:
            run.kill()
            run.wait()
        tab.close()
        server.close()
