"""`oloproof view`: how fast its pages answer and are drawn (issue 31 §4: the runs page of a
store with 500 runs ≤ 0.3 s; the page of a 20,000-case run ≤ 2 s).

Two stores:

- 500 runs: a 40-case project (benchmarks/_synthetic.py) run once for real, then its run row
  and case rows copied 499 times in SQL under new ids, a second apart, with five system
  versions in turn — each listed run has a real document, as a store a team keeps for months;
- one run of 20,000 cases (the HTML report benchmark's project: a 4-step trajectory, some wrong
  answers, broken constraints and errors).

`oloproof view` is started as a command on each store (a process of its own, `--port 0`).
Measured, medians of `--repeat` fresh requests or pages:

- *answer*: the server's whole answer to one GET (urllib, from request to last byte);
- *ready*: in headless Chromium, navigation start → the page drawn (`window.__oloproofReady`:
  the runs table; for a run, its summary and the first page of its case list);
- *open*: a click on a case → its panel drawn (its details asked of the API then).

Beside them, for the 20,000-case run: the same report written as a file (`report --html`,
every case's details embedded). The targets are the pages' *ready* in Chromium; every
endpoint's answer, size and server CPU per answer are in the saved JSON's details. Needs
Chromium at /usr/bin/chromium (`make browser`).

Arguments: [--runs 500] [--cases 20000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any

from benchmarks._synthetic import make_project as make_small_project
from benchmarks.speed.html_report import ARGS, CHROMIUM
from benchmarks.speed.html_report import make_project as make_large_project

WORK = Path(__file__).resolve().parents[1] / "work" / "view"  # (git ignores it)
TARGETS = {"runs_page_ready_ms": ("<=", 300.0), "run_page_ready_ms": ("<=", 2000.0)}


def copy_runs(store: Path, copies: int) -> None:
    """The store's one run, copied `copies` times under new ids (started a second apart,
    system versions v1…v5 in turn), with its case rows."""
    conn = sqlite3.connect(store, isolation_level=None)
    try:
        (run_id, started) = conn.execute("SELECT run_id, started_at FROM runs").fetchone()
        conn.execute("BEGIN")
        for i in range(1, copies + 1):
            new = f"{run_id[:-6]}{i:06d}"
            conn.execute(
                "INSERT INTO runs SELECT ?, project, ?, finished_at - started_at + ?, status, "
                "pid, host, system_name, ?, n_cases, suite, policy, "
                "replace(summary, ?, ?) FROM runs WHERE run_id = ?",
                (new, started - i, started - i, f"v{1 + i % 5}", run_id, new, run_id))
            conn.execute(
                "INSERT INTO run_cases SELECT ?, seq, case_id, case_digest, exec_key, outcome "
                "FROM run_cases WHERE run_id = ?", (new, run_id))
        conn.execute("COMMIT")
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()


class View:
    """`oloproof view --port 0` on a store, as a process of its own."""

    def __init__(self, config: Path, store: Path) -> None:
        env = dict(os.environ, CI="1")
        self.process = subprocess.Popen(
            [sys.executable, "-m", "oloproof.cli.main", "view", "--port", "0", "--config",
             str(config), "--store", str(store)], stdout=subprocess.PIPE,
            stderr=subprocess.PIPE, text=True, env=env)
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        found = re.match(r"Oloproof view: (http://\S+)/\?token=(\S+) ", line)
        if not found:
            raise SystemExit(f"the view did not start: {line!r} {self.process.stderr.read()}")
        # Its origin (the pages' addresses start there) and its token (docs/view.md#its-token).
        self.url, self.token = found.group(1) + "/", found.group(2)
        self.port = int(self.url.rstrip("/").rsplit(":", 1)[1])

    def answer(self, path: str) -> tuple[float, int]:
        """Seconds for one whole answer, and its size in bytes (the token in a header, as a
        script sends it)."""
        request = urllib.request.Request(self.url.rstrip("/") + path,
                                         headers={"Authorization": f"Bearer {self.token}"})
        t = time.perf_counter()
        with urllib.request.urlopen(request, timeout=120) as answer:
            body = answer.read()
        return time.perf_counter() - t, len(body)

    def cookie(self) -> dict[str, str]:
        """The cookie a browser holds once it opened the printed address."""
        return {"name": f"oloproof_view_{self.port}", "value": self.token, "url": self.url}

    def cpu_seconds(self) -> float:
        """CPU time the view's process has used (user + system): what an answer costs it,
        whatever else the machine is doing."""
        fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def close(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def median_answer(view: View, path: str, repeat: int) -> tuple[float, int, float]:
    """(median seconds of an answer, its size, the server's CPU seconds per answer)."""
    view.answer(path)  # the first answer imports the report's code: not what is measured
    times, size = [], 0
    cpu = view.cpu_seconds()
    for _ in range(repeat):
        seconds, size = view.answer(path)
        times.append(seconds)
    return statistics.median(times), size, (view.cpu_seconds() - cpu) / repeat


def page_ready(browser: Any, view: View, path: str, repeat: int, case: str | None = None
               ) -> dict[str, float]:
    """Medians over fresh pages (each holding the view's cookie, as after the printed address
    was opened once): navigation → drawn, and (with `case`) a click → its panel."""
    ready, opened = [], []
    url = view.url.rstrip("/") + path
    for _ in range(repeat):
        context = browser.new_context(viewport={"width": 1400, "height": 1000})
        context.add_cookies([view.cookie()])
        page = context.new_page()
        page.goto(url)
        page.wait_for_selector("#app[data-ready]", timeout=120_000)
        ready.append(page.evaluate("window.__oloproofReady"))
        if case is not None:
            page.fill("#case-search", case)
            page.wait_for_selector('#app[data-listed="1"]', timeout=60_000)
            t = time.perf_counter()
            page.click(f'#case-rows tr[data-case="{case}"]')
            page.wait_for_selector(f'#case-panel[data-case="{case}"]', timeout=60_000)
            opened.append((time.perf_counter() - t) * 1000)
        context.close()
    out = {"ready_ms": statistics.median(ready)}
    if opened:
        out["open_ms"] = statistics.median(opened)
    return out


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks view")
    parser.add_argument("--runs", type=int, default=500)
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=5,
                        help="fresh pages per figure (answers: four times as many)")
    args = parser.parse_args(argv)
    os.environ.pop("OLOPROOF_STORE", None)
    os.environ["CI"] = "1"
    from playwright.sync_api import sync_playwright

    import oloproof
    from oloproof.api import find_store, write_html_report

    many = make_small_project(WORK / "many", 40) / "oloproof.yaml"
    find_store(many).unlink(missing_ok=True)
    oloproof.run(many, many.parent / "release.yaml")
    copy_runs(find_store(many), args.runs - 1)

    large = make_large_project(WORK / "large", args.cases)
    t = time.perf_counter()
    oloproof.run(large, large.parent / "release.yaml")
    run_s = time.perf_counter() - t
    with sqlite3.connect(find_store(large)) as conn:
        run_id = conn.execute("SELECT run_id FROM runs").fetchone()[0]
    t = time.perf_counter()
    report = write_html_report(run_id, WORK / "large.html", large, find_store(large))
    write_s = time.perf_counter() - t

    middle = f"case-{args.cases // 2:05d}"
    figures: dict[str, Any] = {}
    answers = args.repeat * 4
    views = {"many": View(many, find_store(many)), "large": View(large, find_store(large))}
    try:
        figures["runs_page"] = median_answer(views["many"], "/", answers)
        figures["api_runs"] = median_answer(views["many"], "/api/runs", answers)
        figures["run_page"] = median_answer(views["large"], f"/runs/{run_id}", answers)
        figures["api_report"] = median_answer(views["large"], f"/api/runs/{run_id}/report",
                                              answers)
        figures["api_case"] = median_answer(views["large"],
                                            f"/api/runs/{run_id}/cases?id={middle}",
                                            answers)
        figures["api_run"] = median_answer(views["large"], f"/api/runs/{run_id}", answers)
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
            version = browser.version
            figures["runs_ready"] = page_ready(browser, views["many"], "/", args.repeat)
            figures["run_ready"] = page_ready(browser, views["large"], f"/runs/{run_id}",
                                              args.repeat, middle)
            browser.close()
    finally:
        for view in views.values():
            view.close()

    answers_ms = {key: {"answer_ms": round(figures[key][0] * 1000, 1),
                        "bytes": figures[key][1],
                        "server_cpu_ms": round(figures[key][2] * 1000, 1)}
                  for key in ("runs_page", "api_runs", "run_page", "api_report", "api_case",
                              "api_run")}
    details = {**answers_ms, "runs_ready": figures["runs_ready"],
               "run_ready": figures["run_ready"], "chromium": version,
               "run_s": round(run_s, 1), "report_file_mib": round(
                   report.stat().st_size / 2**20, 1), "report_write_s": round(write_s, 1)}
    print(json.dumps(details, indent=1))
    return {"figures": {
        "runs_page_answer_ms": answers_ms["runs_page"]["answer_ms"],
        "runs_page_ready_ms": round(figures["runs_ready"]["ready_ms"]),
        "run_page_answer_ms": answers_ms["run_page"]["answer_ms"],
        "run_page_ready_ms": round(figures["run_ready"]["ready_ms"]),
        "open_a_case_ms": round(figures["run_ready"]["open_ms"]),
        "run_page_server_cpu_ms": answers_ms["run_page"]["server_cpu_ms"],
    }, "params": {"runs": args.runs, "cases": args.cases, "repeat": args.repeat},
        "details": details}
