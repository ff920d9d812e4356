"""The run's tables in the terminal (docs/cli.md#oloproof-run): Decisions (each with the
comparison it made), Metrics, missing and excluded cases by reason, the judges' checks,
transforms and Slices; and the cells, state styles and command lines the terminal report draws
them with. Tables fit the console (`layout`), drawn as tables when they fit, stacked when they
do not, never cut."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from rich.console import Console
from rich.text import Text

from oloproof.document import (
    BaselineSummary,
    CriterionComparison,
    DecisionRow,
    ExpectedKeyHint,
    MetricRow,
    RateRow,
    SliceRow,
    TransformValidity,
)
from oloproof.report.decision_words import decision_comparison
from oloproof.report.escape import safe_line
from oloproof.report.expected_keys import expected_key_text
from oloproof.report.layout import (
    Column,
    print_command,
    print_wrapped,
    render_table,
)
from oloproof.report.numbers import (
    estimate_text,
    interval_text,
    judge_check_text,
    judged_mark,
    n_text,
)
from oloproof.stats import percent, percent_lower

SliceMode = Literal["differing", "all"]

STATE_STYLE = {"PASS": "green", "FAIL": "bold red", "INSUFFICIENT_EVIDENCE": "yellow",
                "MANUAL_REVIEW": "magenta"}


def cell(text: object, style: str = "") -> Text:
    return Text(safe_line(text), style=style)


def print_commands(console: Console, lead: str, *commands: str) -> None:
    """A sentence, then each command on a line of its own (so it can be copied whole)."""
    print_wrapped(console, lead, 2)
    for command in commands:
        print_command(console, command)


def _state_cell(decision: DecisionRow, metric: MetricRow | None,
                paired: CriterionComparison | None = None) -> Text:
    out = Text(str(decision.state), style=STATE_STYLE.get(decision.state, ""))
    comparison = decision_comparison(decision, metric, paired)
    if comparison:
        out.append(" · " + comparison)
    return out


def render_decisions(decisions: Sequence[DecisionRow], console: Console,
                     metrics: Sequence[MetricRow] = (),
                     baseline: BaselineSummary | None = None) -> None:
    """The Decisions table: rule, metric, state with the comparison it made, reasons.
    `baseline` gives a `non_inferiority` rule's paired figures."""
    by_id = {m.id: m for m in metrics}
    paired = {r.criterion: r for r in (baseline.criteria if baseline is not None else ())}
    # A rule with `dropped: ignore` decided on the figures without the dropped cases.
    ignoring = {r.criterion: r for r in (baseline.ignoring_dropped or ()
                                         if baseline is not None else ())}
    columns = [Column("Rule"), Column("Metric"), Column("State", stack=True),
               Column("Reasons", stack=True)]
    rows = [[cell(d.rule), cell(d.metric),
             _state_cell(d, by_id.get(d.metric),
                         (ignoring if d.dropped_ignored else paired).get(d.metric)),
             cell(", ".join(d.reasons))] for d in decisions]
    if not rows:
        print_wrapped(console, Text("Decisions", style="bold"))
        print_wrapped(console, "(no rules)", 2)
        return
    render_table(console, Text("Decisions", style="bold"), columns, rows)


def _approximate(row: MetricRow) -> bool:
    return row.approximate


def render_metrics(metrics: Sequence[MetricRow], console: Console) -> None:
    """The Metrics table: Metric, Estimate, Interval, N."""
    columns = [Column("Metric"), Column("Estimate"), Column("Interval"), Column("N", stack=True)]
    rows = []
    for m in metrics:
        interval = interval_text(m) + (" ≈" if _approximate(m) else "") + judged_mark(m)
        rows.append([cell(m.id), Text(estimate_text(m)), Text(interval), Text(n_text(m))])
    render_table(console, Text("Metrics", style="bold"), columns, rows)
    if any(m.trials and m.trials > 1 for m in metrics):
        methods = sorted({m.method for m in metrics if isinstance(m, RateRow)})
        print_wrapped(console, "Intervals over cases (a case's trials are not independent): "
                      + "; ".join(_METHOD_WORDS.get(method, method) for method in methods), 2)
    if any(_approximate(m) and not _judged(m) for m in metrics):
        print_wrapped(console, "≈ over clusters (Bentkus interval): cases of one cluster are "
                      "not independent", 2)
    if any(_approximate(m) and _judged(m) for m in metrics):
        print_wrapped(console, "≈ corrected by PPI++ (Angelopoulos, Duchi & Zrnic 2023): a "
                      "normal approximation, used as allow_approximate_methods allows", 2)


def _judged(row: MetricRow) -> bool:
    return isinstance(row, RateRow) and row.judge is not None


_METHOD_WORDS = {
    "clopper_pearson": "clopper_pearson (exact) where a case's value is 0 or 1",
    "bentkus": "bentkus (Hoeffding 1963, Bentkus 2004) where a case's value is a share of its "
               "trials",
    "bentkus_ratio": "bentkus_ratio (the cases' mean over clusters of unequal size) where "
                     "cases share a cluster",
    # Runs stored before the Bentkus interval replaced it.
    "betting": "betting (Waudby-Smith & Ramdas 2023) where a case's value is a share of its "
               "trials",
}


def _reasons(counts: dict[str, int]) -> str:
    return ", ".join(f"{reason} {count}" for reason, count in counts.items())


