"""`system.trace: otel` (docs/traces.md#systemtrace-otel-the-engine-reads-the-spans): the trajectory
from the spans a system emits.

Around each call the engine opens a span of its own, `oloproof case`, as the root of a new
trace, and makes it current; whatever the system's instrumentation emits in that context is a
descendant and shares the trace id. One `SpanCollector` (an `opentelemetry-sdk`
SpanProcessor) is added once to the process's tracer provider and keeps, by trace id, the
spans of the cases running now — so cases running side by side never see each other's spans,
and a span outside every case costs one dictionary lookup. When the call returns, the case's
spans are read by `oloproof.traces` (`read_trace`) into the `agent_trajectory/v1` and
`usage/v1` artifacts, with what the reader did not understand kept in `trace_reading/v1`.

The SDK is imported only when a suite sets `trace: otel` (the `otel` extra).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from oloproof.errors import ConfigError, ErrorKind, TraceError, install_extra
from oloproof.execution.units import CaseError
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.recording.usage import USAGE_FIELDS, USAGE_KIND, add_usage
from oloproof.traces import READING_KIND
from oloproof.traces.otel import read_trace
from oloproof.traces.reading import TraceReading
from oloproof.traces.spans import span_from_sdk

CASE_SPAN = "oloproof case"
_INSTALL = threading.Lock()
_COLLECTORS: dict[int, Any] = {}  # id(provider) -> its SpanCollector


class CaseSpans:
    """The spans of one case, gathered while its call runs."""

    __slots__ = ("root", "sampled", "spans", "trace_id")

    def __init__(self, root: Any) -> None:
        self.root = root
        self.sampled: bool = root.is_recording()  # a span the sampler dropped records nothing
        self.trace_id: int = root.get_span_context().trace_id
        self.spans: list[Any] = []

    def reading(self) -> TraceReading | None:
        """The case's spans read into a trajectory; None if the system emitted none."""
        root_id = self.root.get_span_context().span_id
        spans = [span_from_sdk(s) for s in self.spans if s.context.span_id != root_id]
        if not spans:
            return None
        return read_trace(spans, format(self.trace_id, "032x"))


class OtelTrace:
    """What a worker's system target holds under `trace: otel`: the tracer for case spans
    and the collector on the process's tracer provider."""

    def __init__(self, provider: Any, collector: Any) -> None:
        self.tracer = provider.get_tracer("oloproof")
        self.collector = collector

    @contextmanager
    def case(self, case_id: str) -> Iterator[CaseSpans]:
        """Run the block under a new root span; yields where the case's spans collect."""
        from opentelemetry import context, trace

        root = self.tracer.start_span(CASE_SPAN, context=context.Context(),
                                      attributes={"oloproof.case.id": case_id})
        spans = CaseSpans(root)
        self.collector.watch(spans)
        token = context.attach(trace.set_span_in_context(root))
        try:
            yield spans
        finally:
            context.detach(token)
            root.end()
            self.collector.release(spans)


def otel_trace(file: Any = None, line: int | None = None) -> OtelTrace:
    """The process's OtelTrace, installing the collector on first use.

    Raises:
        ConfigError: the SDK is not installed, or the global tracer provider is not the
            SDK's (spans would never reach the collector).
    """
    try:
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
    except ImportError:
        raise ConfigError(
            "system.trace: otel reads the spans through opentelemetry-sdk, which is not "
            f"installed; {install_extra('otel')}", file=file, line=line,
        ) from None
    with _INSTALL:
        provider = trace.get_tracer_provider()
        if isinstance(provider, trace.ProxyTracerProvider):
            # Nobody set one: the system's tracers (proxies until now) will use this one.
            provider = TracerProvider()
            trace.set_tracer_provider(provider)
            provider = trace.get_tracer_provider()
        if not isinstance(provider, TracerProvider):
            raise ConfigError(
                f"system.trace: otel collects spans through opentelemetry-sdk's "
                f"TracerProvider, but the global tracer provider is a "
                f"{type(provider).__module__}.{type(provider).__name__}; set an "
                "opentelemetry.sdk.trace.TracerProvider (or none) before the run",
                file=file, line=line,
            )
        collector = _COLLECTORS.get(id(provider))
        if collector is None:
            collector = _COLLECTORS[id(provider)] = _new_collector()
            provider.add_span_processor(collector)
    return OtelTrace(provider, collector)


def _new_collector() -> Any:
    from opentelemetry.sdk.trace import SpanProcessor

    class SpanCollector(SpanProcessor):
        """Keeps the spans of the traces being watched (the cases running now)."""

        def __init__(self) -> None:
            self._watched: dict[int, list[Any]] = {}
            self._lock = threading.Lock()

        def watch(self, case: CaseSpans) -> None:
            with self._lock:
                self._watched[case.trace_id] = case.spans

        def release(self, case: CaseSpans) -> None:
            with self._lock:
                self._watched.pop(case.trace_id, None)

        def on_start(self, span: Any, parent_context: Any = None) -> None:
            spans = self._watched.get(span.context.trace_id)
            if spans is not None:
                spans.append(span)  # read when the case ends: ended or not by then

        def on_end(self, span: Any) -> None:
            pass

    return SpanCollector()


def record_from_spans(spans: CaseSpans, artifacts: dict[str, Any],
                      uses_steps: bool) -> CaseError | None:
    """Put the trajectory and usage read from the case's spans into `artifacts`.

    Returns the case's error instead when the system recorded a trajectory itself, when
    spans and `current_case().usage()` both give one usage field, when no span of the
    system reached the case (nothing to read: never an empty trajectory), or when the spans
    do not form a tree (a span its own parent, parents in a cycle: never a hang).
    """
    if TRAJECTORY_KIND in artifacts or uses_steps:
        return CaseError(
            ErrorKind.SYSTEM_ERROR,
            "the system recorded agent_trajectory/v1 itself while system.trace: otel is set; "
            "the engine records it from the spans: remove current_case().agent_trajectory(...)"
            " / steps(), or remove trace: otel")
    if not spans.sampled:
        return CaseError(
            ErrorKind.NO_TRACE,
            "system.trace: otel: the tracer provider's sampler dropped the case's span, so no "
            "span of the case was recorded; sample every trace (ALWAYS_ON, or ParentBased "
            "over it) while oloproof runs")
    try:
        reading = spans.reading()
    except TraceError as exc:  # spans whose parents do not form a tree: the case errors
        return CaseError(ErrorKind.SYSTEM_ERROR, f"system.trace: otel: the case's spans cannot be "
                         f"read: {exc}")
    if reading is None:
        return CaseError(
            ErrorKind.NO_TRACE,
            "system.trace: otel: the system emitted no span under the case's span; its "
            "instrumentation must use the global tracer provider and run in the calling "
            "context (a thread it starts must carry the context over: "
            "opentelemetry.context.attach / contextvars.copy_context)")
    artifacts[TRAJECTORY_KIND] = reading.trajectory
    if reading.usage is not None:
        from_spans = reading.usage.payload()
        given = artifacts.get(USAGE_KIND) or {}
        both = [k for k in USAGE_FIELDS if k in given and k in from_spans]
        if both:
            return CaseError(
                ErrorKind.SYSTEM_ERROR,
                f"usage recorded twice: {', '.join(both)} both from current_case().usage() "
                "and from the spans' gen_ai.usage.* under system.trace: otel; record only "
                "what the spans do not carry (e.g. cost)")
        artifacts[USAGE_KIND] = add_usage(given, from_spans)
    artifacts[READING_KIND] = reading.artifact()
    return None
