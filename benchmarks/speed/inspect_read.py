"""Reading a 10,000-sample, 3-epoch Inspect log as trials, beside Inspect's own read_eval_log.

The log is made by Inspect: the `clean` task of tests/harnesses/inspect_tasks.py runs on
`mockllm` (4 samples × 3 epochs: tool calls, a partial credit, a flaky sample), and its samples
are copied under new ids into a log of `--samples` samples × 3 epochs, written by Inspect's own
recorder (`EvalRecorder`, as `write_eval_log` drives it, each sample written through). Inspect
looks, for each sample it writes, through every sample (or summary) written before it for one
of the same id and epoch — quadratic: 30,000 samples did not finish in 40 minutes — so the
generator replaces that one method by the same without the look, which finds nothing here.
Each sample keeps its messages, scores and usage; its events are dropped, so that both readers
parse the same data (the least favourable case for the import, which leaves events unread)
and the file stays small. A second log of
`--samples // 5` samples is made the same way, to see whether memory grows with the log.

Measured, each in a fresh process, alternately (A/B/A/B… `--repeat` times), wall and CPU time
and peak resident memory:

- `inspect`: Inspect's `read_eval_log(path)`, the whole log with its samples, as a user of
  Inspect reads one;
- `oloproof`: `read_inspect_log(path)` and every trial of `.trials()` (the header, then the
  samples 256 at a time, each mapped to a record with its scores, trajectory and usage),
  keeping only counts — what an import does before storing.

Figures: the median CPU ratio oloproof / inspect, and each reader's peak memory on the small
and the large log (flat: the large log's peak over the small one's).

Usage: python -m benchmarks inspect_read [--samples 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

TARGETS = {
    # an import (reading and mapping every trial) costs at most twice Inspect's own read
    "cpu_ratio_oloproof_over_inspect": ("<=", 2.0),
    # memory does not grow with the log: 5× the samples, at most 1.25× the peak
    "oloproof_peak_large_over_small": ("<=", 1.25),
}

ROOT = Path(__file__).resolve().parents[2]

MAKE_LOG = """
import anyio, sys
from pathlib import Path
sys.path.insert(0, {tasks!r})
import inspect_tasks
from inspect_ai.log import condense_sample, read_eval_log
from inspect_ai.log._recorders import eval as recorders
from inspect_ai.log._recorders.eval import EvalRecorder


def journal_summary(self, sample):
    # ZipLogFile._journal_summary without its scan of every summary so far for one of the same
    # (id, epoch), which can never match here (each is written once) and made writing 30,000
    # samples take hours; the file written is the same
    self._summary_counter += 1
    summary = sample.summary()
    path = recorders._journal_summary_path(recorders._journal_summary_file(self._summary_counter))
    self._zip_writestr(path, [summary])
    self._summaries.append(summary)


recorders.ZipLogFile._journal_summary = journal_summary

out = Path(sys.argv[1])
made = inspect_tasks.make_logs(out / "template", {{
    "clean": (inspect_tasks.desk_task(inspect_tasks.CLEAN, "clean"), "eval")}})
log = read_eval_log(made["clean"])
template = {{(str(s.id), s.epoch): s for s in log.samples}}
kinds = sorted({{k[0] for k in template}})


async def write(n: int, path: Path) -> None:
    # Inspect's own recorder, as write_eval_log drives it, but writing each sample through
    # (its bulk re-log path): write_eval_log buffers every sample and, for each one, looks
    # through all those before it, which took hours for 30,000
    recorder = EvalRecorder(str(path.parent))
    await recorder.log_init(log.eval, str(path), clean=True)
    await recorder.log_start(log.eval, log.plan)
    for i in range(n):
        for epoch in range(1, log.eval.config.epochs + 1):
            source = template[(kinds[i % len(kinds)], epoch)]
            sample = source.model_copy(update={{
                "id": f"case-{{i:05d}}", "epoch": epoch, "uuid": None, "events": [],
                "attachments": {{}}, "events_data": None, "timelines": None}})
            await recorder.log_sample(log.eval, condense_sample(sample), write_through=True)
    await recorder.log_finish(log.eval, log.status, log.stats, log.results, log.reductions,
                              log.error)


