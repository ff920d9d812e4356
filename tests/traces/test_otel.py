"""`from_otel` on spans made by `opentelemetry-sdk` itself, in the GenAI conventions, and on
the OTLP/JSON shapes seen in practice (spec hex ids, protobuf base64 + enum names, JSON Lines).
"""

from __future__ import annotations

import base64
import json
import warnings
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from google.protobuf.json_format import MessageToDict, MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import Status, StatusCode, Tracer

from oloproof.errors import TraceError
from oloproof.recording.trajectory import trajectory_problems
from oloproof.traces import (
    TraceWarning,
    from_otel,
    read_otel,
    read_otel_traces,
    read_otlp_file,
)

# --- an agent instrumented by hand in the GenAI conventions ----------------------------------


def tracer_and_exporter() -> tuple[Tracer, InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return provider.get_tracer("test-agent"), exporter


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "parts": [
        {"type": "tool_call", "id": cid, "name": name, "arguments": args}
        for cid, name, args in items
    ]}


def responses(*items: tuple[str, Any]) -> dict[str, Any]:
    return {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": cid, "response": value} for cid, value in items
    ]}


class Agent:
    """Emits the spans a GenAI-instrumented agent would (content capture on or off); the
    billing agent's span as `sub` says: (its operation, the attribute that names it)."""

    def __init__(self, tracer: Tracer, *, capture: bool = True, on_events: bool = False,
                 sub: tuple[str, str] = ("invoke_agent", "gen_ai.agent.name")) -> None:
        self.tracer, self.capture, self.on_events = tracer, capture, on_events
        self.sub = sub

    def chat(self, inputs: list[dict[str, Any]], outputs: list[dict[str, Any]],
             tokens: tuple[int, int] = (100, 20)) -> None:
        with self.tracer.start_as_current_span("chat scripted-model") as span:
            span.set_attribute("gen_ai.operation.name", "chat")
            span.set_attribute("gen_ai.provider.name", "openai")
            span.set_attribute("gen_ai.usage.input_tokens", tokens[0])
            span.set_attribute("gen_ai.usage.output_tokens", tokens[1])
            if not self.capture:
                return
            content = {"gen_ai.input.messages": json.dumps(inputs),
                       "gen_ai.output.messages": json.dumps(outputs)}
            if self.on_events:
                span.add_event("gen_ai.client.inference.operation.details", content)
            else:
                span.set_attributes(content)

    def tool(self, name: str, cid: str, arguments: dict[str, Any], result: Any = None,
             error: Exception | None = None) -> None:
        with self.tracer.start_as_current_span(f"execute_tool {name}",
                                               record_exception=False,
                                               set_status_on_exception=False) as span:
            span.set_attribute("gen_ai.operation.name", "execute_tool")
            span.set_attribute("gen_ai.tool.name", name)
            span.set_attribute("gen_ai.tool.call.id", cid)
            if self.capture:
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps(arguments))
            if error is not None:
                span.record_exception(error)
                span.set_attribute("error.type", type(error).__name__)
                span.set_status(Status(StatusCode.ERROR, str(error)))
            elif self.capture:
                span.set_attribute("gen_ai.tool.call.result", json.dumps(result))

    def run(self, request: str = "Refund order o1") -> None:
        user = text("user", request)
        with self.tracer.start_as_current_span("invoke_agent support") as agent:
            agent.set_attribute("gen_ai.operation.name", "invoke_agent")
            agent.set_attribute("gen_ai.agent.name", "support")
            parallel = calls(("c1", "lookup_order", {"order_id": "o1"}),
                             ("c2", "search", {"query": "refund policy"}))
            self.chat([user], [parallel])
            self.tool("lookup_order", "c1", {"order_id": "o1"}, {"status": "delivered"})
            self.tool("search", "c2", {"query": "refund policy"}, {"hits": 1})
            history = [user, parallel, responses(("c1", {"status": "delivered"}),
                                                 ("c2", {"hits": 1}))]
            refund = calls(("c3", "issue_refund", {"order_id": "o1"}))
            self.chat(history, [refund])
            self.tool("issue_refund", "c3", {"order_id": "o1"},
                      error=RuntimeError("refund service down"))
            with self.tracer.start_as_current_span(f"{self.sub[0]} billing") as sub:
                sub.set_attribute("gen_ai.operation.name", self.sub[0])
                sub.set_attribute(self.sub[1], "billing")
                ticket = calls(("c4", "open_ticket", {"order_id": "o1"}))
                self.chat([text("user", "Open a ticket for o1")], [ticket], tokens=(50, 10))
                self.tool("open_ticket", "c4", {"order_id": "o1"}, {"ticket": "t-9"})
            self.chat(history + [refund], [text("assistant", "A ticket is open: t-9.")])


