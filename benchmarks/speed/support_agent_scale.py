"""The support_agent example scaled to 2,000 and 20,000 distinct cases, cold, against main
before Part III (issue 30 §3: at most 0.5× its wall time; the agent trajectories issue, #5:
20,000 cases ≤ 8 s and 300 MB).

Each of the example's 40 cases is repeated with a distinct id and a distinct message (so every
case is a distinct execution). Each measurement is a fresh process on a fresh store:

- `call`: the `oloproof.run` call (what a host program waits for; `import oloproof` is lazy, so
  the engine's own imports are in it), measured inside the process;
- `process`: the whole process, interpreter start to exit (what `oloproof run` costs, less
  the command line), measured from outside;
- `cpu`: the process's CPU time, user + system, all threads (from `getrusage`): on this
  shared machine the wall times grow with the neighbours' load, the CPU time much less;
- where that CPU went: each thread's CPU time, by the thread's name, and the garbage
  collector's, by generation (a `gc.callbacks` hook, and a wrapper of `Thread.run` that reads
  the thread's CPU clock when it ends: both in the measuring process only).

With `--against REF` (default: c067e66, main before the Part III work), each round measures
this checkout and REF alternately (REF's `src/` exported by `_versions`, with what it needs
installed), every size in turn, so every ratio is taken within one run; the order within a
round alternates too. Each run's figures (`metrics`, `slices`, `decisions`, `gate`,
`failing_cases`, the cache counts) must be the same for both revisions, or the script
stops. `--warm` also times a warm run after each cold one. `--profile` instead writes one
cold run's cProfile of every thread (CPU time per thread) and prints its top lines.

`--stages` instead times the engine's parts one after another in one thread (the collector
off), CPU per case, this checkout and REF alternately: where a case's time goes without the
threads and the collector.

The figures are this checkout's medians at each size (`call_s.N`, `cpu_s.N`, `rss_mb.N`) and
the median per-round ratio of its `oloproof.run` call to REF's (`call_over_against.N`, the
issue 30 target); the per-thread and collector CPU are in the saved JSON's details.
`--profile` and `--stages` are diagnoses, whose figures are their tables: run them with
`python -m benchmarks --no-save support_agent_scale --stages`.

Arguments: [--cases 2000,20000] [--rounds 3] [--against REF | --against none] [--warm]
[--profile] [--stages]
"""

from __future__ import annotations

import argparse
import json
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._versions import ROOT, child_env, finished, load, revision, versions

EXAMPLE = ROOT / "src" / "oloproof" / "examples" / "support_agent"
BEFORE = "c067e66"
TARGETS = {"call_over_against.2000": ("<=", 0.5), "call_over_against.20000": ("<=", 0.5),
           "call_s.20000": ("<=", 8.0), "rss_mb.20000": ("<=", 300.0)}

# The start of a child that counts each thread's CPU time when it ends, by name, in `threads`
# (the main thread's is the child's to take).
THREAD_CPU = """
import collections, threading, time
threads = collections.Counter()
_run = threading.Thread.run
def _timed_run(self):
    try:
        _run(self)
    finally:
        threads[self.name] += time.thread_time()
threading.Thread.run = _timed_run
"""

CHILD = THREAD_CPU + """
import gc, json, resource, sys
# Where the CPU went: each thread's (THREAD_CPU), and the garbage collector's, by generation
# (in whichever thread a collection ran).
collector = [0.0, 0.0, 0.0]
began = {}
def _collection(phase, info):
    me = threading.get_ident()
    if phase == "start":
        began[me] = time.thread_time()
    elif me in began:
        collector[info["generation"]] += time.thread_time() - began.pop(me)
gc.callbacks.append(_collection)
import oloproof
start, own = time.perf_counter(), time.thread_time()
result = oloproof.run(sys.argv[1])
seconds, threads["main"] = time.perf_counter() - start, time.thread_time() - own
doc = result.to_json()
print(json.dumps({"seconds": seconds, "cases": doc["cases"], "cache": doc["cache"],
                  "figures": {k: doc.get(k) for k in ("metrics", "slices", "decisions", "gate",
                                                     "failing_cases")},
                  "threads": threads, "gc": collector,
                  "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# The engine's parts one after another in one thread, the collector off (its time is in the
# run's table), on a fresh store, twice (the second pass is reported: the first pays for first
# imports and first uses): CPU per case of each part. `system` is the agent with its
# recorder alone (CaseRecorder, app.run), the rest the engine's own pieces as a run drives them.
STAGES = """
import asyncio, gc, json, shutil, sys, time
from pathlib import Path
from oloproof.analysis.metrics import Analysis
from oloproof.execution.engine import CHUNK, RunEngine
from oloproof.execution.procedure import judged
from oloproof.project import load_suite
from oloproof.project.describe import describe_suite
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
from oloproof.store.store import Store
try:
    from oloproof.api.deciding import analysis_plan
