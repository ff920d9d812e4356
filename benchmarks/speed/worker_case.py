"""The worker's own cost per case (issue 10 §5): what runs in the case thread besides the system,
in time and in function calls.

The desk of `benchmarks/_desk.py` (a sync agent that reads its orders file on every call, six
agent evaluators, 20,000 distinct cases) is run one `Worker.run_unit` per case in one thread,
with no coordinator, transport or store: the recorder and the call, the execution kept as
stored text with its facts, and the six judgments. The system's own time is taken in the same
loop, around each call of the system (its recorder included, as `case_overhead` counts it),
so the worker's engine cost per case is (loop time − system time) / cases, wall and thread
CPU.

Timings on a shared machine drift, so each revision (`--against REF`) runs in a fresh process,
alternately, `--rounds` times, and the medians are printed with the load average. Beside them,
a count that does not drift: Python and C function calls per case made by the worker's side
(`sys.setprofile` over the first `--count` cases, less the same cases' calls of the system
alone in a recorder).

The figures are this checkout's medians (µs a case) and its count of calls a case.

Arguments: [--cases 20000] [--rounds 3] [--count 2000] [--against REF ...]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._desk import make_desk
from benchmarks._versions import finished, load, revision, versions

TARGETS: dict[str, tuple[str, float]] = {}

CHILD = """
import json, sys, time
from pathlib import Path
from oloproof.execution.units import CaseJob, UnitJob
from oloproof.execution.worker import Worker
from oloproof.project import load_suite
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current

suite = load_suite(Path(sys.argv[1]))
count = int(sys.argv[2])
cases = [unit[0] for unit in suite.iter_units()]
judge = tuple(range(len(suite.evaluators)))
worker = Worker(suite.target, suite.evaluators, None)
system = suite.target.call


def jobs(chosen):
    return [UnitJob(i, [CaseJob(case, judge)], []) for i, case in enumerate(chosen)]


def alone(chosen):  # the system's own calls, each in a recorder (case_overhead.py's system time)
    for case in chosen:
        token = set_current(CaseRecorder(case.id, case.metadata))
        try:
            system(case.input)
        finally:
            reset_current(token)


spent = [0.0, 0.0]


def timed(case_input):
    wall, cpu = time.perf_counter(), time.thread_time()
    try:
        return system(case_input)
    finally:
        spent[0] += time.perf_counter() - wall
        spent[1] += time.thread_time() - cpu


worker.target.call = timed
todo = jobs(cases)
wall, cpu = time.perf_counter(), time.thread_time()
for job in todo:
    result = worker.run_unit(job)
    assert result.failure is None, result.failure
wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
n = len(todo)

calls = [0]


def counting(frame, event, arg):
    if event == "call" or event == "c_call":
        calls[0] += 1


worker.target.call = system
chosen = cases[:count]
todo = jobs(chosen)
sys.setprofile(counting)
for job in todo:
    worker.run_unit(job)
sys.setprofile(None)
whole = calls[0]
calls[0] = 0
sys.setprofile(counting)
alone(chosen)
sys.setprofile(None)
print(json.dumps({
    "cases": n, "loop_us": 1e6 * wall / n, "system_us": 1e6 * spent[0] / n,
    "engine_us": 1e6 * (wall - spent[0]) / n, "engine_cpu_us": 1e6 * (cpu - spent[1]) / n,
    "engine_calls": (whole - calls[0]) / len(chosen)}))
"""


def measure(env: dict[str, str], suite: Path, count: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(suite), str(count)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks worker_case")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--count", type=int, default=2000)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="oloproof-worker-")) / "desk"
    try:
        make_desk(root, args.cases)
        pairs = versions(args.against)
        rows: dict[str, list[dict]] = {label: [] for label, _ in pairs}
        for _ in range(args.rounds):
            for label, env in pairs:  # alternately, so that a drift of the machine hits both
                row = measure(env, root / "oloproof.yaml", args.count)
                rows[label].append(row)
                print(json.dumps({"code": label, **{k: round(v, 1) for k, v in row.items()}}),
                      flush=True)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    medians = {}
    for label, found in rows.items():
        median = {key: round(statistics.median(r[key] for r in found), 1)
                  for key in ("loop_us", "system_us", "engine_us", "engine_cpu_us")}
        medians[label] = {**median, "engine_calls": round(found[0]["engine_calls"], 1)}
        print(json.dumps({"code": label, "median_of": len(found), **medians[label]}))
    print(finished())
    figures: dict[str, object] = dict(medians["this"])
    for ref in args.against:
        figures[f"this_over_{ref}"] = {
            key: round(medians["this"][key] / medians[ref][key], 3)
            for key in ("engine_us", "engine_cpu_us", "engine_calls") if medians[ref][key]}
    return {"figures": figures,
            "params": {"cases": args.cases, "rounds": args.rounds, "count": args.count,
                       "against": args.against},
            "details": rows}
