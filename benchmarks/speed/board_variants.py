"""Every combination of system.variants in one run: 6 variants × 2,000 cases against one
variant's 2,000-case run, side by side (issue 45: at most 6.5× its time).

The system is the support_agent example (a scripted refund agent recording its trajectory,
six criteria; no model, no network: its time is Oloproof's and the agent's own CPU), scaled to
2,000 distinct cases as `support_agent_scale` scales it, with `system.variants` of 3 models ×
2 prompts added to its suite and one line added to the agent: it reads
`current_case().variant` and echoes it in its output (so each combination is a distinct
execution that knows its variant, and nothing else about the agent changes).

Each measurement is a fresh process on a fresh store, one after the other, alternating which
goes first in each round:

- `one`: `oloproof.run(suite, variant="model=small,prompt=v1")`, one combination's run;
- `all`: `oloproof.run(suite)`, the 6 combinations' runs (one load of the suite, one start of
  the workers, the agent's module imported once).

The figures are the medians over rounds of the per-round ratio of the `oloproof.run` call's
wall time (`ratio`, the target: what a host program waits for, the engine's own imports and
the suite's load included) and of the whole process's (`process_ratio`: interpreter start and
`import oloproof` too), of the ratio of their CPU times (user + system, all threads:
`cpu_ratio`, which the machine's load stretches far less), and each side's median call time.
The machine's load average is printed beside them, at the start and after each round.

Arguments: [--cases 2000] [--rounds 5]
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

from benchmarks._versions import ROOT, child_env, load
from benchmarks.speed.support_agent_scale import scale

EXAMPLE = ROOT / "src" / "oloproof" / "examples" / "support_agent"
ONE = "model=small,prompt=v1"
TARGETS = {"ratio": ("<=", 6.5)}

CHILD = """
import json, sys, time
import oloproof
start = time.perf_counter()
done = oloproof.run(sys.argv[1], variant=sys.argv[2] or None)
seconds = time.perf_counter() - start
runs = [done] if isinstance(done, oloproof.RunResult) else list(done)
print(json.dumps({"seconds": seconds, "runs": len(runs),
                  "cases": [r.document.cases for r in runs],
                  "variants": [r.document.system.variant for r in runs],
                  "misses": [r.document.cache.execution.miss for r in runs]}))
"""

VARIANTS = """\
  variants:                          # the benchmark's candidates: 3 models × 2 prompts
    model: [small, large, open]
    prompt: [v1, v2]
"""


def project(root: Path, cases: int) -> Path:
    """The support_agent example, `cases` distinct cases, with variants that its agent reads."""
    folder = root / "desk"
    shutil.copytree(EXAMPLE, folder, ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
    scale(folder, cases)  # (distinct ids and messages, as support_agent_scale makes them)
    suite = (folder / "oloproof.yaml").read_text()
    marker = "  callable: app:run\n"
    assert marker in suite
    (folder / "oloproof.yaml").write_text(suite.replace(marker, marker + VARIANTS))
    app = (folder / "app.py").read_text()
    ending = '    return {"answer": answer, "reply": _REPLIES[answer]}\n'
    assert app.endswith(ending)
    (folder / "app.py").write_text(app.removesuffix(ending) + (
        '    return {"answer": answer, "reply": _REPLIES[answer],\n'
        '            "variant": dict(current_case().variant)}\n'))
    return folder / "oloproof.yaml"


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def measure(config: Path, variant: str, env: dict[str, str]) -> dict:
    """One cold run (a fresh store) in a fresh process."""
    shutil.rmtree(config.parent / ".oloproof", ignore_errors=True)
    cpu = _cpu()
    started = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", CHILD, str(config), variant],
                         capture_output=True, text=True, env=env, check=False)
    process = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"the run failed (exit {out.returncode}):\n{out.stderr}")
    found = json.loads(out.stdout.strip().splitlines()[-1])
    return {**found, "process": process, "cpu": _cpu() - cpu}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks board_variants")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="oloproof-variants-"))
    env = child_env(EXAMPLE.parents[2])
    try:
        config = project(root, args.cases)
        print(f"# {load()}", file=sys.stderr, flush=True)
        rows: list[dict[str, dict]] = []
        loads = [load()]
        for round_ in range(args.rounds):
            order = [("one", ONE), ("all", "")]
            found = {}
            for side, variant in order if round_ % 2 == 0 else order[::-1]:
                found[side] = m = measure(config, variant, env)
                expected = 1 if side == "one" else 6
                if m["runs"] != expected or m["misses"] != [args.cases] * expected:
                    raise SystemExit(f"{side}: expected {expected} runs of {args.cases} "
                                     f"executed cases, got {m}")
            rows.append(found)
            loads.append(load())
            print(f"# round {round_ + 1}: one {found['one']['seconds']:.2f} s, all "
                  f"{found['all']['seconds']:.2f} s (ratio "
                  f"{found['all']['seconds'] / found['one']['seconds']:.2f}); {load()}",
                  file=sys.stderr, flush=True)
    finally:
        shutil.rmtree(root, ignore_errors=True)

    def median_ratio(key: str) -> float:
        return round(statistics.median(r["all"][key] / r["one"][key] for r in rows), 2)

    return {
        "figures": {
            "ratio": median_ratio("seconds"),
            "process_ratio": median_ratio("process"),
            "cpu_ratio": median_ratio("cpu"),
            "one_s": round(statistics.median(r["one"]["seconds"] for r in rows), 2),
            "all_s": round(statistics.median(r["all"]["seconds"] for r in rows), 2),
        },
        "params": {"cases": args.cases, "rounds": args.rounds, "variants": 6,
                   "system": "support_agent example + variants read"},
        "details": {"loads": loads, "rounds": [
            {side: {k: round(v, 3) for k, v in m.items() if isinstance(v, float)}
             for side, m in r.items()} for r in rows]},
    }
