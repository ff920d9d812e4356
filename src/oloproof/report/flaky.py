"""`oloproof inspect RUN --flaky` (docs/reliability.md#reading-oloproof-inspect-latest---flaky): the
cases whose trials disagree.

A case is flaky on a criterion when some of its trials passed it and some failed it. The list
is read from the stored outcomes only (one small row per trial), each case with `c / k` per
criterion — passed trials of the trials that count (excluded trials do not) — and comes most
divided first: by how close its most divided criterion is to half its trials passing, then by
the same summed over the criteria it is divided on, then by case id.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.text import Text

from oloproof.analysis.ordering import case_order
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.trials import CaseTrials, TrialCounts, iter_case_trials
from oloproof.report.escape import safe_line
from oloproof.report.layout import print_command, print_wrapped
from oloproof.store.store import Store


@dataclass(frozen=True)
class FlakyCase:
    """A case whose trials disagree on at least one criterion."""

    case: str
    counts: tuple[TrialCounts, ...]  # per criterion, in the suite's order
    divided: tuple[int, ...]  # the criteria (positions) its trials disagree on

    @property
    def division(self) -> float:
        """How divided its most divided criterion is: min(passed, failed) / (passed + failed),
        from 0 (unanimous) to 1/2 (half and half)."""
        return max(min(c.passed, c.failed) / (c.passed + c.failed)
                   for c in (self.counts[i] for i in self.divided))

    @property
    def spread(self) -> float:
        """The divisions of all its divided criteria, summed (the tie-break: 2/5 and 2/5 is
        more divided than 4/5 and 3/5)."""
        return sum(min(c.passed, c.failed) / (c.passed + c.failed)
                   for c in (self.counts[i] for i in self.divided))

    def to_json(self, criteria: Sequence[str]) -> dict[str, Any]:
        return {
            "case": self.case,
            "divided": [criteria[i] for i in self.divided],
            "counts": {criteria[i]: {"passed": c.passed, "failed": c.failed,
                                     "missing": c.missing, "excluded": c.excluded}
                       for i, c in enumerate(self.counts)},
        }


def flaky_of(cases: Sequence[CaseTrials]) -> list[FlakyCase]:
    """The cases whose trials disagree, most divided first."""
    found = []
    for case in cases:
        divided = tuple(i for i, c in enumerate(case.counts) if c.divided)
        if divided:
            found.append(FlakyCase(case.case_id, case.counts, divided))
    found.sort(key=lambda f: (-f.division, -f.spread, case_order(f.case)))
    return found


def flaky_cases(store: Store, run_id: str) -> tuple[list[str], int, int, list[FlakyCase]]:
    """(criteria, trials, how many cases the run has, its flaky cases most divided first)."""
    record = store.run_record(run_id)
    suite = record.get("suite") or {}
    criteria = list(suite.get("criteria") or [])
    trials = int(suite.get("trials", 1))
    outcomes = (CaseOutcome.from_json(case_id, outcome, digest)
                for case_id, digest, _key, outcome in store.iter_run_cases(run_id))
    cases = list(iter_case_trials(outcomes, len(criteria), trials))
    return criteria, trials, len(cases), flaky_of(cases)


def counts_text(counts: TrialCounts) -> str:
    """`2 / 5`, `2 / 5 (1 missing)`: passed trials of the trials that count."""
    text = f"{counts.passed} / {counts.counted}"
    return text + (f" ({counts.missing} missing)" if counts.missing else "")


def render_flaky(console: Console, run_id: str, criteria: Sequence[str], trials: int,
                 total: int, cases: Sequence[FlakyCase]) -> None:
    """The header, then one line per flaky case: its divided criteria with `c / k`."""
    if trials < 2:
        print_wrapped(console, f"Run {run_id} ran each case once: no case can disagree with "
                      "itself. Set `trials:` in oloproof.yaml (or `oloproof run --trials 5`) "
                      "to run every case several times.")
        return
    print_wrapped(console, Text(
        f"Flaky cases of run {run_id}: {len(cases)} of {total} cases whose {trials} trials "
        "disagree on some criterion, most divided first", style="bold"))
    if not cases:
        print_wrapped(console, "Every case's trials agreed on every criterion.", 2)
        return
    print_wrapped(console, "c / k: trials passed of the trials that count (excluded trials "
                  "do not)", 2, 2)
    width = max(len(safe_line(c.case)) for c in cases)
    for case in cases:
        name = safe_line(case.case)
        line = Text(name + " " * (width - len(name) + 2))
        parts = [f"{safe_line(criteria[i])} {counts_text(case.counts[i])}"
                 for i in case.divided]
        line.append(" · ".join(parts), style="yellow")
        print_wrapped(console, line, 2, width + 4)
    print_wrapped(console, "Each case's trials side by side, and the step where they part:", 2)
    print_command(console,
                  f"oloproof inspect {run_id} --case {shlex.quote(safe_line(cases[0].case))}")
