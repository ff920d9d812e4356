"""The store's writes alone, at 20,000 and 200,000 desk-shaped cases: the CPU the store spends
per case holding the GIL and in SQLite, and the wall time of `Store.close`.

A fresh process writes `--cases` synthetic cases through a `Store` with its writer thread,
calling per case what the engine calls for a freshly run case, with rows shaped like the
20,000-case desk's: `add_case` (its dataset line), `add_artifact_text` (a trajectory of about
1 kB), `add_execution`, `add_judgments` (six evaluators' verdicts with their details, made
afresh per case as evaluators make them) and `add_run_case` (the case's outcome). It flushes
every 2,000 cases and pauses `--pause` seconds between batches (0.1 s by default: ten times
the pace of the desk, whose runner flushes about once a second); nothing else runs, so what is
measured is the store's own work.

Reported: `main_cpu` (the adding thread's CPU in the store's calls, `add_*` and `flush`: its CPU
making and adding the rows less its CPU making the same rows alone),
`writer_cpu` (the writer thread's CPU: batches, inserts, commits and, where the revision
merges as it goes, the merges), `writer_sql_cpu` (the part of it spent inside the
connection's `execute`/`executemany` calls: binding the parameters, which holds the GIL, and
SQLite's own work, which does not), `writer_py_cpu` (the rest: Python holding the GIL),
`close_s` (the wall time of `Store.close`, which a run waits for at its end) and `close_cpu`.

The figures are this checkout's, per size (the median of the rounds): `gil_us_per_case`
(main_cpu + writer_py_cpu per case: the store's Python holding the GIL), `sql_us_per_case`
(writer_sql_cpu per case) and `close_s`; every measurement is in the saved JSON's details.

Arguments: [--cases 20000,200000] [--pause 0.1] [--rounds 1] [--against REF ...]. With
`--against REF`, each measurement is also taken with that revision's code, alternately, in the
same run.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

from benchmarks._versions import finished, load, revision, versions

TARGETS: dict[str, tuple[str, float]] = {}

CHILD = r"""
import hashlib, json, sqlite3, sys, tempfile, threading, time
from pathlib import Path

cases, pause = int(sys.argv[1]), float(sys.argv[2])
in_sql = [0.0]

class TimedConnection(sqlite3.Connection):
    # CPU inside the writer thread's statements (binding and SQLite's own work).
    def execute(self, *args):
        return in_statement(super().execute, *args)

    def executemany(self, *args):
        return in_statement(super().executemany, *args)

def in_statement(statement, *args):
    if threading.current_thread().name != "oloproof-store":
        return statement(*args)
    start = time.thread_time()
    try:
        return statement(*args)
    finally:
        in_sql[0] += time.thread_time() - start

connect = sqlite3.connect
def timed_connect(*args, **kwargs):
    return connect(*args, factory=TimedConnection, **kwargs)
sqlite3.connect = timed_connect

from oloproof.store import writer
from oloproof.store.store import Store

writer_cpu = [0.0]
writing = writer.Writer._write_forever
def timed(self):
    start = time.thread_time()
    try:
        writing(self)
    finally:
        writer_cpu[0] += time.thread_time() - start
writer.Writer._write_forever = timed

def h(text):
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

class Case:
    def __init__(self, i):
        self.digest = h(f"case {i}")
        self.id = f"req-{i:06d}"
        self.line = json.dumps({
            "id": self.id, "input": {"order_id": f"ord-{i % 12:03d}",
                                     "message": f"Please refund ord-{i % 12:03d} ({i})."},
            "expected": {"answer": "declined", "tools": ["lookup_order"]},
            "metadata": {"surface": "chat"}})
    def stored_text(self):
        return self.line
    def stored_form(self):
        return json.loads(self.line)

EVALUATORS = [h(f"evaluator {k}")[7:31] for k in range(6)]
run_id = "run_01M8ZE1AXTN60N9VDMJHDS5DJ7"

