"""The store's writes alone: the writer thread's CPU and the wall time of `Store.close`.

A fresh process writes `--cases` synthetic cases through a `Store` with its writer thread (per
case one stored case, one execution and one case's six judgments, each row about the size of
the desk's), flushing every 2,000 cases and pausing `--pause` seconds between batches (0.1 s
by default: ten times the pace of the 20,000-case desk, whose runner flushes about once a
second); nothing else runs, so what is measured is the store's own work. Reported: `writer_cpu`
(the writer thread's CPU time: inserts, commits and, where the revision merges as it goes, the
merges; SQLite's C code runs without the GIL), `close_s` (the wall time of `Store.close`, which
a run waits for at its end) and `main_cpu` (the thread adding rows and flushing).

Usage: python benchmarks/store_writes.py [--cases 20000,200000] [--pause 0.1] [--rounds 1]
[--against REF ...]. With `--against REF`, each measurement is also taken with that
revision's code, alternately, in the same run.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from _versions import load, revision, versions

CHILD = """
import hashlib, json, sys, tempfile, time
from pathlib import Path
from oloproof.store import writer
from oloproof.store.store import Store

cases, pause = int(sys.argv[1]), float(sys.argv[2])
cpu = [0.0]
writing = writer.Writer._write_forever
def timed(self):
    start = time.thread_time()
    try:
        writing(self)
    finally:
        cpu[0] += time.thread_time() - start
writer.Writer._write_forever = timed

def h(text):
    return hashlib.sha256(text.encode()).hexdigest()

with tempfile.TemporaryDirectory() as root:
    store = Store(Path(root) / "store.sqlite")
    store.start_writer()
    main = time.thread_time()
    for i in range(cases):
        digest = h(f"case {i}")
        store._add("cases", (digest, json.dumps({
            "id": f"case-{i}", "input": {"question": f"where is order {i}?"},
            "expected": {"answer": "shipped"}, "metadata": {"surface": "web"}})))
        store._add("executions", (
            h(f"execution {i}"), digest, json.dumps({"answer": f"order {i} shipped"}),
            json.dumps({"agent_trajectory/v1": h(f"artifact {i}")}),
            '{"agent_steps":4,"agent_tool_calls":1}', 1.5, 1.0))
        store.add_judgments(h(f"judged {i}")[:40],
                            {h(f"evaluator {k}")[:16]: ["P", None, None] for k in range(6)})
        if (i + 1) % 2000 == 0:
            store.flush()
            time.sleep(pause)
    main = time.thread_time() - main
    start = time.perf_counter()
    store.close()
    close = time.perf_counter() - start
print(json.dumps({"writer_cpu": cpu[0], "close_s": close, "main_cpu": main}))
"""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="20000,200000")
    parser.add_argument("--pause", type=float, default=0.1)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--against", action="append", default=[])
    args = parser.parse_args()
    print(f"this checkout: {revision()}; {load()}", flush=True)
    pairs = versions(args.against)
    for cases in [int(n) for n in args.cases.split(",")]:
        for round_ in range(1, args.rounds + 1):
            for label, env in pairs:  # alternately, so that a drift of the machine hits both
                out = subprocess.run([sys.executable, "-c", CHILD, str(cases), str(args.pause)],
                                     capture_output=True, text=True, env=env, check=True)
                got = json.loads(out.stdout.strip().splitlines()[-1])
                print(json.dumps({"code": label, "cases": cases, "round": round_,
                                  **{k: round(v, 3) for k, v in got.items()}}), flush=True)
    print(f"done {time.strftime('%Y-%m-%d %H:%M')} UTC; {load()}")


if __name__ == "__main__":
    main()
