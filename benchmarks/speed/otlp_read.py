"""Reading an OTLP/JSON file of 100,000 spans (1,000 traces) into trajectories, by the library
and by `oloproof traces import` (issue 13 §5: ≤ 5 s).

The file is what a collector writes for 1,000 runs of a GenAI-instrumented service, each trace
100 spans: an `invoke_agent` span holding the user's request and the final answer, and
`--turns` turns (default 8) of a `chat` span (asking for one tool) with the HTTP request under
it, and the `execute_tool` span that runs it (call id, arguments, result); the other spans of
the 100 are the service's own (database queries under the tools: not GenAI spans, counted as
ignored). `--turns 33` makes every span but the root a GenAI span or its HTTP request. It is
written in the OTLP/JSON encoding of the spec (hex ids, integer enums, decimal-string
nanoseconds), in three shapes of content:

- `full`: content capture on, each model call's `gen_ai.input.messages` holding the whole
  conversation so far (as the instrumentations record it: the file grows with the square of
  the turns);
- `last`: content capture on, each model call's input holding only what is new since the
  previous call;
- `off`: content capture off (no messages, arguments or results: ids and names only).

Measured, in a fresh process per run, best and median of `--repeat` runs, wall and CPU time:

- `read_otlp_file(path)` called from Python — reading and parsing the file, grouping spans by
  trace and building every trajectory — with the interpreter's garbage collector as a host
  program has it (on);
- `oloproof traces import FILE --out DIR`, the whole command (start-up, the same reading, and
  writing the suite), which turns the cyclic collector off in its own process.

The machine's load average is printed with the results: on a shared machine wall time is
what the process got of the cores, CPU time what the reading cost.

The figures are, per shape, the median wall time of the library call (`SHAPE.read_s`) and of
the command (`SHAPE.command_s`), each with the 5 s target; CPU times, file sizes and every run
are in the saved JSON's details.

Arguments: [--traces 1000] [--turns 8] [--repeat 3] [--shapes full,last,off]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

TARGETS = {"full.read_s": ("<=", 5.0), "full.command_s": ("<=", 5.0),
           "last.read_s": ("<=", 5.0), "last.command_s": ("<=", 5.0),
           "off.read_s": ("<=", 5.0), "off.command_s": ("<=", 5.0)}

_CHILD = """
import sys, time
t0 = time.perf_counter()
from oloproof.traces import read_otlp_file
t1 = time.perf_counter()
c1 = time.process_time()
readings = read_otlp_file(sys.argv[1])
t2 = time.perf_counter()
c2 = time.process_time()
steps = sum(len(r.trajectory.steps) for r in readings)
skipped = sum(sum(r.skipped.values()) for r in readings)
print(len(readings), steps, skipped, t1 - t0, t2 - t1, c2 - c1)
"""


def _value(v: Any) -> dict[str, Any]:
    if isinstance(v, bool):
        return {"boolValue": v}
    if isinstance(v, int):
        return {"intValue": str(v)}
    return {"stringValue": v}


def _attrs(**kv: Any) -> list[dict[str, Any]]:
    return [{"key": k.replace("__", "."), "value": _value(v)} for k, v in kv.items()]


class _Ids:
    def __init__(self) -> None:
        self.n = 0

    def span(self) -> str:
        self.n += 1
        return format(self.n, "016x")


def _span(trace: str, span: str, parent: str | None, name: str, start: int, end: int,
          attributes: list[dict[str, Any]], kind: int = 1) -> dict[str, Any]:
    body: dict[str, Any] = {"traceId": trace, "spanId": span, "name": name, "kind": kind,
                            "startTimeUnixNano": str(start), "endTimeUnixNano": str(end),
                            "attributes": attributes, "status": {}}
    if parent:
        body["parentSpanId"] = parent
    return body


def _text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


SPANS_PER_TRACE = 100


def one_trace(t: int, turns: int, shape: str, ids: _Ids) -> list[dict[str, Any]]:
    trace = format(t + 1, "032x")
    # Spans of the service itself, spread over the tools: 100 in all with the GenAI ones.
    own = max(0, SPANS_PER_TRACE - 1 - 3 * turns)
    per_tool = [own // turns + (1 if k < own % turns else 0) for k in range(turns)]
    base = 1_700_000_000_000_000_000 + t * 10_000_000_000
    root = ids.span()
    capture = shape != "off"
    user = _text("user", f"Please look into orders of customer cu-{t:05d}; refund what is due.")
    spans: list[dict[str, Any]] = []
    history: list[dict[str, Any]] = [user]
    clock = base + 1000
    for k in range(turns):
        cid = f"call_{t:05d}_{k:02d}"
        arguments = {"order_id": f"ord-{t:05d}-{k:02d}", "include": ["items", "payments"]}
        ask = {"role": "assistant", "parts": [{"type": "tool_call", "id": cid,
                                               "name": "lookup_order", "arguments": arguments}]}
        chat_attrs = {"gen_ai__operation__name": "chat", "gen_ai__provider__name": "openai",
                      "gen_ai__request__model": "gpt-4o-mini",
                      "gen_ai__usage__input_tokens": 400 + 60 * k,
                      "gen_ai__usage__output_tokens": 25}
        if capture:
            shown = history if shape == "full" else history[-2:] if k else history
            chat_attrs["gen_ai__input__messages"] = json.dumps(shown)
            chat_attrs["gen_ai__output__messages"] = json.dumps([ask])
        chat = ids.span()
        spans.append(_span(trace, chat, root, "chat gpt-4o-mini", clock, clock + 800_000,
                           _attrs(**chat_attrs), kind=3))
        spans.append(_span(trace, ids.span(), chat, "POST", clock + 10_000, clock + 790_000,
                           _attrs(http__request__method="POST",
                                  url__full="https://api.openai.com/v1/chat/completions",
                                  http__response__status_code=200), kind=3))
        clock += 1_000_000
        result = {"order_id": arguments["order_id"], "status": "delivered",
                  "amount": 19.99 + k, "days_since_delivery": k}
        tool_attrs = {"gen_ai__operation__name": "execute_tool",
                      "gen_ai__tool__name": "lookup_order", "gen_ai__tool__call__id": cid}
        if capture:
            tool_attrs["gen_ai__tool__call__arguments"] = json.dumps(arguments)
            tool_attrs["gen_ai__tool__call__result"] = json.dumps(result)
        tool = ids.span()
        spans.append(_span(trace, tool, root, "execute_tool lookup_order", clock,
                           clock + 500_000, _attrs(**tool_attrs)))
        for q in range(per_tool[k]):
            spans.append(_span(trace, ids.span(), tool, "SELECT orders",
                               clock + 10_000 * (q + 1), clock + 10_000 * (q + 1) + 5_000,
                               _attrs(db__system__name="postgresql",
                                      db__query__text="SELECT * FROM orders WHERE id = $1",
                                      db__collection__name="orders"), kind=3))
        clock += 1_000_000
        history += [ask, {"role": "tool", "parts": [
            {"type": "tool_call_response", "id": cid, "response": result}]}]
    root_attrs = {"gen_ai__operation__name": "invoke_agent", "gen_ai__agent__name": "support"}
    if capture:
        root_attrs["gen_ai__input__messages"] = json.dumps([user])
        root_attrs["gen_ai__output__messages"] = json.dumps(
            [_text("assistant", f"Refunded 3 orders of cu-{t:05d}.")])
    spans.insert(0, _span(trace, root, None, "invoke_agent support", base, clock + 1000,
                          _attrs(**root_attrs)))
    return spans


def write_file(path: Path, traces: int, turns: int, shape: str) -> int:
    ids = _Ids()
    spans: list[dict[str, Any]] = []
    for t in range(traces):
        spans += one_trace(t, turns, shape, ids)
    doc = {"resourceSpans": [{
        "resource": {"attributes": _attrs(service__name="support-agent")},
        "scopeSpans": [{"scope": {"name": "support-agent", "version": "1.0"},
                        "spans": spans}],
    }]}
    path.write_text(json.dumps(doc), encoding="utf-8")
    return len(spans)


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks otlp_read")
    parser.add_argument("--traces", type=int, default=1000)
    parser.add_argument("--turns", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--shapes", default="full,last,off")
    args = parser.parse_args(argv)
    figures: dict[str, dict[str, float]] = {}
    details: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in args.shapes.split(","):
            path = Path(tmp) / f"spans-{shape}.otlp.json"
            n = write_file(path, args.traces, args.turns, shape)
            size = os.path.getsize(path) / 1e6
            times, cpus, commands = [], [], []
            readings = steps = skipped = "?"
            for r in range(args.repeat):
                out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], check=True,
                                     capture_output=True, text=True).stdout
                readings, steps, skipped, _, read, cpu = out.split()
                times.append(float(read))
                cpus.append(float(cpu))
                target = Path(tmp) / f"suite-{shape}-{r}"
                started = time.perf_counter()
                subprocess.run([sys.executable, "-m", "oloproof.cli.main", "traces", "import",
                                str(path), "--out", str(target)], check=True,
                               capture_output=True, text=True)
                commands.append(time.perf_counter() - started)
            print(f"{shape:5} {n:,} spans, {readings} traces, {int(steps):,} steps, "
                  f"{int(skipped)} not understood, file {size:.1f} MB: read_otlp_file "
                  f"median {statistics.median(times):.2f} s wall (best {min(times):.2f}), "
                  f"{statistics.median(cpus):.2f} s CPU; oloproof traces import median "
                  f"{statistics.median(commands):.2f} s (best {min(commands):.2f}); load "
                  f"{os.getloadavg()[0]:.1f}", flush=True)
            figures[shape] = {"read_s": round(statistics.median(times), 2),
                              "command_s": round(statistics.median(commands), 2)}
            details[shape] = {"spans": n, "traces": int(readings), "steps": int(steps),
                              "not_understood": int(skipped), "file_mb": round(size, 1),
                              "read_s": times, "read_cpu_s": cpus, "command_s": commands}
    return {"figures": figures,
            "params": {"traces": args.traces, "turns": args.turns, "repeat": args.repeat,
                       "shapes": args.shapes},
            "details": details}