def spans_of(capture: bool = True, on_events: bool = False) -> list[ReadableSpan]:
    tracer, exporter = tracer_and_exporter()
    Agent(tracer, capture=capture, on_events=on_events).run()
    return list(exporter.get_finished_spans())


EXPECTED = [
    ("message", "support", None, {"role": "user", "content": "Refund order o1"}, None),
    ("tool_call", "support", "lookup_order", {"order_id": "o1"}, None),
    ("tool_call", "support", "search", {"query": "refund policy"}, None),
    ("tool_result", "support", "lookup_order", None, {"status": "delivered"}),
    ("tool_result", "support", "search", None, {"hits": 1}),
    ("tool_call", "support", "issue_refund", {"order_id": "o1"}, None),
    ("tool_result", "support", "issue_refund", None,
     {"error": "refund service down", "error_type": "RuntimeError"}),
    ("message", "billing", None, {"role": "user", "content": "Open a ticket for o1"}, None),
    ("tool_call", "billing", "open_ticket", {"order_id": "o1"}, None),
    ("tool_result", "billing", "open_ticket", None, {"ticket": "t-9"}),
    ("final", "support", None, {"role": "assistant", "content": "A ticket is open: t-9."}, None),
]


def rows(trajectory: Any) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.tool_name, s.arguments, s.result) for s in trajectory.steps]


# --- SDK span objects -----------------------------------------------------------------------


@pytest.mark.parametrize("sub", [
    ("invoke_workflow", "gen_ai.agent.name"),  # the conventions' standalone release, v0.1.0
    ("invoke_workflow", "gen_ai.workflow.name"),  # the releases before it
], ids=["v0.1.0", "before"])
def test_a_workflow_span_is_an_agent_in_either_release_s_names(sub: tuple[str, str]) -> None:
    """v0.1.0 folded the workflow span into the invoke-agent span (`gen_ai.operation.name`
    stays `invoke_workflow`) and named it by `gen_ai.agent.name` where `gen_ai.workflow.name`
    named it before: either reads as the `invoke_agent` span it replaces."""
    tracer, exporter = tracer_and_exporter()
    Agent(tracer, sub=sub).run()
    reading = read_otel(exporter.get_finished_spans())
    assert rows(reading.trajectory) == EXPECTED
    assert reading.skipped == {} and "span:invoke_workflow" not in reading.ignored


def test_genai_spans_from_the_sdk_become_the_trajectory() -> None:
    reading = read_otel(spans_of())
    assert rows(reading.trajectory) == EXPECTED
    t = reading.trajectory
    assert trajectory_problems(t.steps) == []
    # It ends with the agent's answer and no agent span says it failed.
    assert (t.truncated, t.terminal_status) == (False, "success")
    # Model calls counted once each (agent spans carry no usage here).
    assert reading.usage is not None
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (350, 70)
    assert reading.usage.payload() == {"input_tokens": 350, "output_tokens": 70}
    assert reading.skipped == {} and reading.notes == ()
    assert reading.input == "Refund order o1"
    assert reading.output == "A ticket is open: t-9."


