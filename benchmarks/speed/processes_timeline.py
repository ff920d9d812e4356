"""Where each core stands idle in an `executor: processes` run of the CPU-bound case (issue 46):
the support_agent example at 20,000 cases, 2 workers, as a timeline of phases with each
process's CPU, its time waiting for a core, and its idle time in each.

`processes_cpu` says how the whole run compares with `local`; this says where the run's time
goes. One `oloproof run --json --executor processes` in a fresh process on a fresh store, as
`processes_cpu` runs it, with two things added, both in the measuring processes only:

- the coordinator notes the time of each step (hooks on the engine's functions, installed
  before the command runs and after it has imported what it imports itself): the suite loading
  (`process_start.take_started`), the workers started (`ProcessWorkers.start`), the first parcel
  sent, every result taken, every case handed out (`Store.finishing`), the run's end, the run
  stored (`finish_run`), the workers closed; and how long each parcel's write to its pipe took,
  with the parcel's size and the pipe's;
- every thread of the coordinator and of its descendants (the zygote, the workers) is sampled
  every `--interval` seconds from `/proc/PID/task/TID/`: `schedstat` (the CPU it ran, the time
  it waited for a core) and its state (`R`: running or waiting for a core). The threads are
  named by a `sitecustomize` module on the children's path (`prctl(PR_SET_NAME)` with the
  Python thread's name), so a worker's lanes (`oloproof-case`) are told from its event loop.

A process is **idle** in a sample when none of its threads is runnable: it waits for something
(a worker for a parcel, the coordinator for results). Idle time is load-proof where the wall
time is not: on a busy machine a runnable process waits for a core (`rq`), which is not idle.
Figures, in seconds unless said:

- `start_s` (process start → the first parcel sent), of it `import_s` (→ the suite loading,
  the engine imported), `suite_load_s` (→ the workers' start asked: the dataset scanned, the
  store opened) and `pool_wait_s` (→ every worker ready); `steady_s` (→ every case handed out),
  `drain_s` (→ the last result), `after_s` (→ the process's end: merging, deciding, storing,
  printing, closing the workers);
- `worker_idle_steady` and `coordinator_idle_steady`: the share of the steady and drain phases
  a worker (the mean of the workers) and the coordinator were idle;
- `cpu_us.*`: CPU per case of the coordinator's threads (`main`, the store's writer `store`,
  the workers' readers `readers`, the imports for deciding `import`) and of the workers'
  (`worker_main`, their event loops, which judge and make the rows; `worker_lanes`, which run
  the system), for the whole run; `zygote_cpu_s` the zygote's;
- `send_s`: the coordinator's time in writing parcels to pipes, `parcel_max_kb` the largest
  parcel, `pipe_kb` the pipes' size.

Arguments: [--cases 20000] [--workers 2] [--rounds 1] [--interval 0.02] (with more rounds, the
medians)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._versions import ROOT, child_env, finished, load, revision
from benchmarks.speed.support_agent_scale import scale

EXAMPLE = ROOT / "src" / "oloproof" / "examples" / "support_agent"
TARGETS: dict[str, tuple[str, float]] = {}
QUICK = ["--cases", "400"]
LEFT_OUT = "a diagnosis of processes_cpu's run, whose figures are processes_cpu's to promise"

# On the children's path: each Python thread gives its OS thread its name (the measuring
# processes only), so the samples say which thread of a worker ran.
SITECUSTOMIZE = """
import ctypes, threading
_prctl = ctypes.CDLL(None).prctl
_run = threading.Thread.run
def _named_run(self):
    _prctl(15, self.name[:15].encode(), 0, 0, 0)  # PR_SET_NAME
    return _run(self)
threading.Thread.run = _named_run
"""

CHILD = r"""
import contextlib, fcntl, io, json, sys, time
events, sends = [], []
def note(name):
    events.append((name, time.monotonic()))
note("main")
path, workers, out = sys.argv[1], sys.argv[2], sys.argv[3]

def hook(owner, name, label, after=False):
    function = getattr(owner, name)
    def hooked(*args, **kwargs):
        if not after:
            note(label)
        result = function(*args, **kwargs)
        if after:
            note(label)
        return result
    setattr(owner, name, hooked)

def hook_async(owner, name, label):
    function = getattr(owner, name)
    async def hooked(*args, **kwargs):
        note(label + "_begin")
        try:
            return await function(*args, **kwargs)
        finally:
            note(label + "_end")
    setattr(owner, name, hooked)

