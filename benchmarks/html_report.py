"""The HTML report of a 20,000-case run: file size, write time, time to interactive (issue 6).

Builds a synthetic project (a trivial agent that records a 4-step trajectory; some wrong
answers, some broken constraints, a few errors), runs it once, writes the report twice (case
details gzip+base64, and plain JSON for comparison), and opens each in headless Chromium:

- ready: navigation start → the summary and the first page of the case list are drawn
  (`performance.now()` when the script finishes, so it is measured from navigation start);
- search: typing a case id → the list shows exactly that case (includes the 120 ms debounce);
- open: clicking it → its panel is drawn (decompresses that case's chunk);
- open far: a case in the last chunk, from its URL hash.

Appends the figures with the machine and date to benchmarks/RESULTS.md under "HTML report".
Usage: python benchmarks/html_report.py [--cases N] [--repeat 3] [--no-append]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORK = HERE / "work" / "html-report"
RESULTS = HERE / "RESULTS.md"
CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]

APP = '''
from oloproof import AgentConstraintCheck, AgentStep, AgentTrajectory, current_case, system


@system(name="html-bench", version="v1", records=("agent_trajectory/v1",))
def run(case_input):
    n = case_input["n"]
    if n % 997 == 0:
        raise RuntimeError(f"synthetic failure on request {n}")
    order = f"ord-{n % 500:03d}"
    answer = "declined" if n % 9 == 0 else "refunded"
    steps = (
        AgentStep(index=1, kind="message", arguments={"text": case_input["message"]}),
        AgentStep(index=2, kind="tool_call", tool_name="lookup_order",
                  arguments={"order_id": order}),
        AgentStep(index=3, kind="tool_result", tool_name="lookup_order",
                  result={"order_id": order, "amount": n % 120, "days": n % 45}),
        AgentStep(index=4, kind="final", arguments={"answer": answer}),
    )
    current_case().agent_trajectory(AgentTrajectory(
        steps=steps, terminal_status="success",
        constraints=(AgentConstraintCheck(name="within_policy", passed=n % 50 != 0,
                                          step_index=4),),
    ))
    return {"answer": answer, "reply": f"Your order {order} was {answer}."}
'''

SUITE = """version: 1
project: html-report-bench
dataset: data/cases.jsonl
system: {name: html-bench, version: v1, callable: "app:run", records: [agent_trajectory/v1]}
evaluators:
  - {type: contains, criterion: answer_correct, field: answer, expected_field: answer}
  - {type: agent_tool_called, tool_name: lookup_order}
  - {type: agent_tool_sequence}
  - {type: agent_constraints_satisfied}
  - {type: agent_max_steps, max_steps: 10}
metrics:
  - {id: steps_p95, type: quantile, source: agent_steps, quantile: 0.95}
slices: [metadata.channel, first_tool]
min_slice_support: 5
"""

POLICY = """version: 1
rules:
  - {id: answers, metric: answer_correct, min: 0.85}
  - {id: policy, metric: agent_constraints_satisfied, kind: observed_count, max_failures: 0}
