"""`oloproof traces import FILE --out DIR` through the command line: a suite over recorded
production traces that `oloproof run` judges from the recordings, re-running nothing; bad
input exits 2 naming what is wrong."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("opentelemetry.sdk")

from google.protobuf.json_format import MessageToJson
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from test_otel import Agent, as_spec_json, protobuf_dict, tracer_and_exporter


def production_file(tmp_path: Path, requests: list[str]) -> Path:
    """What a collector would have written: one trace per request, as the SDK encodes it."""
    tracer, exporter = tracer_and_exporter()
    for request in requests:
        Agent(tracer).run(request)
    path = tmp_path / "spans.otlp.json"
    path.write_text(MessageToJson(encode_spans(exporter.get_finished_spans())), encoding="utf-8")
    return path


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_import_then_run_judges_the_recordings(tmp_path: Path, cli: Any) -> None:
    spans = production_file(tmp_path, ["Refund order o1", "Refund order o2", "Where is o3?"])
    out = tmp_path / "suite"
    code, stdout, err = cli("traces", "import", str(spans), "--out", str(out), cwd=tmp_path)
    assert (code, err) == (0, "")
    assert "Imported 3 trace(s)" in stdout and "33 step(s)" in stdout
    assert "usage in 3" in stdout
    cases = lines(out / "data" / "cases.jsonl")
    assert [c["input"]["message"] for c in cases] == [
        "Refund order o1", "Refund order o2", "Where is o3?"]
    first = cases[0]
    assert first["id"] == first["metadata"]["trace_id"] and len(first["id"]) == 32
    assert first["expected"] == {}
    recording = first["input"]["recording"]
    assert recording["answer"] == "A ticket is open: t-9."
    assert recording["usage"] == {"input_tokens": 350, "output_tokens": 70}
    assert [s["kind"] for s in recording["trajectory"]["steps"]][:3] == [
        "message", "tool_call", "tool_call"]

    # People fill in what one case should have done.
    first["expected"] = {"answer": "A ticket is open: t-9.",
                         "tools": ["lookup_order", "issue_refund"]}
    (out / "data" / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    code, stdout, err = cli("run", "--json", cwd=out)
    assert code == 0, err
    doc = json.loads(stdout)
    rows = {m["id"]: m for m in doc["metrics"]}
    # The expected answer and tools judge the one case that has them; the others are excluded.
    assert (rows["answer_correct"]["passed"], rows["answer_correct"]["observed"]) == (1, 1)
    assert rows["answer_correct"]["excluded"] == 2
    assert (rows["agent_tool_sequence"]["passed"], rows["agent_tool_sequence"]["observed"]) == (
        1, 1)
    assert rows["agent_no_tool_loop"]["passed"] == 3
    assert rows["steps_p95"]["observed"] == 3 and rows["steps_p95"]["estimate"] == 11
    assert doc["usage"] == {"cases": 3, "input_tokens": 1050, "output_tokens": 210,
                            "cost": None}
    assert doc["errors"] == []

    # A second run re-runs nothing: every execution comes from the cache of recordings.
    code, stdout, _ = cli("run", "--json", cwd=out)
    assert code == 0 and json.loads(stdout)["cache"]["execution"] == {"hit": 3, "miss": 0}


def test_json_lines_and_what_was_not_understood_is_reported(tmp_path: Path, cli: Any) -> None:
    tracer, exporter = tracer_and_exporter()
    Agent(tracer).run("one")
    with tracer.start_as_current_span("invoke_agent odd") as span:
        span.set_attribute("gen_ai.operation.name", "invoke_agent")
        with tracer.start_as_current_span("teleport") as odd:
            odd.set_attribute("gen_ai.operation.name", "teleport")
    with tracer.start_as_current_span("GET /health"):
        pass
    spans = list(exporter.get_finished_spans())
    path = tmp_path / "spans.jsonl"
    path.write_text("".join(json.dumps(as_spec_json(protobuf_dict([s]))) + "\n" for s in spans),
                    encoding="utf-8")
    out = tmp_path / "suite"
    code, stdout, _ = cli("traces", "import", str(path), "--out", str(out), "--json",
                          cwd=tmp_path)
    assert code == 0
    summary = json.loads(stdout)
    assert summary["traces"] == 3
    assert summary["skipped"] == {"span:gen_ai.operation.name=teleport": 1}
    assert len(summary["without_steps"]) == 2  # the odd agent and the health check
    odd = [c for c in lines(out / "data" / "cases.jsonl")
           if c["input"]["recording"]["reading"]["skipped"]]
    assert len(odd) == 1
    code, stdout, _ = cli("run", "--json", cwd=out)
    assert code == 0
    assert any("1 trace item(s) in 1 case(s) were not understood" in w
               for w in json.loads(stdout)["warnings"])


def test_bad_input_exits_2_naming_file_line_trace_and_span(tmp_path: Path, cli: Any) -> None:
    out = tmp_path / "suite"
    code, _, err = cli("traces", "import", str(tmp_path / "absent.json"), "--out", str(out),
                       cwd=tmp_path)
    assert code == 2 and "Trace error:" in err and "no such file" in err

    broken = tmp_path / "broken.jsonl"
    good = json.dumps(as_spec_json(protobuf_dict(_spans())))
    broken.write_text(good + "\n" + '{"resourceSpans": [' + "\n", encoding="utf-8")
    code, _, err = cli("traces", "import", str(broken), "--out", str(out), cwd=tmp_path)
    assert code == 2 and f"{broken}:2" in err

    doc = as_spec_json(protobuf_dict(_spans()))
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][1]
    span["traceId"] = "zz"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(doc), encoding="utf-8")
    code, out_text, err = cli("traces", "import", str(bad), "--out", str(out), "--json",
                              cwd=tmp_path)
    assert code == 2
    error = json.loads(out_text)["error"]
    assert error["kind"] == "trace" and error["trace"] == "zz"
    assert "span 1 of resourceSpans[0].scopeSpans[0]" in error["span"]

    empty = tmp_path / "empty.json"
    empty.write_text('{"resourceSpans": []}', encoding="utf-8")
    code, _, err = cli("traces", "import", str(empty), "--out", str(out), cwd=tmp_path)
    assert code == 2 and "holds no span" in err
    assert not out.exists()  # nothing was written by any of these


def test_an_existing_suite_is_never_overwritten(tmp_path: Path, cli: Any) -> None:
    spans = production_file(tmp_path, ["hi"])
    out = tmp_path / "suite"
    out.mkdir()
    (out / "oloproof.yaml").write_text("mine\n", encoding="utf-8")
    code, _, err = cli("traces", "import", str(spans), "--out", str(out), cwd=tmp_path)
    assert code == 2 and "already holds oloproof.yaml" in err
    assert (out / "oloproof.yaml").read_text() == "mine\n"
    assert not (out / "data").exists()


def _spans() -> list[Any]:
    tracer, exporter = tracer_and_exporter()
    Agent(tracer).run()
    return list(exporter.get_finished_spans())


DOCS = Path(__file__).resolve().parents[2] / "docs" / "traces.md"


def test_the_docs_show_what_the_import_prints(tmp_path: Path, cli: Any) -> None:
    """docs/traces.md's `It prints what it read` block: three traces of the agent above,
    imported from `spans.otlp.json` into `prod-suite` in the file's folder."""
    text = DOCS.read_text(encoding="utf-8")
    at = text.index("It prints what it read")
    shown = text[at:].split("```\n", 2)[1]
    production_file(tmp_path, ["Refund order o1", "Refund order o2", "Where is o3?"])
    code, stdout, err = cli("traces", "import", "spans.otlp.json", "--out", "prod-suite",
                            cwd=tmp_path)
    assert (code, err) == (0, "")
    assert stdout == shown
