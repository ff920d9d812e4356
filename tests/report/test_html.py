"""The offline HTML report (docs/cli.md#oloproof-report, issue 6), opened in real headless Chromium.

Each project is run once per module into a temporary directory; the browser is the suite's
(`browser`, tests/conftest.py). Screenshots of the summary and of case panels go to
`tests/artifacts/`.
"""

from __future__ import annotations

import json
import re
import shutil
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from shared_browser import run_beside_the_browser

import oloproof
from oloproof.api import find_store, write_html_report
from oloproof.report.html import script_safe

EXAMPLES = Path(oloproof.__file__).parent / "examples"
ARTIFACTS = Path(__file__).resolve().parents[1] / "artifacts"

# Markup a hostile system might return; none of it may run or become an element.
HOSTILE = ('<script>alert(1)</script> </script><script>alert(2)</script> <!-- '
           '<img src=x onerror=alert(3)> &amp; \u2028')

HOSTILE_APP = '''
"""A desk whose outputs, tools, agents and states carry markup (for the report's tests)."""

from __future__ import annotations

import copy

from oloproof import AgentCheckpoint, AgentConstraintCheck, AgentStep, AgentTrajectory
from oloproof import current_case, system

HOSTILE = {hostile!r}


@system(name="hostile-desk", version="v1", records=("agent_trajectory/v1",))
class Desk:
    """Stateful: the sandbox is a dict of orders."""

    def __init__(self) -> None:
        self.state: dict = {{}}

    def reset(self, state: dict) -> None:
        self.state = copy.deepcopy(state)

    def snapshot(self) -> dict:
        return copy.deepcopy(self.state)

    def __call__(self, case_input: dict) -> dict:
        if case_input.get("explode"):
            raise RuntimeError("exploded " + HOSTILE)
        order = case_input["order_id"]
        self.state.setdefault("orders", {{}}).setdefault(order, {{}})
        self.state["orders"][order]["status"] = case_input.get("set_status", "refunded")
        self.state["orders"][order]["note"] = HOSTILE
        steps = (
            AgentStep(index=1, kind="message", agent="triage",
                      arguments={{"text": case_input["message"]}}),
            AgentStep(index=2, kind="handoff", agent="triage",
                      to_agent="<img src=x onerror=alert(4)>"),
            AgentStep(index=3, kind="tool_call", agent="<img src=x onerror=alert(4)>",
                      tool_name="issue_refund", arguments={{"order_id": order, "why": HOSTILE}}),
            AgentStep(index=4, kind="tool_result", agent="<img src=x onerror=alert(4)>",
                      tool_name="issue_refund", result={{"ok": True, "echo": HOSTILE}}),
            AgentStep(index=5, kind="final", agent="<img src=x onerror=alert(4)>",
                      arguments={{"answer": HOSTILE}}),
        )
        current_case().agent_trajectory(AgentTrajectory(
            steps=steps, terminal_status="success",
            constraints=(AgentConstraintCheck(name="no_<b>bold</b>", passed=False,
                                              step_index=4),),
            checkpoints=(AgentCheckpoint(checkpoint_id="cp-<i>1</i>", kind="checkpoint",
                                         step_index=2, description=HOSTILE),),
        ))
        return {{"answer": "refunded", "reply": HOSTILE}}

'''

HOSTILE_SUITE = """\
version: 1
project: hostile
dataset: data/cases.jsonl
system:
  name: hostile-desk
  version: v1
  callable: app:Desk
  records: [agent_trajectory/v1]
evaluators:
  - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}
  - {type: state_matches, mode: subset}
  - {type: agent_constraints_satisfied}
slices: [metadata.kind]
min_slice_support: 1
metamorphic:
  transforms:
    - {name: shouted, field: message, template: "{value} </script><b>NOW</b>"}
"""

HOSTILE_POLICY = """\
version: 1
rules:
  - {id: answers, metric: answer_correct, min: 0.5}
  - {id: state, metric: state_matches, min: 0.9}
"""


