"""`oloproof traces import FILE --out DIR`
(docs/traces.md#production-traces-oloproof-traces-import): a suite over traces recorded in
production.

One case per trace: `input.message` is the trace's first user message, `input.recording` what
was recorded (answer, trajectory, usage, what the reader did not understand), `metadata` the
trace id and start time, `expected` empty for people to fill in. The suite's system is the
recording itself (`oloproof.traces.recorded:play`), so `oloproof run` judges the traffic with
the same evaluators, slices and gate, without re-running anything.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from oloproof.errors import TraceError, UsageError
from oloproof.traces.otel import read_trace
from oloproof.traces.otel_tree import group_by_trace
from oloproof.traces.otlp_json import read_otlp_spans
from oloproof.traces.recorded import RECORDING_KEY

SUITE, POLICY, CASES = "oloproof.yaml", "release.yaml", "data/cases.jsonl"


@dataclass
class ImportedSuite:
    """What `import_traces` wrote: where, how many traces and steps, and what the reader
    did not understand (counted by kind, over every trace)."""

    directory: Path
    traces: int
    steps: int
    skipped: dict[str, int] = field(default_factory=dict)
    without_steps: list[str] = field(default_factory=list)  # trace ids that gave no step
    with_usage: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"directory": str(self.directory), "traces": self.traces, "steps": self.steps,
                "skipped": self.skipped, "without_steps": self.without_steps,
                "with_usage": self.with_usage}


def import_traces(path: str | Path, out: str | Path, *,
                  project: str | None = None) -> ImportedSuite:
    """Write a suite over the traces of an OTLP/JSON (or JSON Lines) file into `out`.

    Raises:
        TraceError: the file cannot be read (naming the file, line, trace and span), or
            holds no span.
        UsageError: `out` already holds a file the suite would write (nothing is written).
    """
    source = Path(path)
    directory = Path(out)
    in_the_way = [name for name in (SUITE, POLICY, CASES) if (directory / name).exists()]
    if in_the_way:
        raise UsageError(f"{directory} already holds {', '.join(in_the_way)}; nothing was "
                         "written — import into a new or empty directory")
    groups = group_by_trace(read_otlp_spans(source, lean=True))
    if not groups:
        raise TraceError("the file holds no span (resourceSpans is empty)", file=source)
    lines: list[str] = []
    summary = ImportedSuite(directory, traces=len(groups), steps=0)
    skipped: Counter[str] = Counter()
    costs = False
    for trace_id, spans in groups.items():
        reading = read_trace(spans, trace_id, file=source)
        trajectory = reading.trajectory
        summary.steps += len(trajectory.steps)
        skipped.update(reading.skipped)
        if not trajectory.steps:
            summary.without_steps.append(trace_id)
        usage = reading.usage.payload() if reading.usage is not None else None
        if usage:
            summary.with_usage += 1
            costs = costs or "cost" in usage
        started = datetime.fromtimestamp(min(s.start for s in spans) / 1e9, UTC)
        case = {
            "id": trace_id,
            "input": {"message": reading.input, RECORDING_KEY: {
                "answer": reading.output,
                "trajectory": json.loads(trajectory.model_dump_json()),
                "usage": usage,
                "reading": reading.artifact(),
            }},
            "expected": {},
            "metadata": {"trace_id": trace_id,
                         "started": started.isoformat(timespec="milliseconds")},
        }
        lines.append(json.dumps(case, ensure_ascii=False, sort_keys=True) + "\n")
    summary.skipped = dict(sorted(skipped.items()))
    (directory / "data").mkdir(parents=True, exist_ok=True)
    (directory / CASES).write_text("".join(lines), encoding="utf-8")
    name = project or source.name.split(".")[0] or "traces"
    (directory / SUITE).write_text(_suite_text(source, name, summary.with_usage > 0, costs),
                                   encoding="utf-8")
    (directory / POLICY).write_text(_POLICY_TEXT, encoding="utf-8")
    return summary


def _suite_text(source: Path, project: str, usage: bool, costs: bool) -> str:
    records = ["agent_trajectory/v1", *(["usage/v1"] if usage else [])]
    metrics: list[dict[str, Any]] = [
        {"id": "steps_p95", "type": "quantile", "source": "agent_steps", "quantile": 0.95},
        {"id": "tool_calls_p50", "type": "quantile", "source": "agent_tool_calls",
         "quantile": 0.5},
    ]
    if usage:
        metrics.append({"id": "tokens_p95", "type": "quantile", "source": "tokens",
                        "quantile": 0.95})
    if costs:
        metrics.append({"id": "cost_p95", "type": "quantile", "source": "cost",
                        "quantile": 0.95})
    body = {
        "version": 1,
        "project": project,
        "dataset": CASES,
        "system": {"name": "recorded-traces", "version": "1",
                   "callable": "oloproof.traces.recorded:play", "records": records},
        "evaluators": [
            {"type": "exact_match", "criterion": "answer_correct", "field": "answer",
             "expected_field": "answer"},
            {"type": "agent_tool_sequence", "mode": "superset"},
            {"type": "agent_no_tool_loop"},
            {"type": "agent_max_steps", "max_steps": 20},
        ],
        "metrics": metrics,
        "slices": ["first_tool", "repeated_action"],
        "min_slice_support": 5,
    }
    header = (
        f"# A suite over the traces recorded in {source.name}, written by `oloproof traces "
        "import`.\n"
        "# Each case is one trace; the system is the recording itself, so `oloproof run` "
        "re-runs nothing.\n"
        "# Fill in `expected` in data/cases.jsonl ({\"answer\": ..., \"tools\": [...]}) to "
        "judge answers\n# and tool sequences: evaluators that need it exclude the cases "
        "that have none.\n"
    )
    return header + yaml.safe_dump(body, sort_keys=False, width=100)


_POLICY_TEXT = """\
# The release policy over the recorded traffic: add the rules the traces must meet, e.g.
#   - {id: no-loops, metric: agent_no_tool_loop, min: 0.90}
#   - {id: short, metric: steps_p95, max: 20}
version: 1
confidence_level: 0.95
rules: []
"""
