"""What `system.trace: otel` costs per case over recording by hand (issue 13 §5: ≤ 1 ms).

One desk, instrumented by hand in the GenAI conventions (an `invoke_agent` span, a `chat` span
asking for `lookup_order`, the `execute_tool` span, a `chat` span answering: four spans, with
messages, arguments, results and token usage, as an instrumented agent emits in production),
on `--cases` distinct cases, in three suites run alternately in fresh processes:

- `by-hand`: the desk emits its spans (to an SDK TracerProvider with no exporter, as in
  production where they would go to a collector) and also records its trajectory and usage by
  hand (`current_case().agent_trajectory(...)`, `current_case().usage(...)`);
- `otel`: the same desk without the recording code, under `system.trace: otel` — the engine
  opens a span per case, collects the desk's spans and reads them into the trajectory and
  usage;
- `plain`: recording by hand, no spans at all (for scale: what the instrumentation itself
  costs the desk).

Measured: the `oloproof.run` call (loading, running, judging, storing, deciding), cold cache,
`agent_tool_called` + `agent_tool_sequence` + a tokens quantile, `concurrency: 1`. Overhead of
trace: otel per case = (otel − by-hand) / cases, medians of `--repeat` runs taken in one script
run.

Arguments: [--cases 2000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

TARGETS = {"otel_over_by_hand_ms_per_case": ("<=", 1.0)}

APP = '''
import json
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from oloproof import AgentStep, AgentTrajectory, current_case

if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
    trace.set_tracer_provider(TracerProvider())  # no exporter: spans are made, not sent
tracer = trace.get_tracer("desk")
ORDERS = {f"ord-{i}": {"status": "delivered", "days": i % 40} for i in range(100)}


def text(role, content):
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def work(request, spans):
    order = request["order_id"]
    user = text("user", request["message"])
    ask = {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1",
           "name": "lookup_order", "arguments": {"order_id": order}}]}
    result = ORDERS.get(order, {"status": "unknown"})
    answer = "refunded" if result.get("days", 99) <= 30 else "declined"
    if spans:
        with tracer.start_as_current_span("invoke_agent desk") as agent:
            agent.set_attributes({"gen_ai.operation.name": "invoke_agent",
                                  "gen_ai.agent.name": "desk"})
            with tracer.start_as_current_span("chat m") as chat:
                chat.set_attributes({
                    "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 120,
                    "gen_ai.usage.output_tokens": 12,
                    "gen_ai.input.messages": json.dumps([user]),
                    "gen_ai.output.messages": json.dumps([ask])})
            with tracer.start_as_current_span("execute_tool lookup_order") as tool:
                tool.set_attributes({
                    "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "lookup_order",
                    "gen_ai.tool.call.id": "c1",
                    "gen_ai.tool.call.arguments": json.dumps({"order_id": order}),
                    "gen_ai.tool.call.result": json.dumps(result)})
            reply = {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1",
                                                "response": result}]}
            with tracer.start_as_current_span("chat m") as chat:
                chat.set_attributes({
                    "gen_ai.operation.name": "chat", "gen_ai.usage.input_tokens": 160,
                    "gen_ai.usage.output_tokens": 6,
                    "gen_ai.input.messages": json.dumps([user, ask, reply]),
                    "gen_ai.output.messages": json.dumps([text("assistant", answer)])})
    return order, result, answer


def record(request, order, result, answer):
    current_case().agent_trajectory(AgentTrajectory(steps=(
        AgentStep(index=1, kind="message", agent="desk",
                  arguments={"role": "user", "content": request["message"]}),
        AgentStep(index=2, kind="tool_call", agent="desk", tool_name="lookup_order",
                  arguments={"order_id": order}),
        AgentStep(index=3, kind="tool_result", agent="desk", tool_name="lookup_order",
                  result=result),
        AgentStep(index=4, kind="final", agent="desk",
                  arguments={"role": "assistant", "content": answer}))))
    current_case().usage(input_tokens=280, output_tokens=18)


def by_hand(request):
    order, result, answer = work(request, spans=True)
    record(request, order, result, answer)
    return {"answer": answer}


def otel(request):
    return {"answer": work(request, spans=True)[2]}


def plain(request):
    order, result, answer = work(request, spans=False)
    record(request, order, result, answer)
    return {"answer": answer}
'''

_CHILD = """
import sys, time
import oloproof
t0, c0 = time.perf_counter(), time.process_time()
result = oloproof.run(sys.argv[1], no_cache=True)
took, cpu = time.perf_counter() - t0, time.process_time() - c0
assert not result.document.errors, result.document.errors[:3]
print(took, cpu)
"""


def make(root: Path, variant: str, cases: int) -> Path:
    root.mkdir(parents=True)
    (root / "app.py").write_text(APP, encoding="utf-8")
    with (root / "cases.jsonl").open("w", encoding="utf-8") as out:
        for i in range(cases):
            out.write(json.dumps({"id": f"c{i}", "input": {
                "order_id": f"ord-{i % 100}", "message": f"Refund ord-{i % 100} ({i})"},
                "expected": {"tools": ["lookup_order"]}}) + "\n")
    system = {"name": "desk", "version": variant, "callable": f"app:{variant.replace('-', '_')}",
              "concurrency": 1}
    if variant == "otel":
        system["trace"] = "otel"
    else:
        system["records"] = ["agent_trajectory/v1", "usage/v1"]
    suite = {"version": 1, "project": "otel-bench", "dataset": "cases.jsonl", "system": system,
             "evaluators": [{"type": "agent_tool_called", "tool_name": "lookup_order"},
                            {"type": "agent_tool_sequence"}],
             "metrics": [{"id": "tokens_p50", "type": "quantile", "source": "tokens",
                          "quantile": 0.5}]}
    (root / "oloproof.yaml").write_text(json.dumps(suite), encoding="utf-8")
    (root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    return root / "oloproof.yaml"


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks otel_trace")
    parser.add_argument("--cases", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    variants = ["by-hand", "otel", "plain"]
    times: dict[str, list[float]] = {v: [] for v in variants}
    cpus: dict[str, list[float]] = {v: [] for v in variants}
    with tempfile.TemporaryDirectory() as tmp:
        configs = {v: make(Path(tmp) / v, v, args.cases) for v in variants}
        for _ in range(args.repeat):
            for variant in variants:
                out = subprocess.run([sys.executable, "-c", _CHILD, str(configs[variant])],
                                     check=True, capture_output=True, text=True).stdout
                wall, cpu = out.split()[-2:]
                times[variant].append(float(wall))
                cpus[variant].append(float(cpu))
    median = {v: statistics.median(t) for v, t in times.items()}
    cpu_median = {v: statistics.median(t) for v, t in cpus.items()}
    for variant in variants:
        shown = ", ".join(f"{t:.2f}" for t in times[variant])
        print(f"{variant:8} {args.cases} cases: median {median[variant]:.2f} s wall "
              f"({1000 * median[variant] / args.cases:.3f} ms/case; runs {shown}), "
              f"{cpu_median[variant]:.2f} s CPU")
    figures: dict[str, float] = {}
    for what, m in (("wall", median), ("CPU", cpu_median)):
        extra = 1000 * (m["otel"] - m["by-hand"]) / args.cases
        spans = 1000 * (m["by-hand"] - m["plain"]) / args.cases
        print(f"trace: otel over recording by hand ({what}): {extra:+.3f} ms per case; "
              f"the desk's own spans over none: {spans:+.3f} ms per case")
        suffix = "" if what == "wall" else "_cpu"
        figures[f"otel_over_by_hand{suffix}_ms_per_case"] = round(extra, 3)
        figures[f"spans_over_none{suffix}_ms_per_case"] = round(spans, 3)
    print(f"load average {os.getloadavg()[0]:.1f}")
    for variant in variants:
        figures[f"{variant.replace('-', '_')}_ms_per_case"] = round(
            1000 * median[variant] / args.cases, 3)
    return {"figures": figures, "params": {"cases": args.cases, "repeat": args.repeat},
            "details": {"wall_s": times, "cpu_s": cpus}}
