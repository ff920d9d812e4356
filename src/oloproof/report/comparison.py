"""`oloproof compare` in the terminal (docs/compare.md#oloproof-compare-baseline-candidate), from
the comparison document only.

In order: the two runs (and which of several runs of its version the baseline is, and why),
how the cases paired (changed and one-run-only cases are listed, never
paired), the criteria table (both passed, fixed, broken, both failed, a side missing, the
difference candidate − baseline with its interval, McNemar's p), then the broken cases — what a
reviewer reads — with what changed in each, then the fixed ones and where to read more.
Case-derived text (ids, steps) is escaped as everywhere.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from rich.console import Console
from rich.text import Text

from oloproof.analysis.ordering import case_order
from oloproof.document import (
    BaselineSummary,
    CaseChange,
    Comparison,
    CriterionComparison,
    VerdictChange,
)
from oloproof.report.escape import safe_line
from oloproof.report.layout import Column, print_command, print_wrapped, render_table
from oloproof.report.numbers import difference_text, p_value_text
from oloproof.report.reruns import taken_text
from oloproof.stats import percent

#: Case ids listed per line of a list before `(+N more)`.
IDS_SHOWN = 12

MCNEMAR_NOTE = ("McNemar's exact p on the broken and fixed pairs is a description: it never "
                "gates.")


def method_note(rows: Sequence[CriterionComparison]) -> str:
    """What the intervals of these rows are, in words (one sentence per method in use)."""
    methods = {r.method for r in rows if not r.approximate}
    parts = ["Difference = candidate − baseline over the paired cases."]
    if "melded_mcnemar" in methods:
        parts.append("With 0/1 values on both sides its interval is Fay & Lumbard's (2021), "
                     "built on the broken and fixed pairs and compatible with exact McNemar: "
                     "pairs that agree narrow it, and it excludes 0 exactly when McNemar's p "
                     "is below 1 − the confidence level.")
    if "betting" in methods:
        parts.append("With trials (shares of passing trials) it is the betting interval "
                     "(Waudby-Smith & Ramdas 2023) on the per-case differences.")
    clustered = [r for r in rows if r.approximate]
    if clustered:
        parts.append("Where cases share clusters (a source and its copies, a declared "
                     "cluster) it is over clusters: still the pairs' mean difference, with the "
                     "betting interval of that ratio over clusters, each cluster one draw of "
                     "its pairs (approximate: a rule on it needs allow_approximate_methods "
                     "and 20 clusters).")
    if any(r.dropped for r in rows):
        parts.append("A case of the baseline missing from the candidate, or changed in it "
                     "(dropped), counts as a pair whose candidate side is missing.")
    parts.append("A missing side is resolved the worst way for each bound. " + MCNEMAR_NOTE)
    return " ".join(parts)


def _cell(text: object, style: str = "") -> Text:
    return Text(safe_line(text), style=style)


def ids_text(ids: Sequence[str], shown: int = IDS_SHOWN) -> str:
    """`c4, c9, c17 (+3 more)`, each id escaped."""
    text = ", ".join(safe_line(c) for c in ids[:shown])
    return text + (f" (+{len(ids) - shown} more)" if len(ids) > shown else "")


def render_criteria(rows: Sequence[CriterionComparison], console: Console,
                    title: str = "Criteria (candidate − baseline, over paired cases)") -> None:
    """The table of paired figures, one row per compared criterion."""
    columns = [Column("Criterion"), Column("Paired"), Column("Fixed"), Column("Broken"),
               Column("Difference [interval]"),
               Column("Both passed · both failed · missing · McNemar p", stack=True)]
    table = []
    for r in rows:
        missing = f"{r.missing}" + (f" + {r.dropped} dropped" if r.dropped else "")
        clusters = f" · over {r.clusters} clusters" if r.approximate else ""
        table.append([_cell(r.criterion), Text(str(r.paired)),
                      Text(str(r.fixed), style="green" if r.fixed else ""),
                      Text(str(r.broken), style="bold red" if r.broken else ""),
                      Text(difference_text(r) + (" ≈" if r.approximate else "")),
                      Text(f"{r.both_passed} · {r.both_failed} · {missing} · "
                           f"p {p_value_text(r.mcnemar_p)}{clusters}")])
    if not table:
        print_wrapped(console, Text(title, style="bold"))
        print_wrapped(console, "(no criterion is in both runs)", 2)
        return
    render_table(console, Text(title, style="bold"), columns, table)
    fractional = [r for r in rows if r.unchanged is not None]
    if fractional:
        same = [r for r in fractional if r.unchanged]
        print_wrapped(console, "With trials a case's value is its share of passing trials: "
                      "fixed and broken are the cases whose share rose or fell, and McNemar's "
                      "p is the exact sign test on them."
                      + (" Cases that passed some but not all of their trials, the same share "
                         "in both runs (neither fixed nor broken): "
                         + ", ".join(f"{safe_line(r.criterion)} {r.unchanged}" for r in same)
                         + "." if same else ""), 2)
    print_wrapped(console, method_note(rows), 2)


def verdict_words(change: VerdictChange) -> str:
    """`answer_correct passed → failed`, or with trials `answer_correct 100.0% → 50.0% of
    trials` (`?` where missing trials leave a share open)."""
    if change.baseline is not None or change.candidate is not None:
        return (f"{safe_line(change.criterion)} {change.baseline or '?'} → "
                f"{change.candidate or '?'}")

    def share(value: float | None) -> str:
        return "?" if value is None else percent(value)

    return (f"{safe_line(change.criterion)} {share(change.baseline_value)} → "
            f"{share(change.candidate_value)} of trials")


def render_change(change: CaseChange, console: Console) -> None:
    """One case: what moved, and where its trajectories part."""
    line = _cell(change.case, "bold")
    line.append(": " + ("; ".join(verdict_words(c) for c in change.criteria)
                        or "no verdict moved"))
    print_wrapped(console, line, 2, 4)
    parting = change.parting
    if parting is None:
        print_wrapped(console, "trajectories: the same step by step (or none recorded)", 4, 2)
        return
    print_wrapped(console, f"trajectories part at step {parting.step}"
                  + (f" (tool calls from call {parting.action})" if parting.action else
                     " (the same tool calls)") + ":", 4, 2)
    print_wrapped(console, "baseline:  " + (safe_line(parting.baseline) if parting.baseline
                                            is not None else "(no step: it had ended)"), 6, 11)
    print_wrapped(console, "candidate: " + (safe_line(parting.candidate) if parting.candidate
                                            is not None else "(no step: it had ended)"), 6, 11)


def render_comparison(comparison: Comparison, console: Console) -> None:
    """Print the whole comparison, in the order the module's text gives."""
    base, cand = comparison.baseline_system, comparison.candidate_system
    print_wrapped(console, _cell(
        f"Comparing candidate {comparison.candidate} ({cand.name} {cand.version}) with "
        f"baseline {comparison.baseline} ({base.name} {base.version}) · "
        f"confidence level {comparison.confidence_level:g}"))
    if comparison.baseline_taken is not None:
        print_wrapped(console, _cell(taken_text(comparison.baseline, base,
                                                comparison.baseline_taken)), 0, 2)
    for warning in comparison.warnings:
        print_wrapped(console, _cell(f"Warning: {warning}", "yellow"))
    paired = max((r.paired + r.excluded for r in comparison.criteria), default=0)
    dropped = len(comparison.baseline_only)
    print_wrapped(console, (
        f"Cases paired by id: {paired} paired · {len(comparison.changed)} changed (another "
        "digest: not paired" + ("; the baseline's side counted as dropped" if comparison.changed
                                else "") + f") · {dropped} in the baseline only"
        + (" (dropped: each counted as a missing candidate side)" if dropped else "")
        + f" · {len(comparison.candidate_only)} in the candidate only"))
    render_criteria(comparison.criteria, console)
    broken = {c: ids for c, ids in comparison.broken_cases.items() if ids}
    fixed = {c: ids for c, ids in comparison.fixed_cases.items() if ids}
    total_broken = len({i for ids in broken.values() for i in ids})
    if broken:
        print_wrapped(console, Text(f"Broken cases (passed → failed): {total_broken}",
                                    style="bold red"))
        for criterion, ids in broken.items():
            print_wrapped(console, _cell(criterion).append(": " + ids_text(ids)), 2, 4)
    else:
        print_wrapped(console, Text("Broken cases: none", style="bold"))
    changes = comparison.changes
    broken_ids = {i for ids in broken.values() for i in ids}
    if changes:
        described = [c for c in changes if c.case in broken_ids]
        if described:
            more = total_broken - len(described)
            print_wrapped(console, Text("What changed in each broken case" + (
                f" (the first {len(described)} by case id; {more} more not described)"
                if more else ""), style="bold"))
            for change in described:
                render_change(change, console)
    if fixed:
        total_fixed = len({i for ids in fixed.values() for i in ids})
        print_wrapped(console, Text(f"Fixed cases (failed → passed): {total_fixed}",
                                    style="bold green"))
        for criterion, ids in fixed.items():
            print_wrapped(console, _cell(criterion).append(": " + ids_text(ids)), 2, 4)
    for label, ids in (("Changed cases (their input or expected changed; not paired)",
                        comparison.changed),
                       ("In the baseline only (dropped)", comparison.baseline_only),
                       ("In the candidate only", comparison.candidate_only)):
        if ids:
            print_wrapped(console, Text(f"{label}: ", style="bold").append(ids_text(ids)))
    first = sorted(broken_ids, key=case_order)[:1] if broken_ids else []
    print_wrapped(console, "  Each case whole, side by side in one page:")
    print_command(console, f"oloproof report {comparison.candidate} --baseline "
                  f"{comparison.baseline} --html comparison.html")
    if first:
        print_wrapped(console, "  One case in each run:")
        for run in (comparison.baseline, comparison.candidate):
            print_command(console, f"oloproof inspect {run} --case "
                          f"{shlex.quote(safe_line(first[0]))}")


def render_baseline_summary(summary: BaselineSummary, console: Console) -> None:
    """In a run's report: the paired figures its non_inferiority rules were decided on."""
    unpaired = []
    if summary.changed:
        unpaired.append(f"{summary.changed} changed")
    if summary.baseline_only:
        unpaired.append(f"{summary.baseline_only} in the baseline only")
    if summary.candidate_only:
        unpaired.append(f"{summary.candidate_only} in this run only")
    render_criteria(summary.criteria, console,
                    title=f"Against baseline {summary.baseline} (this run − baseline, paired "
                    "cases" + (f"; not paired: {', '.join(unpaired)}" if unpaired else "")
                    + ")")
    if summary.baseline_taken is not None:
        print_wrapped(console, _cell(taken_text(summary.baseline, None,
                                                summary.baseline_taken)), 2, 2)
    for warning in summary.warnings:
        print_wrapped(console, _cell(f"Warning: {warning}", "yellow"), 2, 2)
    if summary.dropped_cases:
        print_wrapped(console, _cell("Dropped (in the baseline, not in this run as it was; a "
                                     "rule with `dropped: ignore` leaves them out): ").append(
                                         ids_text(summary.dropped_cases)), 2, 4)
