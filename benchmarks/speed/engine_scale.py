"""Engine overhead at 2,000 / 20,000 / 200,000 cases of a trivial system, cold and warm: time
per case, peak RSS, growth (issue: core engine #8).

Each measurement runs `oloproof.run` in a fresh Python process on a synthetic project (a
trivial sync system and three output evaluators) and reports wall time, time per case and the
process's peak RSS. Arguments: [--sizes 2000,20000,200000,20000] [--against main]: with
`--against REF`, every measurement is also taken with that revision's code, alternately, in
the same run (cold and warm each on a fresh project). The figures are this checkout's: ms per
case cold and warm at each size (the mean of a size measured twice), the peak RSS at the
largest, and the growth 200k / 20k cold; every row is in the saved JSON's details.

This VM's speed drifts by up to a third over tens of seconds, so the 20,000-case suite is measured
both before and after the 200,000-case one, and the growth is taken against each and their mean.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._synthetic import make_project
from benchmarks._versions import load, revision, versions

TARGETS: dict[str, tuple[str, float]] = {}

CHILD = """
import json, resource, sys, time
import oloproof
start = time.perf_counter()
result = oloproof.run(sys.argv[1])
elapsed = time.perf_counter() - start
doc = result.to_json()
print(json.dumps({"seconds": elapsed, "cases": doc["cases"], "cache": doc["cache"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def measure(project: Path, env: dict[str, str]) -> dict[str, float]:
    out = subprocess.run([sys.executable, "-c", CHILD, str(project / "oloproof.yaml")],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks engine_scale")
    parser.add_argument("--sizes", default="2000,20000,200000,20000")
    parser.add_argument("--against", action="append", default=[],
                        help="also measure this git revision's code (e.g. main)")
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    rows = []
    for size in [int(s) for s in args.sizes.split(",")]:
        for version, env in versions(args.against):
            root = Path(tempfile.mkdtemp(prefix=f"oloproof-bench-{size}-"))
            try:
                make_project(root, size)
                cold = measure(root, env)
                warm = measure(root, env)
            finally:
                shutil.rmtree(root, ignore_errors=True)
            for label, m in (("cold", cold), ("warm", warm)):
                row = {"code": version, "cases": size, "run": label,
                       "seconds": round(m["seconds"], 3),
                       "ms_per_case": round(1000 * m["seconds"] / size, 4),
                       "peak_rss_mb": round(m["rss_mb"], 1),
                       "execution": m["cache"]["execution"]}
                rows.append(row)
                print(json.dumps(row), flush=True)
    by: dict[tuple[str, int, str], list[float]] = {}
    figures: dict[str, object] = {"cold_ms_per_case": {}, "warm_ms_per_case": {}}
    for r in rows:
        by.setdefault((r["code"], r["cases"], r["run"]), []).append(r["seconds"])
    for version, _ in versions([]) + [(a, {}) for a in args.against]:
        if (version, 20000, "cold") in by and (version, 200000, "cold") in by:
            for label in ("cold", "warm"):
                big, small = by[(version, 200000, label)][0], by[(version, 20000, label)]
                each = ", ".join(f"{big / t:.2f}x" for t in small)
                print(f"{version}: growth 200k/20k {label}: "
                      f"{big / (sum(small) / len(small)):.2f}x against the mean of the 20k runs "
                      f"({each} against each)")
    for ref in args.against:
        for (version, size, label), seconds in sorted(by.items()):
            if version == "this" and (ref, size, label) in by:
                theirs = by[(ref, size, label)]
                print(f"{size} {label}: this / {ref} = "
                      f"{sum(seconds) / sum(theirs):.3f} (seconds {seconds} vs {theirs})")
    print(f"machine: {platform.machine()}, {platform.python_version()}, "
          f"{time.strftime('%Y-%m-%d %H:%M')}; {load()}")
    for (version, size, label), seconds in by.items():
        if version == "this":
            figures[f"{label}_ms_per_case"][str(size)] = round(  # type: ignore[index]
                1000 * sum(seconds) / len(seconds) / size, 4)
    largest = max(r["cases"] for r in rows)
    figures["peak_rss_mb_largest"] = max(r["peak_rss_mb"] for r in rows
                                         if r["code"] == "this" and r["cases"] == largest)
    if ("this", 20000, "cold") in by and ("this", 200000, "cold") in by:
        small = by[("this", 20000, "cold")]
        figures["growth_200k_over_20k_cold"] = round(
            by[("this", 200000, "cold")][0] / (sum(small) / len(small)), 2)
    for ref in args.against:
        figures[f"this_over_{ref}"] = {
            f"{label}_{size}": round(sum(seconds) / sum(by[(ref, size, label)]), 3)
            for (version, size, label), seconds in sorted(by.items())
            if version == "this" and (ref, size, label) in by}
    first = ("growth_200k_over_20k_cold", "peak_rss_mb_largest")  # the most telling first
    figures = {**{k: figures[k] for k in first if k in figures},
               **{k: v for k, v in figures.items() if k not in first}}
    return {"figures": figures, "params": {"sizes": args.sizes, "against": args.against},
            "details": {"rows": rows}}
