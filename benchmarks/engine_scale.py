"""Engine overhead at 2,000 / 20,000 / 200,000 cases, cold and warm (issue: core engine #8).

Each measurement runs `oloproof.run` in a fresh Python process on a synthetic project (a
trivial sync system and three output evaluators) and reports wall time, time per case and the
process's peak RSS. Usage: python benchmarks/engine_scale.py [--sizes 2000,20000,200000,20000]
[--against main]: with `--against REF`, every measurement is also taken with that revision's
code, alternately, in the same run (cold and warm each on a fresh project).

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

sys.path.insert(0, str(Path(__file__).parent))
from _synthetic import make_project
from _versions import load, revision, versions

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


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="2000,20000,200000,20000")
    parser.add_argument("--against", action="append", default=[],
                        help="also measure this git revision's code (e.g. main)")
    args = parser.parse_args()
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


if __name__ == "__main__":
    main()
