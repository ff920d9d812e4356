"""The HTML report of a 20,000-case run: file size, write time, and in headless Chromium the
time to interactive, to find a case and to open it (issue 6).

Builds a synthetic project (a trivial agent that records a 4-step trajectory; some wrong
answers, some broken constraints, a few errors), runs it once, writes the report twice (case
details gzip+base64, and plain JSON for comparison), and opens each in headless Chromium:

- ready: navigation start → the summary and the first page of the case list are drawn
  (`performance.now()` when the script finishes, so it is measured from navigation start);
- search: typing a case id → the list shows exactly that case (includes the 120 ms debounce);
- open: clicking it → its panel is drawn (decompresses that case's chunk);
- open far: a case in the last chunk, from its URL hash.

Page figures are medians of `--repeat` fresh pages. The figures are the default report's
(`gzip`: case details in gzip+base64 chunks, the default above 1.5 MB) and, beside it, the
size and time to interactive of the same report with plain JSON details; the rest (write
time, search, open, JS heap of each) are in the saved JSON's details. Needs Chromium at
/usr/bin/chromium (`make browser`).

Arguments: [--cases 20000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import time
from pathlib import Path
from typing import Any

TARGETS: dict[str, tuple[str, float]] = {}

WORK = Path(__file__).resolve().parents[1] / "work" / "html-report"  # (git ignores it)
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


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks html_report")
    parser.add_argument("--cases", type=int, default=20_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

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

    gzip, plain = reports["gzip"], reports["json"]
    details = {label: {"bytes": info["bytes"], "write_s": round(info["write_s"], 2),
                       **{k: round(v, 1) for k, v in info["page"].items()}}
               for label, info in reports.items()}
    print(json.dumps(details, indent=1))
    return {"figures": {
        "gzip_file_mib": round(gzip["bytes"] / 2**20, 1),
        "gzip_write_s": round(gzip["write_s"], 2),
        "gzip_ready_ms": round(gzip["page"]["ready_ms"]),
        "gzip_search_ms": round(gzip["page"]["search_ms"]),
        "gzip_open_far_ms": round(gzip["page"]["open_far_ms"]),
        "plain_json_file_mib": round(plain["bytes"] / 2**20, 1),
        "plain_json_ready_ms": round(plain["page"]["ready_ms"]),
    }, "params": {"cases": args.cases, "repeat": args.repeat},
        "details": {**details, "run_s": round(run_s, 1), "gate": result.gate.action,
                    "chromium": version}}
