"""The cases a run document names as examples: the first failing cases, and the first case
missing for each reason, in case order.

Cases finish in any order, and the document must not depend on it: `FirstCases` keeps the first
few in `case_order` (`oloproof inspect --failures` lists the rest), and for each criterion and
missing reason the first case, which the document's rate rows name
(`RateRow.missing_examples`).
"""

from __future__ import annotations

import bisect
from typing import TYPE_CHECKING

from oloproof.analysis.ordering import case_order

if TYPE_CHECKING:
    from oloproof.analysis.outcome import CaseOutcome
    from oloproof.analysis.trials import CaseTrials
    from oloproof.document import FailingCase, FailingCases, MetricRow

#: How many failing cases the run document names (the rest: `oloproof inspect --failures`).
FAILING_SHOWN = 10

Order = tuple[tuple[int, int | str], ...]  # a case id's `case_order`


class FirstCases:
    """How many cases failed a criterion or errored and the first of them, and per criterion
    and missing reason the first case missing for it (`criteria`: the suite's, in order)."""

    def __init__(self, criteria: list[str]) -> None:
        self.criteria = criteria
        self.failing = 0
        self._first_failing: list[tuple[Order, FailingCase]] = []
        # (criterion index, missing reason) -> (order, case id, case key) of its first case.
        self._first_missing: dict[tuple[int, str], tuple[Order, str, str | None]] = {}

    def note_missing(self, outcome: CaseOutcome, order: Order | None = None) -> None:
        """Remember the first case missing for each reason (`order`: its `case_order`, if
        known)."""
        if "M" not in outcome.codes:
            return
        if order is None:
            order = case_order(outcome.case_id)
        for i, code in enumerate(outcome.codes):
            if code == "M":
                key = (i, outcome.reasons[i] or "unknown")
                known = self._first_missing.get(key)
                if known is None or order < known[0]:
                    self._first_missing[key] = (order, outcome.case_id, outcome.case_key)

    def note(self, outcome: CaseOutcome) -> None:
        """Remember the first case missing for each reason, and the first failing cases."""
        codes = outcome.codes
        failing = "F" in codes or outcome.error is not None
        if not failing and "M" not in codes:
            return  # (a case that passed: its place in the order is never asked for)
        order = case_order(outcome.case_id)
        self.note_missing(outcome, order)
        if failing:
            self.note_failing(outcome.case_id, codes, outcome.error, order=order)

    def note_failing(self, case_id: str, codes: str, error: str | None,
                     trials: CaseTrials | None = None, order: Order | None = None) -> None:
        """Count a failing case (with trials: a case whose trials are folded), and keep it if
        it is among the first."""
        if order is None:
            order = case_order(case_id)
        criteria = self.criteria
        self.failing += 1
        shown = self._first_failing
        if len(shown) >= FAILING_SHOWN and order >= shown[-1][0]:
            return
        from oloproof.document import FailingCase
        failed = [c for c, code in zip(criteria, codes, strict=True) if code == "F"]
        missing = [c for c, code in zip(criteria, codes, strict=True) if code == "M"]
        failed_trials = missing_trials = None
        if trials is not None:  # how many of its trials gave each verdict
            counts = dict(zip(criteria, trials.counts, strict=True))
            failed_trials = {c: counts[c].failed for c in failed} or None
            missing_trials = {c: counts[c].missing for c in missing} or None
        case = FailingCase(case=case_id, failed=failed, missing=missing, error=error,
                           failed_trials=failed_trials, missing_trials=missing_trials)
        bisect.insort(shown, (order, case), key=lambda item: item[0])
        del shown[FAILING_SHOWN:]

    def failing_cases(self) -> FailingCases:
        """How many cases failed a criterion or errored, and the first of them."""
        from oloproof.document import FailingCases
        return FailingCases(total=self.failing, first=[case for _, case in self._first_failing])

    def missing_examples(self) -> dict[tuple[str, str], tuple[str, str | None]]:
        """(criterion, missing reason) -> (first case id, its judgment key prefix)."""
        return {(self.criteria[i], reason): (case_id, case_key)
                for (i, reason), (_, case_id, case_key) in self._first_missing.items()}

    def attach_missing_examples(
        self, metrics: list[MetricRow], messages: dict[tuple[str, str], str | None]
    ) -> None:
        """Name, on each rate metric, the first case missing for each reason (and its error
        text, from `messages`: (criterion, reason) -> text)."""
        from oloproof.document import MissingExample, RateRow
        examples = self.missing_examples()
        for row in metrics:
            if not isinstance(row, RateRow) or not row.missing_by_reason:
                continue
            found = {reason: MissingExample(case=examples[(row.id, reason)][0],
                                            message=messages.get((row.id, reason)))
                     for reason in row.missing_by_reason if (row.id, reason) in examples}
            row.missing_examples = found or None
