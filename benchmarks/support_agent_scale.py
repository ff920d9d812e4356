"""The support_agent example scaled to 20,000 distinct cases, cold and warm (agent trajectories
issue, #5). Targets on 2 cores: cold ≤ 8 s, warm ≤ 3 s, peak RSS ≤ 300 MB.

Each of the 40 cases is repeated 500 times with a distinct id and a distinct message (so every
case is a distinct execution). Usage: python benchmarks/support_agent_scale.py [--cases N]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "src" / "oloproof" / "examples" / "support_agent"

CHILD = """
import json, resource, sys, time
import oloproof
start = time.perf_counter()
result = oloproof.run(sys.argv[1])
doc = result.to_json()
print(json.dumps({"seconds": time.perf_counter() - start, "cases": doc["cases"],
                  "cache": doc["cache"], "gate": doc["gate"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def scale(project: Path, total: int) -> None:
    lines = (project / "data" / "cases.jsonl").read_text().splitlines()
    cases = [json.loads(line) for line in lines if line.strip()]
    with (project / "data" / "cases.jsonl").open("w") as out:
        for n in range(total):
            case = json.loads(json.dumps(cases[n % len(cases)]))
            case["id"] = f"{case['id']}-{n // len(cases):04d}"
            case["input"]["message"] += f" (request {n})"
            out.write(json.dumps(case) + "\n")


def measure(project: Path) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(project / "oloproof.yaml")],
                         capture_output=True, text=True, check=True,
                         env={"CI": "1", "PATH": "/usr/bin:/bin"})
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", type=int, default=20000)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="oloproof-sa-")) / "sa"
    try:
        shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
        scale(root, args.cases)
        for label in ("cold", "warm"):
            m = measure(root)
            print(json.dumps({"cases": m["cases"], "run": label, "seconds": round(m["seconds"], 3),
                              "peak_rss_mb": round(m["rss_mb"], 1), "cache": m["cache"],
                              "gate": m["gate"]}), flush=True)
    finally:
        shutil.rmtree(root.parent, ignore_errors=True)


if __name__ == "__main__":
    main()
