"""Large sandboxes: a 6 MB initial state shared by `$ref` across 200 cases, cold and warm; the
store stays well under 50 MB and a warm re-run executes nothing (stateful issue, #5).

Each case changes a few records, judged with `state_matches` mode `changes`. Reports the
store's size (target: well under 50 MB, written ≤ 50), that a warm rerun executes nothing, and
wall time and peak RSS of the cold and warm runs. No arguments.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

TARGETS = {"store_mb_after_warm": ("<=", 50.0), "warm_executed": ("==", 0)}

APP = '''
from oloproof import system


class Warehouse:
    """A sandbox of 50,000 stock records; a case moves stock between two of them."""

    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    @system(name="warehouse", version="v1")
    def __call__(self, case_input):
        items = self.state["items"]
        source, target, qty = case_input["from"], case_input["to"], case_input["qty"]
        items[source]["stock"] -= qty
        items[target]["stock"] += qty
        self.state["moves"] = self.state.get("moves", 0) + 1
        return {"moved": qty}


warehouse = Warehouse()
'''

SUITE = """version: 1
project: state-scale
dataset: data/cases.jsonl
system: {name: warehouse, version: v1, callable: "app:warehouse", concurrency: 8}
evaluators:
  - {type: state_matches, mode: changes}
"""

CHILD = """
import json, resource, sys, time
import oloproof
start = time.perf_counter()
result = oloproof.run(sys.argv[1])
doc = result.to_json()
print(json.dumps({"seconds": time.perf_counter() - start, "cache": doc["cache"],
                  "metric": doc["metrics"][0],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def make(root: Path, cases: int = 200, records: int = 50_000) -> float:
    (root / "data" / "states").mkdir(parents=True)
    items = {f"sku-{i:05d}": {"stock": 100 + i % 50, "name": f"item {i} " + "x" * 60,
                              "bin": f"B{i % 400:03d}"} for i in range(records)}
    state_file = root / "data" / "states" / "warehouse.json"
    state_file.write_text(json.dumps({"items": items}))
    (root / "app.py").write_text(APP)
    (root / "oloproof.yaml").write_text(SUITE)
    (root / "release.yaml").write_text("version: 1\nrules: []\n")
    with (root / "data" / "cases.jsonl").open("w") as out:
        for n in range(cases):
            a, b = f"sku-{(7 * n) % records:05d}", f"sku-{(7 * n + 3) % records:05d}"
            qty = 1 + n % 5
            before_a, before_b = items[a]["stock"], items[b]["stock"]
            case = {"id": f"move-{n:03d}", "input": {"from": a, "to": b, "qty": qty},
                    "initial_state": {"$ref": "states/warehouse.json"},
                    "expected": {"state": {"items": {a: {"stock": before_a - qty},
                                                     b: {"stock": before_b + qty}},
                                           "moves": 1}}}
            out.write(json.dumps(case) + "\n")
    return state_file.stat().st_size / 1e6


def store_mb(root: Path) -> float:
    return sum(p.stat().st_size for p in (root / ".oloproof").glob("*")) / 1e6


def measure(root: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(root / "oloproof.yaml")],
                         capture_output=True, text=True, check=True,
                         env={"CI": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def run(argv: list[str]) -> dict:
    if argv:
        raise SystemExit(f"state_scale takes no arguments, not {argv}")
    root = Path(tempfile.mkdtemp(prefix="oloproof-state-"))
    try:
        state_size = make(root)
        cold = measure(root)
        after_cold = store_mb(root)
        warm = measure(root)
        after_warm = store_mb(root)
        m = cold["metric"]
        figures = {
            "cold_s": round(cold["seconds"], 2), "cold_rss_mb": round(cold["rss_mb"], 1),
            "warm_s": round(warm["seconds"], 2), "warm_rss_mb": round(warm["rss_mb"], 1),
            "store_mb_after_warm": round(after_warm, 2),
            "warm_executed": warm["cache"]["execution"]["miss"],
            "state_matches": f"{m['passed']} / {m['observed']} observed · {m['missing']} missing",
        }
        print(json.dumps(figures))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"figures": figures,
            "params": {"cases": 200, "initial_state_mb": round(state_size, 2)},
            "details": {"store_mb_after_cold": round(after_cold, 2),
                        "warm_execution": warm["cache"]["execution"]}}
