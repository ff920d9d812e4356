"""The OpenInference path: `openinference-instrumentation-openai-agents` instruments a real
Agents SDK run (scripted model, offline); its spans go to an InMemorySpanExporter and
`from_otel` reads them into the trajectory the run's own items give."""

from __future__ import annotations

import asyncio
import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

pytest.importorskip("openinference.instrumentation.openai_agents")  # (it imports no SDK)

from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from oloproof.traces import read_openai_agents, read_otel

if importlib.util.find_spec("agents") is None:
    pytest.skip("the openai-agents package is not installed", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def _the_sdk() -> None:
    """The SDK (and the scripted agents built on it) is imported when this module's tests run,
    not when pytest collects the module: 2.7 s of CPU in every worker, most of which never
    runs these tests (docs/architecture.md#tests)."""
    global Runner, MaxTurnsExceeded
    global INPUT_TOKENS, OUTPUT_TOKENS, looping_agent, support_team
    from agents import Runner
    from agents.exceptions import MaxTurnsExceeded
    from traces_scripted import INPUT_TOKENS, OUTPUT_TOKENS, looping_agent, support_team


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
    # The agent's span says the turn limit stopped it: truncated at that limit, as
    # read_openai_agents reads the exception the run raised — not a failure.
    t = reading.trajectory
    assert (t.terminal_status, t.truncated, t.step_limit) == ("unknown", True, 2)


# --- one trajectory whatever the integration (docs/traces.md, the mapping) ---


def answering_agent() -> Any:
    """An agent that answers at once: a turn with no tool call."""
    from agents import Agent
    from traces_scripted import ScriptedModel, say

    return Agent(name="desk", instructions="Answer briefly.",
                 model=ScriptedModel([say("Order o1 was delivered on Monday.")]))


def test_instructions_are_no_step_on_either_path(exporter: InMemorySpanExporter) -> None:
    """The model's spans carry each agent's instructions as a system message (the Response
    the API returns has them); the run's items do not. Neither makes them a step."""
    result = asyncio.run(Runner.run(support_team(), "Refund order o1 please"))
    from_spans = read_otel(exporter.get_finished_spans())
    assert len(from_spans.trajectory.steps) == len(read_openai_agents(result).trajectory.steps)
    assert from_spans.ignored["instructions"] == 2  # triage's and refunds', each once
    assert all((s.arguments or {}).get("role") != "system" for s in from_spans.trajectory.steps)


def test_a_turn_with_no_tool_call_names_its_agent(exporter: InMemorySpanExporter) -> None:
    result = asyncio.run(Runner.run(answering_agent(), "Where is o1?"))
    from_items = read_openai_agents(result).trajectory
    from_spans = read_otel(exporter.get_finished_spans()).trajectory
    assert steps(from_spans) == steps(from_items) == [
        ("message", "desk", None, None, {"role": "user", "content": "Where is o1?"}),
        ("final", "desk", None, None,
         {"role": "assistant", "content": "Order o1 was delivered on Monday."})]
    assert from_spans.route() == from_items.route() == ["desk"]
    # A run that returned its answer is a success on both paths (the panel said `unknown`).
    assert from_spans.terminal_status == from_items.terminal_status == "success"


def test_without_sensitive_data_the_answer_still_names_its_agent(
        exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    """OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA=false: the spans hold no message text. The
    last model call, which called nothing, is still the agent's answer: a `final` step with no
    content, marked, and named by the agent's span (the trajectory had no step and no route)."""
    monkeypatch.setenv("OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA", "false")
    asyncio.run(Runner.run(answering_agent(), "Where is o1?"))
    reading = read_otel(exporter.get_finished_spans())
    t = reading.trajectory
    assert steps(t) == [("final", "desk", None, None, None)]
    assert [(n.step, n.kind) for n in reading.notes] == [(1, "content_not_recorded")]
    assert t.route() == ["desk"] and t.terminal_status == "success"
    assert reading.output is None  # never invented


def test_without_sensitive_data_a_team_keeps_its_calls_and_hand_off(
        exporter: InMemorySpanExporter, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_AGENTS_TRACE_INCLUDE_SENSITIVE_DATA", "false")
    result = asyncio.run(Runner.run(support_team(), "Refund order o1 please"))
    reading = read_otel(exporter.get_finished_spans())
    from_items = read_openai_agents(result).trajectory
    # What the spans still say — the calls in order, their results, the hand-off, the agents,
    # the answer — is what the items say. Not in them: the user's message, and which calls
    # one model turn made together (each tool span is its call, then its result).
    def sorted_steps(t: Any) -> list[tuple[Any, ...]]:
        return sorted((s.kind, s.agent, s.tool_name or "") for s in t.steps)

    spans = reading.trajectory
    assert sorted_steps(spans) == sorted_steps(from_items.model_copy(
        update={"steps": from_items.steps[1:]}))
    assert [s.tool_name for s in spans.tool_calls()] == [
        s.tool_name for s in from_items.tool_calls()]
    assert [s.kind for s in spans.steps][-3:] == ["tool_call", "tool_result", "final"]
    assert spans.route() == from_items.route() == ["triage", "refunds"]
    assert spans.terminal_status == "success"
