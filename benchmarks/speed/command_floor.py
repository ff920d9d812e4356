"""The desk-cli target of issue 10 §5 past the import floor (issue 30): a cold 2,000-case
`oloproof run` of the desk ≤ the run's imports + the desk's own time + 0.5 s.

Issue 10's target: a cold `oloproof run` of the 2,000-case desk (`benchmarks/_desk.py`) takes at
most 0.5 s more than the desk's own time. Every such command imports the same modules whatever
the engine does per case: the command line and the API to start, and, to decide, NumPy and
scipy.special (the statistics, docs/concepts.md). This script finds that set from a real run and
times importing it alone, so the part of the 0.5 s left for everything else -- reading the 2,000
cases, running the engine on each, deciding, storing, printing -- is a measured figure, not a
guess.

Each round, in fresh processes:

- `modules`: the modules a real `oloproof run` of the desk has imported when it exits (read
  from `sys.modules` at exit, less the desk's own `app`), once; how many of them refuse to
  be imported on their own is printed (`modules_refused_alone`: each makes `imports` an
  underestimate);
- `interpreter`: `python -c pass`;
- `imports`: a process that imports exactly those modules and exits (wall time);
- `statistics`: a process that imports `scipy.special` alone (wall time);
- `system`: the desk's own time on the same 2,000 inputs in a plain loop (as `desk-cli` in
  `case_overhead` counts it);
- `command`: the whole `oloproof run` (cold: a fresh store each time).

Figures: the medians over `--rounds`, and `left_per_case_us` = 0.5 s − (imports −
interpreter), per case: what remains of the allowance for all the per-case work of 2,000
cases, the decision and the report, before the engine has done anything. Issue 30 settles the
target past the import floor: `command` ≤ `imports` + `system` + 0.5 s, i.e.
`command_past_the_floor_s` = command − imports − system ≤ 0.5 s.
Compare with `worker_case`'s `engine_us` (the case thread's own work per case, without the
coordinator or the store).

Arguments: [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._desk import SYSTEM_TIME, child, command, make_desk
from benchmarks._versions import finished, load, revision, versions

TARGETS = {"command_past_the_floor_s": ("<=", 0.5)}

CASES = 2000
ALLOWANCE_S = 0.5

# Run the command in this process and, at exit, write the modules it imported.
MODULES_OF_A_RUN = """
import atexit, json, sys
OUT = sys.argv[1]
def _write():
    names = sorted(n for n in sys.modules if n != "app" and not n.startswith("app."))
    with open(OUT, "w") as out:
        json.dump(names, out)
atexit.register(_write)
from oloproof.cli.main import main
sys.argv = ["oloproof", "run"]
main()
"""


def wall(code: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", code], capture_output=True, check=True, env=env)
    return time.perf_counter() - start


def modules_of_a_run(root: Path, env: dict[str, str]) -> list[str]:
    out = root.parent / "modules.json"
    subprocess.run([sys.executable, "-c", MODULES_OF_A_RUN, str(out)], capture_output=True,
                   env=env, cwd=root, check=False)  # (its exit code is the gate's)
    shutil.rmtree(root / ".oloproof", ignore_errors=True)
    names: list[str] = json.loads(out.read_text())
    return names


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks command_floor")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    (_, env), = versions([])
    root = Path(tempfile.mkdtemp(prefix="oloproof-floor-")) / "desk"
    try:
        make_desk(root, CASES)
        names = modules_of_a_run(root, env)
        # Import each one, in the order sorted names give (a package before its modules);
        # a module that refuses to be imported on its own is skipped and counted.
        imports = ("import importlib\nskipped = 0\n"
                   f"for name in {names!r}:\n"
                   "    try:\n        importlib.import_module(name)\n"
                   "    except Exception:\n        skipped += 1\n")
        # Once, untimed: how many refused (each one makes `imports` an underestimate).
        skipped = int(subprocess.run([sys.executable, "-c", imports + "print(skipped)"],
                                     capture_output=True, text=True, check=True,
                                     env=env).stdout)
        rows: dict[str, list[float]] = {k: [] for k in
                                        ("interpreter", "imports", "statistics", "system",
                                         "command")}
        for _ in range(args.rounds):
            rows["interpreter"].append(wall("pass", env))
            rows["imports"].append(wall(imports, env))
            rows["statistics"].append(wall("import scipy.special", env))
            rows["system"].append(child(SYSTEM_TIME, str(root), str(root / "data" /
                                        "cases.jsonl"), "1", env=env)["seconds"])
            shutil.rmtree(root / ".oloproof", ignore_errors=True)
            rows["command"].append(command(["run"], env, root))
        median = {k: statistics.median(v) for k, v in rows.items()}
        paid = median["imports"] - median["interpreter"]
        left = ALLOWANCE_S - paid
        figures = {
            "imports_s": round(median["imports"], 3),
            "system_s": round(median["system"], 3),
            "command_s": round(median["command"], 3),
            "left_per_case_us": round(1e6 * left / CASES, 1),
            # The target as issue 30 settles it: the command past the import floor, i.e. at
            # most the run's imports (a process doing only them) + the desk's own time + 0.5 s.
            "command_past_the_floor_s": round(median["command"] - median["imports"]
                                              - median["system"], 3),
        }
        more = {
            "modules_a_run_imports": len(names), "modules_refused_alone": skipped,
            **{f"{k}_s": round(v, 3) for k, v in median.items()},
            "command_minus_system_s": round(median["command"] - median["system"], 3),
            "imports_minus_interpreter_s": round(paid, 3),
            "statistics_minus_interpreter_s": round(median["statistics"] -
                                                    median["interpreter"], 3),
            "left_for_the_engine_s": round(left, 3),
        }
        print(json.dumps({**more, **figures}), flush=True)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(finished())
    return {"figures": figures, "params": {"cases": CASES, "rounds": args.rounds},
            "details": {**more, "seconds": {k: [round(x, 3) for x in v] for k, v in rows.items()}}}