# (the engine is imported by the command itself: hooked once it has, as the suite loads)
from oloproof.execution import process_start
take_started = process_start.take_started
def taking(count):
    note("suite_loading")
    from oloproof.execution import engine
    from oloproof.execution.transports import processes
    from oloproof.store.store import Store
    hook_async(processes.ProcessWorkers, "start", "pool")
    hook_async(processes.ProcessWorkers, "close", "close")
    hook(Store, "finishing", "handed_out")
    hook(Store, "finish_run", "stored", after=True)
    hook_async(engine.RunEngine, "run", "engine")
    take_all = engine.RunEngine._take_all
    def taken(self, results):
        note("take")
        return take_all(self, results)
    engine.RunEngine._take_all = taken
    send = processes._Child.send
    def timed_send(self, message):
        if message[0] != "parcel":
            return send(self, message)
        data = processes.pickle.dumps(message, protocol=processes.PROTOCOL)
        began = time.monotonic()
        self.outgoing.send_bytes(data)
        sends.append((began, time.monotonic() - began, len(data),
                      fcntl.fcntl(self.outgoing.fileno(), 1032)))  # F_GETPIPE_SZ
    processes._Child.send = timed_send
    return take_started(count)
process_start.take_started = taking

from oloproof.cli.main import main
sys.argv = ["oloproof", "run", "--config", path, "--json", "--executor", "processes",
            "--workers", workers]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main()
    except SystemExit as exit:
        if exit.code not in (0, 1):  # (1: the gate blocks, as it does on this example)
            raise
note("returned")
with open(out, "w") as file:
    json.dump({"events": events, "sends": sends}, file)
