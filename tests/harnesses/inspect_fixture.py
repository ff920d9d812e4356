"""The Inspect logs the tests read, made once per test session by Inspect itself
(`inspect_tasks.py`, in a process forked from the fork server, `tests/fork_server.py`).

A test module's `inspect_logs` fixture returns `made_logs(tmp_path_factory)`: the logs are made
once, by whichever module asks first; under pytest-xdist, by the first worker that asks, in the
session's directory the workers share (the others wait for it and read them: the tests only
read the logs). (Not a fixture of a `conftest.py` here: test
modules elsewhere import the root one as `conftest`, and a second module of that name,
imported before them, stood in for it.)
"""

from __future__ import annotations

import fcntl
import functools
import json
import os
import subprocess
from pathlib import Path

import fork_server
import pytest

HERE = Path(__file__).parent


def made_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`desk-eval`, `desk-json` and `clean`: each a log Inspect wrote, run in a folder that is
    a git repository of one commit (so the log records that revision); and `repo`, that
    folder."""
    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the session's directory, holding each worker's (popen-gw0, ...)
    return _shared(base)


@functools.cache
def _shared(base: Path) -> dict[str, Path]:
    made = base / "inspect" / "logs.json"
    with (base / "inspect.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if not made.exists():
            logs = _made(base)
            made.write_text(json.dumps({name: str(path) for name, path in logs.items()}))
    return {name: Path(path) for name, path in json.loads(made.read_text()).items()}


def _made(base: Path) -> dict[str, Path]:
    where = base / "inspect"
    where.mkdir()
    repo = where / "project"
    repo.mkdir()
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-C", str(repo)]
    subprocess.run([*git[:5], "init", "-q", str(repo)], check=True)
    (repo / "task.txt").write_text("the desk task\n")
    subprocess.run([*git, "add", "task.txt"], check=True)
    subprocess.run([*git, "commit", "-qm", "the task"], check=True)
    # Inspect records no git revision under pytest (it looks for PYTEST_CURRENT_TEST)
    env = {k: v for k, v in os.environ.items() if k != "PYTEST_CURRENT_TEST"}
    # A process forked from the fork server with Inspect imported there (2 s of CPU), where
    # the `oloproof import inspect` commands of these tests read the logs with it too
    server = fork_server.shared()
    server.preload("inspect_ai.log")
    done = subprocess.run([str(server.python), str(HERE / "inspect_tasks.py"),
                           str(where / "logs")], cwd=repo, env=env, capture_output=True,
                          text=True, timeout=300, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, done.stderr[-3000:]
    logs = {name: Path(path) for name, path in json.loads(done.stdout.splitlines()[-1]).items()}
    logs["repo"] = repo
    return logs
