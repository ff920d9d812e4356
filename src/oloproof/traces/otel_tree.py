"""A trace's spans as a tree (docs/traces.md#opentelemetry-genai-spans--steps): spans grouped by
trace, the errors of spans that form no tree (two with one id, parents in a cycle), and what the
tree sums or reports — the trace's usage, an agent's turn limit, a failed tool's error.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from oloproof.errors import TraceError
from oloproof.traces.otel_attributes import (
    ERROR_TYPE,
    INPUT_TOKENS,
    OI_COMPLETION_TOKENS,
    OI_COST,
    OI_PROMPT_TOKENS,
    OUTPUT_TOKENS,
)
from oloproof.traces.reading import TraceUsage
from oloproof.traces.spans import Span

# The Agents SDK's error on an agent span its turn limit stopped.
_MAX_TURNS = re.compile(r"Max turns exceeded\b\D*(\d+)")


def group_by_trace(spans: list[Span]) -> dict[str, list[Span]]:
    """Spans by trace id, traces in the order of their first span's start time."""
    groups: dict[str, list[Span]] = defaultdict(list)
    for span in spans:
        groups[span.trace_id].append(span)
    return dict(sorted(groups.items(), key=lambda kv: (min(s.start for s in kv[1]), kv[0])))


def span_label(span: Span) -> str:
    """A span as an error names it: `span ID ('name')`."""
    return f"span {span.span_id}" + (f" ({span.name!r})" if span.name else "")


def duplicate_id_error(spans: list[Span], trace_id: str,
                       file: str | Path | None) -> TraceError:
    """Two spans of one trace with one id: which is whose parent cannot be told."""
    seen: dict[str, Span] = {}
    for span in spans:
        first = seen.setdefault(span.span_id, span)
        if first is not span:
            break
    return TraceError(
        "two spans of this trace have this id" + (f" ({first.name!r} and {span.name!r})"
                                                   if first.name or span.name else "")
        + "; every span of a trace has an id of its own (a span exported twice, or ids made by "
        "hand?)", file=file, trace=trace_id, span=f"span {span.span_id}")


def cycle_error(spans: list[Span], by_id: Mapping[str, Span], roots: list[Span],
                trace_id: str, file: str | Path | None) -> TraceError:
    """Spans no root reaches: their parents, followed up, go round in a cycle."""
    below = set()
    stack = [r.span_id for r in roots]
    kids: dict[str, list[str]] = defaultdict(list)
    for span in spans:
        if span.parent_id is not None:
            kids[span.parent_id].append(span.span_id)
    while stack:
        current = stack.pop()
        if current not in below:
            below.add(current)
            stack.extend(kids.get(current, ()))
    start = next(s for s in spans if s.span_id not in below)
    path: list[str] = []
    on_path: set[str] = set()
    current_id = start.span_id
    while current_id not in on_path:  # every span here has a parent in the trace
        on_path.add(current_id)
        path.append(current_id)
        current_id = by_id[current_id].parent_id  # type: ignore[assignment]
    ring = path[path.index(current_id):]
    shown = " → ".join(span_label(by_id[i]) for i in ring[:6]) + (" → …" if len(ring) > 6 else "")
    return TraceError(
        f"the parents of {len(ring)} spans form a cycle ({shown} → back to the first): no "
        f"span of it descends from a root, so {len(spans) - len(below)} span(s) of this trace "
        "could not be placed; the spans of a trace form a tree (a span whose parent is not in "
        "the trace is a root)", file=file, trace=trace_id, span=span_label(by_id[ring[0]]))


def max_turns(span: Span) -> int | None:
    """The turn limit an agent span's error reports, when the Agents SDK stopped the agent
    there (`Max turns exceeded: {'max_turns': 10}`, as its instrumentors record it)."""
    if span.status != "ERROR" or not span.status_message:
        return None
    found = _MAX_TURNS.match(span.status_message)
    return int(found.group(1)) if found else None


def tool_error(span: Span, output: Any) -> dict[str, Any]:
    """A failed tool's result: the error's message (status, exception event or error.type)."""
    message = span.status_message
    kind = span.attributes.get(ERROR_TYPE)
    for event in span.events:
        if event.name == "exception":
            message = message or event.attributes.get("exception.message")
            kind = kind or event.attributes.get("exception.type")
    body: dict[str, Any] = {"error": message or kind or "error"}
    if kind:
        body["error_type"] = kind
    if output is not None:
        body["output"] = output
    return body


def trace_usage(models: list[Span], agents: list[Span],
           by_id: Mapping[str, Span]) -> TraceUsage | None:
    """Tokens and cost summed over model calls; agent spans only when no model call has any
    (agent spans may repeat their model calls' totals: summing both would count twice)."""
    def total(candidates: Iterable[Span]) -> TraceUsage | None:
        inputs = outputs = None
        cost = None
        for span in candidates:
            a = span.attributes
            i = next((a[k] for k in (*INPUT_TOKENS, OI_PROMPT_TOKENS) if k in a), None)
            o = next((a[k] for k in (*OUTPUT_TOKENS, OI_COMPLETION_TOKENS) if k in a), None)
            if i is not None:
                inputs = (inputs or 0) + int(i)
            if o is not None:
                outputs = (outputs or 0) + int(o)
            if OI_COST in a:
                cost = (cost or 0.0) + float(a[OI_COST])
        if inputs is None and outputs is None and cost is None:
            return None
        return TraceUsage(inputs, outputs, cost)

    found = total(models)
    if found is not None:
        return found
    among = {s.span_id: s for s in agents}
    return total(s for s in agents if not _has_ancestor_in(s, among, by_id))


def _has_ancestor_in(span: Span, among: Mapping[str, Span], by_id: Mapping[str, Span]) -> bool:
    parent = span.parent_id
    seen: set[str] = set()
    while parent is not None and parent not in seen:
        if parent in among:
            return True
        seen.add(parent)
        parent = by_id[parent].parent_id if parent in by_id else None
    return False
