"""Traces that are not what they claim (docs/traces.md#traces-that-cannot-be-read): spans
that do not form a tree, OTLP/JSON of the wrong shape, and traces that give no step.

Before: a span whose id was its parent's id looped forever (`oloproof traces import` grew by
25 MB/s); spans whose parents formed a cycle imported as a zero-step trajectory that then
passed `agent_no_tool_loop` and `agent_steps_le_20`; `{"resourceSpans": 5}` was an internal
error (a TypeError, exit 5). Now the first two are a TraceError naming the trace and the span
(exit 2), wrong shapes are exit 2 naming the file, and a trace that gives no step is missing
(`empty_trajectory`) on every trajectory criterion, never judged.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import oloproof
from oloproof.errors import TraceError
from oloproof.traces import read_otel_traces, read_otlp_file

TRACE = "0" * 31 + "1"
A, B, C, D = ("a" * 16, "b" * 16, "c" * 16, "d" * 16)


def _span(span_id: str, parent: str | None, name: str, start: int, *,
          operation: str | None = None, trace: str = TRACE, **attributes: str) -> dict[str, Any]:
    attrs = dict(attributes)
    if operation is not None:
        attrs["gen_ai.operation.name"] = operation
    span: dict[str, Any] = {
        "traceId": trace, "spanId": span_id, "name": name,
        "startTimeUnixNano": str(start), "endTimeUnixNano": str(start + 5),
        "attributes": [{"key": k.replace("__", "."), "value": {"stringValue": v}}
                       for k, v in attrs.items()]}
    if parent is not None:
        span["parentSpanId"] = parent
    return span


def _document(*spans: dict[str, Any]) -> dict[str, Any]:
    return {"resourceSpans": [{"scopeSpans": [{"spans": list(spans)}]}]}


def _file(tmp_path: Path, doc: Any, name: str = "spans.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


# A tool call of the desk agent: the step a reader makes of a real trace.
def _tool(span_id: str, parent: str, start: int) -> dict[str, Any]:
    return _span(span_id, parent, "execute_tool lookup", start, operation="execute_tool",
                 gen_ai__tool__name="lookup", gen_ai__tool__call__arguments="{}",
                 gen_ai__tool__call__result='"ok"')


NOT_TREES = {
    # The hang: the root and a span naming itself as its parent share one id.
    "one id, its own parent": (_document(_span(A, None, "root", 1, operation="invoke_agent"),
                                         _span(A, A, "again", 2, operation="chat")),
                               "two spans of this trace have this id", f"span {A}"),
    "its own parent": (_document(_span(A, None, "root", 1, operation="invoke_agent"),
                                 _span(B, B, "loop", 2, operation="chat")),
                       "this span names itself as its parent", f"span {B} ('loop')"),
    "a cycle of two": (_document(_span(B, C, "b", 1, operation="invoke_agent"),
                                 _tool(C, B, 2)),
                       "the parents of 2 spans form a cycle", f"span {B} ('b')"),
    "a cycle beside a tree": (_document(_span(A, None, "root", 1, operation="invoke_agent"),
                                        _tool(D, A, 2), _span(B, C, "b", 3), _span(C, B, "c", 4)),
                              "the parents of 2 spans form a cycle", f"span {B} ('b')"),
}


@pytest.mark.timeout(20)  # the first of them looped forever
@pytest.mark.parametrize("shape", NOT_TREES)
def test_spans_that_are_not_a_tree_are_an_error_naming_trace_and_span(
        tmp_path: Path, shape: str) -> None:
    doc, words, span = NOT_TREES[shape]

    with pytest.raises(TraceError) as raised:
        read_otlp_file(_file(tmp_path, doc))
    error = raised.value
    assert words in error.message
    assert (error.trace, error.span) == (TRACE, span)
    assert error.file is not None and error.file.endswith("spans.json")
    # The same from span objects in Python.
    with pytest.raises(TraceError, match=words):
        read_otel_traces(doc)


@pytest.mark.timeout(60)
@pytest.mark.parametrize("shape", NOT_TREES)
def test_traces_import_exits_2_on_them_and_writes_nothing(tmp_path: Path, cli: Any,
                                                          shape: str) -> None:
    doc, words, span = NOT_TREES[shape]
    path = _file(tmp_path, doc)

    code, out, err = cli("traces", "import", path.name, "--out", "suite", cwd=tmp_path,
                         timeout=30)

    assert code == 2, (out, err)
    assert err.startswith(f"Trace error: spans.json, trace {TRACE}, {span}: {words}"), err
    assert not (tmp_path / "suite").exists()


WRONG_SHAPES = {
    "resourceSpans a number": ({"resourceSpans": 5},
                               "resourceSpans is a list in OTLP/JSON; here it is a number (5)"),
    "resourceSpans an object": ({"resourceSpans": {"a": 1}},
                                "resourceSpans is a list in OTLP/JSON; here it is an object"),
    "a resource a string": ({"resourceSpans": ["x"]},
                            "resourceSpans[0] is an object in OTLP/JSON; here it is a string"),
    "scopeSpans a number": ({"resourceSpans": [{"scopeSpans": 5}]},
                            "resourceSpans[0].scopeSpans is a list in OTLP/JSON"),
    "spans an object": ({"resourceSpans": [{"scopeSpans": [{"spans": {"a": 1}}]}]},
                        "resourceSpans[0].scopeSpans[0].spans is a list in OTLP/JSON"),
    "a span a number": (_document(5),
                        "a span is an object in OTLP/JSON; here it is a number"),
    "attributes an object": (_document({**_span(A, None, "s", 1), "attributes": {"k": 1}}),
                             "attributes is a list in OTLP/JSON; here it is an object"),
    "an attribute a number": (
        _document({**_span(A, None, "s", 1), "attributes": [5]}),
        "a field has the wrong shape for OTLP/JSON"),
    "events an object": (
        _document({**_span(A, None, "s", 1, operation="chat"), "events": {"e": 1}}),
        "events is a list in OTLP/JSON; here it is an object"),
}


@pytest.mark.parametrize("shape", WRONG_SHAPES)
def test_a_wrong_shape_is_exit_2_naming_the_file(tmp_path: Path, cli: Any,
                                                 shape: str) -> None:
    doc, words = WRONG_SHAPES[shape]
    _file(tmp_path, doc, "bad.json")

    code, out, err = cli("traces", "import", "bad.json", "--out", "suite", cwd=tmp_path)

    assert code == 2, (out, err)
    assert err.startswith("Trace error: bad.json") and words in err, err
    assert "Internal error" not in err and "Traceback" not in err


def test_json_nested_too_deeply_is_exit_2(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "deep.json").write_text('{"resourceSpans": ' + "[" * 100_000 + "]" * 100_000
                                        + "}", encoding="utf-8")

    code, _, err = cli("traces", "import", "deep.json", "--out", "suite", cwd=tmp_path)

    assert code == 2
    assert err.startswith("Trace error: deep.json: its JSON is nested too deeply"), err


# ---- a trace that gives no step ----------------------------------------------------------

def test_an_imported_trace_without_a_step_is_missing_on_every_trajectory_criterion(
        tmp_path: Path, cli: Any) -> None:
    other = "0" * 31 + "2"
    doc = _document(
        _span(A, None, "GET /orders", 1, http__method="GET"),  # no GenAI span: no step
        _span(B, None, "invoke_agent desk", 2, operation="invoke_agent", trace=other,
              gen_ai__agent__name="desk"),
        _tool(C, B, 3) | {"traceId": other})
    _file(tmp_path, doc)
    code, out, err = cli("traces", "import", "spans.json", "--out", "suite", cwd=tmp_path)
    assert code == 0, err
    assert ("1 trace(s) gave no step (no GenAI or OpenInference span made one), so every "
            f"trajectory criterion is missing on them (empty_trajectory): {TRACE}") in out

    code, out, err = cli("run", "--json", cwd=tmp_path / "suite")

    assert code == 0, err
    rows = {m["id"]: m for m in json.loads(out)["metrics"]}
    for criterion in ("agent_no_tool_loop", "agent_steps_le_20"):
        # It passed on the empty trace; now only the trace with a step is judged.
        assert (rows[criterion]["passed"], rows[criterion]["observed"]) == (1, 1), criterion
        assert rows[criterion]["missing_by_reason"] == {"empty_trajectory": 1}
    for quantile in ("steps_p95", "tool_calls_p50"):
        assert rows[quantile]["observed"] == 1
        assert rows[quantile]["missing_by_reason"] == {"empty_trajectory": 1}
    code, out, _ = cli("inspect", "latest", "--case", TRACE, "--json", cwd=tmp_path / "suite")
    verdicts = {j["criterion"]: (j["verdict"], j["reason"]) for j in json.loads(out)["criteria"]}
    assert verdicts["agent_no_tool_loop"] == ("missing", "empty_trajectory")


EMPTY_DESK = '''
from opentelemetry import trace
from oloproof import AgentStep, AgentTrajectory, current_case

tracer = trace.get_tracer("desk")


def run(request):
    with tracer.start_as_current_span("GET /orders") as span:  # not a GenAI span
        span.set_attribute("http.method", "GET")
    return {"answer": "done"}


def by_hand(request):
    # Recorded by hand, on purpose: the agent took no step. Judged as recorded.
    current_case().agent_trajectory(AgentTrajectory(steps=()))
    return {"answer": "done"}
'''


@pytest.mark.parametrize(("entry", "trace", "verdict"), [
    ("app:run", "otel", ("missing", "empty_trajectory")),
    ("app:by_hand", None, ("passed", None)),
])
def test_system_trace_otel_with_no_step_is_missing_but_a_hand_recorded_one_is_judged(
        tmp_path: Path, entry: str, trace: str | None, verdict: tuple[str, str | None]) -> None:
    pytest.importorskip("opentelemetry.sdk")
    import yaml

    (tmp_path / "app.py").write_text(EMPTY_DESK, encoding="utf-8")
    (tmp_path / "cases.jsonl").write_text(json.dumps({"id": "c1", "input": {}}) + "\n",
                                          encoding="utf-8")
    system: dict[str, Any] = {"name": "desk", "version": "v1", "callable": entry}
    if trace is not None:
        system["trace"] = trace
    else:
        system["records"] = ["agent_trajectory/v1"]
    (tmp_path / "oloproof.yaml").write_text(yaml.safe_dump({
        "version": 1, "project": "empty", "dataset": "cases.jsonl", "system": system,
        "evaluators": [{"type": "agent_no_tool_loop"}, {"type": "agent_max_steps",
                                                        "max_steps": 20}],
        "metrics": [{"id": "steps_p50", "type": "quantile", "source": "agent_steps",
                     "quantile": 0.5}]}), encoding="utf-8")
    (tmp_path / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")

    result = oloproof.run(tmp_path / "oloproof.yaml")

    assert result.document.errors == []
    rows = {m.id: m for m in result.document.metrics}
    observed = 0 if verdict[0] == "missing" else 1
    for criterion in ("agent_no_tool_loop", "agent_steps_le_20"):
        assert (rows[criterion].observed, rows[criterion].passed) == (observed, observed)
    assert rows["steps_p50"].observed == observed
    if verdict[0] == "missing":
        assert rows["agent_no_tool_loop"].missing_by_reason == {"empty_trajectory": 1}
        assert rows["steps_p50"].missing_by_reason == {"empty_trajectory": 1}


def test_spans_of_a_case_that_are_not_a_tree_error_that_case(tmp_path: Path) -> None:
    """Under `system.trace: otel` the engine reads the case's spans: spans in a cycle make the
    case's error (`system_error`: its recording cannot be read; naming the trace and span),
    never a hang."""
    pytest.importorskip("opentelemetry.sdk")
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.trace import SpanContext, TraceFlags

    from oloproof.execution.otel_trace import CaseSpans, record_from_spans

    root = TracerProvider().get_tracer("t").start_span("oloproof case")
    spans = CaseSpans(root)
    trace_id = root.get_span_context().trace_id

    def context(span_id: int) -> SpanContext:
        return SpanContext(trace_id, span_id, is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    spans.spans = [ReadableSpan("b", context=context(0xB), parent=context(0xC),
                                attributes={"gen_ai.operation.name": "invoke_agent"}),
                   ReadableSpan("c", context=context(0xC), parent=context(0xB))]

    error = record_from_spans(spans, {}, uses_steps=False)

    assert error is not None and error.kind == "system_error"
    assert "the case's spans cannot be read" in error.message
    assert "the parents of 2 spans form a cycle" in error.message
    assert f"trace {trace_id:032x}, span {0xB:016x} ('b')" in error.message
