"""The OpenInference path: `openinference-instrumentation-openai-agents` instruments a real
Agents SDK run (scripted model, offline); its spans go to an InMemorySpanExporter and
`from_otel` reads them into the trajectory the run's own items give."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("agents")
pytest.importorskip("openinference.instrumentation.openai_agents")

from agents import Runner
from agents.exceptions import MaxTurnsExceeded
from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from traces_scripted import INPUT_TOKENS, OUTPUT_TOKENS, looping_agent, support_team

from oloproof.traces import read_openai_agents, read_otel


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = OpenAIAgentsInstrumentor()
    # Exclusive (the default): the SDK's own exporter, which would send traces to OpenAI, is
    # set aside for the test and put back afterwards.
    instrumentor.instrument(tracer_provider=provider)
    try:
        yield exporter
    finally:
        instrumentor.uninstrument()


def steps(trajectory: Any) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.to_agent, s.tool_name, s.arguments) for s in trajectory.steps]


def test_instrumented_run_reads_as_the_run_items_do(exporter: InMemorySpanExporter) -> None:
    result = asyncio.run(Runner.run(support_team(), "Refund order o1 please"))
    from_items = read_openai_agents(result)
    from_spans = read_otel(exporter.get_finished_spans())
    # Same steps, agents, hand-off and arguments; the LLM's parallel calls come before their
    # results, and each tool span (which carries no call id) is matched to its call once.
    assert steps(from_spans.trajectory) == steps(from_items.trajectory)
    results = [s.result for s in from_spans.trajectory.steps if s.kind == "tool_result"]
    assert results[:2] == [{"order_id": "o1", "status": "delivered"},
                           {"order_id": "o2", "status": "delivered"}]
    # The span says the tool failed (the run items only carry the text the model was shown).
    assert set(results[2]) >= {"error", "output"}
    assert "issue_refund" in results[2]["error"]  # the SDK redacts the details
    assert from_spans.skipped == {}
    assert from_spans.ignored.get("span:CHAIN", 0) >= 1  # the workflow and turn containers
    assert from_spans.notes == ()
    assert from_spans.usage is not None
    assert (from_spans.usage.input_tokens, from_spans.usage.output_tokens) == (
        4 * INPUT_TOKENS, 4 * OUTPUT_TOKENS)


def test_instrumented_run_that_hits_max_turns(exporter: InMemorySpanExporter) -> None:
    with pytest.raises(MaxTurnsExceeded):
        asyncio.run(Runner.run(looping_agent(), "go", max_turns=2))
    reading = read_otel(exporter.get_finished_spans())
    kinds = [s.kind for s in reading.trajectory.steps]
    assert kinds == ["message", "tool_call", "tool_result", "tool_call", "tool_result"]
    # The spans do not say that the turn limit stopped the run (every span ends OK), so they
    # read as a complete trace; read_openai_agents on the exception gives the truncation.
    t = reading.trajectory
    assert (t.terminal_status, t.truncated) == ("unknown", False)
