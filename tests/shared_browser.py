"""One headless Chromium for the tests that open pages: the `browser` fixture (tests/conftest.py).

Starting Playwright and launching Chromium costs about 2 s of CPU, so the tests that open
pages share one browser: `shared()` launches it for the first test that asks and returns it
to every later one; `close()` closes it and stops Playwright, which conftest's
`pytest_runtest_teardown` does once the next test is not one of `BROWSER_TESTS` (under
`make test` they all run one after another on one worker, so once).

While Playwright's sync API is started, its event loop counts as running on the test's
thread, where `oloproof.run` (rightly) and `asyncio.run` refuse to start: a browser test
runs a project with `run_beside_the_browser`, on a thread of its own. Once `close()` has
stopped Playwright no loop is left, so the tests after them run as if no browser had been.
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

_open: dict[str, Any] = {}  # "playwright", "browser": while the browser is open


def shared() -> Any:
    """The shared headless Chromium (a Playwright `Browser`), launched if it is not open;
    the calling test is skipped where Debian's chromium or Playwright is missing."""
    if not CHROMIUM.exists():
        pytest.skip("Debian chromium is not installed at /usr/bin/chromium")
    sync_api = pytest.importorskip("playwright.sync_api")
    if "browser" not in _open:
        playwright = sync_api.sync_playwright().start()
        try:
            _open["browser"] = playwright.chromium.launch(executable_path=str(CHROMIUM),
                                                          args=ARGS)
        except BaseException:
            playwright.stop()
            raise
        _open["playwright"] = playwright
    return _open["browser"]


def close() -> None:
    """Close the shared browser, if open, and stop Playwright (its event loop with it)."""
    browser, playwright = _open.pop("browser", None), _open.pop("playwright", None)
    try:
        if browser is not None:
            browser.close()
    finally:
        if playwright is not None:
            playwright.stop()


def run_beside_the_browser(config: Path, *args: Any, **kwargs: Any) -> Any:
    """`oloproof.run(config, *args, **kwargs)` on a thread of its own, its result or its
    error handed back: the browser's driver keeps an event loop running on this thread."""
    import oloproof

    with ThreadPoolExecutor(1) as aside:
        return aside.submit(oloproof.run, config, *args, **kwargs).result()
