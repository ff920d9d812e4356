"""What the view's tests share: a view served from a thread of the test process (a real
uvicorn server on a free port of 127.0.0.1), a JSON client for it, and a browser page that
records every request, dialog and script error (the fixtures are in this folder's conftest).

The projects come from the report's and the comparison's tests (the hostile desk of
`tests/report/test_html.py`, the desk of `tests/compare/compare_desk.py`), so the view is
tested on the very runs the file report is.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
for where in ("report", "compare", "pytest_plugin"):
    if str(TESTS / where) not in sys.path:
        sys.path.insert(0, str(TESTS / where))

# The report's tests' page: its way of opening a case, so the report's browser checks run
# on the view's tabs as they are.
from shared_browser import run_beside_the_browser  # noqa: E402
from test_html import Page as ReportPage  # noqa: E402

ARTIFACTS = TESTS / "artifacts"
DOC_IMAGES = TESTS.parent / "docs" / "images"


def screenshot_dir() -> Path:
    """Where screenshots go: docs/images/ when asked (OLOPROOF_DOC_SCREENSHOTS=1, to refresh
    the committed images of docs/view.md), else tests/artifacts/ (ignored by git)."""
    target = DOC_IMAGES if os.environ.get("OLOPROOF_DOC_SCREENSHOTS") == "1" else ARTIFACTS
    target.mkdir(parents=True, exist_ok=True)
    return target


SIDE_FILES = ("-wal", "-shm", "-journal")


def files_state(store: Path) -> dict[str, tuple[str, int] | None]:
    """Each file of the store (itself and what SQLite keeps beside it): its bytes' digest
    and modification time, or None when absent."""
    state: dict[str, tuple[str, int] | None] = {}
    for suffix in ("", *SIDE_FILES):
        path = store.with_name(store.name + suffix)
        state[suffix] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns) \
            if path.exists() else None
    return state


class ViewServer:
    """`oloproof view` on a store, served from a thread: the command's own socket binding,
    application, token and uvicorn server, on a free port. `url` is the address the command
    prints (with its token), `origin` the view's own address without it; `get` sends the token
    as a script does (`Authorization: Bearer`) unless told not to."""

    def __init__(self, store: Path, host: str = "127.0.0.1", token: bool = True) -> None:
        import uvicorn

        from oloproof.view.access import address_with, new_token
        from oloproof.view.app import make_app
        from oloproof.view.serve import allowed_hosts, bind, url_of

        self.sock = bind(host, 0)
        self.origin = url_of(self.sock, host).rstrip("/")
        self.token = new_token() if token else None
        self.url = address_with(self.origin + "/", self.token)
        self.port = self.sock.getsockname()[1]
        self.server = uvicorn.Server(uvicorn.Config(
            make_app(store, allowed_hosts(host), token=self.token), log_level="warning",
            access_log=False, lifespan="off"))
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]},
                                       daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            assert time.monotonic() < deadline, "the view did not start"
            assert self.thread.is_alive(), "the view's server stopped"
            time.sleep(0.02)

    def get(self, path: str, headers: dict[str, str] | None = None,
            method: str = "GET", token: bool = True) -> tuple[int, dict[str, str], bytes]:
        """(status, headers, body) of one request to the view (with its token, unless
        `token=False`; redirects are followed)."""
        sent = dict(headers or {})
        if token and self.token is not None:
            sent.setdefault("Authorization", f"Bearer {self.token}")
        request = urllib.request.Request(self.origin + path, headers=sent, method=method)
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return answer.status, dict(answer.headers), answer.read()
        except urllib.error.HTTPError as error:
            return error.code, dict(error.headers), error.read()

    def json(self, path: str) -> Any:
        status, _, body = self.get(path)
        assert status == 200, (path, status, body[:300])
        return json.loads(body)

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=20)
        self.sock.close()


def address_parts(url: str) -> tuple[str, str]:
    """(the view's origin, its token) from the address `oloproof view` prints."""
    from urllib.parse import parse_qs, urlsplit

    parts = urlsplit(url)
    (token,) = parse_qs(parts.query)["token"]
    return f"{parts.scheme}://{parts.netloc}", token


def fetch(url: str, path: str, timeout: float = 10) -> Any:
    """`path` of the view at the printed address `url`, as a script reads it: the token in
    the Authorization header."""
    origin, token = address_parts(url)
    request = urllib.request.Request(origin + path,
                                     headers={"Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(request, timeout=timeout) as answer:
        return answer.status, json.loads(answer.read())


def read_address(process: Any, timeout: float = 30) -> str:
    """The address an `oloproof view` process prints when it is ready to answer."""
    import re
    import select

    deadline = time.monotonic() + timeout
    seen = []
    while time.monotonic() < deadline:
        ready, _, _ = select.select([process.stdout], [], [], 0.2)
        if not ready:
            assert process.poll() is None, (seen, process.stderr.read())
            continue
        line = process.stdout.readline()
        seen.append(line)
        found = re.match(r"Oloproof view: (http://\S+) ", line)
        if found:
            return found.group(1)
    raise AssertionError(f"no address printed: {seen}")


class ViewPage:
    """A browser tab on the view, recording every request, dialog and script error; any
    request off the view's own origin is refused (and recorded). Made with the address the
    view prints, it opens it once, as a user does: the view sets its cookie and sends the tab
    on to its own address, which every later page of the tab reaches with the cookie."""

    def __init__(self, chromium: Any, url: str) -> None:
        self.origin = url.split("?", 1)[0].rstrip("/")
        self.context = chromium.new_context(viewport={"width": 1400, "height": 1000})
        self.context.set_default_timeout(15_000)
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.context.route("**/*", self._route)
        self.page = self.context.new_page()
        self.page.on("dialog", self._dialog)
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        # A request the Content-Security-Policy blocks is a console error: it fails the test.
        self.page.on("console", lambda m: m.type == "error" and self.errors.append(m.text))
        if "?token=" in url:
            self.page.goto(url)
            self.page.wait_for_url(self.origin + "/")

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        if url == self.origin or url.startswith(self.origin + "/"):
            route.continue_()
        else:
            route.abort()

    _dialog = ReportPage._dialog  # noted, and dismissed

    def open(self, path: str) -> Any:
        """Go to a page of the view and wait until it has drawn itself."""
        self.page.goto(self.origin + path)
        self.page.wait_for_selector("#app[data-ready]", timeout=20_000)
        return self.page

    def assert_clean(self) -> None:
        """Nothing but the view itself was asked for; no dialog, no script error."""
        others = sorted({u for u in self.requests
                         if not (u == self.origin or u.startswith(self.origin + "/"))})
        assert others == [], f"the page requested {others}"
        assert self.dialogs == [] and self.errors == [], (self.dialogs, self.errors)

    #: Search for a case and click it: its panel.
    open_case = ReportPage.open_case

    def assert_offline(self) -> None:
        """As the report's page says it: nothing but the view itself was asked for."""
        self.assert_clean()

    def close(self) -> None:
        self.context.close()


#: Markup in a case's input (the desk's c7): it must stay text everywhere.
HOSTILE = "<img src=x onerror=alert(1)> </script><script>alert(2)</script> & `x`"


def two_desk_runs(root: Path) -> Any:
    """The desk (tests/compare/compare_desk.py) run twice: v1 (tagged `shipped-1.0`) answers
    c1 and c2 wrongly; v2 answers c1, c7 (whose input carries HOSTILE) and c9 wrongly, raises
    on c5 and no longer has c20 — so c7 and c9 break and c2 is fixed."""
    from compare_desk import Desk

    project = Desk(root, n=20)
    project.cases[6]["input"]["note"] = HOSTILE
    project.write()
    project.wrong("c1", "c2")
    run_project(project.config)
    import oloproof

    oloproof.tag("latest", "shipped-1.0", project.config)
    project.version("v2")
    project.wrong("c1", "c7", "c9")
    project.raising("c5")
    project.cases = project.cases[:-1]
    project.write()
    run_project(project.config)
    return project


def run_project(config: Path) -> None:
    """`oloproof.run` on a project, as the tests' other fixtures do (CI set, no store
    override), in a thread of its own (`run_beside_the_browser`): the browser's driver keeps
    an event loop running in this one, and `oloproof.run` refuses to run inside a running
    loop."""
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv("OLOPROOF_STORE", raising=False)
        mp.setenv("CI", "1")
        run_beside_the_browser(config, config.parent / "release.yaml")
