"""Spans as the OpenTelemetry adapter reads them, from SDK objects or from OTLP/JSON.

One small record per span, whatever it came from: hex ids, nanosecond times, the status as
`UNSET`/`OK`/`ERROR`, attributes as plain Python values, events as (name, time, attributes).

OTLP/JSON comes in several shapes in practice, all read here:
- the OTLP/JSON encoding of the spec: lowerCamelCase keys, hex ids, enums as integers, 64-bit
  integers as decimal strings;
- protobuf's `MessageToDict` / `MessageToJson` of the same messages: base64 ids and enum names
  (`SPAN_KIND_INTERNAL`, `STATUS_CODE_ERROR`), and snake_case keys when
  `preserving_proto_field_name=True`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oloproof.errors import TraceError

_STATUS_BY_NUMBER = {0: "UNSET", 1: "OK", 2: "ERROR"}


@dataclass(slots=True)
class SpanEvent:
    """An event recorded on a span."""

    name: str
    time: int
    attributes: dict[str, Any]


@dataclass(slots=True)
class Span:
    """One span: ids in lowercase hex, times in nanoseconds since the epoch (end 0: not ended)."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: int
    end: int
    status: str = "UNSET"
    status_message: str | None = None
    attributes: dict[str, Any] = field(default_factory=dict)
    events: list[SpanEvent] = field(default_factory=list)


# --- SDK span objects (opentelemetry.sdk.trace.ReadableSpan) -------------------------------


def span_from_sdk(span: Any) -> Span:
    """A `ReadableSpan` (what an exporter or InMemorySpanExporter receives) as a Span."""
    context = getattr(span, "context", None)
    if context is None:
        raise TraceError(f"not a span: {type(span).__name__} has no context")
    parent = getattr(span, "parent", None)
    status = getattr(span, "status", None)
    code = getattr(getattr(status, "status_code", None), "name", "UNSET")
    return Span(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_id=format(parent.span_id, "016x") if parent is not None else None,
        name=str(span.name),
        start=int(span.start_time or 0),
        end=int(span.end_time or 0),
        status=str(code),
        status_message=getattr(status, "description", None) or None,
        attributes={k: _plain(v) for k, v in (span.attributes or {}).items()},
        events=[
            SpanEvent(str(e.name), int(e.timestamp or 0),
                      {k: _plain(v) for k, v in (e.attributes or {}).items()})
            for e in getattr(span, "events", ()) or ()
        ],
    )


def _plain(value: Any) -> Any:
    # SDK attribute values are str, bool, int, float or sequences of them (tuples).
    if isinstance(value, tuple | list):
        return [_plain(v) for v in value]
    return value


# --- OTLP/JSON ----------------------------------------------------------------------------


