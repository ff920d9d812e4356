"""`oloproof view`'s JSON API and pages over HTTP (docs/view.md): each endpoint against what the
library and the file report say of the same runs; unknown paths, other methods, other hosts;
a store that cannot be opened; and one rendering path — the view's run page and
`report --html` are made of the same data by the same script.

One server (a thread of this process, a real uvicorn on a free port) serves the desk's store
for the whole module: two runs, the second breaking c7 and c9, fixing c2, dropping c20.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from compare_desk import Desk
from view_support import HOSTILE, ViewServer

import oloproof
from oloproof.api import find_store, write_html_report
from oloproof.store.store import Store


def _runs(desk: Desk) -> list[str]:
    with Store(find_store(desk.config), read_only=True) as db:
        return [r["run_id"] for r in db.list_runs()]


def _embedded(page: str, block: str = "oloproof-data") -> Any:
    found = re.search(rf'<script type="application/json" id="{block}">(.*?)</script>', page,
                      re.S)
    assert found, f"no {block} block in the page"
    return json.loads(found.group(1))


# ---- the API ---------------------------------------------------------------------------------


def test_api_runs_lists_every_run_newest_first(desk: Desk, view: ViewServer) -> None:
    runs = view.json("/api/runs")
    assert [r["run_id"] for r in runs] == _runs(desk)
    for field in ("run_id", "status", "gate", "system", "version", "tags", "trials", "cases",
                  "started", "finished"):
        assert all(field in r for r in runs), field
    newest, older = runs
    assert newest["version"] == "v2" and older["version"] == "v1"
    assert newest["system"] == "desk" and newest["status"] == "complete"
    assert newest["cases"] == 19 and older["cases"] == 20 and newest["trials"] == 1
    document = oloproof.load_run(newest["run_id"], desk.config).document
    assert newest["gate"] == {"action": document.gate.action.value,
                              "exit_code": int(document.gate.exit_code)}
    assert newest["gate_words"] == f"{document.gate.action.value} " \
                                   f"(exit {int(document.gate.exit_code)})"
    # c1, c7, c9 answered wrongly; c5 raised (missing, errored)
    assert document.failing_cases is not None
    assert newest["failing"] == document.failing_cases.total == 4
    assert newest["errored"] == 1 and older["errored"] == 0 and older["failing"] == 2
    assert newest["started"] > older["started"] and newest["finished"] >= newest["started"]
    # Tags (`oloproof tag`), as `oloproof runs` shows them; a tag names a run anywhere.
    assert older["tags"] == ["shipped-1.0"] and newest["tags"] == []
    assert view.json("/api/runs/tag:shipped-1.0")["run_id"] == older["run_id"]
    assert view.json("/api/compare?baseline=tag:shipped-1.0&candidate=latest")["baseline"] == \
        older["run_id"]


def test_api_run_is_the_run_document(desk: Desk, view: ViewServer) -> None:
    for run_id in _runs(desk):
        assert view.json(f"/api/runs/{run_id}") == \
            oloproof.load_run(run_id, desk.config).to_json()
    # Any run reference: latest, latest~1, a unique prefix.
    newest, older = _runs(desk)
    assert view.json("/api/runs/latest~1")["run_id"] == older
    assert view.json(f"/api/runs/{newest[:14]}")["run_id"] == newest


def test_api_progress_of_a_finished_run(desk: Desk, view: ViewServer) -> None:
    progress = view.json("/api/runs/latest/progress")
    assert progress["status"] == "complete"
    assert progress["done"] == progress["total"] == 19
    assert progress["executions"] == {"done": 19, "total": 19}
    assert progress["errored"] == 1 and progress["errored_by_kind"] == {"system_error": 1}
    assert progress["retried"] == 0 and progress["eta_seconds"] is None
    assert progress["elapsed_seconds"] >= 0


def test_api_compare_is_the_compare_document(desk: Desk, view: ViewServer) -> None:
    newest, older = _runs(desk)
    document = view.json(f"/api/compare?baseline={older}&candidate={newest}")
    assert document == oloproof.compare(older, newest, desk.config).to_json()
    assert document["broken_cases"]["answer_correct"] == ["c7", "c9"]
    # References work here too.
    assert view.json("/api/compare?baseline=latest~1&candidate=latest") == document


def test_api_compare_refuses_what_compare_refuses(view: ViewServer) -> None:
    status, _, body = view.get("/api/compare?baseline=latest&candidate=latest")
    assert status == 400 and json.loads(body)["error"]["kind"] == "usage"
    status, _, body = view.get("/api/compare?baseline=latest")
    assert status == 400 and "baseline=RUN&candidate=RUN" in json.loads(body)["error"]["message"]


def test_api_case_is_the_reports_case_detail(desk: Desk, view: ViewServer) -> None:
    from oloproof.report.html_data import case_detail

    newest = _runs(desk)[0]
    detail = view.json(f"/api/runs/{newest}/cases?id=c7")
    with Store(find_store(desk.config), read_only=True) as db:
        assert detail == json.loads(case_detail(db, newest, "c7"))
    assert detail["case"] == "c7" and detail["input"]["note"] == HOSTILE
    assert [c["verdict"] for c in detail["criteria"]] == ["failed", "passed"]
    status, _, body = view.get(f"/api/runs/{newest}/cases?id=c99")
    assert status == 404 and "c99" in json.loads(body)["error"]["message"]
    status, _, body = view.get(f"/api/runs/{newest}/cases")
    assert status == 400


def test_api_report_is_what_the_run_page_embeds(desk: Desk, view: ViewServer) -> None:
    newest = _runs(desk)[0]
    data = view.json(f"/api/runs/{newest}/report")
    status, _, body = view.get(f"/runs/{newest}")
    assert status == 200
    embedded = _embedded(body.decode("utf-8"))
    assert data["summary"] == embedded["summary"] and data["index"] == embedded["index"]
    assert [row[0] for row in data["index"]] == [f"c{i}" for i in range(1, 20)]


# ---- one rendering path ------------------------------------------------------------------------


def test_the_run_page_is_the_report_file_served(desk: Desk, view: ViewServer,
                                                tmp_path: Path) -> None:
    """The view's run page and `report --html` come from one function: the same summary (every
    figure and display string), the same case list, the same script; only where case
    details come from differs (embedded in the file, asked of the API by the page)."""
    newest = _runs(desk)[0]
    path = write_html_report(newest, tmp_path / "r.html", desk.config)
    report = path.read_text(encoding="utf-8")
    status, _, body = view.get(f"/runs/{newest}")
    assert status == 200
    served = body.decode("utf-8")
    in_file, in_view = _embedded(report), _embedded(served)
    assert in_view["summary"] == in_file["summary"]
    assert [row[:5] for row in in_view["index"]] == [row[:5] for row in in_file["index"]]
    assert in_view["meta"]["served"] == "/api/" and "served" not in in_file["meta"]
    script = re.compile(r"<script>(.*?)</script>", re.S)
    assert script.findall(served) == script.findall(report)
    assert 'id="oloproof-chunk-0"' in report and 'id="oloproof-chunk-' not in served


def test_the_compare_page_is_the_report_with_a_baseline(desk: Desk, view: ViewServer,
                                                        tmp_path: Path) -> None:
    newest, older = _runs(desk)
    path = write_html_report(newest, tmp_path / "c.html", desk.config, baseline=older)
    in_file = _embedded(path.read_text(encoding="utf-8"))
    status, _, body = view.get(f"/compare?baseline={older}&candidate={newest}")
    assert status == 200
    in_view = _embedded(body.decode("utf-8"))
    assert in_view["summary"]["comparison"] == in_file["summary"]["comparison"]
    assert [r[:5] for r in in_view["baseline_index"]] == [r[:5] for r in in_file["baseline_index"]]
    assert in_view["meta"]["focus"] == "comparison"


# ---- pages, safety and errors -----------------------------------------------------------------


def test_pages_answer_with_their_policy(desk: Desk, view: ViewServer) -> None:
    newest = _runs(desk)[0]
    status, headers, body = view.get("/")
    assert status == 200 and headers["content-type"].startswith("text/html")
    page = body.decode("utf-8")
    assert [r["run_id"] for r in _embedded(page)["runs"]] == _runs(desk)
    status, headers, body = view.get(f"/runs/{newest}")
    page = body.decode("utf-8")
    policy = headers["content-security-policy"]
    assert "default-src 'none'" in policy and "connect-src 'self'" in policy
    assert "frame-ancestors 'none'" in policy
    # The page's own policy (in the page) names its script's hash, which the header allows.
    meta = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert meta
    script_hash = re.search(r"script-src ('sha256-[^']+')", meta.group(1).replace("&#x27;", "'"))
    assert script_hash and script_hash.group(1) in policy
    assert headers["x-content-type-options"] == "nosniff"
    assert headers["x-frame-options"] == "DENY" and headers["cache-control"] == "no-store"
    assert headers["referrer-policy"] == "no-referrer"
    # What a case says is in the page only escaped (the desk's c7 carries markup).
    status, _, body = view.get(f"/compare?baseline=latest~1&candidate={newest}")
    assert "<img src=x" not in body.decode("utf-8")
    status, headers, _ = view.get("/api/runs")
    assert headers["content-security-policy"] == "default-src 'none'; frame-ancestors 'none'"


def test_a_reference_redirects_to_the_runs_own_address(desk: Desk, view: ViewServer) -> None:
    import urllib.request

    newest = _runs(desk)[0]

    class NoRedirect(urllib.request.HTTPRedirectHandler):
        def redirect_request(self, *args: Any, **kwargs: Any) -> None:
            return None

    opener = urllib.request.build_opener(NoRedirect)
    try:
        opener.open(urllib.request.Request(view.origin + "/runs/latest", headers={
            "Authorization": f"Bearer {view.token}"}), timeout=10)
    except urllib.error.HTTPError as answer:
        assert answer.code == 302 and answer.headers["location"] == f"/runs/{newest}"
    else:  # pragma: no cover
        raise AssertionError("no redirect")


@pytest.mark.parametrize("path", ["/nope", "/runs/run_nope", "/api/nope", "/api/runs/run_nope",
                                  "/api/runs/run_nope/progress", "/static/report.js",
                                  "/api/runs/latest/cases/c1", "/compare/x"])
def test_unknown_paths_are_404(view: ViewServer, path: str) -> None:
    status, headers, body = view.get(path)
    assert status == 404
    if path.startswith("/api/"):
        assert json.loads(body)["error"]["kind"] == "not_found"
    else:
        assert headers["content-type"].startswith("text/html") and b"Not found" in body


@pytest.mark.parametrize("method", ["POST", "PUT", "DELETE", "PATCH"])
def test_only_get_is_answered(view: ViewServer, method: str) -> None:
    for path in ("/api/runs", "/api/runs/latest", "/"):
        status, _, body = view.get(path, method=method)
        assert status == 405 and b"only reads" in body, (method, path)
    assert view.get("/api/runs", method="HEAD")[0] == 200


def test_another_host_name_is_refused(view: ViewServer) -> None:
    """A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) gets nothing."""
    status, _, body = view.get("/api/runs", headers={"Host": "evil.example"})
    assert status == 400 and b"run_" not in body
    assert view.get("/api/runs", headers={"Host": f"localhost:{view.port}"})[0] == 200


def test_the_view_binds_loopback_only(view: ViewServer) -> None:
    assert view.sock.getsockname()[0] == "127.0.0.1"
    assert view.url.startswith("http://127.0.0.1:")


def test_a_store_that_cannot_be_opened_is_one_clear_page(tmp_path: Path) -> None:
    damaged = tmp_path / "store.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    server = ViewServer(damaged)
    try:
        for path in ("/", "/runs/latest"):
            status, headers, body = server.get(path)
            text = body.decode("utf-8")
            assert status == 503 and headers["content-type"].startswith("text/html")
            assert "The store cannot be read" in text and "damaged" in text
            assert "<script" not in text  # a page that says one thing, with no script
        status, _, body = server.get("/api/runs")
        error = json.loads(body)["error"]
        assert status == 503 and error["kind"] == "store" and error["file"] == str(damaged)
    finally:
        server.close()
    # A store of an older schema: the view never upgrades one (it writes nothing).
    old = tmp_path / "old.sqlite"
    with Store(old) as made:
        made.conn.execute("PRAGMA user_version = 1")
    before = old.read_bytes()
    server = ViewServer(old)
    try:
        status, _, body = server.get("/api/runs")
        assert status == 503 and "older Oloproof" in json.loads(body)["error"]["message"]
    finally:
        server.close()
    assert old.read_bytes() == before
    # No store yet (before the first run): an empty list, waiting for the first run; a run
    # asked for is not there.
    missing = ViewServer(tmp_path / "none" / "store.sqlite")
    try:
        status, _, body = missing.get("/")
        assert status == 200 and '"runs":[]' in body.decode("utf-8")
        assert missing.json("/api/runs") == []
        status, _, body = missing.get("/api/runs/latest")
        assert status == 503 and b"no store here yet" in body
    finally:
        missing.close()


def test_a_hostile_reference_is_a_404_in_words(view: ViewServer) -> None:
    status, _, body = view.get("/runs/%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E")
    page = body.decode("utf-8")
    assert status == 404 and "no run matches" in page
    assert "<img" not in page and "&lt;img src=x onerror=alert(1)&gt;" in page


def test_trials_are_listed_and_counted(new_probe: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    probe = new_probe()
    probe.write_cases(probe.plain_cases(6))
    probe.suite["trials"] = 3
    probe.write_suite()
    monkeypatch.delenv("OLOPROOF_STORE", raising=False)
    monkeypatch.setenv("CI", "1")
    oloproof.run(probe.root / "oloproof.yaml", probe.root / "release.yaml")
    server = ViewServer(probe.store)
    try:
        (run,) = server.json("/api/runs")
        assert run["trials"] == 3 and run["cases"] == 6
        progress = server.json("/api/runs/latest/progress")
        assert progress["done"] == progress["total"] == 6 and progress["trials"] == 3
        assert progress["executions"] == {"done": 18, "total": 18}
        # The case list says how many trials failed each criterion, as the file's does.
        index = server.json("/api/runs/latest/report")["index"]
        assert [row[7] for row in index] == [[3, [0, 0]]] * 6
        detail = server.json("/api/runs/latest/cases?id=c001")
        assert [t["trial"] for t in detail["trials"]] == [1, 2, 3]  # each trial side by side
    finally:
        server.close()
