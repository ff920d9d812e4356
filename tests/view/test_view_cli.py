"""`oloproof view` as a command (docs/cli.md#oloproof-view): it prints its address on 127.0.0.1 and
serves until Ctrl-C (exit 0); a port in use is exit 2 naming it; another `--host` warns that
the store's texts are reachable from elsewhere; `--open` opens the browser; without the
`view` extra it says what to install.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import fork_server
import pytest
from view_support import address_parts, fetch, read_address

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def project(new_probe: Callable[[], Any], cli: Any) -> Path:
    probe = new_probe()
    probe.write_cases(probe.plain_cases(20))
    code, _, err = cli("run", cwd=probe.root)
    assert code == 0, err
    return Path(probe.root)


def _python(code: str, cwd: Path, python: str = sys.executable
            ) -> subprocess.CompletedProcess[str]:
    """`python -c CODE` in `cwd`, with CI set: a fresh interpreter, or `python` (the fork
    server's, `fork_server.shared().python`, runs it in a forked process)."""
    return subprocess.run([python, "-c", code], cwd=cwd, capture_output=True,
                          text=True, timeout=60, env={**os.environ, "CI": "1"}, check=False)


@contextlib.contextmanager
def _serving(start: Callable[..., Any], project: Path, *options: str,
             env: dict[str, str] | None = None) -> Iterator[tuple[Any, str, dict[str, str]]]:
    """`oloproof view --port 0 OPTIONS` until the block ends, then Ctrl-C: (the process, the
    address it printed, what it wrote — `out` and `err`, filled in once it has stopped).
    `start` is `spawn_oloproof` (a fresh interpreter) or `forked_oloproof` (forked from the
    fork server: the tests about what it prints and serves need no interpreter's start)."""
    view = start("view", "--port", "0", *options, cwd=project, env=env)
    said: dict[str, str] = {}
    try:
        yield view, read_address(view), said
        view.send_signal(signal.SIGINT)
        said["out"], said["err"] = view.communicate(timeout=20)
    finally:
        if view.poll() is None:
            view.kill()


def test_it_serves_on_loopback_until_ctrl_c(project: Path,
                                            spawn_oloproof: Callable[..., Any]) -> None:
    with _serving(spawn_oloproof, project) as (view, url, said):
        assert url.startswith("http://127.0.0.1:") and "/?token=" in url
        _, runs = fetch(url, "/api/runs")
        assert len(runs) == 1 and runs[0]["status"] == "complete"
        origin, _ = address_parts(url)
        with pytest.raises(urllib.error.HTTPError) as refused:  # without its token: nothing
            urllib.request.urlopen(origin + "/api/runs", timeout=10)
        assert refused.value.code == 401
    assert view.returncode == 0, said["err"]
    assert "Stopped." in said["out"] and "Traceback" not in said["err"]


def test_a_port_in_use_is_exit_2_naming_it(project: Path, cli: Any) -> None:
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    try:
        code, _, err = cli("view", "--port", str(port), cwd=project)
    finally:
        taken.close()
    assert code == 2
    assert f"port {port} is in use on 127.0.0.1" in err and "--port" in err


def test_another_host_warns_that_the_texts_are_reachable(project: Path,
                                                         forked_oloproof: Callable[..., Any]
                                                         ) -> None:
    with _serving(forked_oloproof, project, "--host", "0.0.0.0") as (_, url, said):
        origin, token = address_parts(url)
        # Listening everywhere, it answers whatever name it is reached by (with its token).
        port = origin.rsplit(":", 1)[1]
        request = urllib.request.Request(origin + "/api/runs", headers={
            "Host": f"build-box.example:{port}", "Authorization": f"Bearer {token}"})
        with urllib.request.urlopen(request, timeout=10) as answer:
            assert answer.status == 200
    assert "Warning: the view listens on 0.0.0.0" in said["err"]
    assert "can be read by anyone who can reach this address" in said["err"]


def test_no_token_warns_and_serves_anyone(project: Path,
                                          forked_oloproof: Callable[..., Any]) -> None:
    with _serving(forked_oloproof, project, "--no-token") as (_, url, said):
        assert "token" not in url
        with urllib.request.urlopen(url + "api/runs", timeout=10) as answer:
            assert answer.status == 200
    assert "Warning: the view asks for no token (--no-token): any user or program on this " \
        "machine" in said["err"]


def test_open_opens_the_browser(project: Path, forked_oloproof: Callable[..., Any],
                                tmp_path: Path) -> None:
    opened = tmp_path / "opened.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f"#!/bin/sh\necho \"$1\" > {opened}\n", encoding="utf-8")
    browser.chmod(0o755)
    with _serving(forked_oloproof, project, "--open",
                  env={"BROWSER": f"{browser} %s"}) as (_, url, _said):
        deadline = time.monotonic() + 20
        while not (opened.exists() and opened.read_text().strip()):
            assert time.monotonic() < deadline, "the browser was not opened"
            time.sleep(0.05)
        assert opened.read_text().strip() == url  # with its token


def test_without_the_view_extra_it_says_what_to_install(project: Path) -> None:
    code = ("import sys\n"
            "sys.modules['uvicorn'] = None  # as if the extra were not installed\n"
            "sys.argv = ['oloproof', 'view']\n"
            "from oloproof.cli.main import main\n"
            "main()\n")
    done = _python(code, project, str(fork_server.shared().python))
    assert done.returncode == 2, done.stderr
    assert "pip install -e '.[view]'" in done.stderr and "oloproof[" not in done.stderr


VIEW_MODULES = ("starlette", "uvicorn", "oloproof.view")


@pytest.mark.parametrize("command", ["runs", "inspect latest", "report latest --html r.html"])
def test_other_commands_never_import_the_view(project: Path, command: str) -> None:
    code = ("import json, sys\n"
            f"loaded = lambda: sorted(m for m in {VIEW_MODULES!r} if m in sys.modules)\n"
            "before = loaded()\n"
            f"sys.argv = ['oloproof', *{command.split()!r}]\n"
            "from oloproof.cli.main import main\n"
            "try:\n"
            "    main()\n"
            "except SystemExit:\n"
            "    pass\n"
            "print(json.dumps([before, loaded()]), file=sys.stderr)\n")
    # In a process forked from the fork server, which imported the engine but not the view;
    # where a test before asked it to import a library that imports one of them
    # (`ForkServer.preload("inspect_ai.log")` imports starlette), in a fresh interpreter.
    done = _python(code, project, str(fork_server.shared().python))
    before, after = json.loads(done.stderr.strip().splitlines()[-1])
    if before:
        done = _python(code, project)
        before, after = json.loads(done.stderr.strip().splitlines()[-1])
    assert before == [] and after == [], done.stderr
