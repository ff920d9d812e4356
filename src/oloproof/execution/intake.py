"""Taking a run's results: each case's result stored and tallied, its errors kept.

`ResultIntake` is the coordinator's receiving half (`engine.RunEngine` is the sending half):
every `UnitResult` that comes back from a transport, every unit judged without a worker, and
every unit whose executions and judgments were all cached ends here, as rows for the store's
batched writer (the case, its fresh execution and artifacts, its judgments, the run's row of
it, its errors) and one `CaseOutcome` for the analysis. `CacheCounts` and `Progress` are what
it counts on the way: the run document's cache figures and what a progress display reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from oloproof.analysis.metrics import Analysis
from oloproof.analysis.outcome import CaseOutcome
from oloproof.evaluators.simulator_fidelity import SimulatorFidelity
from oloproof.execution.keys import RunKeys
from oloproof.execution.rows import (
    UNCACHED_PREFIX,
    CaseRows,
    RowMaking,
    case_outcome,
    case_rows,
    shown_of_hits,
)
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.execution.units import CaseError, CaseResult, StoredText, UnitResult
from oloproof.store.store import Store
from oloproof.suite.case import Case


@dataclass
class Progress:
    """Counts a progress display reads; `on_change` is called after each case.

    `workers` is how many copies of the system the run has, `busy` how many of them were
    running a unit when the last results came in; `run`, which of several runs of one command
    this is, in words (the runs of a suite's variants: `model=large,prompt=v2, 4 of 6`).
    """

    total: int
    done: int = 0
    errors: int = 0
    cache_hits: int = 0
    on_change: Callable[[Progress], None] | None = None
    workers: int = 1
    busy: int = 0
    run: str = ""

    def case_done(self, errored: bool, cached: bool) -> None:
        self.done += 1
        self.errors += errored
        self.cache_hits += cached
        if self.on_change is not None:
            self.on_change(self)


@dataclass
class CacheCounts:
    execution_hit: int = 0
    execution_miss: int = 0
    judgment_hit: int = 0
    judgment_miss: int = 0
    # Judge verdicts (docs/judges.md) taken from the judge cache, and asked of a judge; None
    # for a suite without judges.
    judge_hit: int | None = None
    judge_miss: int | None = None

    def to_json(self) -> dict[str, dict[str, int]]:
        counts = {
            "execution": {"hit": self.execution_hit, "miss": self.execution_miss},
            "judgment": {"hit": self.judgment_hit, "miss": self.judgment_miss},
        }
        if self.judge_hit is not None:
            counts["judge"] = {"hit": self.judge_hit, "miss": self.judge_miss or 0}
        return counts


class PlannedCase:
    """One case (one trial of it) of a chunk, from planning until it is tallied: its place in
    the run, its execution key, and what the caches already hold of it."""

    __slots__ = ("cached", "case", "case_key", "exec_key", "hits", "judge", "seq", "trial")

    def __init__(self, case: Case, seq: int, exec_key: str, trial: int) -> None:
        self.case = case
        self.seq = seq
        self.exec_key = exec_key
        self.trial = trial
        self.cached: tuple[Any, float | None] | None = None  # (facts, latency_ms) if executed
        self.case_key: str | None = None  # the judgments' shared key (made once it is needed)
        # cached verdicts by position: (code, reason), and for a judge criterion its details
        self.hits: dict[int, tuple[Any, ...]] = NO_HITS
        self.judge: tuple[int, ...] = ()  # the evaluators its job judges (those not in `hits`)


NO_HITS: dict[int, tuple[Any, ...]] = {}  # (shared, never written to)


class ResultIntake:
    """Stores and tallies the results of one run's cases (see the module docstring)."""

    def __init__(self, store: Store, analysis: Analysis, cache: CacheCounts,
                 progress: Progress, *, run_id: str, suite: SuiteToRun, keys: RunKeys,
                 judges: tuple[int, ...]) -> None:
        self.store = store
        self.analysis = analysis
        self.cache = cache
        self.progress = progress
        self.run_id = run_id
        self.evaluators = suite.evaluators
        self.trials = suite.trials
        self._judge_all = tuple(range(len(suite.evaluators)))
        # What making a case's rows needs (`rows.py`): here, or sent to workers elsewhere.
        self.making = RowMaking(
            keys.evaluators, [e.criterion for e in suite.evaluators], judges,
            # (the simulator's fidelity criterion, docs/conversations.md, if the suite has one)
            next((i for i, e in enumerate(suite.evaluators)
                  if isinstance(e, SimulatorFidelity)), None),
            suite.config.slices)
        #: the units handed out whose results have not come in: unit number -> its cases
        self.in_flight: dict[int, list[PlannedCase]] = {}
        self._errors: list[tuple[int, dict[str, Any]]] = []  # (case.seq, entry)
        self.replays_run = 0

    # ---- taking results ----------------------------------------------------------------------

    def take_all(self, results: Iterable[UnitResult]) -> None:
        """Take the results of units in flight."""
        in_flight = self.in_flight
        for result in results:
            # A result that arrives twice (a worker lost after it sent it, its job sent again)
            # is taken once: the first one is stored and tallied, the second is dropped.
            cases = in_flight.pop(result.unit, None)
            if cases is not None:
                self.take(result, cases)

    def take(self, result: UnitResult, cases: list[PlannedCase]) -> None:
        """Store and tally one unit's result."""
        if result.failure is not None:
            for planned in cases:
                if planned.cached is None:  # (it was looked up, and will be again next run)
                    self.cache.execution_miss += 1
                else:
                    self.cache.execution_hit += 1
                self._tally_errored(planned, result.failure)
            return
        for key, record in result.replays:
            self.replays_run += 1
            self.store.add_replay(key, record)
        if result.verdict_hits:
            self.cache.judge_hit = (self.cache.judge_hit or 0) + result.verdict_hits
        if result.verdicts:
            self.cache.judge_miss = (self.cache.judge_miss or 0) + len(result.verdicts)
            for key, record in result.verdicts:
                self.store.add_judge_verdict(key, record)
        source_key = cases[0].exec_key
        for planned, case_result in zip(cases, result.cases, strict=True):
            self._take_case(planned, case_result, source_key)

    def _take_case(self, planned: PlannedCase, result: CaseResult | CaseRows,
                   source_key: str) -> None:
        if type(result) is not CaseRows:  # (a worker elsewhere made them: `rows.py`)
            assert isinstance(result, CaseResult)
            result = case_rows(self.making, planned.case, result, exec_key=planned.exec_key,
                               source_key=source_key, trial=planned.trial,
                               cached=planned.cached, case_key=planned.case_key,
                               hits=planned.hits, judge=planned.judge)
        case = planned.case
        store = self.store
        cache = self.cache
        store.add_case(case)
        if result.ran:
            cache.execution_miss += 1
            for conversation, key, turn in result.simulator_turns:
                store.add_simulator_turn(conversation, key, turn)
        else:
            cache.execution_hit += 1
        for error, attempt, retried in result.errors:
            self._record_error(planned, error, attempt, retried)
        cache.judgment_hit += result.judgment_hits
        cache.judgment_miss += result.judgment_misses
        if result.judge_misses:
            cache.judge_miss = (cache.judge_miss or 0) + result.judge_misses
        if result.judgments is not None:
            store.add_judgments_text(*result.judgments)
        if result.execution is not None:
            self._write_texts(case, result.texts)
            store.add_execution_row(case.digest, *result.execution)
        self.analysis.add(result.outcome)
        store.add_run_case_text(self.run_id, planned.seq, case.id, case.digest, result.exec_key,
                                result.outcome_text)
        self.progress.case_done(result.errored, not result.ran)

    def _write_texts(self, case: Case, texts: list[StoredText]) -> None:
        for text in texts:
            if text.text is None:  # a `$ref` initial state: serialised once per run, here
                self.store.add_artifact_text(text.hash, text.kind, text.base, None,
                                             lazy_payload=case.initial_state or {})
            else:
                self.store.add_artifact_text(text.hash, text.kind, text.base, text.text)

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The run's errors in the dataset's order (each case's trials in turn), not in the
        order the cases happened to finish: the same run reads the same every time."""
        return [entry for _, entry in sorted(self._errors, key=lambda e: e[0])]

    def _record_error(self, planned: PlannedCase, error: CaseError, attempt: int = 1,
                      retried: bool = False) -> None:
        """Keep an error of a case; `retried`: an attempt another followed (stored, and shown
        by `inspect`, but not the case's error)."""
        case = planned.case
        if not retried:
            entry: dict[str, Any] = {"case": case.id, "kind": error.kind,
                                     "message": error.message}
            if self.trials > 1:
                entry["trial"] = planned.trial
            self._errors.append((planned.seq, entry))
        self.store.add_error(self.run_id, case.id, error.kind, error.message, error.traceback,
                             trial=planned.trial, attempt=attempt, retried=retried)

    # ---- tallying ----------------------------------------------------------------------------

    def tally_cached(self, planned: PlannedCase) -> None:
        """Tally a case whose execution and judgments were all cached, from what the caches
        hold (its output is not read)."""
        assert planned.cached is not None
        facts, latency = planned.cached
        hits = planned.hits
        self.cache.execution_hit += 1
        self.cache.judgment_hit += len(hits)
        codes = "".join([hits[i][0] for i in self._judge_all])
        reasons = tuple([hits[i][1] for i in self._judge_all])
        self._tally(planned, case_outcome(
            self.making, planned.case, codes, reasons, planned.case_key, facts, latency,
            error=None, cached=True, trial=planned.trial,
            shown=shown_of_hits(self.making, hits) if self.making.judges else None),
            planned.exec_key)

    def _tally_errored(self, planned: PlannedCase, error: CaseError) -> None:
        self.store.add_case(planned.case)
        self._record_error(planned, error)
        n = len(self.evaluators)
        self._tally(planned, case_outcome(
            self.making, planned.case, "M" * n, ("case_errored",) * n, None, None, None,
            error=error.kind, cached=False, trial=planned.trial), planned.exec_key)

    def _tally(self, planned: PlannedCase, outcome: CaseOutcome, exec_key: str) -> None:
        self.analysis.add(outcome)
        self.store.add_run_case(self.run_id, planned.seq, outcome.case_id, planned.case.digest,
                                exec_key, outcome.to_json())
        self.progress.case_done(outcome.error is not None or outcome.no_state, outcome.cached)


__all__ = ["UNCACHED_PREFIX", "CacheCounts", "PlannedCase", "Progress", "ResultIntake"]
