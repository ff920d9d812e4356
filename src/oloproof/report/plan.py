"""`oloproof plan` in the terminal (docs/compare.md#what-it-would-take-to-decide-oloproof-plan): a
projection, plainly labelled so."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from oloproof.document import Plan, PlanRow
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
        now = _now(row)
        if now is not None:
            print_wrapped(console, now, 4, 2)
        if row.total is not None:
            rate = percent(row.estimate or 0.0)
            line = (f"projected: {row.total} observed cases ({row.more} more) would reach "
                    f"{row.state}, if the rate stayed at {rate}")
            if row.chance is not None:
                line += (f" — continued to that many, this run reaches it "
                         f"{percent(row.chance)} of the time")
            print_wrapped(console, Text(line, style="cyan"), 4, 2)
            if row.likely_total is not None:
                print_wrapped(console, Text(
                    f"for an 80% chance: {row.likely_total} observed cases "
                    f"({row.likely_more} more) reach {row.state} "
                    f"{percent(row.likely_chance or 0.0)} of the time ({row.likely_method})",
                    style="cyan"), 4, 2)
            elif row.reachable is not None:
                side = "at or above" if (row.estimate or 0.0) < (row.threshold or 0.0) \
                    else "at or below"
                print_wrapped(console, Text(
                    f"for an 80% chance: no number of cases — this run leaves a "
                    f"{percent(1.0 - row.reachable)} chance that the rate is {side} "
                    f"{threshold_text(row.threshold or 0.0, True)}, where no number of cases "
                    f"reaches {row.state}", style="cyan"), 4, 2)
            if row.chance_assumption is not None:
                print_wrapped(console, f"(chances: {row.chance_assumption})", 4, 2)
            print_wrapped(console, f"(method: {row.method})", 4, 2)
        else:
            print_wrapped(console, safe_line(row.note), 4, 2)
    if plan.decided:
        print_wrapped(console, f"{plan.decided} other rule(s) are decided (PASS, FAIL or "
                      "MANUAL_REVIEW) and need no plan.", 2)


def _now(row: PlanRow) -> str | None:
    """Where the rule stands, in the figures the projection counts: observed cases."""
    if row.observed is None or row.estimate is None:
        return None
    if row.values is not None:  # fractions: the estimate is a mean of per-case values
        now = (f"now {percent(row.estimate)}: the mean over {row.observed} observed cases of "
               f"{row.values}")
    elif row.passed is not None:
        now = f"now {row.passed} / {row.observed} observed = {percent(row.estimate)}"
    else:
        return None
    if row.threshold is not None:
        now += f"; threshold {threshold_text(row.threshold, True)}"
    return now