def test_messages_on_the_operation_details_event_read_the_same() -> None:
    assert rows(read_otel(spans_of(on_events=True)).trajectory) == EXPECTED


def test_content_capture_off_records_calls_without_inventing_arguments() -> None:
    reading = read_otel(spans_of(capture=False))
    got = rows(reading.trajectory)
    assert [r[:3] for r in got] == [
        ("tool_call", "support", "lookup_order"), ("tool_result", "support", "lookup_order"),
        ("tool_call", "support", "search"), ("tool_result", "support", "search"),
        ("tool_call", "support", "issue_refund"), ("tool_result", "support", "issue_refund"),
        ("tool_call", "billing", "open_ticket"), ("tool_result", "billing", "open_ticket"),
        # The last model call called nothing: the support agent's answer, its text unknown.
        ("final", "support", None),
    ]
    assert all(r[3] is None for r in got)  # no arguments recorded: none made up
    assert got[5][4] == {"error": "refund service down", "error_type": "RuntimeError"}
    kinds = [(n.step, n.kind) for n in reading.notes]
    assert (1, "arguments_not_recorded") in kinds and (2, "result_not_recorded") in kinds
    assert (9, "content_not_recorded") in kinds
    assert not reading.trajectory.truncated  # every call has its (unrecorded) result
    assert reading.trajectory.terminal_status == "success"
    assert reading.output is None


@pytest.mark.parametrize("capture", [True, False])
def test_a_turn_with_no_tool_call_is_named_by_its_invoke_agent_span(capture: bool) -> None:
    """An agent that answers at once (one `chat`, no tool) is the `invoke_agent` span's agent,
    with content capture on or off: a `final` step, the route `desk` (such a trajectory had 0
    steps and the route `missing agents_not_named`); as OpenInference's AGENT span does
    (tests/traces/test_openinference.py)."""
    tracer, exporter = tracer_and_exporter()
    with tracer.start_as_current_span("invoke_agent desk") as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
        span.set_attribute("gen_ai.agent.name", "desk")
        Agent(tracer, capture=capture).chat([text("user", "Where is o1?")],
                                            [text("assistant", "Delivered on Monday.")])
    reading = read_otel(exporter.get_finished_spans())
    t = reading.trajectory
    if capture:
        assert rows(t) == [
            ("message", "desk", None, {"role": "user", "content": "Where is o1?"}, None),
            ("final", "desk", None, {"role": "assistant", "content": "Delivered on Monday."},
             None)]
    else:
        assert rows(t) == [("final", "desk", None, None, None)]
        assert [(n.step, n.kind) for n in reading.notes] == [(1, "content_not_recorded")]
    assert t.route() == ["desk"] and t.terminal_status == "success"


def test_a_call_the_model_made_that_no_tool_carried_out_is_left_without_a_result() -> None:
    tracer, exporter = tracer_and_exporter()
    agent = Agent(tracer)
    with tracer.start_as_current_span("invoke_agent support") as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
        span.set_attribute("gen_ai.agent.name", "support")
        agent.chat([text("user", "hi")], [calls(("c1", "lookup_order", {"order_id": "o1"}))])
    reading = read_otel(exporter.get_finished_spans())
    t = reading.trajectory
    assert [s.kind for s in t.steps] == ["message", "tool_call"]
    assert t.truncated is True and t.step_limit is None and t.terminal_status == "unknown"
    assert [(n.step, n.kind, n.detail) for n in reading.notes] == [
        (2, "call_without_result", "c1")]


def test_a_result_only_the_next_model_call_shows_answers_the_call() -> None:
    # The tool ran outside any instrumentation: its result is in the next model's input.
    tracer, exporter = tracer_and_exporter()
    agent = Agent(tracer)
    user = text("user", "hi")
    ask = calls(("c1", "lookup_order", {"order_id": "o1"}))
    with tracer.start_as_current_span("handle request"):  # not a GenAI span: ignored
        agent.chat([user], [ask])
        agent.chat([user, ask, responses(("c1", {"status": "lost"}))],
                   [text("assistant", "Lost.")])
    t = read_otel(exporter.get_finished_spans()).trajectory
    assert [(s.kind, s.result) for s in t.steps] == [
        ("message", None), ("tool_call", None), ("tool_result", {"status": "lost"}),
        ("final", None)]
    assert not t.truncated


