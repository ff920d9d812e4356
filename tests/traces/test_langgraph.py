"""LangGraph read two ways, checked against each other with the real libraries, offline: the
spans OpenInference's LangChain instrumentor emits (`trace: otel`, `read_otel`) and the graph
state's messages (`from_langchain_messages`) give the same steps, case by case — one per tool
call and one per result, arguments as JSON, results out of the ToolMessage envelope — for a
`StateGraph` with a `ToolNode` and for the prebuilt ReAct agent, with a scripted chat model.

The instrumentor records each tool twice over: as the model's tool call (on the LLM span) and as
the TOOL span, whose input is the bare value for a one-argument tool (`ord-001`, not JSON) and
whose output is the ToolMessage. The two are one call by identity — the ToolMessage names the
model's call id — never by equal content: an agent that calls the same tool with the same
arguments in two turns keeps both calls (docs/traces.md#one-call-seen-twice)."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("openinference.instrumentation.langchain")

from langgraph_conversations import CONVERSATIONS, GRAPH_NAMES
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import oloproof
from oloproof.report.case_view import iter_case_views
from oloproof.store.store import Store
from oloproof.traces import TraceWarning, from_otel, read_langchain_messages, read_otel

# Looked up, not imported: LangGraph costs 1.6 s of CPU to import, in every worker that
# collects this module; the graphs import it when a test runs one (docs/architecture.md#tests).
if importlib.util.find_spec("langgraph") is None:
    pytest.skip("the langgraph package is not installed", allow_module_level=True)

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="module", autouse=True)
def _langchain() -> None:
    """LangChain (the scripted model and tools, the instrumentor) is imported when this
    module's tests run, not when pytest collects the module: 0.6-0.8 s of CPU in every worker,
    most of which never runs these tests (docs/architecture.md#tests)."""
    global LangChainInstrumentor, converse, lookup_order
    from langgraph_scripted import converse, lookup_order
    from openinference.instrumentation.langchain import LangChainInstrumentor


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()


def steps(reading: Any, *, results: bool = True) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.to_agent, s.tool_name, s.arguments,
             s.result if results else None) for s in reading.trajectory.steps]


@pytest.mark.parametrize("conversation", sorted(CONVERSATIONS))
@pytest.mark.parametrize("graph", sorted(GRAPH_NAMES))
def test_spans_read_as_the_graph_s_messages(exporter: InMemorySpanExporter, graph: str,
                                            conversation: str) -> None:
    messages = converse(graph, conversation)
    from_spans = read_otel(exporter.get_finished_spans())
    from_messages = read_langchain_messages(messages)
    assert from_spans.skipped == {} and from_messages.skipped == {}
    tools = [s.tool_name for s in from_spans.trajectory.steps if s.kind == "tool_call"]
    assert tools == CONVERSATIONS[conversation][2]
    if conversation != "refund_refused":
        assert steps(from_spans) == steps(from_messages)
        return
    # A tool that raised: the span holds the exception, the message the text the model was
    # shown; both are the call's one result, an error.
    assert steps(from_spans, results=False) == steps(from_messages, results=False)
    failed = [(s.result, t.result) for s, t in zip(from_spans.trajectory.steps,
                                                    from_messages.trajectory.steps, strict=True)
              if s.kind == "tool_result"]
    assert len(failed) == 1 and all("refunds above 100" in r["error"] for r in failed[0])


def test_the_same_call_in_two_turns_is_two_calls(exporter: InMemorySpanExporter) -> None:
    converse("react_agent", "same_call_twice")
    trajectory = read_otel(exporter.get_finished_spans()).trajectory
    calls = [(s.kind, s.arguments, s.result) for s in trajectory.steps
             if s.kind in ("tool_call", "tool_result")]
    lost = {"order_id": "ord-002", "status": "lost"}
    assert calls == [("tool_call", {"order_id": "ord-002"}, None), ("tool_result", None, lost),
                     ("tool_call", {"order_id": "ord-002"}, None), ("tool_result", None, lost)]


def test_a_tool_span_that_names_no_call_is_skipped_and_reported(
        exporter: InMemorySpanExporter) -> None:
    """A tool run outside any model's call (here invoked directly with a string): its span's
    arguments are the bare text and it names no call id, so it cannot be told from a model's
    call seen again; it is reported, not made a step."""
    # (one request: a span of another provider holds both, so they share a trace)
    with TracerProvider().get_tracer("test").start_as_current_span("request"):
        converse("react_agent", "one_lookup")
        lookup_order.invoke("ord-003")
    spans = exporter.get_finished_spans()
    reading = read_otel(spans)
    assert reading.skipped == {"tool span naming no call, its arguments not JSON": 1}
    assert [s.tool_name for s in reading.trajectory.steps if s.kind == "tool_call"] == [
        "lookup_order"]
    with pytest.warns(TraceWarning, match=r"from_otel: 1 item\(s\).*not understood"):
        from_otel(spans)


