"""Copy a packaged example into a temp directory and run it for real."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "oloproof" / "examples"


def copy_example(name: str, target: Path) -> Path:
    shutil.copytree(EXAMPLES / name, target, ignore=shutil.ignore_patterns(
        "__pycache__", ".oloproof"))
    return target


def run_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, CI="1")
    env.pop("OLOPROOF_STORE", None)
    return subprocess.run([sys.executable, "-m", "oloproof.cli.main", *args], cwd=project,
                          capture_output=True, text=True, env=env, timeout=300)


def table_row(output: str, *cells: str) -> str:
    """The terminal line whose cells start with `cells`, in order (raises if absent)."""
    for line in output.splitlines():
        parts = [p.strip() for p in line.strip().strip("│").split("│")]
        if len(parts) >= len(cells) and all(parts[i] == c for i, c in enumerate(cells)):
            return line
    raise AssertionError(f"no row starting with {cells!r} in:\n{output}")


def cells(line: str) -> list[str]:
    return [p.strip() for p in line.strip().strip("│").split("│")]


def example_fixtures(name: str, exit_code: int) -> tuple[Callable[..., Any], ...]:
    """Module fixtures `project`, `terminal` and `document` for one packaged example.

    The example is copied once per module, run once for the terminal report and once more
    for `--json` (from the cache); both runs must exit with `exit_code`.
    """

    @pytest.fixture(scope="module")
    def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
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

    return project, terminal, document
