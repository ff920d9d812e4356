"""`oloproof plan` in the terminal (docs/compare.md#what-it-would-take-to-decide-oloproof-plan): a
projection, plainly labelled so."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from oloproof.decisions.plan import LABELLED
from oloproof.document import Plan, PlanRow
from oloproof.report.escape import safe_line
from oloproof.report.layout import print_wrapped
from oloproof.report.numbers import threshold_text
from oloproof.stats import JUDGED_LABELS_LIMIT, percent
from oloproof.stats.sequential import SEQUENTIAL_METHOD

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
        if row.method == SEQUENTIAL_METHOD:  # a pytest test's trials: the note says it all
            print_wrapped(console, safe_line(row.note), 4, 2)
            continue
        now = _now(row)
        if now is not None:
            print_wrapped(console, now, 4, 2)
        judged = row.unit == LABELLED
        unit = row.unit or "observed cases"
        if row.total is not None:
            rate = percent(row.estimate or 0.0)
            line = (f"projected: {row.total} {unit} ({row.more} more"
                    + (f"; {row.cases_total} cases at this run's share" if judged else "")
                    + f") would reach {row.state}"
                    + (" on the labels alone" if judged else "")
                    + f", if the {'labels' if judged else ''}{chr(39) + ' ' if judged else ''}"
                    f"rate stayed at {rate}")
            if row.chance is not None:
                line += (f" — continued to that many, this run reaches it "
                         f"{percent(row.chance)} of the time")
            print_wrapped(console, Text(line, style="cyan"), 4, 2)
            if row.likely_total is not None:
                print_wrapped(console, Text(
                    f"for an 80% chance: {row.likely_total} {unit} "
                    f"({row.likely_more} more) reach {row.state} "
                    f"{percent(row.likely_chance or 0.0)} of the time ({row.likely_method})",
                    style="cyan"), 4, 2)
            elif row.reachable is not None:
                side = "at or above" if (row.estimate or 0.0) < (row.threshold or 0.0) \
                    else "at or below"
                what = "labels" if judged else "cases"
                print_wrapped(console, Text(
                    f"for an 80% chance: no number of {what} — this run leaves a "
                    f"{percent(1.0 - row.reachable)} chance that the rate is {side} "
                    f"{threshold_text(row.threshold or 0.0, True)}, where no number of "
                    f"{what} reaches {row.state}", style="cyan"), 4, 2)
            if judged:
                _corrected(row, console)
            if row.chance_assumption is not None:
                print_wrapped(console, f"(chances: {row.chance_assumption})", 4, 2)
            print_wrapped(console, f"(method: {row.method}"
                          + ("; people's labels alone, their exact interval" if judged
                             else "") + ")", 4, 2)
            if judged:
                print_wrapped(console, f"more labels: oloproof labels sample --criterion "
                              f"{safe_line(row.metric)} --n N -o FILE, then oloproof labels "
                              "review FILE", 4, 2)
        else:
            print_wrapped(console, safe_line(row.note), 4, 2)
    if plan.decided:
        print_wrapped(console, f"{plan.decided} other rule(s) are decided (PASS, FAIL or "
                      "MANUAL_REVIEW) and need no plan.", 2)


def _corrected(row: PlanRow, console: Console) -> None:
    """A judged rule: the labelled cases at which the corrected interval it decides on would
    decide it, at the same rates."""
    if row.corrected_total is not None:
        said = (f"{row.corrected_total} labelled cases ({row.corrected_cases} cases) would "
                f"reach {row.state}")
    else:
        said = f"no number of labelled cases up to {JUDGED_LABELS_LIMIT:,} would decide it"
    print_wrapped(console, Text(f"on the corrected interval the rule decides on, at the same "
                                f"rates: {said}", style="cyan"), 4, 2)


def _now(row: PlanRow) -> str | None:
    """Where the rule stands, in the figures the projection counts: observed cases."""
    if row.observed is None or row.estimate is None:
        return None
    if row.values is not None:  # fractions: the estimate is a mean of per-case values
        now = (f"now {percent(row.estimate)}: the mean over {row.observed} observed cases of "
               f"{row.values}")
    elif row.unit == LABELLED:
        now = (f"now people passed {row.passed} of {row.observed} labelled cases = "
               f"{percent(row.estimate)} (the run has {row.cases} cases)")
    elif row.passed is not None:
        now = f"now {row.passed} / {row.observed} observed = {percent(row.estimate)}"
    else:
        return None
    if row.threshold is not None:
        now += f"; threshold {threshold_text(row.threshold, True)}"
    return now
