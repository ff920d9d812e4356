"""Copy a packaged example into a temp directory and run it for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fork_server
import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "oloproof" / "examples"


def copy_example(name: str, target: Path) -> Path:
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(
        "__pycache__", ".oloproof"))
    return target


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="1")
    env.pop("OLOPROOF_STORE", None)
    env.pop("COLUMNS", None)  # the report as piped output shows it by default: 80 columns
    # `oloproof` as its own process, forked from the tests' fork server (tests/fork_server.py)
    return subprocess.run([str(fork_server.shared().program), *args], cwd=project,
                          capture_output=True, text=True, env=env, timeout=300)


def example_fixtures(name: str, exit_code: int,
                     preload: tuple[str, ...] = ()) -> tuple[Callable[..., Any], ...]:
    """Module fixtures `project`, `terminal`, `document` and `every_slice` for one example.

    The example is copied once per module, run once for the terminal report and once more
    for `--json` (from the cache); both runs must exit with `exit_code`. `every_slice` is the
    stored run's report with every slice row (`oloproof inspect latest --slices all`).
    `preload`: the libraries the example's app imports, imported once by the fork server
    rather than by each command (`ForkServer.preload`).
    """

    @pytest.fixture(scope="module")
    def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
        if preload:
            fork_server.shared().preload(*preload)
        return copy_example(name, tmp_path_factory.mktemp("ex") / name)

    @pytest.fixture(scope="module")
    def terminal(project: Path) -> str:
        done = run_cli(project, "run")
        assert done.returncode == exit_code, done.stderr
        return done.stdout

    @pytest.fixture(scope="module")
    def document(project: Path, terminal: str) -> dict[str, Any]:
        done = run_cli(project, "run", "--json")
        assert done.returncode == exit_code, done.stderr
        return dict(json.loads(done.stdout))

    @pytest.fixture(scope="module")
    def every_slice(project: Path, terminal: str) -> str:
        done = run_cli(project, "inspect", "latest", "--slices", "all")
        assert done.returncode == 0, done.stderr
        return done.stdout

    return project, terminal, document, every_slice
