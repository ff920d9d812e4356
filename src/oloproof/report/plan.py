"""`oloproof plan` in the terminal (SPEC §18): a projection, plainly labelled so."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from oloproof.document import Plan
from oloproof.report.escape import safe_line
from oloproof.report.layout import print_wrapped
from oloproof.report.numbers import threshold_text
from oloproof.stats import percent

TITLE = "Plan — a PROJECTION, not a promise"


def render_plan(plan: Plan, console: Console) -> None:
    """Each undecided rule with the cases that would settle it at the current rate, or why no
    number is given."""
    print_wrapped(console, Text(f"{TITLE}: run {plan.run_id} · confidence level "
                                f"{plan.confidence_level:g}", style="bold"))
    print_wrapped(console, plan.note, 2)
    if not plan.rules:
        print_wrapped(console, f"No rule is INSUFFICIENT_EVIDENCE ({plan.decided} decided): "
                      "nothing to plan.", 2)
        return
    for row in plan.rules:
        head = Text(safe_line(row.rule), style="bold")
        head.append(f" ({safe_line(row.metric)}) · INSUFFICIENT_EVIDENCE · "
                    + ", ".join(row.reasons))
        print_wrapped(console, head, 2, 4)
        if row.observed is not None and row.passed is not None and row.estimate is not None:
            now = f"now {row.passed} / {row.observed} observed = {percent(row.estimate)}"
            if row.threshold is not None:
                now += f"; threshold {threshold_text(row.threshold, True)}"
            print_wrapped(console, now, 4, 2)
        if row.total is not None:
            print_wrapped(console, Text(
                f"projected: {row.total} observed cases ({row.more} more) would reach "
                f"{row.state}, if the rate stayed at {percent(row.estimate or 0.0)}",
                style="cyan"), 4, 2)
            print_wrapped(console, f"(method: {row.method})", 4, 2)
        else:
            print_wrapped(console, safe_line(row.note), 4, 2)
    if plan.decided:
        print_wrapped(console, f"{plan.decided} other rule(s) are decided (PASS, FAIL or "
                      "MANUAL_REVIEW) and need no plan.", 2)