def _hostile_cases() -> list[dict[str, Any]]:
    state = {"orders": {"ord-1": {"status": "delivered", "amount": 10}}}
    return [
        {"id": "good", "input": {"order_id": "ord-1", "message": "Refund ord-1 " + HOSTILE},
         "expected": {"answer": "refunded",
                      "state": {"orders": {"ord-1": {"status": "refunded"}}}},
         "initial_state": state, "metadata": {"kind": "<img src=x onerror=alert(5)>"}},
        {"id": "bad-state", "input": {"order_id": "ord-1", "message": "Decline ord-1",
                                      "set_status": "lost " + HOSTILE},
         "expected": {"answer": "refunded",
                      "state": {"orders": {"ord-1": {"status": "declined", "amount": 10}}}},
         "initial_state": state, "metadata": {"kind": "plain"}},
        {"id": "boom", "input": {"order_id": "ord-1", "message": "x", "explode": True},
         "expected": {"answer": "refunded"}, "initial_state": state,
         "metadata": {"kind": "plain"}},
    ]


def write_hostile_project(root: Path) -> Path:
    """The hostile desk's project in `root`; returns its oloproof.yaml."""
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(textwrap.dedent(HOSTILE_APP.format(hostile=HOSTILE)),
                                 encoding="utf-8")
    (root / "oloproof.yaml").write_text(HOSTILE_SUITE, encoding="utf-8")
    (root / "release.yaml").write_text(HOSTILE_POLICY, encoding="utf-8")
    (root / "data" / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in _hostile_cases()), encoding="utf-8")
    return root / "oloproof.yaml"


# ---- fixtures ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def projects(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Path]]:
    """Run each project once; yields {name: oloproof.yaml path}."""
    root = tmp_path_factory.mktemp("html-report")
    made: dict[str, Path] = {}
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        mp.setenv("CI", "1")
        support = root / "support"
        shutil.copytree(EXAMPLES / "support_agent", support)
        made["support"] = support / "oloproof.yaml"

        made["hostile"] = write_hostile_project(root / "hostile")

        stateful = EXAMPLES / "stateful-agent"
        if (stateful / "oloproof.yaml").is_file():
            shutil.copytree(stateful, root / "stateful")
            made["stateful"] = root / "stateful" / "oloproof.yaml"

        for config in made.values():
            run_beside_the_browser(config, config.parent / "release.yaml")
        yield made


def write_report(config: Path, name: str, **kwargs: Any) -> Path:
    out = config.parent / name
    return write_html_report("latest", out, config, find_store(config), **kwargs)


class Page:
    """A page opened on a report, recording every request, dialog and script error."""

    def __init__(self, browser: Any, path: Path, hash_: str = "") -> None:
        self.context = browser.new_context(viewport={"width": 1400, "height": 1000})
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.context.set_default_timeout(10_000)
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("request", lambda r: self.requests.append(r.url))
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # A request the Content-Security-Policy blocks never reaches the network, so it is
        # not a request event: it is a console error, which fails the test like one.
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        self.url = path.resolve().as_uri()
        self.page.goto(self.url + hash_)
        self.page.wait_for_selector("#app[data-ready]", timeout=15_000)

    def _route(self, route: Any) -> None:
        self.requests.append(route.request.url)
        if route.request.url.split("#")[0] == self.url:
            route.continue_()
        else:
            route.abort()

    def _dialog(self, dialog: Any) -> None:
        self.dialogs.append(dialog.message)
        dialog.dismiss()

    def open_case(self, case_id: str) -> Any:
        self.page.fill("#case-search", case_id)
        row = self.page.locator(f'#case-rows tr[data-case="{case_id}"]')
        row.click()
        panel = self.page.locator(f'#case-panel[data-case="{case_id}"]')
        panel.wait_for(timeout=10_000)
        return panel

    def close(self) -> None:
        self.context.close()

    def assert_offline(self) -> None:
        """Nothing was requested but the report file itself."""
        others = {u for u in self.requests if u.split("#")[0] != self.url}
        assert not others, f"the page requested {sorted(others)}"
        assert self.requests, "the navigation itself should have been seen"