def make(i):
    # Case i's rows, made afresh as the engine has them.
    case = Case(i)
    order = f"ord-{i % 12:03d}"
    trajectory = json.dumps({"steps": [
        {"index": 1, "kind": "message", "agent": None, "to_agent": None, "tool_name": None,
         "arguments": {"text": f"Please refund {order} ({i})."}, "result": None},
        {"index": 2, "kind": "tool_call", "agent": None, "to_agent": None,
         "tool_name": "lookup_order", "arguments": {"order_id": order}, "result": None},
        {"index": 3, "kind": "tool_result", "agent": None, "to_agent": None,
         "tool_name": "lookup_order", "arguments": None,
         "result": {"order_id": order, "customer_id": "cus-101", "amount": 12.75 + i % 7,
                    "status": "delivered", "days_since_delivery": i % 40}},
        {"index": 4, "kind": "final", "agent": None, "to_agent": None, "tool_name": None,
         "arguments": {"answer": "declined"}, "result": None}],
        "terminal_status": "success", "truncated": False, "step_limit": None,
        "constraints": [{"name": "no_deletion", "passed": True, "step_index": 4}],
        "checkpoints": []}, separators=(",", ":"))
    facts = {"steps": 4, "tool_calls": 1, "truncated": False, "first_tool": "lookup_order",
             "repeated": False, "route": None, "named": False}
    latency = 0.05 + (i % 97) / 1000
    judgments = {
        EVALUATORS[0]: ("P", None, None),
        EVALUATORS[1]: ("P", None, {"tool": "lookup_order", "calls": 1, "min_calls": 1,
                                    "steps": [2]}),
        EVALUATORS[2]: ("P", None, {"max_repeats": 2, "longest_run": 1}),
        EVALUATORS[3]: ("F", "sequence_mismatch", {
            "ordered": True, "expected": ["lookup_order", "issue_refund"],
            "called": ["lookup_order"], "alignment": [
                {"expected": "lookup_order", "step": 2, "called": "lookup_order",
                 "status": "matched"},
                {"expected": "issue_refund", "step": None, "called": None,
                 "status": "missing"}], "mode": "exact", "arguments": "ignore"}),
        EVALUATORS[4]: ("P", None, {"constraints": ["no_deletion"],
                                    "checks": {"no_deletion": 1}}),
        EVALUATORS[5]: ("P", None, {"steps": 4, "max_steps": 10, "truncated": False}),
    }
    case_key = h(f"judged {i}")[7:47]
    outcome = {"c": "PPPFPP", "r": [None, None, None, "sequence_mismatch", None, None],
               "k": case_key, "f": facts, "l": latency,
               "s": ["chat", "lookup_order", "false", "le_8"]}
    return (case, trajectory, h(trajectory), h(f"execution {i}"), facts, latency, judgments,
            case_key, outcome)

# The thread's CPU making the rows alone, to be taken from its CPU making and adding them.
made = time.thread_time()
for i in range(cases):
    make(i)
made = time.thread_time() - made

with tempfile.TemporaryDirectory() as root:
    store = Store(Path(root) / "store.sqlite")
    store.start_writer()
    main = time.thread_time()  # (a sleeping thread spends no CPU)
    for i in range(cases):
        case, trajectory, artifact, exec_key, facts, latency, judgments, case_key, outcome = (
            make(i))
        store.add_case(case)
        store.add_artifact_text(artifact, "agent_trajectory/v1", None, trajectory)
        # (the output's stored text, made where the case ran; a revision before that
        # serialised the output here, and serialises this text as a JSON string)
        store.add_execution(exec_key, case.digest, '{"answer":"declined"}',
                            {"agent_trajectory/v1": artifact}, facts, latency)
        store.add_judgments(case_key, judgments)
        store.add_run_case(run_id, i, case.id, case.digest, exec_key, outcome)
        if (i + 1) % 2000 == 0:
            store.flush()
            time.sleep(pause)
    main = time.thread_time() - main - made
    start, cpu = time.perf_counter(), time.thread_time()
    store.close()
    close, close_cpu = time.perf_counter() - start, time.thread_time() - cpu
print(json.dumps({"main_cpu": main, "writer_cpu": writer_cpu[0], "writer_sql_cpu": in_sql[0],
                  "writer_py_cpu": writer_cpu[0] - in_sql[0], "close_s": close,
                  "close_cpu": close_cpu}))
"""


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks store_writes")
    parser.add_argument("--cases", default="20000,200000")
    parser.add_argument("--pause", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args(argv)
    print(f"this checkout: {revision()}; {load()}", flush=True)
    pairs = versions(args.against)
    rows = []
    for cases in [int(n) for n in args.cases.split(",")]:
        for round_ in range(1, args.rounds + 1):
            for label, env in pairs:  # alternately, so that a drift of the machine hits both
                out = subprocess.run([sys.executable, "-c", CHILD, str(cases), str(args.pause)],
                                     capture_output=True, text=True, env=env, check=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                row = {"code": label, "cases": cases, "round": round_,
                       **{k: round(v, 3) for k, v in got.items()}}
                rows.append(row)
                print(json.dumps(row), flush=True)
    print(finished())

    def median(label: str, cases: int, *keys: str) -> float:
        return statistics.median(sum(r[k] for k in keys) for r in rows
                                 if r["code"] == label and r["cases"] == cases)

    figures: dict[str, object] = {}
    for cases in [int(n) for n in args.cases.split(",")]:
        figures[str(cases)] = {
            "gil_us_per_case": round(1e6 * median("this", cases, "main_cpu", "writer_py_cpu")
                                     / cases, 1),
            "sql_us_per_case": round(1e6 * median("this", cases, "writer_sql_cpu") / cases, 1),
            "close_s": round(median("this", cases, "close_s"), 3)}
        for ref in args.against:
            figures[str(cases)][f"gil_this_over_{ref}"] = round(  # type: ignore[index]
                median("this", cases, "main_cpu", "writer_py_cpu")
                / median(ref, cases, "main_cpu", "writer_py_cpu"), 3)
    return {"figures": figures,
            "params": {"cases": args.cases, "pause_s": args.pause, "rounds": args.rounds,
                       "against": args.against},
            "details": {"rows": rows}}
