"""Comparing two stored 20,000-case runs: `oloproof compare` as a user types it and the library
call (issue 14, acceptance 6: at most 2 s).

A synthetic project of N cases whose system records a three-step trajectory and answers
wrongly the cases a file names. The baseline run gets every case right but 1 in 50; the
candidate breaks 1 in 50 others and fixes 1 in 100 of the baseline's failures (so hundreds of
broken cases, their trajectories read for "what changed"), and between the runs 10 cases
change their input, 10 are dropped and 10 added. Both runs are stored once; then, alternately
in rounds (this VM's speed drifts, so every figure of a round is taken in the same minute):

- `oloproof compare latest~1 latest` as a user types it — a fresh process, terminal report
  at 80 columns to a pipe — and the same with `--json`, and with `--junit` and `--markdown`;
- `oloproof.compare("latest~1", "latest")` in a fresh process, the call alone (imports apart),
  then called again in that process.

Each figure is wall time and, beside it, the CPU time the process used (user + system, from
`getrusage`): on this shared 2-core VM the wall time grows with the neighbours' load, the CPU
time much less. `--before REF` also times the same command with REF's `src/` (exported by
`_versions`) in the same rounds, so the before/after ratio is measured in one run.

The figures are medians over the rounds: `command_s` (the terminal report; the target),
`command_cpu_s`, `json_s`, `junit_markdown_s`, `call_first_s` and `call_again_s`, and with
`--before` the median before / after ratio of the command's wall time.

Arguments: [--cases 20000] [--rounds 5] [--before REF]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._versions import ROOT, child_env, load, revision, versions

TARGETS = {"command_s": ("<=", 2.0), "second_call_same_document": ("==", True)}
QUICK = ["--rounds", "3"]

APP = '''
import json
from pathlib import Path

from oloproof import AgentStep, AgentTrajectory, current_case, system

WRONG = set(json.loads((Path(__file__).parent / "wrong.json").read_text()))


@system(name="bench-agent", version="{version}", records=("agent_trajectory/v1",))
def run(case_input):
    case = current_case()
    bad = case.case_id in WRONG
    answer = "no" if bad else case_input["q"].upper()
    case.agent_trajectory(AgentTrajectory(steps=(
        AgentStep(index=1, kind="tool_call", tool_name="lookup", arguments={"q": case_input["q"]}),
        AgentStep(index=2, kind="tool_result", tool_name="lookup", result={"found": not bad}),
        AgentStep(index=3, kind="final", arguments={"answer": answer}),
    ), terminal_status="success"))
    return {"answer": answer}
'''

SUITE = """version: 1
project: compare-bench
dataset: data/cases.jsonl
system: {{name: bench-agent, version: {version}, callable: "app:run",
         records: [agent_trajectory/v1]}}
evaluators:
  - {{type: exact_match, criterion: answer_correct, field: answer}}
  - {{type: agent_tool_called, tool_name: lookup}}
  - {{type: agent_max_steps, max_steps: 5}}
"""

POLICY = """version: 1
rules:
  - {id: answers, metric: answer_correct, min: 0.9}
"""

CALL = """
import json, sys, time
t0 = time.perf_counter()
import oloproof
t1 = time.perf_counter()
first = oloproof.compare("latest~1", "latest")
t2 = time.perf_counter()
again = oloproof.compare("latest~1", "latest")
t3 = time.perf_counter()
row = first.criteria[0]
print(json.dumps({"import": t1 - t0, "call": t2 - t1, "again": t3 - t2,
                  "paired": row.paired, "broken": row.broken, "fixed": row.fixed,
                  "changed": len(first.changed), "baseline_only": len(first.baseline_only),
                  "candidate_only": len(first.candidate_only),
                  "same": again.to_json() == first.to_json()}))
"""


def _cases(n: int, changed: bool) -> list[dict[str, object]]:
    rows = []
    for i in range(n + 10 if changed else n):
        if changed and i < 10:
            continue  # dropped from the candidate's suite
        q = f"question {i} about order ord-{i % 977}"
        if changed and 100 <= i < 110:
            q += " (reworded)"
        rows.append({"id": f"case-{i:06d}", "input": {"q": q}, "expected": {"answer": q.upper()}})
    return rows


def _write(root: Path, n: int, candidate: bool) -> None:
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text(APP.replace("{version}", "v2" if candidate else "v1"))
    (root / "oloproof.yaml").write_text(SUITE.format(version="v2" if candidate else "v1"))
    (root / "release.yaml").write_text(POLICY)
    with (root / "data" / "cases.jsonl").open("w") as out:
        for case in _cases(n, candidate):
            out.write(json.dumps(case) + "\n")
    if candidate:  # 1 in 50 others broken; 1 in 100 of the baseline's failures fixed
        wrong = [i for i in range(n + 10) if i % 50 == 25 or (i % 50 == 0 and i % 100 != 0)]
    else:
        wrong = [i for i in range(n) if i % 50 == 0]
    (root / "wrong.json").write_text(json.dumps([f"case-{i:06d}" for i in wrong]))


def _store_runs(root: Path, n: int) -> None:
    for candidate in (False, True):
        _write(root, n, candidate)
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "oloproof.cli.main", "run"],
                              cwd=root, capture_output=True, text=True)
        if done.returncode not in (0, 1, 3):
            raise SystemExit(done.stderr)
        print(f"stored the {'candidate' if candidate else 'baseline'} run "
              f"({time.perf_counter() - started:.1f} s)", file=sys.stderr)


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(args: list[str], root: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child process."""
    cpu = _cpu()
    started = time.perf_counter()
    done = subprocess.run(args, cwd=root, env=env, capture_output=True,
                          text=True)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(args)} exited {done.returncode}: {done.stderr}")
    return elapsed, _cpu() - cpu


