"""Repeated trials at scale: 2,000 cases × 8 trials against 16,000 cases × 1 trial — the same
executions — cold (≤ 1.5× its time), and peak memory against trials (issue 12, acceptance 6).

Each measurement runs `oloproof.run` in a fresh Python process on the synthetic project of
`engine_scale.py` (a trivial sync system, three output evaluators, one metadata slice) and
reports wall time and the process's peak RSS. The target: 2,000 × 8 takes at most 1.5× the time
of 16,000 × 1, and memory stays flat in trials (2,000 × 8 near 2,000 × 1, and below 16,000 × 1,
which holds eight times the cases).

This VM's speed drifts over tens of seconds, so the sizes are measured in rounds, alternately,
and every ratio is taken within one round. The figures: the median time ratio (target ≤ 1.5),
the median peak-RSS ratios of 2,000 × 8 to 2,000 × 1 and to 16,000 × 1 (the second below 1:
memory flat in trials), and Python's own heap peak at 1, 8 and 32 trials.

Arguments: [--rounds 3] [--cases 2000] [--trials 8]
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

from benchmarks._synthetic import make_project
from benchmarks._versions import load, revision

TARGETS = {"time_trials_over_flat": ("<=", 1.5), "rss_trials_over_flat": ("<", 1.0)}

CHILD = """
import json, resource, sys, time, tracemalloc
import oloproof
if sys.argv[3] == "small_cache":  # SQLite's page cache at 2 MB instead of 64 MB
    import oloproof.store.sql as sql, oloproof.store.store as store, oloproof.store.writer as w
    plain = sql.connect
    def connect(path):
        conn = plain(path)
        conn.execute("PRAGMA cache_size=-2000")
        return conn
    sql.connect = store.connect = w.connect = connect
traced = sys.argv[3] == "traced"
if traced:  # Python's own allocations (slower: never timed)
    tracemalloc.start()
start = time.perf_counter()
result = oloproof.run(sys.argv[1], trials=int(sys.argv[2]))
elapsed = time.perf_counter() - start
doc = result.to_json()
print(json.dumps({"seconds": elapsed, "cases": doc["cases"], "cache": doc["cache"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "python_peak_mb": tracemalloc.get_traced_memory()[1] / 1e6 if traced
                  else None}))
"""


def measure(cases: int, trials: int, mode: str = "plain") -> dict[str, float]:
    """One cold run (a fresh project and store) in a fresh process. `mode` "traced": with
    Python's allocations traced (their peak in `python_peak_mb`; the time is then not
    comparable); "small_cache": with SQLite's page cache at 2 MB."""
    root = Path(tempfile.mkdtemp(prefix=f"oloproof-trials-{cases}x{trials}-"))
    try:
        make_project(root, cases)
        out = subprocess.run(
            [sys.executable, "-c", CHILD, str(root / "oloproof.yaml"), str(trials),
             mode],
            capture_output=True, text=True, check=True, env={"CI": "1", "PATH": "/usr/bin:/bin"})
        found: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
        assert found["cache"]["execution"]["miss"] == cases * trials, found  # type: ignore
        return found
    finally:
        shutil.rmtree(root, ignore_errors=True)


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks trials_scale")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--trials", type=int, default=8)
    args = parser.parse_args(argv)
    small, k = args.cases, args.trials
    shapes = [(small * k, 1), (small, k), (small, 1)]
    print(f"this checkout: {revision()}; {load()}", flush=True)
    ratios, rss_small, rss_big = [], [], []
    rows: list[dict] = []
    for n in range(1, args.rounds + 1):
        got = {}
        for cases, trials in shapes:
            m = measure(cases, trials)
            got[(cases, trials)] = m
            rows.append({"round": n, "cases": cases, "trials": trials,
                         "executions": cases * trials, "seconds": round(m["seconds"], 3),
                         "peak_rss_mb": round(m["rss_mb"], 1)})
            print(json.dumps(rows[-1]), flush=True)
        trial_run, flat_run, one_run = got[(small, k)], got[(small * k, 1)], got[(small, 1)]
        ratios.append(trial_run["seconds"] / flat_run["seconds"])
        rss_small.append(trial_run["rss_mb"] / one_run["rss_mb"])
        rss_big.append(trial_run["rss_mb"] / flat_run["rss_mb"])
        print(f"round {n}: time {small}×{k} / {small * k}×1 = {ratios[-1]:.2f}; peak RSS "
              f"{small}×{k} / {small}×1 = {rss_small[-1]:.2f}, / {small * k}×1 = "
              f"{rss_big[-1]:.2f}", flush=True)
    print(f"median over {args.rounds} rounds: time ratio {statistics.median(ratios):.2f} "
          f"(target ≤ 1.5); RSS vs {small}×1 {statistics.median(rss_small):.2f}, vs "
          f"{small * k}×1 {statistics.median(rss_big):.2f}")
    # Peak RSS also holds SQLite's page caches (64 MB per connection at most), which fill
    # with the rows written — executions, whatever their trials. What the run itself holds
    # is Python's heap: traced here, at 1, k and 4k trials, and at k times the cases.
    memory: list[dict] = []
    for cases, trials in [(small, 1), (small, k), (small, 4 * k), (small * k, 1)]:
        traced = measure(cases, trials, "traced")
        small_cache = measure(cases, trials, "small_cache")
        plain = measure(cases, trials)
        memory.append({"cases": cases, "trials": trials, "executions": cases * trials,
                       "python_peak_mb": round(traced["python_peak_mb"], 1),
                       "peak_rss_mb": round(plain["rss_mb"], 1),
                       "peak_rss_mb_2mb_page_cache": round(small_cache["rss_mb"], 1)})
        print(json.dumps(memory[-1]), flush=True)
    return {"figures": {
        "time_trials_over_flat": round(statistics.median(ratios), 2),
        "rss_trials_over_one": round(statistics.median(rss_small), 2),
        "rss_trials_over_flat": round(statistics.median(rss_big), 2),
        "python_peak_mb": {f"{m['trials']}_trials": m["python_peak_mb"]
                           for m in memory[:3]},
    }, "params": {"cases": small, "trials": k, "rounds": args.rounds},
        "details": {"rounds": rows, "memory": memory}}
