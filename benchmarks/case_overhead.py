"""Per-case overhead of the engine, with the system's own time measured in the same run.

Four measurements (issue 10 §3 and §5), each in fresh Python processes:

- `desk`: a refund desk like `support_agent`'s that reads its orders file on every call (a
  little real I/O, as an agent that reads its tools' data does), judged by `support_agent`'s
  six agent evaluators, two quantile metrics and four slices, on 20,000 distinct cases: the
  `oloproof.run` call, cold and warm. Engine overhead per case = (run − the system's own
  time) / cases, the system's own time being the same agent called on the same 20,000 inputs
  in a plain loop (each call inside a case recorder, which it needs). The same agent is also
  timed on 8 plain threads -- the concurrency the run uses -- since its own file I/O then
  waits on the GIL whoever calls it; the overhead is reported against both.
- `desk-cli`: the same desk on 2,000 cases, the whole `oloproof run` command (start-up,
  imports, loading, running, deciding, storing, printing), cold, against the system's own time.
- `async-cli`: an async system awaiting 50 ms, 2,000 cases at `concurrency: 64`, the whole
  `oloproof run` command against the ideal ceil-free 2000 / 64 × 50 ms = 1.5625 s.
- `blocking`: a sync system blocking 0.2 s per call, 24 cases at `concurrency: 8` (ideal
  0.6 s): the `oloproof.run` call, and from the calls' own start and end times the
  throughput reached as a share of concurrency / latency, from the first case.

Usage: python benchmarks/case_overhead.py [--only desk,desk-cli,async-cli,blocking]
[--cases 20000] [--against REF ...]. With `--against REF`, every measurement is also taken
with that revision's code, alternately, in the same run.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _synthetic import make_project
from _versions import finished, load, revision, versions

# ---- the desk ---------------------------------------------------------------------------------

DESK_APP = '''
"""A refund desk like support_agent's: it reads its orders file on every call."""
import json
from pathlib import Path

from oloproof import AgentConstraintCheck, AgentStep, AgentTrajectory, current_case, system

ORDERS = Path(__file__).with_name("orders.json")


