"""How long `make test`'s pytest takes, wall and CPU: this checkout against another revision,
alternately.

Each round runs the test command of this checkout, then that of the other revision (its whole
tree checked out in a temporary directory, its `src/` first on PYTHONPATH), in
fresh processes, and prints for each run:

- the wall time;
- the CPU time (user + system) of pytest and of every process it started and waited for
  (the workers of pytest-xdist, the fork server and the commands it forked, browsers, the
  commands the tests start) -- what the machine had to do, which a loaded machine does not
  change much, where the wall time swings with what else runs. Ray's processes are not in
  it: they detach from the process that starts them;
- the load average before and after, and what pytest's last line says (passed, failed).

The test command of a revision is the pytest line of its Makefile's `test:` target, with the
Makefile's own defaults for its variables (`-n 2` on two workers where it has one):
`python -m benchmarks suite_time --against main`. `--paths tests/cli ...` runs only those
tests, with the same options. The environment is this one (`.venv` with the test extras);
the packages the other revision's tests need must be installed here.

The figures are the medians of each revision's runs (`this_wall_s`, `this_cpu_s`, the other's,
and their ratios) and whether every run's pytest passed.

Arguments: [--against main] [--rounds 1] [--paths PATH ...] [--options '-q'] [--no-this-first]
"""

from __future__ import annotations

import argparse
import atexit
import os
import re
import resource
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks._versions import ROOT

TARGETS = {"every_run_passed": ("==", True)}
LEFT_OUT = ("runs the whole test suite twice a round (10 minutes and more on two shared "
            "cores): it measures the tests, not Oloproof; run it by hand when the suite's "
            "speed is the question")


def export(ref: str) -> Path:
    """A checkout of revision `ref` in a temporary directory (removed at exit): a clone that
    shares this repository's objects, so its tests find the history they read, with this
    checkout's `.venv` linked in (tests start `.venv/bin/python`)."""
    target = Path(tempfile.mkdtemp(prefix=f"oloproof-tests-{ref.replace('/', '_')}-"))
    atexit.register(shutil.rmtree, target, True)
    sha = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--verify", f"{ref}^{{commit}}"],
                         capture_output=True, text=True, check=True).stdout.strip()
    subprocess.run(["git", "clone", "--quiet", "--shared", "--no-checkout", str(ROOT),
                    str(target)], check=True)
    subprocess.run(["git", "-C", str(target), "checkout", "--quiet", "--detach", sha],
                   check=True)
    (target / ".venv").symlink_to(ROOT / ".venv")
    return target


def test_command(tree: Path) -> list[str]:
    """The pytest arguments of `make test` in `tree` (after `-m pytest`)."""
    makefile = (tree / "Makefile").read_text(encoding="utf-8")
    variables = dict(re.findall(r"^(\w+)\s*[?:]?=\s*(.*?)\s*$", makefile, re.M))
    recipe = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    line = next(line for line in recipe.splitlines() if "-m pytest" in line)
    line = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), ""), line)
    return shlex.split(line.split("-m pytest", 1)[1])


def run_tests(label: str, tree: Path, options: list[str], paths: list[str],
              log: Path) -> dict[str, Any]:
    argv = [sys.executable, "-m", "pytest", *options, "-p", "no:cacheprovider", *paths]
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(tree / "src"),
                                                      env.get("PYTHONPATH")]))
    load_before = os.getloadavg()[0]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.monotonic()
    with log.open("w", encoding="utf-8") as out:
        done = subprocess.run(argv, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, check=False)
    wall = time.monotonic() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    lines = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    return {"label": label, "wall": wall, "cpu": cpu, "load": (load_before, os.getloadavg()[0]),
            "code": done.returncode, "said": lines[-1] if lines else "", "log": str(log)}


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks suite_time")
    parser.add_argument("--against", default="main", help="the other revision (default main)")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--paths", nargs="*", default=[], help="tests to run (default all)")
    parser.add_argument("--options", help="pytest's options for both revisions, instead of "
                        "each one's `make test` (e.g. '-q', to compare one process with one)")
    parser.add_argument("--this-first", action=argparse.BooleanOptionalAction, default=True)
    options = parser.parse_args(argv)

    other = export(options.against)
    logs = Path(tempfile.mkdtemp(prefix="oloproof-test-suite-logs-"))
    revision = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, check=True).stdout.strip()
    chosen = shlex.split(options.options) if options.options is not None else None
    print(f"# this: {revision} ({' '.join(chosen or test_command(ROOT))}); {options.against}: "
          f"{' '.join(chosen or test_command(other))}; logs in {logs}", flush=True)
    print("| run | revision | wall s | CPU s | load before → after | pytest said |")
    print("|---|---|---|---|---|---|", flush=True)
    order = [("this", ROOT), (options.against, other)]
    if not options.this_first:
        order.reverse()
    number = 0
    results: list[dict[str, Any]] = []
    for _ in range(options.rounds):
        for label, tree in order:
            number += 1
            result = run_tests(label, tree, chosen or test_command(tree), options.paths,
                               logs / f"{number}-{label}.log")
            results.append(result)
            load = result["load"]
            print(f"| {number} | {label} | {result['wall']:.1f} | {result['cpu']:.1f} | "
                  f"{load[0]:.1f} → {load[1]:.1f} | {result['said']} |", flush=True)


    def median(label: str, key: str) -> float:
        return statistics.median(r[key] for r in results if r["label"] == label)

    ref = options.against
    figures = {"this_wall_s": round(median("this", "wall"), 1),
               "this_cpu_s": round(median("this", "cpu"), 1),
               f"{ref}_wall_s": round(median(ref, "wall"), 1),
               f"{ref}_cpu_s": round(median(ref, "cpu"), 1),
               "wall_this_over_other": round(median("this", "wall") / median(ref, "wall"), 3),
               "cpu_this_over_other": round(median("this", "cpu") / median(ref, "cpu"), 3),
               "every_run_passed": all(r["code"] == 0 for r in results)}
    return {"figures": figures,
            "params": {"against": ref, "rounds": options.rounds, "paths": options.paths,
                       "options": options.options},
            "details": {"runs": [{k: v for k, v in r.items() if k != "log"} for r in results]}}
