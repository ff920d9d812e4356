"""Trajectories from the traces agent frameworks already emit (docs/traces.md).

One function per format, each returning an `AgentTrajectory` that validates as if the system
had recorded it (`from_*`), and its `read_*` twin returning a `TraceReading`: the trajectory
with the trace's token usage, what was not understood (`skipped`, which `from_*` also warns
about), what was deliberately not made a step (`ignored`), and marks on single steps
(`notes`). The mapping rules are in docs/traces.md. No framework is imported here: each
adapter reads its format's objects by their fields (`from_openai_agents` imports `agents`
when it is called).

The adapters and `reading`'s classes are imported on first use (a module `__getattr__`, as
the `oloproof` package does): the engine reads only `READING_KIND` beside every case, and a run
that reads no trace does not pay for the rest.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oloproof.errors import TraceError
from oloproof.lazy_names import lazy_names

#: The artifact beside a trajectory read from a trace: what the reader did not understand.
READING_KIND = "trace_reading/v1"
#: Why every trajectory criterion is missing on a trace that gave no step (docs/traces.md).
EMPTY_TRAJECTORY = "empty_trajectory"
#: The engine's reader of `system.trace: otel` and its version, part of the execution key
#: (docs/concepts.md#digests-and-keys): raised whenever the same spans read into other steps,
#: so executions recorded by an older reading are run again. 2: LangGraph's tool spans are
#: matched to their calls by the ToolMessage's call id, a span that cannot be placed is
#: skipped, and `invoke_workflow` is an agent (the GenAI conventions' v0.1.0).
OTEL_READER = "otel/2"

if TYPE_CHECKING:
    from collections.abc import Mapping

    from oloproof.recording.trajectory import AgentTrajectory
    from oloproof.recording.usage import USAGE_KIND
    from oloproof.traces.atif import AtifTrajectory, from_atif, load_atif, read_atif, to_atif
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



def gave_no_step(trajectory: AgentTrajectory | None, artifacts: Mapping[str, object]) -> bool:
    """Whether `trajectory` was read from a trace (`system.trace: otel`, a suite of
    `oloproof traces import`: a `trace_reading/v1` beside it) and the trace gave no step.

    Such a trajectory records nothing the agent did, so no trajectory criterion can pass or
    fail on it: each is missing (`empty_trajectory`). A trajectory a system recorded by hand
    with no step is what it says — the agent took none — and is judged.
    """
    return trajectory is not None and not trajectory.steps and READING_KIND in artifacts


# Each lazily imported public name, and the module that defines it.
_LAZY = {
    "USAGE_KIND": "oloproof.recording.usage",
    "AtifTrajectory": "oloproof.traces.atif",
    "from_atif": "oloproof.traces.atif",
    "load_atif": "oloproof.traces.atif",
    "read_atif": "oloproof.traces.atif",
    "to_atif": "oloproof.traces.atif",
    "from_langchain_messages": "oloproof.traces.langchain_messages",
    "read_langchain_messages": "oloproof.traces.langchain_messages",
    "from_openai_agents": "oloproof.traces.openai_agents",
    "read_openai_agents": "oloproof.traces.openai_agents",
    "from_openai_messages": "oloproof.traces.openai_messages",
    "read_openai_messages": "oloproof.traces.openai_messages",
    "from_otel": "oloproof.traces.otel",
    "read_otel": "oloproof.traces.otel",
    "read_otel_traces": "oloproof.traces.otel",
    "read_otlp_file": "oloproof.traces.otlp_json",
    "read_otlp_spans": "oloproof.traces.otlp_json",
    "StepNote": "oloproof.traces.reading",
    "TraceReading": "oloproof.traces.reading",
    "TraceUsage": "oloproof.traces.reading",
    "TraceWarning": "oloproof.traces.reading",
    "Span": "oloproof.traces.spans",
    "SpanEvent": "oloproof.traces.spans",
    "ImportedSuite": "oloproof.traces.suite_writer",
    "import_traces": "oloproof.traces.suite_writer",
}


__all__ = [
    "READING_KIND",
    "USAGE_KIND",
    "AtifTrajectory",
    "ImportedSuite",
    "Span",
    "SpanEvent",
    "StepNote",
    "TraceError",
    "TraceReading",
    "TraceUsage",
    "TraceWarning",
    "from_atif",
    "from_langchain_messages",
    "from_openai_agents",
    "from_openai_messages",
    "from_otel",
    "import_traces",
    "load_atif",
    "read_atif",
    "read_langchain_messages",
    "read_openai_agents",
    "read_openai_messages",
    "read_otel",
    "read_otel_traces",
    "read_otlp_file",
    "read_otlp_spans",
    "to_atif",
]

__getattr__, __dir__ = lazy_names(__name__, _LAZY, globals(), __all__)