def test_an_error_status_on_the_root_is_a_failure_and_spans_it_cannot_read_are_counted() -> None:
    tracer, exporter = tracer_and_exporter()
    with tracer.start_as_current_span("invoke_agent a", record_exception=False,
                                      set_status_on_exception=False) as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("teleport") as odd:
            odd.set_attribute("gen_ai.operation.name", "teleport")
        with tracer.start_as_current_span("GET /orders"):
            pass
        span.set_status(Status(StatusCode.ERROR, "gave up"))
    spans = exporter.get_finished_spans()
    reading = read_otel(spans)
    assert reading.trajectory.terminal_status == "failure"
    assert reading.skipped == {"span:gen_ai.operation.name=teleport": 1}
    assert reading.ignored == {"span:other": 1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from_otel(spans)
    assert [w.category for w in caught] == [TraceWarning]


def test_spans_of_several_traces_are_one_reading_each() -> None:
    tracer, exporter = tracer_and_exporter()
    Agent(tracer).run("first")
    Agent(tracer).run("second")
    spans = exporter.get_finished_spans()
    readings = read_otel_traces(spans)
    assert [r.input for r in readings] == ["first", "second"]
    assert len({r.trace_id for r in readings}) == 2
    with pytest.raises(TraceError, match="read_otel_traces"):
        read_otel(spans)


# --- OTLP/JSON files ------------------------------------------------------------------------


_KINDS = {"SPAN_KIND_UNSPECIFIED": 0, "SPAN_KIND_INTERNAL": 1, "SPAN_KIND_SERVER": 2,
          "SPAN_KIND_CLIENT": 3, "SPAN_KIND_PRODUCER": 4, "SPAN_KIND_CONSUMER": 5}
_CODES = {"STATUS_CODE_UNSET": 0, "STATUS_CODE_OK": 1, "STATUS_CODE_ERROR": 2}


def protobuf_dict(spans: list[ReadableSpan], **options: Any) -> dict[str, Any]:
    """The SDK's own OTLP encoding, as protobuf's JSON mapping gives it (base64 ids, enum
    names)."""
    return MessageToDict(encode_spans(spans), **options)


def as_spec_json(doc: Any) -> Any:
    """The same document in the OTLP/JSON encoding of the spec: hex ids, enums as integers."""
    if isinstance(doc, list):
        return [as_spec_json(v) for v in doc]
    if not isinstance(doc, dict):
        return doc
    out: dict[str, Any] = {}
    for key, value in doc.items():
        if key in ("traceId", "spanId", "parentSpanId"):
            out[key] = base64.b64decode(value).hex()
        elif key == "kind":
            out[key] = _KINDS[value]
        elif key == "code":
            out[key] = _CODES[value]
        else:
            out[key] = as_spec_json(value)
    return out


def test_the_sdk_otlp_encoding_with_base64_ids_and_enum_names(tmp_path: Path) -> None:
    spans = spans_of()
    doc = protobuf_dict(spans)
    first = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(first["traceId"]) == 24 and first["kind"].startswith("SPAN_KIND_")
    path = tmp_path / "spans.json"
    path.write_text(MessageToJson(encode_spans(spans)), encoding="utf-8")
    (reading,) = read_otlp_file(path)
    assert rows(reading.trajectory) == EXPECTED
    assert reading.trace_id == format(spans[0].context.trace_id, "032x")
    assert reading.trajectory.steps[6].result == {"error": "refund service down",
                                                 "error_type": "RuntimeError"}


def test_snake_case_keys_of_preserving_proto_field_name(tmp_path: Path) -> None:
    doc = protobuf_dict(spans_of(), preserving_proto_field_name=True)
    assert "resource_spans" in doc
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(doc), encoding="utf-8")
    (reading,) = read_otlp_file(path)
    assert rows(reading.trajectory) == EXPECTED


