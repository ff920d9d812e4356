"""The CPU-bound case on two cores: the support_agent example at 20,000 cases, `executor:
processes` with 2 workers against `local`, alternating in one run (issue 46: at most 0.55× its
wall time on a quiet machine, whatever the run order), with the coordinator's CPU per case
beside a worker's and what a worker process costs to start.

The example's 40 cases are repeated with distinct ids and messages (`support_agent_scale`'s
`scale`), so every case is a distinct execution of a cheap deterministic agent: the work is all
CPU, the engine's and the system's. Each measurement is a fresh Python process calling
`oloproof.run` on a fresh store, `local` and `processes` alternately, the order reversed every
round (so each order is measured as often as the other):

- `ratio`: processes' wall time over local's, the whole process (interpreter start to exit, as
  `oloproof run` is timed), per round; the median of the rounds in each order
  (`ratio_local_first`, `ratio_processes_first`), and `ratio` the larger of the two (the target);
  `call_ratio` the same of the `oloproof.run` call alone;
- `coordinator_cpu_us`: the run's own process (the coordinator: user + system CPU of every
  thread, from `getrusage`, over the call) per case; its threads apart in the details
  (`threads_cpu_s`: the main thread's event loop -- plan, take, tally --, the store's writer,
  the readers of the workers' results);
- `worker_cpu_us`: the workers' CPU (the reaped children's, from `getrusage`) less what each
  spent starting, per case: what a case costs a worker; `local_cpu_us` is the whole `local`
  process's per case, for scale, and `cpu_over_local` the CPU of the processes run in all
  (coordinator, workers and their start) over local's: the cost of going parallel, which a
  busy machine stretches far less than it does a wall time;
- `start_wait_s`: how long the coordinator waited for its workers to be ready once it had
  loaded the suite (`oloproof run` starts them before it imports the engine, a library call
  while its suite loads: the less of their start is left, the shorter);
- what a worker process costs to start: `worker_ready_s` (from the process's start to the
  system and evaluators loaded: with `oloproof run` this includes its wait for the
  coordinator to say what to load), `worker_first_case_s` (to its first results back at the
  coordinator), `worker_start_cpu_s` (its CPU at ready; a worker forked by a zygote,
  execution/zygote.py, counts its share of the zygote's CPU -- the imports, paid once for all
  the workers it forks -- beside its own since the fork, which is `worker_own_start_cpu_s`),
  `worker_rss_mb` (its resident memory at ready) and `worker_peak_rss_mb` (the largest
  worker's at exit).

With `--against REF` (default 74f47e3, the revision issue 46 started from; `none` for no
comparison) every round also runs REF's `local` and `processes`, the order reversed every round
as well: `local_over_against` is this checkout's local wall time over REF's (median of the
rounds; issue 46: local no slower), and `against` holds REF's own ratio and CPU per case, the
before beside the after.
The machine's load average is in params at the start and end: on a busy machine the workers and
the coordinator compete with other work, and the ratio is reported, not promised.

Each child runs the suite as `oloproof run --json` does (the command's own process, with its
collector setting); `--call` runs it by the library call `oloproof.run` instead, as a host
program would.

Arguments: [--cases 20000] [--rounds 4] [--workers 2] [--against REF | none] [--call]
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

from benchmarks._versions import ROOT, finished, load, revision, versions
from benchmarks.speed.support_agent_scale import THREAD_CPU, scale

EXAMPLE = ROOT / "src" / "oloproof" / "examples" / "support_agent"
START = "74f47e3"
TARGETS = {"ratio": ("<=", 0.55)}

CHILD = THREAD_CPU + """
import json, os, resource, sys
path, executor, workers = sys.argv[1], sys.argv[2], int(sys.argv[3])
kwargs = {}
started, ready, first, waited = {}, {}, {}, []

def _proc(pid, name):
    return open(f"/proc/{pid}/{name}").read()

def _cpu_of(pid):
    stat = _proc(pid, "stat").rsplit(")", 1)[1].split()
    return (int(stat[11]) + int(stat[12])) / os.sysconf("SC_CLK_TCK")

