"""The validating pass over a dataset: `suite.dataset.scan_dataset`'s CPU per line, on the
desk's 20,000 lines.

Every run reads its whole dataset once before the first call (a broken line anywhere stops it
first), so this pass is a share of every case's coordinator time. The dataset is the desk of
`benchmarks/_desk.py` (20,000 distinct cases by default); each measurement is a fresh Python
process timing `scan_dataset` over it `--repeats` times and reporting the fastest, in
microseconds of CPU per line (`time.process_time`, the figure a loaded machine disturbs least).

Arguments: [--cases 20000] [--rounds 5] [--repeats 5] [--against REF ...]. With `--against
REF`, every round measures this checkout and each REF alternately, in the same run; the
ratios are what to read.

The target (≤ 15 µs a line, the median of the rounds) is a coarse guard against a regression,
not an issue's promise, since every case of every run pays this pass: about 1.5× the most it
measured on the shared machine on 2026-12-06 (8.2–10.4 µs in four runs at load 5–11; the CPU
time of one pass moves with what the neighbours do to the caches), 2× the figures before issue
27's key counts (6.7–7.3 µs at load 5–7, benchmarks/history/2026-12-04-dataset-scan.md).
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

TARGETS = {"us_per_line": ("<=", 15.0)}
QUICK = ["--rounds", "3"]

CHILD = """
import json, sys, time
from pathlib import Path
from oloproof.suite.dataset import scan_dataset
from oloproof.suite.state_files import StateFiles

path, repeats = Path(sys.argv[1]), int(sys.argv[2])
best = None
for _ in range(repeats):
    started = time.process_time()
    index = scan_dataset(path, StateFiles(path.parent))
    spent = time.process_time() - started
    best = spent if best is None else min(best, spent)
print(json.dumps({"lines": len(index), "seconds": best}))
"""


def measure(env: dict[str, str], dataset: Path, repeats: int) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(dataset), str(repeats)],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks dataset_scan")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="oloproof-scan-")) / "desk"
    try:
        make_desk(root, args.cases)
        dataset = root / "data" / "cases.jsonl"
        pairs = versions(args.against)
        seen: dict[str, list[float]] = {label: [] for label, _ in pairs}
        for round_ in range(1, args.rounds + 1):
            for label, env in pairs:  # alternately, so that a drift of the machine hits both
                got = measure(env, dataset, args.repeats)
                per_line = round(1e6 * got["seconds"] / got["lines"], 2)
                seen[label].append(per_line)
                print(json.dumps({"code": label, "round": round_, "lines": got["lines"],
                                  "us_per_line": per_line}), flush=True)
        medians = {label: statistics.median(rows) for label, rows in seen.items()}
        for label, rows in seen.items():
            print(f"{label}: {medians[label]} us/line (median of {len(rows)}; "
                  f"{', '.join(map(str, rows))})")
        for label in list(medians)[1:]:
            print(f"this / {label}: {medians['this'] / medians[label]:.3f}")
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)
    print(finished())
    figures: dict[str, object] = {"us_per_line": round(medians["this"], 2),
                                  "fastest_round_us_per_line": min(seen["this"])}
    for label in list(medians)[1:]:
        figures[f"this_over_{label}"] = round(medians["this"] / medians[label], 3)
    return {"figures": figures,
            "params": {"cases": args.cases, "rounds": args.rounds, "repeats": args.repeats,
                       "against": args.against},
            "details": {"us_per_line": seen}}