# ---- a suite under `trace: otel`, against the same suite recorded from the messages --------

APP = '''
import sys

from openinference.instrumentation.langchain import LangChainInstrumentor

sys.path.insert(0, {here!r})
from langgraph_scripted import converse, lookup_order

from oloproof import current_case
from oloproof.traces import from_langchain_messages

# Once per process, before any graph runs (the global tracer provider: the engine's).
LangChainInstrumentor().instrument()


def traced(request):
    messages = converse(request["graph"], request["conversation"])
    if request.get("direct"):  # a tool run by hand: its span names no call
        lookup_order.invoke("ord-003")
    return {{"answer": messages[-1].content}}


def recorded(request):
    messages = converse(request["graph"], request["conversation"])
    current_case().agent_trajectory(from_langchain_messages(messages))
    return {{"answer": messages[-1].content}}
'''


def langgraph_suite(root: Path, *, trace: bool, direct: bool = False) -> Path:
    """Every conversation through both graphs, judged by `agent_tool_sequence`; the system
    traced (`trace: otel`) or recording the messages."""
    root.mkdir(parents=True)
    module = f"lg_app_{root.name}"
    (root / f"{module}.py").write_text(APP.format(here=str(HERE)), encoding="utf-8")
    cases = [{"id": f"{graph}-{name}", "input": {"graph": graph, "conversation": name,
                                                  **({"direct": True} if direct else {})},
              "expected": {"tools": tools}}
             for graph in sorted(GRAPH_NAMES)
             for name, (_, _, tools) in sorted(CONVERSATIONS.items())]
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases),
                                      encoding="utf-8")
    system: dict[str, Any] = {"name": "lg", "version": "v1", "concurrency": 1,
                              "callable": f"{module}:{'traced' if trace else 'recorded'}"}
    system.update({"trace": "otel"} if trace else {"records": ["agent_trajectory/v1"]})
    suite = {"version": 1, "project": "langgraph", "dataset": "cases.jsonl", "system": system,
             "evaluators": [{"type": "agent_tool_sequence"}]}
    (root / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    (root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    return root / "oloproof.yaml"


def stored_steps(config: Path, run_id: str) -> dict[str, list[Any]]:
    with Store(config.parent / ".oloproof" / "store.sqlite", read_only=True) as db:
        return {v["case"]: v["trajectory"]["steps"] for v in iter_case_views(db, run_id)}


@pytest.fixture
def instrumented() -> Iterator[None]:
    yield
    LangChainInstrumentor().uninstrument()  # (the project's module instrumented the process)
    for name in [n for n in sys.modules if n.startswith("lg_app_")]:
        del sys.modules[name]


@pytest.mark.usefixtures("instrumented")
def test_a_traced_langgraph_suite_measures_what_its_messages_say(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    recorded = langgraph_suite(tmp_path / "recorded", trace=False)
    traced = langgraph_suite(tmp_path / "traced", trace=True)
    truth = oloproof.run(recorded)
    read = oloproof.run(traced)
    assert read.warnings == truth.warnings  # (no trace item was left out)
    assert read.metric("agent_tool_sequence").passed == \
        truth.metric("agent_tool_sequence").passed == 12
    by_messages, by_spans = stored_steps(recorded, truth.run_id), stored_steps(traced, read.run_id)
    assert set(by_spans) == set(by_messages) and len(by_spans) == 12
    for case, expected in by_messages.items():
        got = by_spans[case]
        if case.endswith("refund_refused"):  # (the error's text: see the first test)
            got = [{k: v for k, v in s.items() if k != "result"} for s in got]
            expected = [{k: v for k, v in s.items() if k != "result"} for s in expected]
        assert got == expected, case


@pytest.mark.usefixtures("instrumented")
def test_a_span_that_cannot_be_placed_is_named_in_the_run_s_warnings(
        tmp_path: Path, cli: Any) -> None:
    pytest.importorskip("opentelemetry.sdk")
    config = langgraph_suite(tmp_path / "direct", trace=True, direct=True)
    result = oloproof.run(config)
    assert result.metric("agent_tool_sequence").passed == 12  # the tool run by hand is no step
    (warning,) = [w for w in result.warnings if "not understood" in w]
    assert "12 trace item(s) in 12 case(s)" in warning and "the otel adapter" in warning
    _, out, _ = cli("run", "--json", cwd=config.parent)
    assert any("the otel adapter" in w for w in json.loads(out)["warnings"])
    _, out, _ = cli("run", cwd=config.parent)
    assert "the otel adapter" in " ".join(out.split())
