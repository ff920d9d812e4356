"""`system.trace: otel`: the engine opens a span per case and records the trajectory and usage
from the spans the system emits under it — an agent instrumented by hand in the GenAI
conventions, run concurrently (sync on threads, async on one loop), and the errors that keep
it from passing silently."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("opentelemetry.sdk")

import oloproof
from oloproof.errors import ConfigError
from oloproof.report.case_view import case_view
from oloproof.store.store import Store

# A desk instrumented by hand: an agent span, a model call that asks for lookup_order, the
# tool's span, a model call that answers. Sleeps between spans make concurrent cases
# interleave, so a case that saw another's spans would record the other's order id.
DESK = '''
import asyncio, json, time
from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode
from oloproof import current_case

tracer = trace.get_tracer("desk")


def text(role, content):
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def steps(request, pause):
    order = request["order_id"]
    with tracer.start_as_current_span("invoke_agent desk") as agent:
        agent.set_attribute("gen_ai.operation.name", "invoke_agent")
        agent.set_attribute("gen_ai.agent.name", "desk")
        user = text("user", request["message"])
        with tracer.start_as_current_span("chat scripted") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 100)
            chat.set_attribute("gen_ai.usage.output_tokens", 10)
            chat.set_attribute("gen_ai.input.messages", json.dumps([user]))
            chat.set_attribute("gen_ai.output.messages", json.dumps([{"role": "assistant",
                "parts": [{"type": "tool_call", "id": "c-" + order, "name": "lookup_order",
                           "arguments": {"order_id": order}}]}]))
        if request.get("mode") == "odd":
            with tracer.start_as_current_span("teleport") as odd:
                odd.set_attribute("gen_ai.operation.name", "teleport")
        yield pause
        if request.get("mode") == "hang":
            # The tool's span never ends before the case does: a call without a result.
            span = tracer.start_span("execute_tool lookup_order")
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", "lookup_order")
            span.set_attribute("gen_ai.tool.call.id", "c-" + order)
            return
        with tracer.start_as_current_span("execute_tool lookup_order",
                                          record_exception=False,
                                          set_status_on_exception=False) as tool:
            tool.set_attribute("gen_ai.operation.name", "execute_tool")
            tool.set_attribute("gen_ai.tool.name", "lookup_order")
            tool.set_attribute("gen_ai.tool.call.id", "c-" + order)
            tool.set_attribute("gen_ai.tool.call.arguments", json.dumps({"order_id": order}))
            if request.get("mode") == "tool_error":
                tool.set_status(Status(StatusCode.ERROR, "order service down"))
            else:
                tool.set_attribute("gen_ai.tool.call.result",
                                   json.dumps({"order_id": order, "status": "delivered"}))
        yield pause
        with tracer.start_as_current_span("chat scripted") as chat:
            chat.set_attribute("gen_ai.operation.name", "chat")
            chat.set_attribute("gen_ai.usage.input_tokens", 150)
            chat.set_attribute("gen_ai.usage.output_tokens", 5)
            chat.set_attribute("gen_ai.output.messages",
                               json.dumps([text("assistant", "checked " + order)]))


def extras(request):
    mode = request.get("mode")
    if mode == "records_itself":
        current_case().agent_trajectory(__import__("oloproof").AgentTrajectory())
    if mode == "cost":
        current_case().usage(cost=0.25)
    if mode == "tokens_twice":
        current_case().usage(input_tokens=1)


def run(request):
    if request.get("mode") == "silent":
        return {"answer": "nothing traced"}
    for pause in steps(request, request.get("pause", 0)):
        time.sleep(pause)
    extras(request)
    return {"answer": "checked " + request["order_id"]}


async def run_async(request):
    if request.get("mode") == "silent":
        return {"answer": "nothing traced"}
    for pause in steps(request, request.get("pause", 0)):
        await asyncio.sleep(pause)
    extras(request)
    return {"answer": "checked " + request["order_id"]}
'''


def project(root: Path, cases: list[dict[str, Any]], *, entry: str = "app:run",
            concurrency: int = 8, **system: Any) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text(DESK, encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(json.dumps(c) + "\n" for c in cases),
                                      encoding="utf-8")
    suite = {
        "version": 1, "project": "otel-desk", "dataset": "cases.jsonl",
        "system": {"name": "desk", "version": "v1", "callable": entry, "trace": "otel",
                   "concurrency": concurrency, **system},
        "evaluators": [
            {"type": "agent_tool_called", "tool_name": "lookup_order"},
            {"type": "agent_tool_sequence"},
        ],
        "metrics": [
            {"id": "tokens_p50", "type": "quantile", "source": "tokens", "quantile": 0.5},
            {"id": "cost_p50", "type": "quantile", "source": "cost", "quantile": 0.5},
        ],
    }
    (root / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False), encoding="utf-8")
    (root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    return root / "oloproof.yaml"


def cases(n: int, **fields: Any) -> list[dict[str, Any]]:
    return [{"id": f"c{i}", "input": {"order_id": f"ord-{i}", "message": f"Where is ord-{i}?",
                                      **fields},
             "expected": {"tools": ["lookup_order"]}} for i in range(1, n + 1)]


def views(config: Path, run_id: str) -> dict[str, dict[str, Any]]:
    store = Store(config.parent / ".oloproof" / "store.sqlite")
    try:
        ids = [row[0] for row in store.conn.execute(
            "SELECT case_id FROM run_cases WHERE run_id = ?", (run_id,))]
        return {case_id: case_view(store, run_id, case_id) for case_id in ids}
    finally:
        store.close()


def steps_of(view: dict[str, Any]) -> list[tuple[Any, ...]]:
    trajectory = view["trajectory"]
    return [(s["kind"], s.get("tool_name"), s.get("arguments"), s.get("result"))
            for s in trajectory["steps"]]


def expected_steps(i: int) -> list[tuple[Any, ...]]:
    order = f"ord-{i}"
    return [
        ("message", None, {"role": "user", "content": f"Where is {order}?"}, None),
        ("tool_call", "lookup_order", {"order_id": order}, None),
        ("tool_result", "lookup_order", None, {"order_id": order, "status": "delivered"}),
        ("final", None, {"role": "assistant", "content": f"checked {order}"}, None),
    ]


@pytest.mark.parametrize("entry", ["app:run", "app:run_async"])
def test_concurrent_cases_each_record_their_own_spans(tmp_path: Path, entry: str) -> None:
    config = project(tmp_path / "p", cases(16, pause=0.005), entry=entry)
    result = oloproof.run(config)
    assert result.document.errors == []
    for i, view in enumerate(sorted(views(config, result.run_id).values(),
                                    key=lambda v: int(v["case"][1:])), 1):
        assert steps_of(view) == expected_steps(i)
        assert {s["agent"] for s in view["trajectory"]["steps"]} == {"desk"}
        assert view["other_artifacts"]["usage/v1"] == {"input_tokens": 250, "output_tokens": 15}
        reading = view["other_artifacts"]["trace_reading/v1"]
        assert reading["skipped"] == {} and len(reading["trace_id"]) == 32
    rows = {m.id: m for m in result.document.metrics}
    assert rows["agent_tool_lookup_order_called"].passed == 16
    assert rows["agent_tool_sequence"].passed == 16
    assert (rows["tokens_p50"].estimate, rows["tokens_p50"].unit) == (265, "tokens")
    # No case recorded a cost: the quantile has no value, every case missing for that reason.
    assert rows["cost_p50"].missing_by_reason == {"no_cost": 16}
    usage = result.document.usage
    assert usage is not None
    assert (usage.cases, usage.input_tokens, usage.output_tokens, usage.cost) == (
        16, 16 * 250, 16 * 15, None)


def test_error_status_call_without_result_and_usage_from_both(tmp_path: Path) -> None:
    config = project(tmp_path / "p", [
        {"id": "err", "input": {"order_id": "o1", "message": "m", "mode": "tool_error"},
         "expected": {"tools": ["lookup_order"]}},
        {"id": "hang", "input": {"order_id": "o2", "message": "m", "mode": "hang"},
         "expected": {"tools": ["lookup_order", "issue_refund"]}},
        {"id": "cost", "input": {"order_id": "o3", "message": "m", "mode": "cost"},
         "expected": {"tools": ["lookup_order"]}},
    ])
    result = oloproof.run(config)
    got = views(config, result.run_id)
    # An error status is a tool_result carrying the error.
    assert steps_of(got["err"])[2] == ("tool_result", "lookup_order", None,
                                       {"error": "order service down"})
    # The tool span had not ended: the call has no result, the trajectory is truncated, and
    # the tool sequence is missing (the rest may have followed), never failed.
    hang = got["hang"]
    assert [s[0] for s in steps_of(hang)] == ["message", "tool_call"]
    assert hang["trajectory"]["truncated"] is True
    notes = hang["other_artifacts"]["trace_reading/v1"]["notes"]
    assert notes == [{"step": 2, "kind": "call_without_result", "detail": "c-o2"}]
    verdicts = {j["criterion"]: (j["verdict"], j["reason"]) for j in hang["criteria"]}
    assert verdicts["agent_tool_sequence"] == ("missing", "truncated")
    # usage(cost=...) joins the spans' tokens.
    assert got["cost"]["other_artifacts"]["usage/v1"] == {
        "input_tokens": 250, "output_tokens": 15, "cost": 0.25}
    rows = {m.id: m for m in result.document.metrics}
    assert rows["cost_p50"].observed == 1 and rows["cost_p50"].estimate == 0.25


def test_a_system_that_records_a_trajectory_itself_is_an_error(tmp_path: Path) -> None:
    config = project(tmp_path / "p", [
        {"id": "own", "input": {"order_id": "o1", "message": "m", "mode": "records_itself"}},
        {"id": "twice", "input": {"order_id": "o2", "message": "m", "mode": "tokens_twice"}},
        {"id": "silent", "input": {"order_id": "o3", "message": "m", "mode": "silent"}},
    ])
    errors = {e.case: e for e in oloproof.run(config).document.errors}
    assert errors["own"].kind == "system_error"
    assert "recorded agent_trajectory/v1 itself while system.trace: otel" in errors[
        "own"].message
    assert errors["twice"].kind == "system_error"
    assert "input_tokens both from current_case().usage()" in errors["twice"].message
    assert errors["silent"].kind == "no_trace"
    assert "emitted no span" in errors["silent"].message


def test_spans_the_reader_does_not_understand_are_counted_and_reported(tmp_path: Path) -> None:
    config = project(tmp_path / "p", cases(3) + [
        {"id": "odd", "input": {"order_id": "o9", "message": "m", "mode": "odd"}}])
    result = oloproof.run(config)
    odd = views(config, result.run_id)["odd"]
    assert odd["other_artifacts"]["trace_reading/v1"]["skipped"] == {
        "span:gen_ai.operation.name=teleport": 1}
    assert [s[0] for s in steps_of(odd)] == ["message", "tool_call", "tool_result", "final"]
    assert odd["facts"]["unread"] == 1
    assert ("1 trace item(s) in 1 case(s) were not understood by the otel adapter and are not "
            "in those trajectories") in " ".join(result.document.warnings)


def test_trace_takes_only_otel(tmp_path: Path) -> None:
    config = project(tmp_path / "p", cases(1), trace="zipkin")
    with pytest.raises(ConfigError) as raised:
        oloproof.run(config)
    assert "system.trace" in str(raised.value) and "otel" in str(raised.value)


def test_without_the_sdk_trace_otel_is_a_config_error(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    config = project(tmp_path / "p", cases(1))
    monkeypatch.setitem(__import__("sys").modules, "opentelemetry.sdk.trace", None)
    with pytest.raises(ConfigError) as raised:
        oloproof.run(config)
    error = raised.value
    assert "pip install -e '.[otel]'" in str(error)
    assert "oloproof[" not in str(error)  # the registry's package of that name is another project
    assert error.line == config.read_text().splitlines().index("  trace: otel") + 1


def test_a_provider_that_is_not_the_sdks_is_a_config_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from opentelemetry import trace

    class Vendor(trace.TracerProvider):
        def get_tracer(self, *args: Any, **kwargs: Any) -> trace.Tracer:
            return trace.NoOpTracer()

    monkeypatch.setattr(trace, "get_tracer_provider", lambda: Vendor())
    config = project(tmp_path / "p", cases(1))
    with pytest.raises(ConfigError, match=r"global tracer provider is a .*Vendor"):
        oloproof.run(config)


def test_usage_and_tokens_metrics_need_usage_declared(tmp_path: Path) -> None:
    config = project(tmp_path / "p", cases(1))
    text = config.read_text().replace("  trace: otel\n", "  records: [agent_trajectory/v1]\n")
    config.write_text(text)
    with pytest.raises(ConfigError, match=r"reads tokens from usage/v1.*records: \[usage/v1\]"):
        oloproof.run(config)


# --- an OpenAI Agents SDK run instrumented by openinference-instrumentation-openai-agents ---

AGENTS_APP = '''
from agents import Runner
from traces_scripted import support_team


async def run(request):
    result = await Runner.run(support_team(), request["message"])
    return {"answer": str(result.final_output)}
'''


@pytest.fixture
def instrumented() -> Any:
    pytest.importorskip("agents")
    pytest.importorskip("openinference.instrumentation.openai_agents")
    from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor

    instrumentor = OpenAIAgentsInstrumentor()
    instrumentor.instrument()  # the global tracer provider, which trace: otel collects from
    try:
        yield
    finally:
        instrumentor.uninstrument()


def test_an_openinference_instrumented_agents_sdk_run_needs_no_recording_code(
        tmp_path: Path, instrumented: Any) -> None:
    import asyncio

    from agents import Runner
    from traces_scripted import INPUT_TOKENS, OUTPUT_TOKENS, support_team

    from oloproof.traces import read_openai_agents

    config = project(tmp_path / "p", cases(6))
    (tmp_path / "p" / "app.py").write_text(AGENTS_APP, encoding="utf-8")
    result = oloproof.run(config)
    assert result.document.errors == []
    # What the run's own items say, for the same scripted team.
    items = read_openai_agents(asyncio.run(Runner.run(support_team(), "Where is ord-1?")))
    expected = [(s.kind, s.agent, s.to_agent, s.tool_name, s.arguments)
                for s in items.trajectory.steps]
    assert [k for k, *_ in expected].count("handoff") == 1
    for view in views(config, result.run_id).values():
        got = [(s["kind"], s.get("agent"), s.get("to_agent"), s.get("tool_name"),
                s.get("arguments")) for s in view["trajectory"]["steps"]]
        message = view["input"]["message"]
        assert got == [(k, a, t, n, {"role": "user", "content": message}
                        if k == "message" and (args or {}).get("role") == "user" else args)
                       for k, a, t, n, args in expected]
        assert view["other_artifacts"]["usage/v1"] == {
            "input_tokens": 4 * INPUT_TOKENS, "output_tokens": 4 * OUTPUT_TOKENS}
        assert view["other_artifacts"]["trace_reading/v1"]["skipped"] == {}
    usage = result.document.usage
    assert usage is not None and usage.input_tokens == 6 * 4 * INPUT_TOKENS
