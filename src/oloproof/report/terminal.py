"""The terminal report of a run (SPEC §11), from the run's JSON document only.

Percentages show one decimal; interval bounds are rounded outward (a lower bound down, an upper
bound up), so the printed interval always contains the computed one.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from oloproof.document import (
    CaseError,
    DecisionRow,
    MetricRow,
    QuantileRow,
    RateRow,
    RunDocument,
    SliceRow,
    TransformValidity,
)
from oloproof.stats import percent, percent_lower, percent_upper

Row = RateRow | QuantileRow | SliceRow

NO_BOUND = "no bound"


def _number(value: Any) -> str:
    if value is None:
        return NO_BOUND
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"{value:g}" if isinstance(value, float) else str(value)


def estimate_text(row: Row) -> str:
    """`82.5%` for a rate, `10 steps` for a quantile, `—` when there is nothing to show."""
    if row.estimate is None:
        return "—"
    if row.kind == "rate":
        return percent(row.estimate)
    return f"{_number(row.estimate)} {row.unit}"


def interval_text(row: Row) -> str:
    """`[67.2%, 92.7%]`, `[10, no bound] steps`; empty below slice support."""
    if getattr(row, "below_support", False):
        return "—"
    if row.kind == "rate":
        if row.lower is None or row.upper is None:
            return "—"
        return f"[{percent_lower(row.lower)}, {percent_upper(row.upper)}]"
    return f"[{_number(row.lower)}, {_number(row.upper)}] {row.unit}"


def n_text(row: Row) -> str:
    """`33 / 40 observed · 0 missing · 0 excluded` or `p95 of 39 observed · 1 missing · ...`."""
    if row.kind == "rate":
        head = f"{row.passed} / {row.observed} observed"
    else:
        head = f"p{row.quantile * 100:g} of {row.observed} observed"
    return f"{head} · {row.missing} missing · {row.excluded} excluded"


def make_console(stream: Any = None) -> Console:
    """A console that never wraps table rows when output is not a terminal."""
    console = Console(file=stream, highlight=False, soft_wrap=False)
    if not console.is_terminal:
        console = Console(file=stream, highlight=False, width=200, soft_wrap=False)
    return console


_STATE_STYLE = {"PASS": "green", "FAIL": "bold red", "INSUFFICIENT_EVIDENCE": "yellow",
                "MANUAL_REVIEW": "magenta"}
_ACTION_STYLE = {"ALLOW": "bold green", "WARN": "bold yellow", "BLOCK": "bold red"}


def render_run(document: RunDocument, console: Console) -> None:
    """Print the whole report, in the SPEC's order."""
    status = document.status
    console.print(
        f"Run {document.run_id} · {status}"
        + ("" if status == "complete" else " (did not complete: figures cover what finished)")
        + f" · {document.system.name} {document.system.version}"
        + f" · {document.cases} cases"
    )
    for warning in document.warnings:
        console.print(Text(f"Warning: {warning}", style="yellow"))
    render_errors(document.errors, console)
    gate = document.gate
    console.print(Text.assemble(
        "Gate: ", (gate.action, _ACTION_STYLE.get(gate.action, "")),
        f" (exit {int(gate.exit_code)})",
    ))
    render_decisions(document.decisions, console)
    render_metrics(document.metrics, console)
    render_exclusions(document.metrics, console)
    render_transforms(document.transforms, console)
    render_slices(document.slices, console)
    cache = document.cache
    console.print(
        f"Cache: execution {cache.execution.hit} hit/{cache.execution.miss} miss; "
        f"judgment {cache.judgment.hit} hit/{cache.judgment.miss} miss"
    )
    render_limits(document.limits, console)