def _count_cases(config: Path, keep: Any) -> int:
    from oloproof.store.store import Store

    store = Store(find_store(config))
    try:
        run_id = store.resolve_run("latest")
        return sum(1 for _, _, _, o in store.iter_run_cases(run_id) if keep(o["c"]))
    finally:
        store.close()


def _shot(locator: Any, name: str) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    locator.screenshot(path=str(ARTIFACTS / name))


# ---- tests without a browser ------------------------------------------------------------------


def test_script_safe_embedding() -> None:
    text = json.dumps({"x": "</script><!-- <script>&\u2028"}, ensure_ascii=False)
    safe = script_safe(text)
    assert "<" not in safe and ">" not in safe and "&" not in safe and "\u2028" not in safe
    assert json.loads(safe) == json.loads(text)


def test_report_file_is_self_contained(projects: dict[str, Path]) -> None:
    path = write_report(projects["hostile"], "plain.html")
    page = path.read_text(encoding="utf-8")
    # The only script elements: the data blocks (JSON, never run) and our own script.
    scripts = re.findall(r"<script([^>]*)>", page)
    runnable = [s for s in scripts if "type=" not in s]
    assert len(runnable) == 1
    assert all('type="application/json"' in s for s in scripts if "type=" in s)
    # No URL of any kind in the markup we wrote, and a CSP that forbids fetching.
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:|//)", page)
    assert "default-src 'none'" in page
    # The hostile text is in the file only in escaped form.
    assert "<img src=x" not in page and "alert(1)</script>" not in page
    assert page.count("</script>") == len(scripts)


def test_cli_writes_the_report(projects: dict[str, Path], tmp_path: Path) -> None:
    from click.testing import CliRunner

    from oloproof.cli.main import cli

    config = projects["support"]
    out = tmp_path / "nested" / "report.html"
    args = ["report", "latest", "--html", str(out), "--config", str(config), "--store",
            str(find_store(config))]
    # A folder that does not exist is made, as pytest's --junitxml makes it
    # (docs/ci.md#output-files).
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert out.is_file() and out.stat().st_size > 10_000


def test_missing_store_is_a_clear_error(tmp_path: Path) -> None:
    from oloproof.errors import StoreError

    with pytest.raises(StoreError, match="no store"):
        write_html_report("latest", tmp_path / "r.html", tmp_path / "oloproof.yaml",
                          tmp_path / "nowhere.sqlite")


# ---- in the browser -------------------------------------------------------------------------


@pytest.mark.browser
def test_summary_and_failed_case(projects: dict[str, Path], browser: Any) -> None:
    path = write_report(projects["support"], "report.html")
    view = Page(browser, path)
    try:
        page = view.page
        gate = page.locator("#gate")
        assert "Gate: BLOCK" in gate.inner_text() and "exit 1" in gate.inner_text()
        decisions = page.locator("#decisions").inner_text()
        assert "no-deletion" in decisions and "FAIL" in decisions
        metrics = page.locator("#metrics").inner_text()
        # The same figures as the terminal report
        # (docs/agents-and-tools.md#the-support_agent-example).
        assert "82.5%" in metrics and "[67.2%, 92.7%]" in metrics
        assert "33 / 40 observed · 0 missing · 0 excluded" in metrics
        assert "[10, no bound] steps" in metrics
        assert page.locator("#metric-answer_correct svg.bar line.thr").count() == 1
        assert "never gated" in page.locator("#slices").inner_text()
        assert "Cache: execution" in page.locator("#cache").inner_text()
        limits = page.locator("#limits").inner_text()
        # The limits of this suite only: a loop evaluator and length slices, one agent, no
        # sandbox, no faults or transforms declared.
        assert "A trend of errors with length" in limits
        assert "Which agent is to blame" not in limits and "nobody declared" not in limits
        assert page.locator("#limits li").count() == 4
        _shot(page.locator("header.top"), "html-report-gate.png")
        page.screenshot(path=str(ARTIFACTS / "html-report-summary.png"))

        # Filters: failed only, then failed on one criterion, then everything again.
        failed = _count_cases(projects["support"], lambda codes: "F" in codes)
        page.click('button.chip[data-status="failed"]')
        assert page.locator("#case-rows tr").count() == failed
        page.select_option("#case-criterion", label="agent_constraints_satisfied")
        # the three deletions (docs/agents-and-tools.md#the-support_agent-example)
        assert page.locator("#case-rows tr").count() == 3
        page.select_option("#case-criterion", value="-1")
        page.click('button.chip[data-status="missing"]')
        assert page.locator("#case-rows tr").count() == _count_cases(
            projects["support"], lambda codes: "M" in codes)
        page.click('button.chip[data-status="all"]')
        assert page.locator("#case-rows tr").count() == 40

        panel = view.open_case("case_003")
        text = panel.inner_text()
        assert "agent_no_tool_loop" in text and "repeated_call" in text
        assert panel.locator("ol.timeline > li.step").count() == 10
        assert panel.locator('li.step[data-step="2"] .tool').inner_text() == "search"
        assert panel.locator('tr[data-criterion="agent_tool_sequence"]').inner_text().count(
            "failed") == 1
        assert "✓ no_deletion" in panel.locator('li.step[data-step="10"]').inner_text()
        _shot(panel, "html-report-case-panel.png")

        # Search by id, then a slice group chosen from the slice matrix.
        page.fill("#case-search", "case_01")
        page.wait_for_selector('#app[data-listed="10"]')
        page.fill("#case-search", "")
        page.wait_for_selector('#app[data-listed="40"]')
        page.locator("#slices button.link").first.click()  # metadata.surface=chat
        page.wait_for_selector('#app[data-listed="16"]')
        view.assert_offline()
        assert not view.errors
    finally:
        view.close()