except ImportError:  # (before its name lost the underscore)
    try:
        from oloproof.api.deciding import _plan as analysis_plan
    except ImportError:  # (before api/ was split)
        from oloproof.api import _plan as analysis_plan
gc.disable()
clock = time.thread_time
path = Path(sys.argv[1])


def once():
    shutil.rmtree(path.parent / ".oloproof", ignore_errors=True)
    spent = {}
    t = clock(); suite = load_suite(path); spent["load_suite (the validating pass)"] = clock() - t
    t = clock(); units = list(suite.iter_units()); spent["iter_units (digests)"] = clock() - t
    target = suite.targets[0] if suite.targets else suite.target
    t = clock()
    for (case,) in units:
        recorder = CaseRecorder(case.id, case.metadata)
        token = set_current(recorder)
        try:
            target.call(case.input)
        finally:
            recorder.close()
            reset_current(token)
    spent["system (the agent and its recorder)"] = clock() - t
    db = Store(suite.store_path())
    info = describe_suite(suite)
    db.begin_run("run_stages", suite.config.project, suite.config.system.name,
                 suite.config.system.version, info, suite.policy.model_dump(mode="json"))
    async def make():
        return RunEngine(suite, db, "run_stages")
    engine = asyncio.run(make())
    if hasattr(engine, "_intake"):  # (the results taken by execution/intake.py)
        engine.intake = engine._intake(Analysis(analysis_plan(info)))
        take, in_flight = engine.intake.take, engine.intake.in_flight
    else:  # (before the engine was split)
        engine.analysis = Analysis(analysis_plan(info))
        take, in_flight = engine._take, engine._in_flight
    worker = engine.transport._workers[0]
    parts = ("plan", "run_calls (the calls, system included)", "judge (keep and judge)",
             "take (store rows, tallies)")
    spent.update(dict.fromkeys(parts, 0.0))
    for chunk in (units[i:i + CHUNK] for i in range(0, len(units), CHUNK)):
        t = clock(); jobs = engine._plan_chunk(chunk); spent[parts[0]] += clock() - t
        t = clock(); called = [worker.run_calls(job) for job in jobs]
        spent[parts[1]] += clock() - t
        t = clock(); results = [judged(item, worker.evaluators) for item in called]
        spent[parts[2]] += clock() - t
        del called
        t = clock()
        for result in results:
            take(result, in_flight.pop(result.unit))
        spent[parts[3]] += clock() - t
        del results
    t = clock(); db.flush(wait=True); spent["the writes (no writer thread, no merge)"] = clock() - t
    db.close()
    return {name: 1e6 * seconds / len(units) for name, seconds in spent.items()}


once()  # (the first pass pays for first imports and first uses)
print(json.dumps(once()))
"""

# One cold run under cProfile, every thread with its own profiler timed by its CPU time.
PROFILE = """
import cProfile, pstats, sys, threading, time
profiles = []
def start(*_):
    profile = cProfile.Profile(time.thread_time)
    profiles.append(profile)
    profile.enable()
threading.setprofile(start)
start()
import oloproof
oloproof.run(sys.argv[1])
for profile in profiles:
    profile.disable()
stats = pstats.Stats(profiles[0])
for profile in profiles[1:]:
    stats.add(profile)
stats.dump_stats(sys.argv[2])
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


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(project: Path, env: dict[str, str], cold: bool = True) -> dict:
    """One run of the suite in a fresh process (on a fresh store if `cold`)."""
    if cold:
        shutil.rmtree(project / ".oloproof", ignore_errors=True)
    cpu = _cpu()
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(project / "oloproof.yaml")],
                         capture_output=True, text=True, env=env)
    process = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"the run failed (exit {out.returncode}):\n{out.stderr}")
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return {**found, "process": process, "cpu": _cpu() - cpu}