"""


def _sample(root: int) -> dict[int, tuple[int, int, str, int, int, str]]:
    """Every thread of `root` and its descendants: tid → (pid, parent pid, name, ran ns,
    waited for a core ns, state)."""
    found: dict[int, tuple[int, int, str, int, int, str]] = {}
    seen: set[int] = set()
    stack = [(root, 0)]
    while stack:
        pid, parent = stack.pop()
        if pid in seen:
            continue
        seen.add(pid)
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue
        for tid in tids:
            base = f"/proc/{pid}/task/{tid}/"
            try:
                ran, waited, _ = Path(base + "schedstat").read_text().split()
                state = Path(base + "stat").read_text().rsplit(")", 1)[1].split()[0]
                name = Path(base + "comm").read_text().strip()
                children = Path(base + "children").read_text().split()
            except OSError:
                continue
            found[int(tid)] = (pid, parent, name, int(ran), int(waited), state)
            stack.extend((int(child), pid) for child in children)
    return found


def measure(project: Path, site: Path, workers: int, interval: float) -> dict:
    """One run, sampled: its phases, idle shares and CPU per thread (see the docstring)."""
    shutil.rmtree(project / ".oloproof", ignore_errors=True)
    out = project.parent / "events.json"
    env = child_env(ROOT / "src", site)
    began = time.monotonic()
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(project / "oloproof.yaml"),
                              str(workers), str(out)], env=env, stdout=subprocess.DEVNULL)
    samples = []
    while child.poll() is None:
        samples.append((time.monotonic(), _sample(child.pid)))
        time.sleep(interval)
    ended = time.monotonic()
    if child.returncode != 0:
        raise SystemExit(f"the run failed (exit {child.returncode})")
    noted = json.loads(out.read_text())
    return _timeline(child.pid, began, ended, noted, samples)


def _timeline(root: int, began: float, ended: float, noted: dict, samples: list) -> dict:
    at: dict[str, float] = {}
    takes = []
    for name, moment in noted["events"]:
        if name == "take":
            takes.append(moment)
        else:
            at.setdefault(name, moment)
    sends = noted["sends"]
    first_parcel = sends[0][0]
    steady = (first_parcel, takes[-1])
    parents = {v[0]: v[1] for _, s in samples for v in s.values()}
    workers = sorted(p for p in parents if p != root and parents[p] != root)

    def role(pid: int) -> str:
        return "coordinator" if pid == root else "worker" if pid in workers else "zygote"

    # Idle: the share of the steady samples in which no thread of the process was runnable.
    idle: dict[int, list[int]] = {pid: [0, 0] for pid in [root, *workers]}
    for moment, threads in samples:
        if not steady[0] <= moment <= steady[1]:
            continue
        runnable = {v[0] for v in threads.values() if v[5] == "R"}
        for pid in idle:
            if any(v[0] == pid for v in threads.values()):
                idle[pid][0] += 1
                idle[pid][1] += pid not in runnable
    # CPU by thread name, from each thread's last sample (a thread's counters only grow).
    last: dict[int, tuple] = {}
    for _, threads in samples:
        last.update(threads)
    cpu: dict[str, float] = {}
    for tid, (pid, _, name, ran, _, _) in last.items():
        key = role(pid) + "/" + ("main" if tid == pid else name)
        cpu[key] = cpu.get(key, 0.0) + ran / 1e9
    return {"at": {name: moment - began for name, moment in at.items()},
            "first_parcel": first_parcel - began, "last_result": takes[-1] - began,
            "process_s": ended - began, "idle": {role(p) + str(p): n and i / n
                                                  for p, (n, i) in idle.items()},
            "cpu_s": cpu, "send_s": sum(s[1] for s in sends),
            "parcel_max_kb": max(s[2] for s in sends) / 1024,
            "pipe_kb": min(s[3] for s in sends) / 1024}


def figures(rounds: list[dict], cases: int) -> dict[str, object]:
    def median(get) -> float:  # type: ignore[no-untyped-def]
        return statistics.median(get(r) for r in rounds)

    def span(r: dict, start: str, end: str) -> float:
        return r["at"][end] - r["at"][start]

    def cpu_us(*keys: str) -> float:
        return round(median(lambda r: sum(r["cpu_s"].get(k, 0.0) for k in keys)) * 1e6 / cases,
                     1)

    return {
        "start_s": round(median(lambda r: r["first_parcel"]), 3),
        "import_s": round(median(lambda r: span(r, "main", "suite_loading")), 3),
        "suite_load_s": round(median(lambda r: span(r, "suite_loading", "pool_begin")), 3),
        "pool_wait_s": round(median(lambda r: span(r, "pool_begin", "pool_end")), 3),
        "steady_s": round(median(lambda r: r["at"]["handed_out"] - r["first_parcel"]), 3),
        "drain_s": round(median(lambda r: r["last_result"] - r["at"]["handed_out"]), 3),
        "after_s": round(median(lambda r: r["process_s"] - r["last_result"]), 3),
        "process_s": round(median(lambda r: r["process_s"]), 2),
        "worker_idle_steady": round(median(lambda r: statistics.mean(
            v for k, v in r["idle"].items() if k.startswith("worker"))), 3),
        "coordinator_idle_steady": round(median(lambda r: next(
            v for k, v in r["idle"].items() if k.startswith("coordinator"))), 3),
        "cpu_us": {"main": cpu_us("coordinator/main"),
                   "store": cpu_us("coordinator/oloproof-store"),
                   "readers": cpu_us("coordinator/oloproof-worker"),
                   "import": cpu_us("coordinator/oloproof-import"),
                   "worker_main": cpu_us("worker/main"),
                   "worker_lanes": cpu_us("worker/oloproof-case")},
        "zygote_cpu_s": round(median(lambda r: r["cpu_s"].get("zygote/main", 0.0)), 3),
        "send_s": round(median(lambda r: r["send_s"]), 3),
        "parcel_max_kb": round(median(lambda r: r["parcel_max_kb"]), 1),
        "pipe_kb": round(median(lambda r: r["pipe_kb"]), 1),
    }


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks processes_timeline")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--interval", type=float, default=0.02)
    args = parser.parse_args(argv)
    started_load = load()
    print(f"# this checkout: {revision()}; {started_load}", file=sys.stderr, flush=True)
    root = Path(tempfile.mkdtemp(prefix="oloproof-timeline-"))
    try:
        site = root / "site"
        site.mkdir()
        (site / "sitecustomize.py").write_text(SITECUSTOMIZE)
        project = root / "sa"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__",
                                                                        ".oloproof"))
        scale(project, args.cases)
        rounds = []
        for number in range(args.rounds):
            rounds.append(measure(project, site, args.workers, args.interval))
            print(json.dumps({"round": number + 1, "load": load(),
                              **figures(rounds[-1:], args.cases)}), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(finished(), file=sys.stderr)
    return {"figures": figures(rounds, args.cases), "params": {
        "cases": args.cases, "workers": args.workers, "rounds": args.rounds,
        "interval": args.interval, "load_at_start": started_load, "load_at_end": load(),
        "cpus": os.cpu_count()}, "details": rounds}
