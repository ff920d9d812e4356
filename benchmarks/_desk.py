"""The refund desk several speed scenarios share: a `support_agent`-like sync agent that reads
its orders file on every call (a little real I/O, as an agent that reads its tools' data does),
judged by `support_agent`'s six agent evaluators, two quantile metrics and four slices; and how
the scenarios time it (the desk alone in a plain loop, a child process, a whole command).

Used by `speed/case_overhead.py` (where it was first written), `command_floor`,
`command_timeline`, `coordinator_case`, `dataset_scan`, `worker_case`, `worker_instructions`
and `validity/worker_identical`.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

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


