"""CPU per case of the coordinator (the thread running the event loop) and the store's writer
thread, in a cold run of the desk (issue 10 §5: 100 µs a case together).

The desk is `benchmarks/_desk.py`'s. With the GIL, every microsecond these two threads spend is
taken from the system's own threads (whose file I/O then waits for the interpreter), so the
figure that matters is their CPU, not the wall time. Each measurement is a fresh Python process
running `oloproof.run` on a new copy of the desk (20,000 distinct cases by default, a cold
store), reporting per thread:

- `main`: the thread that called `oloproof.run`, from the call to its return (loading the
  suite, planning, taking results, tallying, deciding, merging the staged rows); `oloproof.run`
  is imported before the clock starts, so the imports are not in it;
- `store`: the writer thread (`Writer._write_forever`);
- `lanes`: the lanes that run the system (`ThreadLanes._serve`), for scale;
- `store_close_s`: the wall time of `Store.close` at the run's end (the last batch, what is
  still staged merged, the writer thread stopped), which the run waits for.

The figures are this checkout's medians over the rounds, per case: `main_us`, `store_us`,
`coordinator_plus_store_us` (the target), `case_threads_us`, and `store_close_s`.

Arguments: [--cases 20000] [--rounds 2] [--concurrency N] [--against REF ...] [--calls]. With
`--against REF`, every round measures this checkout and each REF alternately, in the same run.
With `--calls`, one more run of each counts the Python function calls the main thread makes per
case (cProfile's count: the same on a busy machine as on a quiet one, unlike any time).
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

TARGETS = {"coordinator_plus_store_us": ("<=", 100.0)}

CHILD = """
import json, sys, threading, time
import oloproof
try:
    from oloproof.execution.transports.threads import ThreadLanes
except ImportError:  # (a revision before execution/lanes.py became execution/transports/)
    from oloproof.execution.lanes import ThreadLanes
from oloproof.store import writer

cpu = {"store": 0.0, "lanes": 0.0}
lock = threading.Lock()

def timed(cls, name, label):
    original = getattr(cls, name)
    def wrapper(*args, **kwargs):
        start = time.thread_time()
        try:
            return original(*args, **kwargs)
        finally:
            with lock:
                cpu[label] += time.thread_time() - start
    setattr(cls, name, wrapper)

timed(ThreadLanes, "_serve", "lanes")
timed(writer.Writer, "_write_forever", "store")

from oloproof.store import store as store_module
closing = store_module.Store.close
def close(self):  # the wall time the run waits for the store at its end (main thread)
    start = time.perf_counter()
    try:
        closing(self)
    finally:
        cpu["close_wall"] = cpu.get("close_wall", 0.0) + time.perf_counter() - start
store_module.Store.close = close
run = oloproof.run  # (imports oloproof.api before the clock starts)
kwargs = {"concurrency": int(sys.argv[2])} if sys.argv[2] != "0" else {}
calls = None
if sys.argv[3] == "calls":  # Python calls made on the main thread (deterministic; slow)
    import cProfile, pstats
    profile = cProfile.Profile()
    profile.enable()
wall, main = time.perf_counter(), time.thread_time()
result = run(sys.argv[1], **kwargs)
main, wall = time.thread_time() - main, time.perf_counter() - wall
if sys.argv[3] == "calls":
    profile.disable()
    calls = pstats.Stats(profile).total_calls
doc = result.to_json()
print(json.dumps({"wall": wall, "main": main, **cpu, "cases": doc["cases"], "calls": calls,
                  "executed": doc["cache"]["execution"]["miss"],
                  "metrics": [[m["id"], m["estimate"], m["lower"], m["upper"]]
                              for m in doc["metrics"]]}))
"""


def measure(env: dict[str, str], cases: int, concurrency: int, calls: bool = False) -> dict:
    root = Path(tempfile.mkdtemp(prefix="oloproof-coord-")) / "desk"
    try:
        make_desk(root, cases)
        out = subprocess.run([sys.executable, "-c", CHILD, str(root / "oloproof.yaml"),
                              str(concurrency), "calls" if calls else "time"],
                             capture_output=True, text=True, env=env, check=True)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def per_case(seconds: float, cases: int) -> float:
    return round(1e6 * seconds / cases, 1)


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks coordinator_case")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=0,
                        help="0: the suite's own (the desk's default, 8)")
    parser.add_argument("--against", action="append", default=[])
    parser.add_argument("--calls", action="store_true",
                        help="also count the Python calls the main thread makes per case, in "
                        "one more run of each revision (cProfile: a count, not a time)")
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    pairs = versions(args.against)
    seen: dict[str, list[dict]] = {label: [] for label, _ in pairs}
    for round_ in range(1, args.rounds + 1):
        for label, env in pairs:  # alternately, so that a drift of the machine hits both
            got = measure(env, args.cases, args.concurrency)
            seen[label].append(got)
            n = got["cases"]
            print(json.dumps({
                "code": label, "round": round_, "cases": n, "executed": got["executed"],
                "wall_s": round(got["wall"], 2),
                "main_us_per_case": per_case(got["main"], n),
                "store_us_per_case": per_case(got["store"], n),
                "coordinator_plus_store_us_per_case": per_case(got["main"] + got["store"], n),
                "case_threads_us_per_case": per_case(got["lanes"], n),
                "store_close_s": round(got.get("close_wall", 0.0), 3),
                "metrics": got["metrics"]}), flush=True)
    for label, rows in seen.items():
        both = [per_case(r["main"] + r["store"], r["cases"]) for r in rows if r["calls"] is None]
        if not both:  # (--rounds 0: calls only)
            continue
        print(f"{label}: coordinator + store {statistics.median(both)} us/case (median of "
              f"{len(both)}; {', '.join(map(str, both))})")
    if args.calls:
        for label, env in pairs:
            got = measure(env, args.cases, args.concurrency, calls=True)
            seen[label].append(got)
            print(f"{label}: main thread {got['calls'] / got['cases']:.1f} Python calls/case")
    metrics = {json.dumps(row["metrics"]) for rows in seen.values() for row in rows}
    print("the same metrics from every revision:", len(metrics) == 1)
    print(finished())
    timed = {label: [r for r in rows if r["calls"] is None] for label, rows in seen.items()}

    def median(label: str, *keys: str) -> float:
        return statistics.median(per_case(sum(r.get(k, 0.0) for k in keys), r["cases"])
                                 for r in timed[label])

    figures: dict[str, object] = {}
    if timed["this"]:
        figures = {"main_us": median("this", "main"), "store_us": median("this", "store"),
                   "coordinator_plus_store_us": median("this", "main", "store"),
                   "case_threads_us": median("this", "lanes"),
                   "store_close_s": round(statistics.median(
                       r.get("close_wall", 0.0) for r in timed["this"]), 3)}
    if args.calls:
        figures["main_calls_per_case"] = round(seen["this"][-1]["calls"]
                                               / seen["this"][-1]["cases"], 1)
    for ref in args.against:
        if timed["this"] and timed[ref]:
            figures[f"this_over_{ref}"] = {"coordinator_plus_store_us": round(
                median("this", "main", "store") / median(ref, "main", "store"), 3)}
    figures["same_metrics_from_every_revision"] = len(metrics) == 1
    return {"figures": figures,
            "params": {"cases": args.cases, "rounds": args.rounds,
                       "concurrency": args.concurrency or "the suite's (8)",
                       "against": args.against, "calls": args.calls},
            "details": {label: [{k: v for k, v in r.items() if k != "metrics"} for r in rows]
                        for label, rows in seen.items()}}
