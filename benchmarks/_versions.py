"""Measure this checkout against another git revision in the same script run.

This VM is shared and its speed drifts, so a comparison is only honest within one run:
`versions(["main"])` exports `src/` of each named revision into a temporary directory and
returns (label, environment) pairs; a child process started with that environment imports
that revision's `oloproof` (PYTHONPATH comes before the editable install). The label
`this` is the checkout the script runs from.

An older revision may need packages this environment no longer has (before 2026-12-04 the
store's run ids came from `python-ulid`). `versions` reads that revision's
`[project].dependencies`, asks pip which of them this environment does not satisfy
(`pip install --dry-run --report`, resolved against what is installed), and installs just
those, once per script run, into a throwaway directory that goes on the child's PYTHONPATH
after the revision's `src/` (`pip install --target DIR --no-deps`; removed at exit). It needs
PyPI (or the index pip is set up with); by hand it is the same two steps:
`pip install --dry-run --report - -q REQUIREMENTS...` to list what is missing, and
`pip install --target DIR --no-deps NAME==VERSION...` with `PYTHONPATH=REV/src:DIR`.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
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


def requirements(ref: str) -> list[str]:
    """The `[project].dependencies` of revision `ref`."""
    text = subprocess.run(["git", "-C", str(ROOT), "show", f"{ref}:pyproject.toml"],
                          capture_output=True, text=True, check=True).stdout
    return list(tomllib.loads(text)["project"]["dependencies"])


def missing(wanted: list[str]) -> list[str]:
    """`name==version` of what pip would install for `wanted` here: the requirements this
    environment does not satisfy, resolved (none when it satisfies them all)."""
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--dry-run", "--quiet",
                           "--report", "-", *wanted], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"pip could not resolve {wanted}:\n{done.stderr}")
    report = json.loads(done.stdout)
    return [f"{item['metadata']['name']}=={item['metadata']['version']}"
            for item in report["install"]]


def _dependencies(ref: str) -> Path | None:
    """A throwaway directory holding what revision `ref` needs and this environment lacks,
    or None when it lacks nothing."""
    needed = missing(requirements(ref))
    if not needed:
        return None
    target = Path(tempfile.mkdtemp(prefix=f"oloproof-{ref.replace('/', '_')}-deps-"))
    atexit.register(shutil.rmtree, target, True)
    print(f"# {ref} needs {', '.join(needed)}, which this environment lacks: installing "
          f"into {target}", file=sys.stderr, flush=True)
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps",
                           "--target", str(target), *needed], capture_output=True, text=True,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError(f"cannot install what {ref} needs ({', '.join(needed)}) into a "
                           f"throwaway directory:\n{done.stderr}")
    return target


def child_env(src: Path | None, *more: Path) -> dict[str, str]:
    """The environment of a benchmark child: CI=1, and `src` (then `more`) first on the path
    if given."""
    env = {"CI": "1", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join(str(p) for p in (src, *more))
    return env


def versions(refs: list[str]) -> list[tuple[str, dict[str, str]]]:
    """(label, child environment) for this checkout and for each of `refs`, each revision
    with what it needs that this environment lacks (see the module docstring)."""
    found = [("this", child_env(ROOT / "src"))]
    for ref in refs:
        deps = _dependencies(ref)
        found.append((ref, child_env(_export(ref), *([deps] if deps else []))))
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
