"""Per-case overhead of the engine on the desk, sync lanes, and the whole command, each against
the system's own time in the same run (issue 10 §3 and §5).

Four measurements, each in fresh Python processes:

- `desk`: the refund desk of `benchmarks/_desk.py` (it reads its orders file on every call,
  judged by `support_agent`'s six agent evaluators, two quantile metrics and four slices) on
  20,000 distinct cases: the `oloproof.run` call, cold and warm. Engine overhead per case =
  (run − the system's own time) / cases, the system's own time being the same agent called on
  the same 20,000 inputs in a plain loop (each call inside a case recorder, which it needs).
  The same agent is also timed on 8 plain threads -- the concurrency the run uses -- since its
  own file I/O then waits on the GIL whoever calls it; the overhead is reported against both.
  Issue 10 §5's target: ≤ 0.2 ms a case (against the plain loop).
- `desk-cli`: the same desk on 2,000 cases, the whole `oloproof run` command (start-up,
  imports, loading, running, deciding, storing, printing), cold, against the system's own time.
  Its target (≤ 0.5 s over the desk's own time) is measured past the import floor since issue
  30: `python -m benchmarks command_floor`.
- `async-cli`: an async system awaiting 50 ms, 2,000 cases at `concurrency: 64`, the whole
  `oloproof run` command against the ideal ceil-free 2000 / 64 × 50 ms = 1.5625 s. Its target
  (≤ 1.25 × the ideal past the start-up, issue 30) is `python -m benchmarks command_timeline`'s.
- `blocking`: a sync system blocking 0.2 s per call, 24 cases at `concurrency: 8` (ideal
  0.6 s): the `oloproof.run` call, and from the calls' own start and end times the
  throughput reached as a share of concurrency / latency, from the first case (target ≥ 0.8).

Arguments: [--only desk,desk-cli,async-cli,blocking] [--cases 20000] [--against REF ...].
With `--against REF`, every measurement is also taken with that revision's code, alternately,
in the same run; the figures are this checkout's, with `this_over_REF` ratios beside them.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
from pathlib import Path

from benchmarks._desk import DEFAULT_CONCURRENCY, RUN, SYSTEM_TIME, child, command, make_desk
from benchmarks._synthetic import make_project
from benchmarks._versions import finished, load, revision, versions

TARGETS = {
    "desk_cold_overhead_ms_per_case": ("<=", 0.2),
    "blocking_share_of_concurrency_over_latency": (">=", 0.8),
}

# The figures shown of each measurement (this checkout's; against a REF, their ratios too);
# the rest are in the saved JSON's details.
FIGURES = {
    "desk": ("cold_s", "cold_overhead_ms_per_case", "cold_overhead_over_threads_ms_per_case",
             "warm_ms_per_case"),
    "desk-cli": ("command_minus_system_s",),
    "async-cli": ("command_s",),
    "blocking": ("share_of_concurrency_over_latency",),
}


def desk(version: str, env: dict[str, str], cases: int) -> dict:
    root = Path(tempfile.mkdtemp(prefix="oloproof-desk-")) / "desk"
    try:
        make_desk(root, cases)
        own = child(SYSTEM_TIME, str(root), str(root / "data" / "cases.jsonl"), "1",
                    env=env)["seconds"]
        threads = child(SYSTEM_TIME, str(root), str(root / "data" / "cases.jsonl"),
                        str(DEFAULT_CONCURRENCY), env=env)["seconds"]
        cold = child(RUN, str(root / "oloproof.yaml"), env=env)
        warm = child(RUN, str(root / "oloproof.yaml"), env=env)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return {"measure": "desk", "code": version, "cases": cases,
            "system_s": round(own, 3),
            f"system_on_{DEFAULT_CONCURRENCY}_threads_s": round(threads, 3),
            "cold_s": round(cold["seconds"], 3), "warm_s": round(warm["seconds"], 3),
            "cold_overhead_ms_per_case": round(1000 * (cold["seconds"] - own) / cases, 4),
            "cold_overhead_over_threads_ms_per_case": round(
                1000 * (cold["seconds"] - threads) / cases, 4),
            "warm_ms_per_case": round(1000 * warm["seconds"] / cases, 4),
            "engine_share_cold": round((cold["seconds"] - own) / cold["seconds"], 3),
            "cold_rss_mb": round(cold["rss_mb"], 1), "cache": [cold["cache"], warm["cache"]]}


def desk_cli(version: str, env: dict[str, str], cases: int = 2000) -> dict:
    root = Path(tempfile.mkdtemp(prefix="oloproof-deskcli-")) / "desk"
    try:
        make_desk(root, cases)
        own = child(SYSTEM_TIME, str(root), str(root / "data" / "cases.jsonl"), "1",
                    env=env)["seconds"]
        wall = command(["run"], env, root)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return {"measure": "desk-cli", "code": version, "cases": cases, "system_s": round(own, 3),
            "command_s": round(wall, 3), "command_minus_system_s": round(wall - own, 3)}


def async_cli(version: str, env: dict[str, str], cases: int = 2000) -> dict:
    root = Path(tempfile.mkdtemp(prefix="oloproof-async-"))
    try:
        make_project(root, cases, async_sleep=0.05, concurrency=64)
        wall = command(["run"], env, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ideal = cases / 64 * 0.05
    return {"measure": "async-cli", "code": version, "cases": cases, "ideal_s": ideal,
            "command_s": round(wall, 3), "ratio_to_ideal": round(wall / ideal, 3)}


BLOCKING_APP = '''
import time

def run(case_input):
    start = time.monotonic()
    time.sleep(0.2)
    return {"start": start, "end": time.monotonic()}
'''


def blocking(version: str, env: dict[str, str]) -> dict:
    import sqlite3

    root = Path(tempfile.mkdtemp(prefix="oloproof-blocking-"))
    try:
        (root / "data").mkdir()
        (root / "app.py").write_text(BLOCKING_APP)
        (root / "oloproof.yaml").write_text(json.dumps({
            "version": 1, "dataset": "data/cases.jsonl",
            "system": {"name": "blocking", "version": "v1", "callable": "app:run",
                       "concurrency": 8},
            "evaluators": [{"type": "regex", "field": "start", "pattern": "."}]}))
        (root / "release.yaml").write_text("version: 1\nrules: []\n")
        (root / "data" / "cases.jsonl").write_text("".join(
            json.dumps({"id": f"c{i}", "input": {"n": i}}) + "\n" for i in range(24)))
        run = child(RUN, str(root / "oloproof.yaml"), env=env)
        with sqlite3.connect(root / ".oloproof" / "store.sqlite") as db:
            spans = [json.loads(row[0]) for row in db.execute("SELECT output FROM executions")]
    finally:
        shutil.rmtree(root, ignore_errors=True)
    first, last = min(s["start"] for s in spans), max(s["end"] for s in spans)
    reached = len(spans) / (last - first) / (8 / 0.2)
    return {"measure": "blocking", "code": version, "cases": 24, "ideal_s": 0.6,
            "run_s": round(run["seconds"], 3), "calls_span_s": round(last - first, 3),
            "share_of_concurrency_over_latency": round(reached, 3)}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks case_overhead")
    parser.add_argument("--only", default="desk,desk-cli,async-cli,blocking")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    wanted = args.only.split(",")
    pairs = versions(args.against)
    rows: dict[str, dict[str, dict]] = {label: {} for label, _ in pairs}
    for name in ("blocking", "async-cli", "desk-cli", "desk"):
        if name not in wanted:
            continue
        for version, env in pairs:  # alternately, so that a drift of the machine hits both
            if name == "blocking":
                row = blocking(version, env)
            elif name == "async-cli":
                row = async_cli(version, env)
            elif name == "desk-cli":
                row = desk_cli(version, env)
            else:
                row = desk(version, env, args.cases)
            print(json.dumps(row), flush=True)
            rows[version][name] = row
    print(finished())
    figures: dict[str, object] = {}
    for name, row in rows["this"].items():
        for key in FIGURES[name]:
            figures[f"{name.replace('-', '_')}_{key}"] = row[key]
    for ref in args.against:
        figures[f"this_over_{ref}"] = {
            f"{name.replace('-', '_')}_{key}": round(row[key] / rows[ref][name][key], 3)
            for name, row in rows["this"].items() for key in FIGURES[name]
            if rows[ref][name][key]}
    return {"figures": figures,
            "params": {"only": args.only, "cases": args.cases, "against": args.against},
            "details": rows}