def render_errors(errors: Sequence[CaseError], console: Console) -> None:
    if not errors:
        return
    groups: dict[tuple[str, str], list[str]] = defaultdict(list)
    for error in errors:
        first_line = error.message.splitlines()[0] if error.message else ""
        groups[(error.kind, first_line)].append(error.case)
    console.print(Text(f"What broke: {len(errors)} case(s) errored; they count as missing "
                       "for every criterion that needed their output", style="bold red"))
    for (kind, message), cases in sorted(groups.items(), key=lambda g: -len(g[1])):
        shown = ", ".join(cases[:8]) + (f" (+{len(cases) - 8} more)" if len(cases) > 8 else "")
        console.print(Text(f"  {kind} × {len(cases)}: {message}"))
        console.print(Text(f"    cases: {shown}"))
    console.print("  (oloproof inspect latest --failures shows each with its traceback)")


def render_decisions(decisions: Sequence[DecisionRow], console: Console) -> None:
    table = Table(title="Decisions", title_justify="left")
    for column in ("Rule", "Metric", "State", "Reasons"):
        table.add_column(column, no_wrap=True)
    for d in decisions:
        table.add_row(Text(d.rule), Text(d.metric), Text(d.state, style=_STATE_STYLE.get(
            d.state, "")), Text(", ".join(d.reasons)))
    if not decisions:
        table.add_row("(no rules)", "", "", "")
    console.print(table)


def _approximate(row: MetricRow) -> bool:
    return isinstance(row, RateRow) and row.approximate


def render_metrics(metrics: Sequence[MetricRow], console: Console) -> None:
    table = Table(title="Metrics", title_justify="left")
    for column in ("Metric", "Estimate", "Interval", "N"):
        table.add_column(column, no_wrap=True)
    for m in metrics:
        interval = interval_text(m)
        if _approximate(m):
            interval += " ≈"
        table.add_row(Text(m.id), Text(estimate_text(m)), Text(interval), Text(n_text(m)))
    console.print(table)
    if any(_approximate(m) for m in metrics):
        console.print("  ≈ over clusters (betting interval): cases of one cluster are not "
                      "independent")


def render_exclusions(metrics: Sequence[MetricRow], console: Console) -> None:
    lines = []
    for m in metrics:
        reasons = m.excluded_by_reason
        if reasons:
            parts = ", ".join(f"{reason} {count}" for reason, count in reasons.items())
            lines.append(f"  {m.id}: {parts}")
    if lines:
        console.print("Exclusions by reason:")
        for line in lines:
            console.print(line)


def render_transforms(validity: Sequence[TransformValidity], console: Console) -> None:
    for v in validity:
        lower = percent_lower(v.lower) if v.lower is not None else "—"
        state = "checked" if v.checked else "NOT checked (transform_not_checked)"
        console.print(
            f"Transform {v.transform}: {v.kept} of {v.pairs} pairs labelled kept; "
            f"lower bound {lower} vs minimum_validity {percent(v.minimum_validity)} → {state}"
            + (f"; {v.stale_labels} stale label(s) ignored" if v.stale_labels else "")
        )


def render_slices(rows: Sequence[SliceRow], console: Console) -> None:
    if not rows:
        return
    table = Table(title="Slices (exploratory: descriptive only, never gated)",
                  title_justify="left")
    for column in ("Slice", "Metric", "Estimate", "Interval", "N", "Mark"):
        table.add_column(column, no_wrap=True)
    for r in rows:
        table.add_row(Text(f"{r.slice}={r.value}"), Text(r.metric),
                      Text(estimate_text(r)), Text(interval_text(r)),
                      Text(f"{n_text(r)} · support {r.support}"), Text(r.mark or ""))
    console.print(table)
    console.print("  Rows with support below min_slice_support show counts only. * = differs "
                  "from the rest of the suite (two-sided Fisher exact test, Benjamini–Yekutieli "
                  "adjusted across all rows, q ≤ 0.05); descriptive, never gated.")


def render_limits(limits: Sequence[str], console: Console) -> None:
    if not limits:
        return
    console.print("What this run cannot tell you:")
    for line in limits:
        console.print(f"  • {line}")
