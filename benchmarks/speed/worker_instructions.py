"""The worker's engine instructions per case under callgrind (issue 10 §5): a count that the
machine's load does not change, beside `worker_case`'s timings.

For each revision (`--against REF`, see `benchmarks/_versions.py`) four processes run under
`valgrind --tool=callgrind` (all at once): the desk of `benchmarks/_desk.py` through
`Worker.run_unit` for 200 warm-up cases and then 0 or `--cases` more, and the system alone (each
call in a recorder, as `case_overhead` counts the system's time) for the same cases. The
engine's instructions per case are (worker − system) of the `--cases` extra, less the same
difference of the warm-up-only runs (start-up and loading cancel out). Every process runs with
`PYTHONHASHSEED=0`: with random string hashes, sets and dicts of strings lay out differently
in each process, and the counts of one revision spread by 5k-24k instructions a case between
processes, more than the changes they are meant to tell apart.

The figures are this checkout's thousands of instructions a case (worker, system, engine).

Arguments: [--cases 2000] [--against REF ...] (needs valgrind; takes some minutes: callgrind
runs ~50x slower)
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._desk import make_desk
from benchmarks._versions import finished, load, revision, versions

TARGETS: dict[str, tuple[str, float]] = {}

CHILD = """
import sys
from pathlib import Path
from oloproof.execution.units import CaseJob, UnitJob
from oloproof.execution.worker import Worker
from oloproof.project import load_suite
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current

suite = load_suite(Path(sys.argv[1]))
n, mode = int(sys.argv[2]), sys.argv[3]
cases = [unit[0] for unit in suite.iter_units()][:200 + n]
if mode == "worker":
    judge = tuple(range(len(suite.evaluators)))
    worker = Worker(suite.target, suite.evaluators, None)
    for i, case in enumerate(cases):
        worker.run_unit(UnitJob(i, [CaseJob(case, judge)], []))
else:
    for case in cases:
        token = set_current(CaseRecorder(case.id, case.metadata))
        try:
            suite.target.call(case.input)
        finally:
            reset_current(token)
"""


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks worker_instructions")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    root = Path(tempfile.mkdtemp(prefix="oloproof-instr-"))
    per_label: dict[str, dict[str, float]] = {}
    try:
        suite = make_desk(root / "desk", args.cases + 200) / "oloproof.yaml"
        for label, env in versions(args.against):
            runs = {}
            for mode in ("worker", "system"):
                for n in (0, args.cases):
                    cmd = ["valgrind", "--tool=callgrind",
                           f"--callgrind-out-file={root}/{label}-{mode}-{n}.cg",
                           sys.executable, "-c", CHILD, str(suite), str(n), mode]
                    runs[mode, n] = subprocess.Popen(
                        cmd, env={**env, "PYTHONHASHSEED": "0"}, stdout=subprocess.DEVNULL,
                        stderr=subprocess.PIPE, text=True)
            count = {}
            for key, proc in runs.items():
                _, err = proc.communicate()
                found = re.search(r"Collected : (\d+)", err)
                if proc.returncode != 0 or found is None:
                    sys.exit(f"callgrind failed for {label} {key}: {err[-500:]}")
                count[key] = int(found.group(1))
            per_case = {mode: (count[mode, args.cases] - count[mode, 0]) / args.cases
                        for mode in ("worker", "system")}
            per_label[label] = {"worker_k": round(per_case["worker"] / 1000, 1),
                                "system_k": round(per_case["system"] / 1000, 1),
                                "engine_k": round(
                                    (per_case["worker"] - per_case["system"]) / 1000, 1)}
            print(f"{label}: worker {per_case['worker'] / 1000:.1f}k, system "
                  f"{per_case['system'] / 1000:.1f}k, engine "
                  f"{(per_case['worker'] - per_case['system']) / 1000:.1f}k instructions/case",
                  flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(finished())
    figures: dict[str, object] = dict(per_label["this"])
    for ref in args.against:
        figures[f"{ref}_engine_k"] = per_label[ref]["engine_k"]
    return {"figures": figures, "params": {"cases": args.cases, "against": args.against},
            "details": per_label}