def _projects(root: Path, sizes: list[int]) -> dict[int, Path]:
    projects = {}
    for size in sizes:
        project = root / f"sa{size}"
        shutil.copytree(EXAMPLE, project, ignore=shutil.ignore_patterns("__pycache__",
                                                                        ".oloproof"))
        scale(project, size)
        projects[size] = project
    return projects


def _median(values: list[float]) -> str:
    return f"{statistics.median(values):.2f} ({min(values):.2f}–{max(values):.2f})"


def profile(project: Path, out: Path) -> None:
    """One cold run of this checkout under cProfile; its top lines."""
    shutil.rmtree(project / ".oloproof", ignore_errors=True)
    subprocess.run([sys.executable, "-c", PROFILE, str(project / "oloproof.yaml"), str(out)],
                   check=True, capture_output=True, env=child_env(EXAMPLE.parents[2]))
    import pstats

    stats = pstats.Stats(str(out))
    stats.sort_stats("tottime").print_stats(30)
    stats.sort_stats("cumtime").print_stats(60)


def stages(project: Path, builds: list[tuple[str, dict[str, str]]], rounds: int,
           against: str) -> dict[str, dict[str, float]]:
    """`STAGES` for each build, alternately, `rounds` times; the medians, per case."""
    found: dict[str, list[dict[str, float]]] = {label: [] for label, _ in builds}
    for round_ in range(rounds):
        for label, env in builds if round_ % 2 == 0 else builds[::-1]:
            out = subprocess.run([sys.executable, "-c", STAGES, str(project / "oloproof.yaml")],
                                 capture_output=True, text=True, env=env, check=True)
            found[label].append(json.loads(out.stdout.strip().splitlines()[-1]))
    labels = [f"this ({revision()})"] + ([f"{against} ({revision(against)})"]
                                         if len(builds) > 1 else [])
    names = list(found["this"][0])
    print(f"The engine's parts in one thread, the collector off, µs of CPU per case (medians of "
          f"{rounds}; {load()}):\n")
    print("| part | " + " | ".join(labels) + " |")
    print("|---|" + "---|" * len(labels))
    for name in names:
        print(f"| {name} | " + " | ".join(
            f"{statistics.median([row[name] for row in found[label]]):.1f}"
            for label, _ in builds) + " |")
    return {label: {name: round(statistics.median([row[name] for row in found[label]]), 1)
                    for name in names} for label, _ in builds}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks support_agent_scale")
    parser.add_argument("--cases", default="2000,20000",
                        help="comma-separated sizes (default: 2000,20000)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--against", default=BEFORE, metavar="REF",
                        help=f"the revision to measure alternately (default {BEFORE}; "
                             "`none` for this checkout alone)")
    parser.add_argument("--warm", action="store_true", help="also a warm run after each cold")
    parser.add_argument("--profile", action="store_true",
                        help="profile one cold run of this checkout (the first size) instead")
    parser.add_argument("--stages", action="store_true",
                        help="instead, the engine's parts one after another in one thread, "
                             "CPU per case, this checkout and REF alternately (first size)")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.cases.split(",")]
    params = {"cases": args.cases, "rounds": args.rounds, "against": args.against,
              "warm": args.warm, "mode": "profile" if args.profile else
              "stages" if args.stages else "runs"}
    root = Path(tempfile.mkdtemp(prefix="oloproof-sa-"))
    try:
        projects = _projects(root, sizes)
        if args.profile:
            profile(projects[sizes[0]], root / "run.prof")
            return {"figures": {}, "params": params}
        builds = versions([] if args.against == "none" else [args.against])
        if args.stages:
            return {"figures": stages(projects[sizes[0]], builds, args.rounds, args.against),
                    "params": params}
        labels = [label if label != "this" else f"this ({revision()})" for label, _ in builds]
        if len(builds) > 1:
            labels[1] = f"{args.against} ({revision(args.against)})"
        results: dict[tuple[int, int, str], list[dict]] = {}
        loads = [load()]
        print(f"# {load()}", file=sys.stderr, flush=True)
        for round_ in range(args.rounds):
            order = builds if round_ % 2 == 0 else builds[::-1]
            for size in sizes:
                for (label, env) in order:
                    at = [b[0] for b in builds].index(label)
                    m = measure(projects[size], env)
                    results.setdefault((size, at, "cold"), []).append(m)
                    if args.warm:
                        results.setdefault((size, at, "warm"), []).append(
                            measure(projects[size], env, cold=False))
                    print(f"# round {round_ + 1}, {size:,} cases, {labels[at]}: call "
                          f"{m['seconds']:.2f} s, process {m['process']:.2f} s, cpu "
                          f"{m['cpu']:.2f} s; {load()}", file=sys.stderr, flush=True)
            loads.append(load())
        # Every revision gives the same figures.
        for size in sizes:
            seen = {json.dumps([m["figures"], m["cache"]], sort_keys=True)
                    for (s, _, _), ms in results.items() if s == size for m in ms}
            if len(seen) != 1:
                raise SystemExit(f"{size:,} cases: the revisions' figures differ")
        print(f"support_agent scaled, {args.rounds} rounds, alternating; {labels[0]} "
              f"against {', '.join(labels[1:]) or 'nothing'}; {loads[0]} at the start, "
              f"{loads[-1]} at the end; the figures (metrics, decisions, gate, cache) the "
              f"same for every revision.\n")
        print("| cases | revision | run | `oloproof.run` s | process s | CPU s | peak RSS MB |")
        print("|---|---|---|---|---|---|---|")
        for (size, at, kind), ms in sorted(results.items()):
            print(f"| {size:,} | {labels[at]} | {kind} | "
                  f"{_median([m['seconds'] for m in ms])} | "
                  f"{_median([m['process'] for m in ms])} | {_median([m['cpu'] for m in ms])} | "
                  f"{statistics.median([m['rss_mb'] for m in ms]):.0f} |")
        print("\nWhere the CPU went (cold, medians, seconds): each thread's CPU time by name "
              "(`main` from the call's start: loading, planning, judging, taking results; "
              "`oloproof-case` the lanes running the system; `oloproof-store` the writer "
              "thread; `oloproof-import` the imports beside the run), and the garbage "
              "collector's by generation (inside those threads' time):\n")
        names = ("main", "oloproof-case", "oloproof-store", "oloproof-import")
        print("| cases | revision | " + " | ".join(names) + " | gc 0 / 1 / 2 |")
        print("|---|---|" + "---|" * (len(names) + 1))
        for (size, at, kind), ms in sorted(results.items()):
            if kind != "cold":
                continue
            cells = [f"{statistics.median([m['threads'].get(n, 0.0) for m in ms]):.2f}"
                     for n in names]
            collected = " / ".join(f"{statistics.median([m['gc'][g] for m in ms]):.2f}"
                                   for g in range(3))
            print(f"| {size:,} | {labels[at]} | " + " | ".join(cells) + f" | {collected} |")
        if len(builds) > 1:
            print("\nThis checkout / the other, per round (cold), median in brackets:\n")
            for size in sizes:
                this, other = results[(size, 0, "cold")], results[(size, 1, "cold")]
                for key, name in (("seconds", "call"), ("process", "process"), ("cpu", "CPU")):
                    ratios = [a[key] / b[key] for a, b in zip(this, other, strict=True)]
                    print(f"- {size:,} cases, {name}: "
                          + ", ".join(f"{r:.2f}" for r in ratios)
                          + f" [{statistics.median(ratios):.2f}]")
        print(f"\n{finished()}")
    finally:
        shutil.rmtree(root, ignore_errors=True)
    figures: dict[str, dict[str, float]] = {"call_s": {}, "cpu_s": {}, "rss_mb": {}}
    for size in sizes:
        this = results[(size, 0, "cold")]
        figures["call_s"][str(size)] = round(statistics.median(m["seconds"] for m in this), 2)
        figures["cpu_s"][str(size)] = round(statistics.median(m["cpu"] for m in this), 2)
        figures["rss_mb"][str(size)] = round(statistics.median(m["rss_mb"] for m in this))
        if len(builds) > 1:
            other = results[(size, 1, "cold")]
            figures.setdefault("call_over_against", {})[str(size)] = round(statistics.median(
                a["seconds"] / b["seconds"] for a, b in zip(this, other, strict=True)), 3)
    details = {f"{size}:{labels[at]}:{kind}": [
        {k: (round(v, 3) if isinstance(v, float) else v) for k, v in m.items()
         if k in ("seconds", "process", "cpu", "rss_mb", "threads", "gc")} for m in ms]
        for (size, at, kind), ms in sorted(results.items())}
    return {"figures": figures, "params": params, "details": details}