def _timed_spawn(spawning):
    spawn = spawning.__init__
    def _init(self, *args, **kwargs):
        began = time.perf_counter()
        spawn(self, *args, **kwargs)
        # (by the process object: a forked worker's pid is known once its zygote has forked it)
        started.setdefault(id(self.process), began)
    spawning.__init__ = _init

def _watch_workers():
    from oloproof.execution.transports import processes
    start_child = processes.ProcessWorkers._start_child
    async def _start(self, slot):
        child = await start_child(self, slot)
        pid = child.process.pid
        at = time.perf_counter()
        rss = next(int(line.split()[1]) for line in _proc(pid, "status").splitlines()
                   if line.startswith("VmRSS:"))
        own = _cpu_of(pid)
        # A worker forked by a zygote (execution/zygote.py) has its share of the zygote's CPU
        # (the imports, paid once for all it forks) beside its own since the fork.
        zygote = getattr(child.process, "zygote", None)
        shared = _cpu_of(zygote.process.pid) / len(zygote.processes) if zygote else 0.0
        ready[pid] = {"s": at - started[id(child.process)], "cpu_s": own + shared,
                      "own_cpu_s": own, "rss_mb": rss / 1024}
        return child
    processes.ProcessWorkers._start_child = _start
    pool_start = processes.ProcessWorkers.start
    async def _pool_start(self):  # what the coordinator waits for its workers, doing nothing
        began = time.perf_counter()
        try:
            return await pool_start(self)
        finally:
            waited.append(time.perf_counter() - began)
    processes.ProcessWorkers.start = _pool_start
    take = processes.ProcessWorkers._take
    def _take(self, child, results):
        first.setdefault(child.process.pid,
                         time.perf_counter() - started[id(child.process)])
        return take(self, child, results)
    processes.ProcessWorkers._take = _take
    return processes

if executor != "local":
    kwargs = {"executor": executor, "workers": workers}
    try:  # Where worker processes start: `process_start` (the command starts them before it
        # imports the engine: nothing of the engine is imported here before the command runs)
        from oloproof.execution import process_start
    except ImportError:  # or, before it, `processes`: `StartedProcess` (started while the
        # suite loads), or before that (74f47e3) `_Child`.
        processes = _watch_workers()
        _timed_spawn(getattr(processes, "StartedProcess", processes._Child))
    else:
        _timed_spawn(process_start.StartedProcess)
        _take_started = process_start.take_started
        def _taking(count):  # (the suite is loading: the engine is imported by now)
            _watch_workers()
            return _take_started(count)
        process_start.take_started = _taking
me = resource.getrusage(resource.RUSAGE_SELF)
wall, own = time.perf_counter(), time.thread_time()
if sys.argv[4] == "call":  # the library call, as a host program makes it
    import oloproof
    doc = oloproof.run(path, **kwargs).to_json()
else:  # the command, `oloproof run --json` (its own process: cli/main.py's collector setting)
    import contextlib, io
    from oloproof.cli.main import main
    sys.argv = ["oloproof", "run", "--config", path, "--json"] + [
        word for key, value in kwargs.items() for word in (f"--{key}", str(value))]
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        try:
            main()
        except SystemExit as exit:
            if exit.code not in (0, 1):  # (1: the gate blocks, as it does on this example)
                raise
    doc = json.loads(printed.getvalue())
wall, threads["main"] = time.perf_counter() - wall, time.thread_time() - own
after = resource.getrusage(resource.RUSAGE_SELF)
children = resource.getrusage(resource.RUSAGE_CHILDREN)
print(json.dumps({
    "call_s": wall, "cases": doc["cases"], "executed": doc["cache"]["execution"]["miss"],
    "cpu_s": after.ru_utime + after.ru_stime - me.ru_utime - me.ru_stime,
    "children_cpu_s": children.ru_utime + children.ru_stime,
    "children_peak_rss_mb": children.ru_maxrss / 1024,
    "threads_cpu_s": threads, "start_wait_s": sum(waited), "workers": [
        {"ready_s": ready[pid]["s"], "start_cpu_s": ready[pid]["cpu_s"],
         "own_start_cpu_s": ready[pid]["own_cpu_s"],
         "rss_mb": ready[pid]["rss_mb"], "first_case_s": first.get(pid)} for pid in ready],
    "figures": [doc.get(key) for key in ("metrics", "slices", "decisions", "gate")]}))