"""


def make_project(root: Path, cases: int) -> Path:
    if root.exists():
        shutil.rmtree(root)
    (root / "data").mkdir(parents=True)
    (root / "app.py").write_text(APP)
    (root / "oloproof.yaml").write_text(SUITE)
    (root / "release.yaml").write_text(POLICY)
    channels = ["chat", "email", "phone"]
    with (root / "data" / "cases.jsonl").open("w") as out:
        for n in range(cases):
            out.write(json.dumps({
                "id": f"case-{n:05d}",
                "input": {"n": n, "message": f"Please refund my order (request {n})."},
                "expected": {"answer": "refunded", "tools": ["lookup_order"]},
                "metadata": {"channel": channels[n % 3]},
            }) + "\n")
    return root / "oloproof.yaml"


def measure_page(browser: Any, path: Path, first: str, last: str) -> dict[str, float]:
    """One fresh page: ready, search, open, open far (milliseconds)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    requests: list[str] = []
    page = context.new_page()
    page.on("request", lambda r: requests.append(r.url))
    url = path.resolve().as_uri()
    start = time.perf_counter()
    page.goto(url)
    page.wait_for_selector("#app[data-ready]", timeout=60_000)
    wall_ready = (time.perf_counter() - start) * 1000
    ready = page.evaluate("window.__oloproofReady")
    heap = page.evaluate("performance.memory ? performance.memory.usedJSHeapSize : 0")
    t = time.perf_counter()
    page.fill("#case-search", first)
    page.wait_for_selector('#app[data-listed="1"]', timeout=60_000)
    search = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    page.click(f'#case-rows tr[data-case="{first}"]')
    page.wait_for_selector(f'#case-panel[data-case="{first}"]', timeout=60_000)
    opened = (time.perf_counter() - t) * 1000
    t = time.perf_counter()
    page.evaluate(f"location.hash = '#case={last}'")
    page.wait_for_selector(f'#case-panel[data-case="{last}"]', timeout=60_000)
    far = (time.perf_counter() - t) * 1000
    context.close()
    others = [u for u in requests if u.split("#")[0] != url]
    if others:
        raise SystemExit(f"the report made requests: {others[:3]}")
    return {"ready_ms": ready, "wall_ready_ms": wall_ready, "search_ms": search,
            "open_ms": opened, "open_far_ms": far, "heap_mb": heap / 2**20}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--no-append", action="store_true")
    args = parser.parse_args()

    os.environ.pop("OLOPROOF_STORE", None)
    os.environ["CI"] = "1"
    from playwright.sync_api import sync_playwright

    import oloproof
    from oloproof.api import find_store, write_html_report

    config = make_project(WORK / "project", args.cases)
    t = time.perf_counter()
    result = oloproof.run(config, config.parent / "release.yaml")
    run_s = time.perf_counter() - t
    store = find_store(config)
    first, last = "case-12345", f"case-{args.cases - 1:05d}"
    if args.cases <= 12345:
        first = f"case-{args.cases // 2:05d}"

    reports: dict[str, dict[str, Any]] = {}
    for label, compress in (("gzip", True), ("json", False)):
        out = WORK / f"report-{label}.html"
        t = time.perf_counter()
        write_html_report("latest", out, config, store, compress=compress)
        reports[label] = {"path": out, "write_s": time.perf_counter() - t,
                          "bytes": out.stat().st_size}

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        version = browser.version
        for info in reports.values():
            runs = [measure_page(browser, info["path"], first, last) for _ in range(args.repeat)]
            info["page"] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        browser.close()

    lines = [
        "",
        f"### {dt.datetime.now(dt.UTC):%Y-%m-%d %H:%M} UTC · {args.cases:,} cases",
        "",
        (f"Machine: {platform.platform()}, {os.cpu_count()} CPU(s), Python "
        f"{platform.python_version()}, Chromium {version} (headless, `benchmarks/html_report.py`"
        f"). The run itself took {run_s:.1f} s (gate {result.gate.action}). Page figures are "
        f"medians of {args.repeat} fresh pages; *ready* is navigation start → summary and first "
        "page of the case list drawn; *search* is typing an id → the list shows only that case "
        "(120 ms debounce included); *open* is a click → the case panel drawn; *open far* is a "
        "case in the last chunk, via its URL hash. *JS heap* is `performance.memory."
         "usedJSHeapSize` after opening (coarse; the embedded text is not in it)."),
        "",
        "| case details | file size | write | ready | search | open | open far | JS heap |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, info in reports.items():
        pg = info["page"]
        lines.append(
            f"| {'gzip+base64 chunks (default above 1.5 MB)' if label == 'gzip' else 'plain JSON'}"
            f" | {info['bytes'] / 2**20:.1f} MiB | {info['write_s']:.1f} s "
            f"| {pg['ready_ms']:.0f} ms | {pg['search_ms']:.0f} ms | {pg['open_ms']:.0f} ms "
            f"| {pg['open_far_ms']:.0f} ms | {pg['heap_mb']:.0f} MB |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if not args.no_append:
        append_results(text)
        print(f"appended to {RESULTS}")


def append_results(text: str) -> None:
    """Add `text` at the end of the "## HTML report" section (made at the end if absent)."""
    existing = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Benchmarks\n"
    lines = existing.splitlines(keepends=True)
    heading = next((i for i, line in enumerate(lines) if line.strip() == "## HTML report"), None)
    if heading is None:
        RESULTS.write_text(existing.rstrip("\n") + "\n\n## HTML report\n" + text,
                           encoding="utf-8")
        return
    end = next((i for i in range(heading + 1, len(lines)) if lines[i].startswith("## ")),
               len(lines))
    head = "".join(lines[:end]).rstrip("\n") + "\n"
    tail = "".join(lines[end:])
    RESULTS.write_text(head + text + ("\n" + tail if tail else ""), encoding="utf-8")

if __name__ == "__main__":
    sys.exit(main())