@pytest.mark.browser
def test_hostile_output_stays_text(projects: dict[str, Path], browser: Any) -> None:
    path = write_report(projects["hostile"], "hostile.html")
    view = Page(browser, path)
    try:
        check_hostile_text_stays_text(view)
    finally:
        view.close()


def check_hostile_text_stays_text(view: Any) -> None:
    """The hostile desk's report, open in `view` (a page with `page`, `open_case`, `dialogs`,
    `errors` and `assert_offline`): nothing from a case runs or becomes an element. The view's
    tests run it on the page `oloproof view` serves."""
    page = view.page
    panel = view.open_case("good")
    text = panel.inner_text()
    assert "<script>alert(1)</script>" in text
    assert "<img src=x onerror=alert(3)>" in text
    # The hand-off is shown as one, to an agent whose name is markup.
    handoff = panel.locator("li.step.handoff")
    assert "hands control to" in handoff.inner_text()
    assert "<img src=x onerror=alert(4)>" in handoff.inner_text()
    assert "✗ no_<b>bold</b> FAILED" in panel.locator('li.step[data-step="4"]').inner_text()
    assert "cp-<i>1</i>" in panel.inner_text()
    _shot(panel, "html-report-hostile-panel.png")

    # An errored case whose message is markup.
    errored = view.open_case("boom")
    assert "exploded <script>alert(1)</script>" in errored.locator(".error-box").inner_text()
    # A metamorphic copy beside its source, the injected text highlighted.
    copy = view.open_case("good~shouted")
    pair = copy.locator("#panel-pair")
    assert "</script><b>NOW</b>" in pair.locator("mark").first.inner_text()
    # Slice values that are markup stay text in the select and the matrix.
    assert "<img src=x onerror=alert(5)>" in page.locator("#slices").inner_text()

    assert page.locator("img").count() == 0
    assert page.locator("b, i").count() == 0
    assert page.evaluate("document.querySelectorAll('script:not([type])').length") == 1
    page.wait_for_timeout(200)
    assert view.dialogs == []
    assert not view.errors
    view.assert_offline()


