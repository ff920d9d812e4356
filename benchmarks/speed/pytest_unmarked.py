"""What the pytest plugin costs a session with no marked test (issue 41,
docs/pytest.md#what-it-costs-a-session-without-marked-tests): the time and the modules its
import adds to a process that has pytest, and a whole `pytest` process running one plain test
with the plugin beside the same process with `-p no:oloproof`.

`plugin_import_ms`: in a fresh interpreter that has imported pytest, how long importing
`oloproof.pytest_plugin.plugin` (what pytest's entry point loads) takes; the least of N
measurements, the one a busy machine disturbs least (the median is in the JSON).
`plugin_modules` and `heavy_modules`: the modules that import adds, and how many of them are
(or belong to) NumPy, SciPy, pydantic, YAML, Rich, Click or SQLite. `cpu_ratio_median`: a pytest
process running one plain test in a folder of its own, with the plugin and with
`-p no:oloproof` alternately, N pairs, each pair's CPU ratio (user + system of the child);
the median and the range over the pairs, and each side's median CPU and wall time, are figures.
`files_written`: what the sessions with the plugin left in their folder (no store, no file).
The machine is shared, so the ratio's range is mostly the neighbours' noise.

Arguments: [--n N] (pairs and import measurements, default 10).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGETS = {"plugin_import_ms": ("<=", 20), "heavy_modules": ("==", 0),
           "files_written": ("==", 0)}

HEAVY = ("numpy", "scipy", "pydantic", "yaml", "rich", "click", "sqlite3", "_sqlite3")

IMPORT = """
import json, sys, time
import pytest
before = set(sys.modules)
start = time.perf_counter()
import oloproof.pytest_plugin.plugin
took = time.perf_counter() - start
print(json.dumps({"ms": took * 1000, "added": sorted(set(sys.modules) - before)}))
"""

PLAIN = """
def test_plain():
    assert 1 + 1 == 2
"""

#: The folder's own ini file: the rootdir is the folder, pytest's cache writes nothing, and the
#: plugins this environment has for its own tests (langsmith's, anyio's, pytest-asyncio's) are
#: left out, so that the plugin's share of a lean session is measured (with them it is less).
INI = "[pytest]\naddopts = -p no:cacheprovider -p no:langsmith_plugin -p no:anyio -p no:asyncio\n"


def _environment() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "OLOPROOF_"))}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    return env


def _import_once() -> dict[str, Any]:
    done = subprocess.run([sys.executable, "-c", IMPORT], check=True, capture_output=True,
                          text=True, env=_environment())
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _session(folder: Path, *args: str) -> tuple[float, float]:
    """CPU seconds (user + system) and wall seconds of one `python -m pytest -q` in `folder`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", *args], cwd=folder,
                          env=_environment(), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0 or "1 passed" not in done.stdout:
        raise SystemExit(f"pytest {' '.join(args)} did not pass its one test:\n{done.stdout}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return cpu, wall


def _files(folder: Path) -> set[Path]:
    return set(folder.rglob("*"))


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="pytest_unmarked")
    parser.add_argument("--n", type=int, default=10)
    n = parser.parse_args(argv).n

    imports = [_import_once() for _ in range(n)]
    added = imports[0]["added"]
    heavy = [m for m in added if m.split(".")[0] in HEAVY]
    import_ms = [i["ms"] for i in imports]
    print(f"import: least {min(import_ms):.2f} ms, median {statistics.median(import_ms):.2f} "
          f"ms; {len(added)} modules added: {', '.join(added)}", flush=True)

    with tempfile.TemporaryDirectory(prefix="pytest-unmarked-") as tmp:
        folders = {side: Path(tmp) / side for side in ("with", "without")}
        for folder in folders.values():
            folder.mkdir()
            (folder / "test_plain.py").write_text(PLAIN, encoding="utf-8")
            (folder / "pytest.ini").write_text(INI, encoding="utf-8")
        written_before = _files(folders["with"])
        _session(folders["with"])  # a warm-up of each side, not counted
        _session(folders["without"], "-p", "no:oloproof")
        pairs: list[dict[str, float]] = []
        for i in range(n):
            order = ("with", "without") if i % 2 == 0 else ("without", "with")
            pair: dict[str, float] = {}
            for side in order:
                args = () if side == "with" else ("-p", "no:oloproof")
                pair[f"{side}_cpu_s"], pair[f"{side}_wall_s"] = _session(folders[side], *args)
            pair["cpu_ratio"] = pair["with_cpu_s"] / pair["without_cpu_s"]
            pairs.append(pair)
            print(f"pair {i + 1}: CPU {pair['with_cpu_s']:.3f} s with, "
                  f"{pair['without_cpu_s']:.3f} s without: {pair['cpu_ratio']:.3f}", flush=True)
        written = sorted(str(p.relative_to(folders["with"]))
                         for p in _files(folders["with"]) - written_before)

    ratios = [p["cpu_ratio"] for p in pairs]

    def median_of(key: str) -> float:
        return round(statistics.median(p[key] for p in pairs), 4)

    return {
        "figures": {
            "plugin_import_ms": round(min(import_ms), 2),
            "heavy_modules": len(heavy),
            "files_written": len(written),
            "cpu_ratio_median": round(statistics.median(ratios), 3),
            "cpu_ratio_least": round(min(ratios), 3),
            "cpu_ratio_most": round(max(ratios), 3),
            "plugin_modules": len(added),
            "plugin_import_ms_median": round(statistics.median(import_ms), 2),
            "with_cpu_s_median": median_of("with_cpu_s"),
            "without_cpu_s_median": median_of("without_cpu_s"),
            "with_wall_s_median": median_of("with_wall_s"),
            "without_wall_s_median": median_of("without_wall_s"),
        },
        "params": {"n": n},
        "details": {"modules_added": added, "heavy": heavy, "written": written,
                    "import_ms": [round(ms, 3) for ms in import_ms], "pairs": pairs},
    }
