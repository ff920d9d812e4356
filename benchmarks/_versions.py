"""Measure this checkout against another git revision in the same script run.

This VM is shared and its speed drifts, so a comparison is only honest within one run:
`versions(["main"])` exports `src/` of each named revision into a temporary directory and
returns (label, environment) pairs; a child process started with that environment imports
that revision's `oloproof` (PYTHONPATH comes before the editable install). The label
`this` is the checkout the script runs from.
"""

from __future__ import annotations

import atexit
import io
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _export(ref: str) -> Path:
    target = Path(tempfile.mkdtemp(prefix=f"oloproof-{ref.replace('/', '_')}-"))
    atexit.register(shutil.rmtree, target, True)
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"],
                             capture_output=True, check=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(target, filter="data")
    # Compile once, so that no measured run pays for writing bytecode.
    subprocess.run([sys.executable, "-m", "compileall", "-q", str(target / "src")], check=True)
    return target / "src"


def child_env(src: Path | None) -> dict[str, str]:
    """The environment of a benchmark child: CI=1, and `src` first on the path if given."""
    env = {"CI": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if src is not None:
        env["PYTHONPATH"] = str(src)
    return env


def versions(refs: list[str]) -> list[tuple[str, dict[str, str]]]:
    """(label, child environment) for this checkout and for each of `refs`."""
    found = [("this", child_env(ROOT / "src"))]
    for ref in refs:
        found.append((ref, child_env(_export(ref))))
    return found


def revision(ref: str = "HEAD") -> str:
    """The short commit id of `ref` (for the printed results)."""
    return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", ref],
                          capture_output=True, text=True, check=True).stdout.strip()


def load() -> str:
    """The machine's load averages, to report beside figures measured on a shared machine."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


def finished() -> str:
    """The line a benchmark ends with: when it finished (UTC) and the machine's load."""
    return f"done {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} UTC; {load()}"
