"""The developer's loop on a 20,000-case suite (issue 42): after a check is edited, what
`oloproof rescore` costs beside `oloproof run` (CPU), with no system call; and what `run --case
ID` costs beside the whole run.

The project is `benchmarks/_synthetic.py`'s (three output checks) with a system that appends a
line to `calls.log` at every call. It is run once whole (every case called). Then each round
edits the `regex` check (a new pattern every time, so no judgment of it is cached) and runs,
alternately in the two orders, in fresh processes:

- `run`: the whole suite after the edit (executions from the cache, the edited check judged
  again on every case);
- `rescore`: the newest run rescored after the edit (its stored outputs, the edited check
  judged again on every case);
- `one_case`: `run --case ID` after the edit, one case of the 20,000 (a subset run).

Each is timed as a whole process: wall time, and CPU time (user + system of the child, from
`resource.getrusage`), which the shared machine's load stretches far less. Figures are the
medians over `--rounds`: `rescore_vs_run_cpu` (the rescore's CPU over the run's: both judge
the same 20,000 cases again), `one_case_vs_run_cpu`, their seconds, and
`system_calls_by_rescore` (the lines the rescores added to `calls.log`: the target is 0).
`one_case_cpu_s` is mostly what any command pays before its first case: the imports and the
validating pass over the whole dataset (`dataset_scan`, `command_floor`).

Targets: no system call by a rescore (the issue's promise), a rescore no dearer than the run
it replaces (≤ 1.2× its CPU), and one case at most half a whole run's CPU.

Arguments: [--cases 20000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._synthetic import make_project
from benchmarks._versions import finished, load, revision, versions

TARGETS = {"system_calls_by_rescore": ("==", 0), "rescore_vs_run_cpu": ("<=", 1.2),
           "one_case_vs_run_cpu": ("<=", 0.5)}

COUNTED_APP = '''
import os
from oloproof import system

CALLS = os.path.join(os.path.dirname(__file__), "calls.log")


@system(name="bench", version="v1")
def run(case_input):
    with open(CALLS, "a") as log:
        log.write("called\\n")
    return {"answer": case_input["q"].upper(), "n": len(case_input["q"])}
'''

CLI = "import sys; from oloproof.cli.main import main; sys.argv[0] = 'oloproof'; main()"

REGEX_LINE = re.compile(r'(- \{type: regex, field: answer, pattern: )"[^"]*"')


def _command(args: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float, int]:
    """(wall s, CPU s, exit code) of a whole `oloproof ...` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, text=True,
                          env=env, cwd=cwd, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 3):  # (3: a subset's ALLOW)
        raise RuntimeError(f"oloproof {' '.join(args)} exited {done.returncode}:\n"
                           f"{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.returncode


def _edit_check(root: Path, n: int) -> None:
    """A new pattern for the `regex` check, judged as the old one (every answer matches)."""
    suite = root / "oloproof.yaml"
    text, count = REGEX_LINE.subn(rf'\1"^[A-Z0-9 -]+$|edit-{n}"', suite.read_text())
    assert count == 1, "the synthetic suite has one regex check"
    suite.write_text(text)


def _calls(root: Path) -> int:
    log = root / "calls.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks developer_loop")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    (_, env), = versions([])
    root = Path(tempfile.mkdtemp(prefix="oloproof-loop-")) / "project"
    one = f"case-{args.cases // 2:06d}"
    try:
        make_project(root, args.cases)
        (root / "app.py").write_text(COUNTED_APP)
        wall, cpu, _ = _command(["run"], env, root)
        assert _calls(root) == args.cases, "the first run calls every case"
        print(json.dumps({"first_run": {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2)}}),
              flush=True)
        rows: dict[str, dict[str, list[float]]] = {
            k: {"wall": [], "cpu": []} for k in ("run", "rescore", "one_case")}
        rescore_calls = 0
        edits = 0
        for round_ in range(1, args.rounds + 1):
            order = ["run", "rescore", "one_case"]
            if round_ % 2 == 0:
                order.reverse()
            for what in order:
                edits += 1
                _edit_check(root, edits)
                calls = _calls(root)
                argv_ = {"run": ["run"], "rescore": ["rescore"],
                         "one_case": ["run", "--case", one]}[what]
                wall, cpu, code = _command(argv_, env, root)
                if what == "rescore":
                    rescore_calls += _calls(root) - calls
                if what == "one_case":
                    assert code == 3, "a subset's ALLOW exits 3"
                rows[what]["wall"].append(wall)
                rows[what]["cpu"].append(cpu)
                print(json.dumps({"round": round_, what: {"wall_s": round(wall, 2),
                                                          "cpu_s": round(cpu, 2)}}), flush=True)
        median = {k: {m: statistics.median(v) for m, v in row.items()}
                  for k, row in rows.items()}
        figures = {
            "system_calls_by_rescore": rescore_calls,
            "rescore_vs_run_cpu": round(median["rescore"]["cpu"] / median["run"]["cpu"], 3),
            "one_case_vs_run_cpu": round(median["one_case"]["cpu"] / median["run"]["cpu"], 3),
            "rescore_cpu_s": round(median["rescore"]["cpu"], 2),
            "run_cpu_s": round(median["run"]["cpu"], 2),
            "one_case_cpu_s": round(median["one_case"]["cpu"], 2),
            "rescore_wall_s": round(median["rescore"]["wall"], 2),
            "run_wall_s": round(median["run"]["wall"], 2),
            "one_case_wall_s": round(median["one_case"]["wall"], 2),
        }
        print(json.dumps(figures), flush=True)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(finished())
    return {"figures": figures, "params": {"cases": args.cases, "rounds": args.rounds},
            "details": {k: {m: [round(x, 3) for x in v] for m, v in row.items()}
                        for k, row in rows.items()}}
