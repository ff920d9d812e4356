"""The otel_agent example (docs/traces.md#the-otel_agent-example): an agent that emits OpenTelemetry
GenAI spans and a suite that records nothing by hand. Its figures come out of the real engine, they
are the ones its README and docs/traces.md print, and its token totals are what the desk's own spans
say."""

from __future__ import annotations

import importlib.util
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("opentelemetry.sdk")

from _run_example import EXAMPLES, example_fixtures, run_cli

project, terminal, document, every_slice = example_fixtures("otel_agent", exit_code=1)

HERE = EXAMPLES / "otel_agent"
README = (HERE / "README.md").read_text(encoding="utf-8")
DOCS = (Path(__file__).resolve().parents[2] / "docs" / "traces.md").read_text(encoding="utf-8")


def _blocks(text: str) -> list[str]:
    return re.findall(r"```\n(.*?)```", text, flags=re.S)


def _plain_blocks(text: str) -> list[str]:
    """The ``` blocks without a language, fence by fence (a ```yaml block is not one)."""
    found: list[str] = []
    plain: list[str] | None = None
    fenced = False
    for line in text.splitlines(keepends=True):
        if not line.startswith("```"):
            if plain is not None:
                plain.append(line)
        elif fenced:
            if plain is not None:
                found.append("".join(plain))
            fenced, plain = False, None
        else:
            fenced, plain = True, ([] if line.strip() == "```" else None)
    return found


def _lines(text: str) -> list[str]:
    return [line.rstrip() for line in text.splitlines()]


def test_the_suite_records_nothing_by_hand() -> None:
    suite = yaml.safe_load((HERE / "oloproof.yaml").read_text(encoding="utf-8"))
    assert suite["system"]["trace"] == "otel" and "records" not in suite["system"]
    source = (HERE / "app.py").read_text(encoding="utf-8")
    assert "oloproof" not in source.split('"""', 2)[2]  # the code, past the docstring
    assert "from opentelemetry import trace" in source


def test_the_readme_and_the_docs_paste_the_real_output(terminal: str) -> None:
    decisions = next(b for b in _blocks(README) if b.startswith("Decisions"))
    usage = next(b for b in _blocks(README) if b.startswith("Usage:"))
    assert decisions in terminal and usage.strip() in terminal
    assert decisions in DOCS and usage in DOCS
    assert "OTEL_AGENT_OUTPUT" not in DOCS


def test_the_readmes_trajectory_is_what_inspect_prints(project: Path, terminal: str) -> None:
    done = run_cli(project, "inspect", "latest", "--case", "req-007")
    assert done.returncode == 0, done.stderr
    shown = next(b for b in _blocks(README) if b.startswith("Trajectory"))
    printed = "\n".join(_lines(done.stdout))
    assert "\n".join(_lines(shown)) in printed
    assert "route: desk>billing>desk" in printed
    assert next(b for b in _plain_blocks(DOCS) if b.startswith("Trajectory")) == shown


def test_every_output_docs_traces_shows_is_checked() -> None:
    """docs/traces.md's blocks of output, by their first line: each is checked against a real
    run here or in tests/traces, so a block added to the page is checked or named here."""
    checked = {
        "oloproof traces import spans.otlp.json --out prod-suite": "commands, no output",
        "Imported 3 trace(s) from spans.otlp.json into prod-suite: 3 case(s), 33 step(s), "
        "usage in 3.": "tests/traces/test_traces_import.py::test_the_docs_show_what_the_"
                       "import_prints",
        "oloproof init --example otel_agent my-otel-agent": "commands, no output",
        "Decisions": "test_the_readme_and_the_docs_paste_the_real_output",
        "Usage: 2,575 input tokens · 777 output tokens (recorded by 30 executions)":
            "test_the_readme_and_the_docs_paste_the_real_output",
        "Trajectory: 10 steps · success": "test_the_readmes_trajectory_is_what_inspect_prints",
        "pip install -e '.[openai-agents]'   # in the Oloproof checkout: openai-agents, the "
        "instrumentor, opentelemetry-sdk": "commands, no output (the agents_sdk example: "
                             "tests/examples/test_agents_sdk.py)",
    }
    assert [b.split("\n", 1)[0] for b in _plain_blocks(DOCS)] == list(checked)
    # The usage line the prose quotes is the one the run prints.
    usage = next(b for b in _plain_blocks(DOCS) if b.startswith("Usage:")).strip()
    assert f"(`{usage}`)" in " ".join(DOCS.split())


