"""Trajectories from the traces agent frameworks already emit (SPEC §16).

One function per format, each returning an `AgentTrajectory` that validates as if the system
had recorded it (`from_*`), and its `read_*` twin returning a `TraceReading`: the trajectory
with the trace's token usage, what was not understood (`skipped`, which `from_*` also warns
about), what was deliberately not made a step (`ignored`), and marks on single steps
(`notes`). The mapping rules are in docs/traces.md. No framework is imported here: each
adapter reads its format's objects by their fields (`from_openai_agents` imports `agents`
when it is called).
"""

from oloproof.errors import TraceError
from oloproof.recording.usage import USAGE_KIND
from oloproof.traces.langchain_messages import from_langchain_messages, read_langchain_messages
from oloproof.traces.openai_agents import from_openai_agents, read_openai_agents
from oloproof.traces.openai_messages import from_openai_messages, read_openai_messages
from oloproof.traces.otel import from_otel, read_otel, read_otel_traces
from oloproof.traces.otlp_json import read_otlp_file, read_otlp_spans
from oloproof.traces.reading import (
    StepNote,
    TraceReading,
    TraceUsage,
    TraceWarning,
)
from oloproof.traces.spans import Span, SpanEvent
from oloproof.traces.suite_writer import ImportedSuite, import_traces

__all__ = [
    "USAGE_KIND",
    "ImportedSuite",
    "Span",
    "SpanEvent",
    "StepNote",
    "TraceError",
    "TraceReading",
    "TraceUsage",
    "TraceWarning",
    "from_langchain_messages",
    "from_openai_agents",
    "from_openai_messages",
    "from_otel",
    "import_traces",
    "read_langchain_messages",
    "read_openai_agents",
    "read_openai_messages",
    "read_otel",
    "read_otel_traces",
    "read_otlp_file",
    "read_otlp_spans",
]