def _row(label: str, values: list[tuple[float, float]]) -> str:
    wall = [w for w, _ in values]
    cpu = [c for _, c in values]
    return (f"| {label} | {statistics.median(wall):.2f} | {min(wall):.2f} | {max(wall):.2f} | "
            f"{statistics.median(cpu):.2f} |")


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks compare_scale")
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--before", default=None, metavar="REF")
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="oloproof-compare-bench-"))
    try:
        _store_runs(root, args.cases)
        builds = versions([args.before] if args.before else [])
        compare = [sys.executable, "-m", "oloproof.cli.main", "compare", "latest~1", "latest"]
        commands: dict[str, tuple[list[str], dict[str, str]]] = {}
        for label, env in builds:
            env = {**env, "COLUMNS": "80", "HOME": os.environ.get("HOME", "/tmp")}
            tag = "" if label == "this" else f" ({label}, {revision(label)})"
            commands[f"`oloproof compare latest~1 latest`{tag}"] = (compare, env)
            if label == "this":
                commands["`oloproof compare latest~1 latest --json`"] = (compare + ["--json"], env)
                commands["`oloproof compare latest~1 latest --junit c.xml --markdown c.md`"] = (
                    compare + ["--junit", "c.xml", "--markdown", "c.md"], env)
        call_env = {**child_env(ROOT / "src"), "COLUMNS": "80"}
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in commands}
        calls: list[dict[str, float]] = []
        loads = [load()]
        for _ in range(args.rounds):
            for name, (command, env) in commands.items():
                times[name].append(_timed(command, root, env))
            done = subprocess.run([sys.executable, "-c", CALL], cwd=root, env=call_env,
                                  capture_output=True, text=True, check=True)
            calls.append(json.loads(done.stdout))
        loads.append(load())
        facts = calls[0]
        print(f"{args.cases:,} cases per run: {facts['paired']:,} paired, "
              f"{facts['broken']} broken and {facts['fixed']} fixed on answer_correct, "
              f"{facts['changed']} changed, {facts['baseline_only']} in the baseline only, "
              f"{facts['candidate_only']} in the candidate only; the second call gave the same "
              f"document: {all(c['same'] for c in calls)}. This checkout: {revision()}; "
              f"{loads[0]} before, {loads[1]} after.\n")
        print(f"| measured ({args.rounds} rounds) | median wall s | min | max | median CPU s |")
        print("|---|---|---|---|---|")
        for name, values in times.items():
            print(_row(name, values))
        for key, label in (("import", "`import oloproof` (in that process)"),
                           ("call", "`oloproof.compare(...)`, first call in a fresh process"),
                           ("again", "`oloproof.compare(...)`, called again")):
            values = [c[key] for c in calls]
            print(f"| {label} | {statistics.median(values):.2f} | {min(values):.2f} | "
                  f"{max(values):.2f} | |")
        names = list(times)
        figures: dict[str, object] = {
            "command_s": round(statistics.median(w for w, _ in times[names[0]]), 3),
            "command_cpu_s": round(statistics.median(c for _, c in times[names[0]]), 3),
            "call_first_s": round(statistics.median(c["call"] for c in calls), 3),
            "call_again_s": round(statistics.median(c["again"] for c in calls), 3),
            "json_s": round(statistics.median(w for w, _ in times[names[1]]), 3),
            "junit_markdown_s": round(statistics.median(w for w, _ in times[names[2]]), 3),
            "second_call_same_document": all(c["same"] for c in calls),
        }
        if args.before:
            name = next(n for n in times if args.before in n)
            ratios = [b[0] / t[0] for b, t in zip(times[name],
                                                  times["`oloproof compare latest~1 latest`"],
                                                  strict=True)]
            print("\nBefore / after, per round (wall): "
                  + ", ".join(f"{r:.2f}×" for r in ratios)
                  + f"; median {statistics.median(ratios):.2f}×")
            figures["before_over_after"] = round(statistics.median(ratios), 3)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return {"figures": figures,
            "params": {"cases": args.cases, "rounds": args.rounds, "before": args.before},
            "details": {"facts": {k: v for k, v in facts.items() if k not in
                                  ("import", "call", "again", "same")},
                        "wall_cpu_s": {name: [[round(w, 3), round(c, 3)] for w, c in values]
                                       for name, values in times.items()}}}
