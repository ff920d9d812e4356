"""OTLP/JSON files: `read_otlp_file` (docs/traces.md#production-traces-oloproof-traces-import).

A file holds either one `{"resourceSpans": [...]}` document (the OTLP/JSON encoding, or
protobuf's `MessageToJson` of an `ExportTraceServiceRequest`), or one such document per line
(JSON Lines, as the OpenTelemetry Collector's file exporter writes). Spans are grouped by
trace — a trace may be spread over several lines — and each trace becomes one reading.
"""

from __future__ import annotations

import json
from pathlib import Path

from oloproof.errors import TraceError
from oloproof.traces.otel import read_trace
from oloproof.traces.otel_tree import group_by_trace
from oloproof.traces.reading import TraceReading
from oloproof.traces.spans import Span, spans_from_document

_TOO_DEEP = "its JSON is nested too deeply to be read; is it an OTLP/JSON file?"


def read_otlp_spans(path: str | Path, *, lean: bool = False) -> list[Span]:
    """Every span in an OTLP/JSON or OTLP/JSON Lines file.

    `lean` leaves unread the attributes of spans that are neither GenAI nor OpenInference
    spans (what the trajectory readers do: such spans are only nodes of the tree to them).

    Raises:
        TraceError: naming the file, the line, and the trace and span that cannot be read.
    """
    file = Path(path)
    try:
        text = file.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise TraceError("no such file", file=file) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"cannot be read: {exc}", file=file) from None
    if not text.strip():
        raise TraceError("the file is empty: an OTLP/JSON file holds resourceSpans", file=file)
    try:
        whole = json.loads(text)
    except RecursionError:
        raise TraceError(_TOO_DEEP, file=file) from None
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise TraceError(f"not valid JSON at column {exc.colno}: {exc.msg}", file=file,
                             line=exc.lineno) from None
        return _json_lines(text, file, lean)
    return spans_from_document(whole, file=file, line=None, lean=lean)


def _json_lines(text: str, file: Path, lean: bool) -> list[Span]:
    spans: list[Span] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except RecursionError:
            raise TraceError(_TOO_DEEP, file=file, line=number) from None
        except json.JSONDecodeError as exc:
            raise TraceError(
                f"not valid JSON at column {exc.colno}: {exc.msg}; in a JSON Lines file each "
                "line is one complete {\"resourceSpans\": [...]} document",
                file=file, line=number,
            ) from None
        spans.extend(spans_from_document(doc, file=file, line=number, lean=lean))
    return spans


def read_otlp_file(path: str | Path) -> list[TraceReading]:
    """One TraceReading per trace in an OTLP/JSON (or JSON Lines) file, in start order."""
    return [read_trace(group, trace_id, file=path)
            for trace_id, group in group_by_trace(read_otlp_spans(path, lean=True)).items()]
