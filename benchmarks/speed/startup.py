"""Start-up time of the command line (issue 10 §5: `oloproof --help` and `--version` ≤ 0.25 s).

Each measurement is a fresh process, timed from spawn to exit: `oloproof --help`,
`oloproof --version`, `python -c "import oloproof"`, and for scale a bare `python -c pass` and
`python -c "import oloproof.api"` (what a command that runs something still pays). The figure
is the median of N runs, the runs of all commands interleaved so that a busy neighbour slows
them alike. Arguments: [N] [--before SRC] (N defaults to 21).

`--before SRC` also times `python -m oloproof.cli.main --help` / `--version` and
`python -c "import oloproof.api"` with another checkout's `src/` first on the path (e.g. a
worktree of the commit before a change), beside the same three commands of this checkout, so
the before/after ratios come from one run. It also reads, from `python -X importtime`, how long
importing `oloproof.cli.main` and `oloproof.api` takes on each side (median and minimum of N, the
minimum being the figure a busy machine disturbs least).

The figures are the medians, in seconds, and `engine_import_over_help`; every command's median,
minimum and maximum (and the `--before` ratios and import times) are in the saved JSON.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks._versions import ROOT

SCRIPT = Path(sys.executable).with_name("oloproof")
TARGETS = {"help_s": ("<=", 0.25), "version_s": ("<=", 0.25)}
QUICK = ["11"]

COMMANDS = {
    "python -c pass": [sys.executable, "-c", "pass"],
    "oloproof --help": [str(SCRIPT), "--help"],
    "oloproof --version": [str(SCRIPT), "--version"],
    "import oloproof": [sys.executable, "-c", "import oloproof"],
    "import oloproof.api": [sys.executable, "-c", "import oloproof.api"],
}


def _once(argv: list[str], src: str | None = None) -> float:
    env = {**os.environ, "CI": "1"}
    if src is not None:
        env["PYTHONPATH"] = src
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                   env=env)
    return time.perf_counter() - start


def _import_ms(module: str, src: str) -> float:
    """How long `import module` took, by `-X importtime` (cumulative, in ms)."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-c", f"import {module}"],
                          check=True, capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": src})
    for line in done.stderr.splitlines():
        parts = [part.strip() for part in line.split("|")]
        if len(parts) == 3 and parts[2] == module:
            return int(parts[1]) / 1000
    raise SystemExit(f"-X importtime printed no line for {module}")


def run(argv: list[str]) -> dict:
    args = list(argv)
    before = None
    if "--before" in args:
        at = args.index("--before")
        before = str(Path(args[at + 1]).resolve())
        del args[at : at + 2]
    n = int(args[0]) if args else 21
    if not SCRIPT.is_file():
        raise SystemExit(f"no {SCRIPT}: install the project (pip install -e .) in this venv")
    commands: dict[str, tuple[list[str], str | None]] = {
        name: (argv, None) for name, argv in COMMANDS.items()}
    if before is not None:
        here = str(ROOT / "src")
        for flag in ("--help", "--version"):
            argv = [sys.executable, "-m", "oloproof.cli.main", flag]
            commands[f"before: -m oloproof.cli.main {flag}"] = (argv, before)
            commands[f"after: -m oloproof.cli.main {flag}"] = (argv, here)
        commands["before: import oloproof.api"] = (COMMANDS["import oloproof.api"], before)
        commands["after: import oloproof.api"] = (COMMANDS["import oloproof.api"], here)
    for argv, src in commands.values():  # warm the file cache: every figure is a warm start
        _once(argv, src)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(n):
        for name, (argv, src) in commands.items():
            times[name].append(_once(argv, src))
    imports: dict[str, list[float]] = {}
    if before is not None:
        for _ in range(n):
            for module in ("oloproof.cli.main", "oloproof.api"):
                for side, src in (("before", before), ("after", here)):
                    imports.setdefault(f"{side}: import {module}", []).append(
                        _import_ms(module, src))
    medians = {name: statistics.median(ts) for name, ts in times.items()}
    bare = medians["python -c pass"]
    rows = {
        name: {"median_s": round(m, 3), "min_s": round(min(times[name]), 3),
               "max_s": round(max(times[name]), 3), "over_bare_python_s": round(m - bare, 3)}
        for name, m in medians.items()
    }
    ratios = {
        flag: round(medians[f"before: -m oloproof.cli.main {flag}"]
                    / medians[f"after: -m oloproof.cli.main {flag}"], 2)
        for flag in ("--help", "--version") if before is not None
    }
    if before is not None:
        ratios["import oloproof.api"] = round(medians["before: import oloproof.api"]
                                              / medians["after: import oloproof.api"], 2)
    details = {
        "runs": n,
        "commands": rows,
        **({"before_over_after": ratios} if ratios else {}),
        **({"importtime_ms": {name: {"median": round(statistics.median(ms), 1),
                                     "min": round(min(ms), 1)}
                              for name, ms in imports.items()}} if imports else {}),
    }
    print(json.dumps(details, indent=2))
    figures = {
        "help_s": rows["oloproof --help"]["median_s"],
        "version_s": rows["oloproof --version"]["median_s"],
        "import_oloproof_s": rows["import oloproof"]["median_s"],
        "import_api_s": rows["import oloproof.api"]["median_s"],
        "python_pass_s": rows["python -c pass"]["median_s"],
        "engine_import_over_help": round(medians["import oloproof.api"]
                                         / medians["oloproof --help"], 2),
        **({"before_over_after": ratios} if ratios else {}),
    }
    return {"figures": figures, "params": {"runs": n, "before": before}, "details": details}