"""


def measure(project: Path, env: dict[str, str], executor: str, workers: int,
            how: str = "command") -> dict:
    """One run in a fresh process on a fresh store: the child's figures, and the process's
    wall time from outside."""
    shutil.rmtree(project / ".oloproof", ignore_errors=True)
    began = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(project / "oloproof.yaml"), executor,
                          str(workers), how], capture_output=True, text=True, env=env)
    process = time.perf_counter() - began
    if out.returncode != 0:
        raise SystemExit(f"the {executor} run failed (exit {out.returncode}):\n{out.stderr}")
    return {**json.loads(out.stdout.strip().splitlines()[-1]), "process_s": process}


def _per_case_us(seconds: float, cases: int) -> float:
    return round(1e6 * seconds / cases, 1)


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks processes_cpu")
    parser.add_argument("--cases", type=int, default=20000)
    parser.add_argument("--rounds", type=int, default=4,
                        help="rounds of local and processes, the order reversed every round "
                        "(default 4: two in each order)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--against", default=START, metavar="REF",
                        help=f"also run REF's local and processes each round (default {START}; "
                        "`none`: no)")
    parser.add_argument("--call", action="store_true",
                        help="run the suite by the library call `oloproof.run` in each child, "
                        "not by the command `oloproof run --json`")
    args = parser.parse_args(argv)
    how = "call" if args.call else "command"
    against = None if args.against == "none" else args.against
    started_load = load()
    print(f"# this checkout: {revision()}; {started_load}", file=sys.stderr, flush=True)
    root = Path(tempfile.mkdtemp(prefix="oloproof-procs-"))
    try:
        project = root / "sa"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__",
                                                                        ".oloproof"))
        scale(project, args.cases)
        builds = dict(versions([against] if against else []))
        legs = [("local", builds["this"], "local"), ("processes", builds["this"], "processes")]
        if against:
            legs += [(f"local@{against}", builds[against], "local"),
                     (f"processes@{against}", builds[against], "processes")]
        rows: list[dict[str, dict]] = []
        for round_ in range(args.rounds):
            # Every other round reversed: each pair of legs runs in both orders equally often.
            order = legs if round_ % 2 == 0 else legs[::-1]
            row: dict[str, dict] = {}
            for label, env, executor in order:
                row[label] = measure(project, env, executor, args.workers, how)
            row["order"] = {"first": order[0][0]}  # type: ignore[assignment]
            rows.append(row)
            print(json.dumps({"round": round_ + 1, "order": [o[0] for o in order], **{
                label: {"process_s": round(row[label]["process_s"], 2),
                        "cpu_s": round(row[label]["cpu_s"], 2),
                        "workers_cpu_s": round(row[label]["children_cpu_s"], 2)}
                for label, _, _ in legs}, "load": load()}), file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    seen = {json.dumps(row[label]["figures"], sort_keys=True) for row in rows
            for label, _, _ in legs}
    if len(seen) != 1:
        raise SystemExit("the legs gave different figures: a run is not what the others are")
    return {"figures": figures(rows, against), "params": {
        "cases": args.cases, "rounds": args.rounds, "workers": args.workers,
        "against": against, "how": how, "load_at_start": started_load, "load_at_end": load(),
        "cpus": os.cpu_count()},
        "details": [{label: {k: v for k, v in row[label].items() if k != "figures"}
                     for label in row} for row in rows]}


def figures(rows: list[dict[str, dict]], against: str | None) -> dict[str, object]:
    """The headline figures from the rounds (see the module docstring)."""
    found = _pair(rows, "")
    if against:
        found["local_over_against"] = _ratio("process_s", rows, "local", f"local@{against}")
        found["local_call_over_against"] = _ratio("call_s", rows, "local", f"local@{against}")
        found["against"] = {key: value for key, value in _pair(rows, f"@{against}").items()
                            if key in AGAINST_FIGURES}
    print(finished(), file=sys.stderr)
    return found


#: The figures of REF's pair of legs kept beside this checkout's.
AGAINST_FIGURES = ("ratio", "call_ratio", "coordinator_cpu_us", "worker_cpu_us", "local_cpu_us",
                   "cpu_over_local", "start_wait_s", "worker_ready_s", "worker_start_cpu_s")


def _ratio(key: str, rounds: list[dict[str, dict]], top: str, bottom: str) -> float | None:
    """The median over `rounds` of leg `top`'s `key` over leg `bottom`'s."""
    if not rounds:
        return None
    return round(statistics.median(r[top][key] / r[bottom][key] for r in rounds), 3)


def _pair(rows: list[dict[str, dict]], at: str) -> dict[str, object]:
    """The figures of one build's local and processes legs (`at`: "" for this checkout,
    "@REF" for REF's)."""
    local, processes = f"local{at}", f"processes{at}"

    def median(label: str, value: object) -> float:
        return statistics.median(value(r[label]) for r in rows)  # type: ignore[operator]

    local_first = [r for r in rows if _before(r, local, processes)]
    processes_first = [r for r in rows if r not in local_first]
    by_order = [x for x in (_ratio("process_s", local_first, processes, local),
                            _ratio("process_s", processes_first, processes, local))
                if x is not None]
    procs = [r[processes] for r in rows]
    cases = procs[0]["cases"]
    workers = [w for p in procs for w in p["workers"]]
    return {
        "ratio": max(by_order),
        "ratio_local_first": _ratio("process_s", local_first, processes, local),
        "ratio_processes_first": _ratio("process_s", processes_first, processes, local),
        "call_ratio": _ratio("call_s", rows, processes, local),
        "local_s": round(median(local, lambda m: m["process_s"]), 2),
        "processes_s": round(median(processes, lambda m: m["process_s"]), 2),
        "coordinator_cpu_us": _per_case_us(median(processes, lambda m: m["cpu_s"]), cases),
        "worker_cpu_us": _per_case_us(median(processes, lambda m: m["children_cpu_s"] - sum(
            w["start_cpu_s"] for w in m["workers"])), cases),
        "local_cpu_us": _per_case_us(median(local, lambda m: m["cpu_s"]), cases),
        # (the CPU processes spend in all, coordinator and workers with their start, over
        # local's: what the load stretches far less than a wall time)
        "cpu_over_local": round(median(processes, lambda m: m["cpu_s"] + m["children_cpu_s"])
                                / median(local, lambda m: m["cpu_s"]), 3),
        "start_wait_s": round(median(processes, lambda m: m["start_wait_s"]), 3),
        "worker_ready_s": round(statistics.median(w["ready_s"] for w in workers), 3),
        "worker_first_case_s": round(statistics.median(
            w["first_case_s"] for w in workers if w["first_case_s"] is not None), 3),
        "worker_start_cpu_s": round(statistics.median(w["start_cpu_s"] for w in workers), 3),
        "worker_own_start_cpu_s": round(statistics.median(
            w.get("own_start_cpu_s", w["start_cpu_s"]) for w in workers), 3),
        "worker_rss_mb": round(statistics.median(w["rss_mb"] for w in workers), 1),
        "worker_peak_rss_mb": round(statistics.median(
            p["children_peak_rss_mb"] for p in procs), 1),
        "coordinator_threads_cpu_s": {name: round(statistics.median(
            p["threads_cpu_s"].get(name, 0.0) for p in procs), 2)
            for name in sorted({n for p in procs for n, cpu in p["threads_cpu_s"].items()
                                if cpu >= 0.01})},
    }


def _before(row: dict[str, dict], one: str, other: str) -> bool:
    """Whether leg `one` ran before leg `other` in this round."""
    return list(row).index(one) < list(row).index(other)