def render_missing_and_excluded(metrics: Sequence[MetricRow], console: Console,
                                hints: Sequence[ExpectedKeyHint] | None = None) -> None:
    """Per metric, its missing cases by reason (with the first case missing for each, and its
    error) and its excluded cases by reason (trials, where a row counts trials); then the
    exclusions that look like a misspelt `expected` key."""
    lines: list[Text] = []
    for m in metrics:
        parts = []
        if m.missing_by_reason:
            examples = m.missing_examples or {}
            shown = []
            for reason, count in m.missing_by_reason.items():
                text = f"{reason} {count}"
                example = examples.get(reason)
                if example is not None:
                    first = safe_line(example.case)
                    if example.message and example.message.strip():
                        first += ": " + safe_line(example.message.strip().splitlines()[0])
                    text += f" (first: {first})"
                shown.append(text)
            parts.append(f"{m.missing} missing{_unit(m)}: " + "; ".join(shown))
        if m.excluded_by_reason:
            parts.append(f"{m.excluded} excluded{_unit(m)}: {_reasons(m.excluded_by_reason)}")
        if parts:
            lines.append(cell(m.id).append(": " + " · ".join(parts)))
    if lines:
        print_wrapped(console, Text("Missing and excluded cases, by reason", style="bold"))
        for line in lines:
            print_wrapped(console, line, 2, 4)
    for key_hint in hints or ():
        print_wrapped(console, Text(expected_key_text(key_hint), style="yellow"), 2, 4)



def _unit(row: MetricRow) -> str:
    """` trials` where a row counts trials (a criterion or a quantile with trials), else ``
    (cases: also a pass^k / pass@k row)."""
    if not row.trials or row.trials < 2:
        return ""
    return "" if isinstance(row, RateRow) and row.metric_type is not None else " trials"


def render_exclusions(metrics: Sequence[MetricRow], console: Console) -> None:
    """Kept for callers of the earlier name: missing and excluded cases by reason."""
    render_missing_and_excluded(metrics, console)


def render_judge_checks(metrics: Sequence[MetricRow], console: Console) -> None:
    """Each judge criterion checked against people (docs/judges.md): the judge-vs-people
    counts, the agreement with its exact interval, κ, and the judge's own rate beside the rate
    as people would judge it; or why it is not checked yet."""
    judged = [m for m in metrics if isinstance(m, RateRow) and m.judge is not None
              and m.metric_type is None]
    if not judged:
        return
    print_wrapped(console, Text("Judges, checked against people's labels", style="bold"))
    for row in judged:
        assert row.judge is not None
        print_wrapped(console, cell(f"{row.id} (judge {row.judge.judge}): ").append(
            judge_check_text(row), style="yellow" if row.judge.status == "uncalibrated"
            else ""), 2, 4)


def render_transforms(validity: Sequence[TransformValidity], console: Console) -> None:
    for v in validity:
        lower = percent_lower(v.lower) if v.lower is not None else "—"
        state = "checked" if v.checked else "NOT checked (transform_not_checked)"
        print_wrapped(console, cell(
            f"Transform {v.transform}: {v.kept} of {v.pairs} pairs labelled kept; "
            f"lower bound {lower} vs minimum_validity {percent(v.minimum_validity)} → {state}"
            + (f"; {v.stale_labels} stale label(s) ignored" if v.stale_labels else "")
        ))


SLICES_TITLE = "Slices (exploratory: descriptive only, never gated)"


def render_slices(rows: Sequence[SliceRow], console: Console, *, mode: SliceMode = "differing",
                  run_id: str = "latest") -> None:
    """The Slices table. By default only the rows marked `*` (a group that differs from the
    rest of the suite, q ≤ 0.05 after Benjamini–Yekutieli); `mode="all"` shows every row."""
    if not rows:
        return
    shown = list(rows) if mode == "all" else [r for r in rows if r.mark]
    more = f"oloproof inspect {run_id} --slices all"
    if not shown and any(r.trials for r in rows):
        print_wrapped(console, Text(SLICES_TITLE, style="bold"))
        print_commands(console, "With repeated trials no slice row is tested against the rest of "
                  "the suite (a case's trials are not independent). All "
                  f"{len(rows)} rows:", more)
        return
    if not shown:
        print_wrapped(console, Text(SLICES_TITLE, style="bold"))
        print_commands(console, f"No slice row differs from the rest of the suite (q ≤ 0.05). All "
                  f"{len(rows)} rows:", more)
        return
    columns = [Column("Slice", group=True), Column("Metric"), Column("Estimate"),
               Column("Interval"), Column("N", stack=True), Column("Mark")]
    table = [[cell(f"{r.slice}={r.value}"), cell(r.metric), Text(estimate_text(r)),
              Text(interval_text(r)),
              Text(f"{n_text(r)} · " + (f"{r.support} cases" if r.trials else
                                         f"support {r.support}")),
              Text(r.mark or "")] for r in shown]
    render_table(console, Text(SLICES_TITLE, style="bold"), columns, table)
    if mode != "all":
        print_commands(console, f"{len(shown)} of {len(rows)} rows: those marked *, where the "
                       "group differs from the rest of the suite. Every row:", more)
    if any(r.trials for r in shown):
        print_wrapped(console, "With trials a trial joins the group its own trajectory puts it "
                      "in; a row is over the cases with a trial in the group (Bentkus "
                      "interval), never tested against the rest. Rows with fewer cases than "
                      "min_slice_support show counts only. Descriptive, never gated.", 2)
        return
    print_wrapped(console, "* = two-sided Fisher exact test against the rest of the suite, "
                  "Benjamini–Yekutieli adjusted across all rows, q ≤ 0.05; rows with support "
                  "below min_slice_support show counts only. Descriptive, never gated.", 2)