def test_large_values_are_cut_and_shared_states_stored_once(
    projects: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    from oloproof.report import html_data
    from oloproof.store.store import Store

    monkeypatch.setattr(html_data, "SHARE_OVER", 10)
    monkeypatch.setattr(html_data, "VALUE_CAP", 300)
    config = projects["hostile"]
    store = Store(find_store(config))
    try:
        run_id = store.resolve_run("latest")
        document = oloproof.load_run(run_id, config, find_store(config)).document
        data = html_data.build_report_data(store, run_id, document, compress=False)
    finally:
        store.close()
    details = [d for chunk in data.chunks for d in json.loads(chunk)]
    assert [d["case"] for d in details] == [row[0] for row in data.index]
    good = next(d for d in details if d["case"] == "good")
    # Every case starts from the same initial state: stored once, referenced by each.
    refs = {d["$refs"]["initial_state"] for d in details}
    assert len(refs) == 1 and good["initial_state"] is None
    assert json.loads(data.shared[refs.pop()]) == _hostile_cases()[0]["initial_state"]
    # The trajectory's JSON is longer than the cap: its text, cut, with the full length noted.
    assert good["$cut"]["trajectory"] > 300 and len(good["trajectory"]) == 300
    row = next(r for r in data.index if r[0] == "boom")
    assert row[2] and "M" in row[1]  # errored, so missing where its output was needed


@pytest.mark.browser
def test_cut_values_render_as_text(projects: dict[str, Path], browser: Any,
                                   monkeypatch: pytest.MonkeyPatch) -> None:
    from oloproof.report import html_data

    monkeypatch.setattr(html_data, "VALUE_CAP", 120)
    view = Page(browser, write_report(projects["hostile"], "hostile-cut.html"), "#case=good")
    try:
        panel = view.page.locator('#case-panel[data-case="good"]')
        panel.wait_for()
        assert "Too large to embed whole" in panel.inner_text()
        assert view.dialogs == [] and not view.errors
    finally:
        view.close()


@pytest.mark.browser
def test_compared_state_paths(projects: dict[str, Path], browser: Any,
                              monkeypatch: pytest.MonkeyPatch) -> None:
    from oloproof.report import html_data

    monkeypatch.setattr(html_data, "SHARE_OVER", 10)  # states go to the shared table
    path = write_report(projects["hostile"], "hostile-gzip.html", compress=True)
    assert 'type="application/octet-stream"' in path.read_text(encoding="utf-8")
    view = Page(browser, path, "#case=bad-state")
    try:
        panel = view.page.locator('#case-panel[data-case="bad-state"]')
        panel.wait_for(timeout=10_000)
        paths = panel.locator('.compared[data-criterion="state_matches"]')
        rows = paths.locator("tbody tr")
        assert rows.count() == 2
        differs = paths.locator("tr.differs")
        assert differs.count() == 1
        cells = differs.locator("td")
        assert cells.nth(0).inner_text() == "orders.ord-1.status"
        assert cells.nth(1).inner_text() == '"declined"'  # JSON: a string keeps its quotes
        assert "lost <script>alert(1)</script>" in cells.nth(2).inner_text()
        assert "differs" in cells.nth(3).inner_text()
        assert "agrees" in paths.locator("tr.agrees td").nth(3).inner_text()
        assert "recorded end state" in panel.inner_text().lower()
        assert '"delivered"' in panel.locator(".box", has_text="Initial state").inner_text()
        assert view.dialogs == [] and not view.errors
        view.assert_offline()
    finally:
        view.close()


@pytest.mark.browser
def test_stateful_example_failed_case(projects: dict[str, Path], browser: Any) -> None:
    if "stateful" not in projects:
        pytest.skip("the stateful-agent example is not in this checkout yet")
    path = write_report(projects["stateful"], "stateful.html")
    view = Page(browser, path)
    try:
        page = view.page
        page.click('button.chip[data-status="failed"]')
        first = page.locator("#case-rows tr").first
        case_id = first.get_attribute("data-case")
        assert case_id
        panel = view.open_case(case_id)
        compared = panel.locator(".compared")
        assert compared.count() >= 1
        assert compared.first.locator("td.path").count() >= 1
        assert re.search(r"orders\.\S+", compared.first.inner_text())
        assert panel.locator("ol.timeline > li.step").count() >= 1
        assert panel.locator("#panel-criteria tr.row-failed").count() >= 1
        if panel.locator("#panel-replays").count():
            assert panel.locator("#panel-replays .replay").count() >= 1
        _shot(panel, "html-report-stateful-panel.png")
        view.assert_offline()
        assert not view.errors
    finally:
        view.close()
