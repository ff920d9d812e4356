"""A run against a provider that rate-limits, with and without `system.retries`: within 1.5 ×
the ideal plus the start-up and no case errored with retries; each refused call an errored
`system_error` case, said so, without (issue 28).

2,000 cases of an async system that awaits 50 ms per call, at `concurrency: 64`, behind a
simulated provider that refuses any call above 32 in flight, raising an exception that carries
`retry_after = 0.2` (as SDKs' rate-limit errors do). The best any client can do is 32 calls in
flight: 2000 × 0.05 / 32 = 3.125 s of calls.

- `retries`: the suite declares `system.retries: {attempts: 6, on: [app:RateLimited]}`. The
  run must complete with 0 errored cases, within 1.5× of 3.125 s plus the command's start-up
  (measured here as the same command on a 1-case suite).
- `no-retries`: the same suite without `retries:`. The rate-limited cases must be errored
  `system_error`, and the run must say so (the terminal line of errors by kind).

Each measurement is the whole `oloproof run` command in a fresh process, cold store; its
terminal report gives the words, and `oloproof gate latest --json` the same run's document.
Also reported: how many calls the provider refused, the most calls it saw in flight, and the
calls each case took.

The figures are the worst round's: `retries_over_ideal_max` = (wall − start-up) / ideal (the
target: ≤ 1.5), the cases errored with retries, and without them the cases errored, how many
of them `system_error`, and whether the terminal said so.

Arguments: [--cases 2000] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._versions import finished, load, revision

TARGETS = {"retries_over_ideal_max": ("<=", 1.5), "retries_errored": ("==", 0),
           "no_retries_errored_not_system_error": ("==", 0),
           "no_retries_terminal_says_so": ("==", True)}

APP = '''
import asyncio
import os
import time

from oloproof import system

LIMIT = 32
_in_flight = 0
_most = 0
_refused = 0


class RateLimited(Exception):
    """What the provider raises above LIMIT calls in flight."""

    def __init__(self):
        super().__init__(f"429: more than {LIMIT} requests in flight")
        self.retry_after = 0.2


@system(name="limited", version="v1")
async def run(case_input):
    global _in_flight, _most, _refused
    if _in_flight >= LIMIT:
        _refused += 1
        raise RateLimited()
    _in_flight += 1
    _most = max(_most, _in_flight)
    try:
        await asyncio.sleep(0.05)
    finally:
        _in_flight -= 1
    return {"answer": case_input["q"].upper()}


import atexit


@atexit.register
def _say():
    with open(os.path.join(os.path.dirname(__file__), "provider.json"), "w") as out:
        out.write('{"refused": %d, "most_in_flight": %d}' % (_refused, _most))
'''

SUITE = """version: 1
project: limited
dataset: data/cases.jsonl
system:
  name: limited
  version: v1
  callable: "app:run"
  concurrency: 64
{retries}evaluators:
  - {{type: exact_match, field: answer}}
"""

RETRIES = """  retries:
    attempts: 6
    on: ["app:RateLimited"]
    backoff_s: 0.2
    max_backoff_s: 5
"""

POLICY = """version: 1
rules:
  - {id: exact, metric: exact_match, min: 0.9}
"""


def make(root: Path, cases: int, retries: bool) -> Path:
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(APP, encoding="utf-8")
    (root / "oloproof.yaml").write_text(SUITE.format(retries=RETRIES if retries else ""),
                                        encoding="utf-8")
    (root / "release.yaml").write_text(POLICY, encoding="utf-8")
    with open(root / "data" / "cases.jsonl", "w", encoding="utf-8") as out:
        for i in range(cases):
            q = f"question {i}"
            out.write(json.dumps({"id": f"c{i:05d}", "input": {"q": q},
                                  "expected": {"answer": q.upper()}}) + "\n")
    return root


def oloproof() -> list[str]:
    return [str(Path(sys.executable).with_name("oloproof"))]


def timed_run(root: Path, *options: str) -> tuple[float, int, str]:
    env = dict(os.environ, CI="1", COLUMNS="100")
    began = time.perf_counter()
    done = subprocess.run([*oloproof(), "run", *options], cwd=root, env=env,
                          capture_output=True, text=True, timeout=600)
    return time.perf_counter() - began, done.returncode, done.stdout


def one(base: Path, cases: int, retries: bool, tag: str) -> dict:
    root = make(base / tag, cases, retries)
    seconds, code, text = timed_run(root)  # the terminal's words
    provider = json.loads((root / "provider.json").read_text())
    # The same run's document, read back from the store (nothing runs).
    done = subprocess.run([*oloproof(), "gate", "latest", "--json"], cwd=root,
                          env=dict(os.environ, CI="1"), capture_output=True, text=True,
                          timeout=600)
    document = json.loads(done.stdout)
    line = next((ln for ln in text.splitlines() if " cases · " in ln), "")
    broke = next((ln for ln in text.splitlines() if ln.startswith("What broke")), "")
    return {"seconds": round(seconds, 3), "exit": code,
            "errored": {k: sum(1 for e in document["errors"] if e["kind"] == k)
                        for k in sorted({e["kind"] for e in document["errors"]})},
            "executions": document.get("executions"), "provider": provider,
            "line": line.strip(), "what_broke": broke.strip()}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks rate_limits")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    ideal = args.cases * 0.05 / 32
    base = Path(tempfile.mkdtemp(prefix="oloproof-rate-limits-"))
    print(f"revision {revision()}; {load()}", flush=True)
    rounds = []
    try:
        for round_ in range(1, args.rounds + 1):
            startup_root = make(base / f"startup-{round_}", 1, True)
            startup, _, _ = timed_run(startup_root)
            with_retries = one(base, args.cases, True, f"retries-{round_}")
            without = one(base, args.cases, False, f"no-retries-{round_}")
            bound = 1.5 * ideal + startup
            row = {"round": round_, "ideal_s": ideal, "startup_s": round(startup, 3),
                   "bound_s": round(bound, 3), "retries": with_retries,
                   "within_bound": with_retries["seconds"] <= bound,
                   "over_ideal": round((with_retries["seconds"] - startup) / ideal, 2),
                   "no_retries": without}
            rounds.append(row)
            print(json.dumps(row), flush=True)
            print(f"# after round {round_}: {load()}", flush=True)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    print(finished())
    worst = max(rounds, key=lambda r: r["over_ideal"])
    errored = [sum(r["no_retries"]["errored"].values()) for r in rounds]
    return {"figures": {
        "retries_over_ideal_max": worst["over_ideal"],
        "retries_s_worst": worst["retries"]["seconds"],
        "startup_s_worst": worst["startup_s"],
        "retries_errored": max(sum(r["retries"]["errored"].values()) for r in rounds),
        "refused_with_retries_max": max(r["retries"]["provider"]["refused"] for r in rounds),
        "no_retries_errored_min": min(errored),
        "no_retries_errored_not_system_error": max(
            e - r["no_retries"]["errored"].get("system_error", 0)
            for e, r in zip(errored, rounds, strict=True)),
        "no_retries_terminal_says_so": all(
            "system_error" in r["no_retries"]["what_broke"] for r in rounds),
    }, "params": {"cases": args.cases, "rounds": args.rounds, "ideal_s": ideal},
        "details": {"rounds": rounds}}
