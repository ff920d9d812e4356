"""Copy a packaged example into a temp directory and run it for real."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

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