for n in map(int, sys.argv[2:]):
    log.eval.dataset.samples = n
    log.eval.dataset.sample_ids = [f"case-{{i:05d}}" for i in range(n)]
    if log.results is not None:
        log.results.total_samples = log.results.completed_samples = n * 3
    anyio.run(write, n, out / f"log-{{n}}.eval")
    print(out / f"log-{{n}}.eval")
"""

_READ = """
import resource, sys, time
reader, path = sys.argv[1], sys.argv[2]
c0, t0 = time.process_time(), time.perf_counter()
if reader == "inspect":
    from inspect_ai.log import read_eval_log
    log = read_eval_log(path)
    count = len(log.samples)
else:
    from oloproof.harnesses.inspect_logs import read_inspect_log
    log = read_inspect_log(path)
    count = sum(1 for _ in log.trials())
c1, t1 = time.process_time(), time.perf_counter()
print(count, c1 - c0, t1 - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
"""


def _read(reader: str, path: Path) -> dict[str, float]:
    done = subprocess.run([sys.executable, "-c", _READ, reader, str(path)], check=True,
                          capture_output=True, text=True, cwd=ROOT)
    count, cpu, wall, peak_kb = done.stdout.split()
    return {"count": int(count), "cpu_s": float(cpu), "wall_s": float(wall),
            "peak_mb": int(peak_kb) / 1024}


def run(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="inspect_read")
    parser.add_argument("--samples", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    small_n = max(args.samples // 5, 1)
    with tempfile.TemporaryDirectory() as scratch:
        made = subprocess.run(
            [sys.executable, "-c", MAKE_LOG.format(tasks=str(ROOT / "tests" / "harnesses")),
             scratch, str(small_n), str(args.samples)],
            check=True, capture_output=True, text=True, cwd=scratch)
        small, large = (Path(p) for p in made.stdout.split())
        runs: dict[str, list[dict[str, float]]] = {"inspect": [], "oloproof": []}
        for _ in range(args.repeat):
            for reader in ("inspect", "oloproof"):  # alternately
                runs[reader].append(_read(reader, large))
        small_peak = {reader: _read(reader, small)["peak_mb"] for reader in runs}
        size_mb = large.stat().st_size / 2**20
    assert all(r["count"] == args.samples * 3 for r in runs["oloproof"])
    median = {reader: {key: statistics.median(r[key] for r in rs)
                       for key in ("cpu_s", "wall_s", "peak_mb")}
              for reader, rs in runs.items()}
    return {
        "figures": {
            "cpu_ratio_oloproof_over_inspect": round(
                median["oloproof"]["cpu_s"] / median["inspect"]["cpu_s"], 3),
            "inspect_cpu_s": round(median["inspect"]["cpu_s"], 2),
            "oloproof_cpu_s": round(median["oloproof"]["cpu_s"], 2),
            "inspect_wall_s": round(median["inspect"]["wall_s"], 2),
            "oloproof_wall_s": round(median["oloproof"]["wall_s"], 2),
            "inspect_peak_mb": round(median["inspect"]["peak_mb"], 1),
            "oloproof_peak_mb": round(median["oloproof"]["peak_mb"], 1),
            "inspect_peak_small_mb": round(small_peak["inspect"], 1),
            "oloproof_peak_small_mb": round(small_peak["oloproof"], 1),
            "oloproof_peak_large_over_small": round(
                median["oloproof"]["peak_mb"] / small_peak["oloproof"], 3),
        },
        "params": {"samples": args.samples, "epochs": 3, "small_samples": small_n,
                   "repeat": args.repeat, "log_mb": round(size_mb, 1),
                   "load_average": os.getloadavg()[0]},
    }


if __name__ == "__main__":
    import json

    print(json.dumps(run(sys.argv[1:]), indent=2))
