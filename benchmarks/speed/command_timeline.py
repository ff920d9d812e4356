"""Where the wall time of a whole `oloproof run` goes: before the first call, the calls, after;
the async target of issue 10 §5 as issue 30 settles it (≤ 1.25 × 1.5625 s past the start-up).

The async system of `case_overhead`'s `async-cli` (2,000 cases awaiting 50 ms at
`concurrency: 64`; ideal 2000 / 64 × 50 ms = 1.5625 s), with timestamps taken inside it: the
first call's start and the last call's end, wall-clock, compared with the moment the command's
process was started and the moment it ended. Each run is a fresh `oloproof run` on a fresh
store (cold), and the figures are medians over `--runs` runs (default 5).

- `before`: process start → the first call (interpreter start, imports, loading the suite,
  opening the store, registering the run, planning the first jobs);
- `calls`: the first call's start → the last call's end (the floor is 32 × 50 ms = 1.6 s: the
  2,000 cases fill 64 lanes 31.25 deep);
- `after`: the last call's end → the process's end (the last results, deciding, storing,
  printing, the interpreter's exit);
- `total`, and `cpu`: the command's user + system CPU time;
- `past_startup_over_ideal`: (`calls` + `after`) / the ideal, the target (≤ 1.25).

With `--against REF` the same is measured with that revision's `src/` (PYTHONPATH), the runs
of the two alternating so that a drift of the shared machine hits both. `--desk` also times
the 2,000-case desk of `benchmarks/_desk.py` (`desk-cli`: the whole command against the desk's
own time in a plain loop).

Arguments: [--runs 5] [--against REF ...] [--desk]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._desk import SYSTEM_TIME, child, make_desk
from benchmarks._synthetic import make_project
from benchmarks._versions import finished, load, revision, versions

TARGETS = {"past_startup_over_ideal": ("<=", 1.25)}

APP = '''
import asyncio, atexit, json, os, time
from oloproof import system

_first = []
_last = [0.0]


@atexit.register
def _report():
    with open(os.environ["TIMELINE_OUT"], "w") as out:
        json.dump({"first": _first[0] if _first else None, "last": _last[0]}, out)


@system(name="bench", version="v1")
async def run(case_input):
    if not _first:
        _first.append(time.time())
    await asyncio.sleep(0.05)
    _last[0] = time.time()
    return {"answer": case_input["q"].upper(), "n": len(case_input["q"])}
'''

CLI = "from oloproof.cli.main import main; main()"
CASES, CONCURRENCY, SLEEP = 2000, 64, 0.05


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timeline(root: Path, env: dict[str, str]) -> dict[str, float]:
    """One cold `oloproof run` of the project at `root`, timed."""
    shutil.rmtree(root / ".oloproof", ignore_errors=True)
    marks = root / "timeline.json"
    cpu = _children_cpu()
    start = time.time()
    subprocess.run([sys.executable, "-c", CLI, "run"], cwd=root, capture_output=True,
                   env={**env, "TIMELINE_OUT": str(marks)}, check=False)
    end = time.time()
    cpu = _children_cpu() - cpu
    seen = json.loads(marks.read_text())
    return {"before": seen["first"] - start, "calls": seen["last"] - seen["first"],
            "after": end - seen["last"], "total": end - start, "cpu": cpu}


def desk_once(root: Path, env: dict[str, str]) -> dict[str, float]:
    own = child(SYSTEM_TIME, str(root), str(root / "data" / "cases.jsonl"), "1",
                env=env)["seconds"]  # the desk on one thread, as desk-cli times it
    shutil.rmtree(root / ".oloproof", ignore_errors=True)
    start = time.time()
    subprocess.run([sys.executable, "-c", CLI, "run"], cwd=root, capture_output=True,
                   env=env, check=False)
    wall = time.time() - start
    return {"system": own, "command": wall, "over_system": wall - own}


def _medians(rows: list[dict[str, float]]) -> dict[str, float]:
    return {key: round(statistics.median(r[key] for r in rows), 3) for key in rows[0]}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks command_timeline")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--against", action="append", default=[])
    parser.add_argument("--desk", action="store_true")
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    pairs = versions(args.against)
    work = Path(tempfile.mkdtemp(prefix="oloproof-timeline-"))
    found: dict[str, dict[str, float]] = {}
    try:
        project = make_project(work / "async", CASES, async_sleep=SLEEP,
                               concurrency=CONCURRENCY)
        (project / "app.py").write_text(APP)
        desk = None
        if args.desk:
            desk = make_desk(work / "desk", CASES)
        for _, env in pairs:  # once each, unmeasured: bytecode written, files cached
            timeline(project, env)
        rows: dict[str, list[dict[str, float]]] = {label: [] for label, _ in pairs}
        desks: dict[str, list[dict[str, float]]] = {label: [] for label, _ in pairs}
        for _ in range(args.runs):
            for label, env in pairs:
                rows[label].append(timeline(project, env))
                if desk is not None:
                    desks[label].append(desk_once(desk, env))
        ideal = CASES / CONCURRENCY * SLEEP
        for label, _ in pairs:
            median = _medians(rows[label])
            found[label] = {**median, "ratio_to_ideal": round(median["total"] / ideal, 3),
                            "past_startup_over_ideal": round(
                                (median["calls"] + median["after"]) / ideal, 3)}
            if desk is not None:
                median = _medians(desks[label])
                found[label]["desk_cli_over_system"] = median["over_system"]
            print(json.dumps({"measure": "async-cli timeline", "code": label,
                              "runs": args.runs, **found[label]}), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(finished())
    figures: dict[str, object] = {f"{key}_s" if key in ("before", "calls", "after", "total",
                                                        "cpu") else key: value
                                  for key, value in found["this"].items()}
    for ref in args.against:
        figures[f"this_over_{ref}"] = {
            f"{key}_s": round(found["this"][key] / found[ref][key], 3)
            for key in ("before", "after", "total", "cpu") if found[ref][key]}
    return {"figures": figures, "params": {"cases": CASES, "concurrency": CONCURRENCY,
                                           "sleep_s": SLEEP, "runs": args.runs,
                                           "against": args.against, "desk": args.desk},
            "details": {"runs": rows, "desk": desks}}