@system(name="desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input):
    orders = json.loads(ORDERS.read_text())
    steps = [AgentStep(index=1, kind="message", arguments={"text": case_input["message"]})]

    def call(tool, **arguments):
        steps.append(AgentStep(index=len(steps) + 1, kind="tool_call", tool_name=tool,
                               arguments=arguments))
        if tool == "lookup_order":
            order = orders.get(arguments["order_id"])
            result = {"error": "not_found"} if order is None else order
        else:
            result = {"refund_id": "rf-" + arguments["order_id"]}
        steps.append(AgentStep(index=len(steps) + 1, kind="tool_result", tool_name=tool,
                               result=result))
        return result

    order = call("lookup_order", order_id=case_input["order_id"])
    if "error" in order:
        answer = "not_found"
    elif order["days_since_delivery"] <= 30:
        call("issue_refund", order_id=case_input["order_id"])
        answer = "refunded"
    else:
        answer = "declined"
    steps.append(AgentStep(index=len(steps) + 1, kind="final", arguments={"answer": answer}))
    current_case().agent_trajectory(AgentTrajectory(
        steps=tuple(steps), terminal_status="success",
        constraints=(AgentConstraintCheck(name="no_deletion", passed=True,
                                          step_index=len(steps)),)))
    return {"answer": answer}
'''

# support_agent's suite: six agent evaluators, two quantile metrics, four slices.
DESK_SUITE = """version: 1
project: desk
dataset: data/cases.jsonl
system: {name: desk, version: v1, callable: "app:run", records: [agent_trajectory/v1]}
evaluators:
  - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}
  - {type: agent_tool_called, tool_name: lookup_order}
  - {type: agent_no_tool_loop, max_repeats: 2}
  - {type: agent_tool_sequence}
  - {type: agent_constraints_satisfied, constraints: [no_deletion]}
  - {type: agent_max_steps, max_steps: 10}
metrics:
  - {id: steps_p95, type: quantile, source: agent_steps, quantile: 0.95}
  - {id: tool_calls_p50, type: quantile, source: agent_tool_calls, quantile: 0.5}
slices: [metadata.surface, first_tool, repeated_action, "trajectory_length:4,8"]
min_slice_support: 3
"""

DESK_POLICY = """version: 1
rules:
  - {id: answers, metric: answer_correct, min: 0.9}
  - {id: looks-first, metric: agent_tool_lookup_order_called, min: 0.9}
  - {id: no-deletion, metric: agent_constraints_satisfied, kind: observed_count, max_failures: 0}
"""


def make_desk(root: Path, total: int) -> Path:
    """The desk's project with `total` distinct cases (40 orders, one request each)."""
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(DESK_APP)
    (root / "oloproof.yaml").write_text(DESK_SUITE)
    (root / "release.yaml").write_text(DESK_POLICY)
    orders = {f"ord-{n:03d}": {"order_id": f"ord-{n:03d}", "customer_id": f"cus-{100 + n}",
                               "amount": round(9.5 + 3.25 * n, 2), "status": "delivered",
                               "days_since_delivery": (n * 7) % 61}
              for n in range(1, 41)}
    (root / "orders.json").write_text(json.dumps(orders))
    with (root / "data" / "cases.jsonl").open("w") as out:
        for n in range(total):
            order_id = f"ord-{n % 45 + 1:03d}"  # a few are not on file
            order = orders.get(order_id)
            answer = ("not_found" if order is None else
                      "refunded" if order["days_since_delivery"] <= 30 else "declined")
            tools = ["lookup_order", "issue_refund"] if answer == "refunded" else ["lookup_order"]
            out.write(json.dumps({
                "id": f"req-{n:06d}",
                "input": {"order_id": order_id, "message": f"Please refund {order_id} ({n})."},
                "expected": {"answer": answer, "tools": tools},
                "metadata": {"surface": ("chat", "email", "phone")[n % 3]}}) + "\n")
    return root


SYSTEM_TIME = """
import json, queue, sys, threading, time
sys.path.insert(0, sys.argv[1])
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
import app
cases = [json.loads(line) for line in open(sys.argv[2]) if line.strip()]
threads = int(sys.argv[3])
todo = queue.SimpleQueue()
for case in cases:
    todo.put(case)
def serve():
    while True:
        try:
            case = todo.get_nowait()
        except queue.Empty:
            return
        recorder = CaseRecorder(case["id"], case.get("metadata"))
        token = set_current(recorder)
        try:
            app.run(case["input"])
        finally:
            reset_current(token)
start = time.perf_counter()
if threads == 1:
    serve()
else:
    pool = [threading.Thread(target=serve) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
print(json.dumps({"seconds": time.perf_counter() - start}))
"""

RUN = """
import json, resource, sys, time
import oloproof
start = time.perf_counter()
result = oloproof.run(sys.argv[1])
doc = result.to_json()
print(json.dumps({"seconds": time.perf_counter() - start, "cases": doc["cases"],
                  "cache": doc["cache"]["execution"], "gate": doc["gate"]["action"],
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

CLI = "from oloproof.cli.main import main; main()"

# The suite sets no `concurrency:`, so the run calls the desk on this many threads
# (docs/configuration.md#system).
DEFAULT_CONCURRENCY = 8


def child(code: str, *args: str, env: dict[str, str], cwd: Path | None = None) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         check=True, env=env, cwd=cwd)
    return json.loads(out.stdout.strip().splitlines()[-1])


def command(args: list[str], env: dict[str, str], cwd: Path) -> float:
    """Wall time of a whole `oloproof ...` command (its exit code is the gate's, not checked)."""
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", CLI, *args], capture_output=True, env=env, cwd=cwd,
                   check=False)
    return time.perf_counter() - start


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
            "command_s": round(wall, 3), "command_minus_system_s": round(wall - own, 3),
            "within_0.5s": wall - own <= 0.5}


def async_cli(version: str, env: dict[str, str], cases: int = 2000) -> dict:
    root = Path(tempfile.mkdtemp(prefix="oloproof-async-"))
    try:
        make_project(root, cases, async_sleep=0.05, concurrency=64)
        wall = command(["run"], env, root)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    ideal = cases / 64 * 0.05
    return {"measure": "async-cli", "code": version, "cases": cases, "ideal_s": ideal,
            "command_s": round(wall, 3), "ratio_to_ideal": round(wall / ideal, 3),
            "within_1.25x": wall <= 1.25 * ideal}


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
            "share_of_concurrency_over_latency": round(reached, 3), "at_least_0.8": reached >= 0.8}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="desk,desk-cli,async-cli,blocking")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args()
    print(f"this checkout: {revision()}; {load()}", flush=True)
    wanted = args.only.split(",")
    pairs = versions(args.against)
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
    print(finished())


if __name__ == "__main__":
    main()