def test_the_figures(document: dict[str, Any]) -> None:
    metrics = {m["id"]: m for m in document["metrics"]}
    decisions = {d["rule"]: d["state"] for d in document["decisions"]}
    assert decisions == {"answer-floor": "PASS", "looks-before-refunding": "FAIL",
                         "token-budget": "PASS"}
    assert document["gate"] == {"action": "BLOCK", "exit_code": 1}
    assert document["errors"] == [] and document["cases"] == 30
    assert (metrics["answer_correct"]["passed"], metrics["answer_correct"]["observed"]) == (27, 30)
    assert metrics["agent_tool_sequence"]["passed"] == 28
    assert metrics["agent_no_tool_loop"]["passed"] == 28
    tokens = metrics["tokens_p50"]
    assert (tokens["estimate"], tokens["lower"], tokens["upper"]) == (100, 100, 115)
    failing = {c["case"]: (c["failed"]) for c in document["failing_cases"]["first"]}
    assert failing == {
        "req-025": ["answer_correct", "agent_no_tool_loop"],
        "req-026": ["answer_correct", "agent_no_tool_loop"],
        "req-027": ["agent_tool_sequence"], "req-028": ["agent_tool_sequence"],
        "req-029": ["answer_correct"]}
    for figure in ("27 of 30", "28 of 30", "100 tokens", "[100, 115]"):
        assert figure in README


def test_the_trajectories_come_from_the_spans(project: Path, document: dict[str, Any]) -> None:
    two = json.loads(run_cli(project, "inspect", "latest", "--case", "req-030",
                             "--json").stdout)
    kinds = [(s["kind"], s.get("tool_name")) for s in two["trajectory"]["steps"]]
    # Parallel calls: both lookups, then both results, matched by call id.
    assert kinds[1:5] == [("tool_call", "lookup_order"), ("tool_call", "lookup_order"),
                          ("tool_result", "lookup_order"), ("tool_result", "lookup_order")]
    failed = json.loads(run_cli(project, "inspect", "latest", "--case", "req-025",
                                "--json").stdout)
    errors = [s["result"] for s in failed["trajectory"]["steps"] if s["kind"] == "tool_result"]
    assert errors == [{"error": "order service unavailable",
                       "error_type": "ConnectionError"}] * 3
    assert failed["other_artifacts"]["trace_reading/v1"]["skipped"] == {}


def test_the_token_totals_are_what_the_desks_spans_say(project: Path,
                                                       document: dict[str, Any]) -> None:
    """The desk run here, outside Oloproof, under an exporter of our own: its chat spans'
    gen_ai.usage attributes summed give the run's totals."""
    from opentelemetry import trace
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    if isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider):
        trace.set_tracer_provider(TracerProvider())
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    spec = importlib.util.spec_from_file_location("otel_agent_app", project / "app.py")
    assert spec is not None and spec.loader is not None
    app = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(app)
    cases = [json.loads(line) for line in
             (project / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()]
    for case in cases:
        app.desk(case["input"])
    exporter.shutdown()
    totals: dict[str, int] = defaultdict(int)
    for span in exporter.get_finished_spans():
        if (span.attributes or {}).get("gen_ai.operation.name") == "chat":
            totals["input"] += int(span.attributes["gen_ai.usage.input_tokens"])
            totals["output"] += int(span.attributes["gen_ai.usage.output_tokens"])
    assert document["usage"] == {"cases": 30, "input_tokens": totals["input"],
                                 "output_tokens": totals["output"], "cost": None}