def _get(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    value = obj.get(camel)
    return obj.get(snake) if value is None else value


def decode_id(value: Any, size: int) -> str:
    """An id as lowercase hex: hex (the OTLP/JSON spec) or base64 (protobuf's JSON)."""
    if not isinstance(value, str) or not value:
        raise ValueError("missing")
    if len(value) == 2 * size:
        try:
            int(value, 16)
        except ValueError:
            pass  # 2·size characters but not hex: perhaps base64 of another size
        else:
            return value if value.islower() or value.isdigit() else value.lower()
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{value!r} is neither hex nor base64") from None
    if len(raw) != size:
        raise ValueError(f"{value!r} is {len(raw)} bytes, not {size}")
    return raw.hex()


_SCALARS = {"stringValue": str, "string_value": str, "boolValue": bool, "bool_value": bool,
            "intValue": int, "int_value": int, "doubleValue": float, "double_value": float,
            "bytesValue": str, "bytes_value": str}


def any_value(value: Any) -> Any:
    """An OTLP `AnyValue` ({"stringValue": ...}, {"intValue": "3"}, ...) as a Python value."""
    if not isinstance(value, dict) or not value:
        return None
    for kind, inner in value.items():  # one key: the value's type
        convert = _SCALARS.get(kind)
        if convert is not None:
            return inner if convert is str else convert(inner)
        if kind in ("arrayValue", "array_value"):
            return [any_value(v) for v in (inner or {}).get("values", [])]
        if kind in ("kvlistValue", "kvlist_value"):
            return {kv["key"]: any_value(kv.get("value"))
                    for kv in (inner or {}).get("values", [])}
        raise ValueError(f"unknown attribute value type {kind!r}")
    return None


def attributes_of(items: Any) -> dict[str, Any]:
    """OTLP key/value attributes as a dict."""
    out: dict[str, Any] = {}
    for kv in items or ():
        value = kv.get("value")
        # Most attributes are strings: taken without the general conversion.
        text = value.get("stringValue") if isinstance(value, dict) else None
        out[kv["key"]] = text if text is not None else any_value(value)
    return out


def _status(raw: Any) -> tuple[str, str | None]:
    if not raw or not isinstance(raw, Mapping):
        return "UNSET", None
    code = raw.get("code", 0)
    if isinstance(code, str):
        name = code.upper().removeprefix("STATUS_CODE_")
        status = name if name in ("UNSET", "OK", "ERROR") else (
            _STATUS_BY_NUMBER.get(int(code), "UNSET") if code.isdigit() else "UNSET")
    else:
        status = _STATUS_BY_NUMBER.get(int(code), "UNSET")
    return status, raw.get("message") or None


#: Attributes that make a span one the trajectory readers look at (GenAI or OpenInference).
MARKERS = frozenset({"gen_ai.operation.name", "openinference.span.kind", "gen_ai.agent.name"})


def span_from_otlp(raw: Mapping[str, Any], *, lean: bool = False) -> Span:
    """One OTLP/JSON span object as a Span (ValueError/KeyError/TypeError if malformed).

    `lean` (what the trajectory readers use) leaves the attributes and events of a span that
    carries none of `MARKERS` unread: such a span is only a node of the tree to them.
    """
    if "traceId" in raw:  # the spec's (and protobuf's default) lowerCamelCase keys
        trace, span, parent = raw["traceId"], raw.get("spanId"), raw.get("parentSpanId")
        start, end = raw.get("startTimeUnixNano"), raw.get("endTimeUnixNano")
    else:
        trace, span = raw.get("trace_id"), raw.get("span_id")
        parent = raw.get("parent_span_id")
        start, end = raw.get("start_time_unix_nano"), raw.get("end_time_unix_nano")
    status, message = _status(raw.get("status"))
    events = raw.get("events")
    items = raw.get("attributes")
    if items is not None and type(items) is not list:
        _shaped(items, list, "attributes", None, None)
    if events is not None and type(events) is not list:
        _shaped(events, list, "events", None, None)
    if lean and (not items or not any(kv.get("key") in MARKERS for kv in items)):
        items = events = None
    return Span(
        trace_id=decode_id(trace, 16),
        span_id=decode_id(span, 8),
        parent_id=decode_id(parent, 8) if parent else None,
        name=str(raw.get("name", "")),
        start=int(start or 0),
        end=int(end or 0),
        status=status,
        status_message=message,
        attributes=attributes_of(items) if items else {},
        events=[
            SpanEvent(str(e.get("name", "")), int(_get(e, "timeUnixNano", "time_unix_nano") or 0),
                      attributes_of(e.get("attributes")))
            for e in events
        ] if events else [],
    )


def spans_from_document(doc: Any, *, file: str | Path | None = None,
                        line: int | None = None, lean: bool = False) -> list[Span]:
    """Every span of one `{"resourceSpans": [...]}` document (`lean`: see `span_from_otlp`).

    Raises:
        TraceError: naming the file and line (when given), the trace and the span that cannot
            be read.
    """
    if not isinstance(doc, Mapping):
        raise TraceError("an OTLP/JSON document is an object holding resourceSpans",
                         file=file, line=line)
    resources = _get(doc, "resourceSpans", "resource_spans")
    if resources is None:
        raise TraceError("no resourceSpans in this OTLP/JSON document", file=file, line=line)
    spans: list[Span] = []
    for r, resource in enumerate(_shaped(resources, list, "resourceSpans", file, line)):
        where = f"resourceSpans[{r}]"
        _shaped(resource, Mapping, where, file, line)
        scopes = _get(resource, "scopeSpans", "scope_spans")
        level = "scopeSpans"
        if scopes is None:  # before OTLP 0.19 the level was called instrumentationLibrarySpans
            scopes = _get(resource, "instrumentationLibrarySpans",
                          "instrumentation_library_spans") or []
            level = "instrumentationLibrarySpans"
        for s, scope in enumerate(_shaped(scopes, list, f"{where}.{level}", file, line)):
            _shaped(scope, Mapping, f"{where}.{level}[{s}]", file, line)
            listed = _shaped(scope.get("spans") or [], list, f"{where}.{level}[{s}].spans",
                             file, line)
            for n, raw in enumerate(listed):
                try:
                    if type(raw) is not dict:  # parsed JSON: an object is a dict
                        _shaped(raw, Mapping, "a span", None, None)
                    spans.append(span_from_otlp(raw, lean=lean))
                except (KeyError, TypeError, ValueError, AttributeError, TraceError,
                        RecursionError) as exc:
                    trace = raw.get("traceId", raw.get("trace_id")) if isinstance(
                        raw, Mapping) else None
                    name = raw.get("name") if isinstance(raw, Mapping) else None
                    raise TraceError(
                        f"span cannot be read: {_why(exc)}",
                        file=file, line=line, trace=str(trace) if trace else None,
                        span=f"span {n} of {where}.{level}[{s}]"
                        + (f" ({name!r})" if name else ""),
                    ) from None
    return spans


_SHAPES: dict[type, str] = {list: "a list", Mapping: "an object"}


def _why(exc: Exception) -> str:
    """What was wrong with a span, in words."""
    if isinstance(exc, TraceError):
        return exc.message
    if isinstance(exc, RecursionError):
        return "its values are nested too deeply"
    if isinstance(exc, KeyError):
        return f"a field is missing: {exc}"
    if isinstance(exc, AttributeError | TypeError):
        # A list where an object belongs, or the reverse (attributes, events, values).
        return f"a field has the wrong shape for OTLP/JSON ({exc})"
    return str(exc)


def _shaped(value: Any, shape: type, where: str, file: str | Path | None,
            line: int | None) -> Any:
    """`value`, if it has the shape OTLP/JSON gives `where`; else a TraceError saying so."""
    if isinstance(value, shape):
        return value
    found = "null" if value is None else {bool: "a boolean", int: "a number", float: "a number",
                                          str: "a string", list: "a list", dict: "an object",
                                          }.get(type(value), type(value).__name__)
    raise TraceError(f"{where} is {_SHAPES[shape]} in OTLP/JSON; here it is {found} "
                     f"({_preview(value)})", file=file, line=line)


def _preview(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def spans_from(items: Iterable[Any] | Mapping[str, Any]) -> list[Span]:
    """Spans from SDK span objects, OTLP/JSON span dicts, or a whole OTLP/JSON document."""
    if isinstance(items, Mapping):
        return spans_from_document(items)
    spans: list[Span] = []
    for n, item in enumerate(items):
        if isinstance(item, Span):
            spans.append(item)
        elif isinstance(item, Mapping):
            if "resourceSpans" in item or "resource_spans" in item:
                spans.extend(spans_from_document(item))
                continue
            try:
                spans.append(span_from_otlp(item))
            except (KeyError, TypeError, ValueError, AttributeError, TraceError,
                    RecursionError) as exc:
                raise TraceError(f"span {n} cannot be read: {_why(exc)}",
                                 span=f"span {n} ({item.get('name')!r})") from None
        else:
            spans.append(span_from_sdk(item))
    return spans
