"""The cases of a run, one line each (`oloproof cases RUN`, the summary of `inspect --failures`).

Read from the stored outcomes only (one row per case: verdict codes and error kind), so listing
20,000 cases reads no output, trajectory or state.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

from rich.console import Console
from rich.text import Text

from oloproof.analysis.ordering import case_order
from oloproof.errors import ErrorKind, UsageError
from oloproof.evaluators.judgment import CODE_VERDICTS
from oloproof.report.escape import safe_line
from oloproof.report.layout import print_wrapped
from oloproof.report.trial_counts import criteria_text
from oloproof.store.store import Store

VerdictFilter = Literal["failed", "missing"]

_CODE_STYLE = {"P": "green", "F": "bold red", "M": "yellow", "X": "dim"}


@dataclass(frozen=True)
class CaseVerdicts:
    """One case of a run: its verdict code per criterion (P F M X), error kind, source; with
    trials, how many of its `trials` failed and were missing on each criterion."""

    case: str
    codes: str
    error: str | None = None
    source: str | None = None
    trials: int = 1
    failed: tuple[int, ...] = ()   # per criterion: trials failed (with trials)
    missing: tuple[int, ...] = ()  # per criterion: trials missing (with trials)

    def with_code(self, code: str, criteria: Sequence[str]) -> list[str]:
        return [c for c, mine in zip(criteria, self.codes, strict=False) if mine == code]

    def trial_counts(self, code: str, criteria: Sequence[str]) -> dict[str, int] | None:
        """For the criteria `with_code(code)`: how many trials failed (F) or were missing (M)
        on each; None without trials."""
        if self.trials < 2:
            return None
        counts = self.failed if code == "F" else self.missing
        return {c: n for c, mine, n in zip(criteria, self.codes, counts, strict=False)
                if mine == code}

    def to_json(self, criteria: Sequence[str]) -> dict[str, Any]:
        body: dict[str, Any] = {
            "case": self.case,
            "verdicts": {c: CODE_VERDICTS[code]
                         for c, code in zip(criteria, self.codes, strict=False)},
        }
        if self.error:
            body["error"] = self.error
        if self.source:
            body["source"] = self.source
        if self.trials > 1:
            body["trials"] = self.trials
            body["failed_trials"] = {c: n for c, n in zip(criteria, self.failed, strict=False)
                                     if n}
            body["missing_trials"] = {c: n for c, n in zip(criteria, self.missing,
                                                           strict=False) if n}
        return body


@dataclass(frozen=True)
class CaseSelection:
    """Which cases to list: all, or those failing/missing (optionally on one criterion)."""

    failures: bool = False
    criterion: str | None = None
    verdict: VerdictFilter | None = None

    @property
    def filtered(self) -> bool:
        return self.failures or self.criterion is not None or self.verdict is not None

    def describe(self) -> str:
        """In words: `failed or missing on answer_correct`, `failed`, ..."""
        what = {"failed": "failed", "missing": "missing"}.get(self.verdict or "",
                                                               "failed, missing or errored")
        if self.criterion is not None and self.verdict is None:
            what = "failed or missing"
        return what + (f" on {self.criterion}" if self.criterion else "")

    def matches(self, case: CaseVerdicts, criteria: Sequence[str]) -> bool:
        if not self.filtered:
            return True
        if self.criterion is not None:
            codes = {case.codes[criteria.index(self.criterion)]}
        else:
            codes = set(case.codes)
        if self.verdict == "failed":
            return "F" in codes
        if self.verdict == "missing":
            return "M" in codes
        return "F" in codes or "M" in codes or (self.criterion is None and bool(case.error))


def run_cases(store: Store, run_id: str) -> tuple[list[str], list[CaseVerdicts]]:
    """(criteria in suite order, every case of the run in case-id order)."""
    record = store.run_record(run_id)
    suite = record.get("suite") or {}
    criteria = list(suite.get("criteria") or [])
    trials = int(suite.get("trials", 1))
    # With repeated trials a case has one row per trial: one line per case, each criterion's
    # letter F if any trial failed it, else M if any is missing, else P (X: all excluded),
    # and how many of its trials failed and were missing.
    by_case: dict[str, CaseVerdicts] = {}
    for case_id, _digest, _key, outcome in store.iter_run_cases(run_id):
        codes = str(outcome.get("c") or "")
        kind = outcome.get("e")
        mine = CaseVerdicts(case_id, codes, None if kind is None else ErrorKind.of(kind),
                            outcome.get("src"), trials,
                            tuple(int(c == "F") for c in codes),
                            tuple(int(c == "M") for c in codes))
        known = by_case.get(case_id)
        by_case[case_id] = mine if known is None else _merged(known, mine)
    cases = sorted(by_case.values(), key=lambda c: case_order(c.case))
    return criteria, cases


def _merged(a: CaseVerdicts, b: CaseVerdicts) -> CaseVerdicts:
    """Two trials of one case as one line (see `run_cases`)."""
    def worst(x: str, y: str) -> str:
        for code in "FMP":
            if code in (x, y):
                return code
        return "X"

    codes = "".join(worst(x, y) for x, y in zip(a.codes, b.codes, strict=False))
    return CaseVerdicts(a.case, codes, a.error or b.error, a.source, a.trials,
                        tuple(x + y for x, y in zip(a.failed, b.failed, strict=False)),
                        tuple(x + y for x, y in zip(a.missing, b.missing, strict=False)))


def select_cases(store: Store, run_id: str, selection: CaseSelection
                 ) -> tuple[list[str], list[CaseVerdicts], int]:
    """(criteria, the cases the selection keeps, how many cases the run has)."""
    criteria, cases = run_cases(store, run_id)
    if selection.criterion is not None and selection.criterion not in criteria:
        raise UsageError(f"run {run_id} has no criterion {selection.criterion!r}; its criteria: "
                         + ", ".join(criteria))
    return criteria, [c for c in cases if selection.matches(c, criteria)], len(cases)


def case_line(case: CaseVerdicts, criteria: Sequence[str], width: int) -> Text:
    """`case_003  PPFFPP  failed agent_no_tool_loop, agent_tool_sequence` (id padded to
    `width`); with trials, `failed agent_no_tool_loop (1 of 3 trials), …`."""
    name = safe_line(case.case)
    out = Text(name + " " * max(1, width - len(name) + 2))
    for code in case.codes:
        out.append(code, style=_CODE_STYLE.get(code, ""))
    parts = []
    if case.error:
        parts.append(f"errored ({safe_line(case.error)})")
    for code, word in (("F", "failed"), ("M", "missing")):
        names = case.with_code(code, criteria)
        if names:
            parts.append(f"{word} " + criteria_text(names, case.trial_counts(code, criteria),
                                                    case.trials))
    if case.source:
        parts.append(f"copy of {safe_line(case.source)}")
    if parts:
        out.append("  " + "; ".join(parts))
    return out


def render_case_list(console: Console, run_id: str, criteria: Sequence[str],
                     cases: Sequence[CaseVerdicts], total: int,
                     selection: CaseSelection) -> None:
    """The header (what the letters mean, criteria in order), then one line per case."""
    if selection.filtered:
        head = f"{len(cases)} of {total} cases of run {run_id} {selection.describe()}"
    else:
        head = f"{total} cases of run {run_id}"
    print_wrapped(console, Text(head, style="bold"))
    print_wrapped(console, "Verdicts, one letter per criterion in this order: "
                  + ", ".join(f"{i + 1} {safe_line(c)}" for i, c in enumerate(criteria)), 2, 2)
    print_wrapped(console, "P passed · F failed · M missing · X excluded", 2, 2)
    width = max((len(safe_line(c.case)) for c in cases), default=0)
    for case in cases:
        print_wrapped(console, case_line(case, criteria, width), 2, width + 4)