def test_the_spec_encoding_with_hex_ids(tmp_path: Path) -> None:
    doc = as_spec_json(protobuf_dict(spans_of()))
    first = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    assert len(first["traceId"]) == 32 and first["kind"] == 1
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(doc, indent=2), encoding="utf-8")
    (reading,) = read_otlp_file(path)
    assert rows(reading.trajectory) == EXPECTED


def test_json_lines_with_a_trace_spread_over_lines(tmp_path: Path) -> None:
    tracer, exporter = tracer_and_exporter()
    Agent(tracer).run("first")
    Agent(tracer).run("second")
    spans = list(exporter.get_finished_spans())
    # The Collector's file exporter writes a document per batch: three batches here.
    batches = [spans[:5], spans[5:13], spans[13:]]
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(as_spec_json(protobuf_dict(b))) + "\n"
                            for b in batches) + "\n", encoding="utf-8")
    readings = read_otlp_file(path)
    assert [r.input for r in readings] == ["first", "second"]
    assert rows(readings[0].trajectory)[1:] == EXPECTED[1:]


def test_files_that_cannot_be_read_name_file_line_trace_and_span(tmp_path: Path) -> None:
    good = json.dumps(as_spec_json(protobuf_dict(spans_of())))
    broken = tmp_path / "broken.jsonl"
    broken.write_text(good + "\n" + good + "\n" + '{"resourceSpans": [' + "\n")
    with pytest.raises(TraceError) as raised:
        read_otlp_file(broken)
    assert raised.value.file == str(broken) and raised.value.line == 3

    doc = as_spec_json(protobuf_dict(spans_of()))
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][2]
    span["spanId"] = "not-an-id"
    bad_id = tmp_path / "bad_id.json"
    bad_id.write_text(json.dumps(doc))
    with pytest.raises(TraceError) as raised:
        read_otlp_file(bad_id)
    error = raised.value
    assert error.trace == span["traceId"]
    assert error.span is not None and "span 2" in error.span and span["name"] in error.span
    assert str(bad_id) in str(error)

    with pytest.raises(TraceError, match="no such file"):
        read_otlp_file(tmp_path / "absent.json")
    (tmp_path / "other.json").write_text('{"spans": []}')
    with pytest.raises(TraceError, match="resourceSpans"):
        read_otlp_file(tmp_path / "other.json")


def test_from_otel_given_a_path_reads_the_file(tmp_path: Path) -> None:
    """`from_otel("spans.jsonl")` reads the file (it said "not a span: str has no context");
    a file of several traces points to read_otlp_file, a missing one is named."""
    one = tmp_path / "one.jsonl"
    one.write_text(json.dumps(as_spec_json(protobuf_dict(spans_of()))) + "\n", encoding="utf-8")
    assert rows(from_otel(str(one))) == EXPECTED
    assert rows(read_otel(one).trajectory) == EXPECTED  # a Path too
    tracer, exporter = tracer_and_exporter()
    Agent(tracer).run("first")
    Agent(tracer).run("second")
    two = tmp_path / "two.jsonl"
    two.write_text(json.dumps(as_spec_json(protobuf_dict(list(exporter.get_finished_spans()))))
                   + "\n", encoding="utf-8")
    with pytest.raises(TraceError, match=r"two\.jsonl: from_otel reads one trace; these spans "
                                         r"hold 2 .*use read_otlp_file"):
        from_otel(str(two))
    assert len(read_otel_traces(str(two))) == 2
    with pytest.raises(TraceError, match=r"absent\.jsonl: no such file"):
        from_otel(str(tmp_path / "absent.jsonl"))
