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

from oloproof.analysis.conversations import audited
from oloproof.analysis.facts import slice_groups
from oloproof.analysis.metrics import Analysis
from oloproof.analysis.outcome import CaseOutcome
from oloproof.errors import ErrorKind
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.simulator_fidelity import SimulatorFidelity
from oloproof.evaluators.verdicts import JUDGE_FAILURES
from oloproof.execution.keys import RunKeys
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.execution.units import CaseError, CaseResult, Execution, UnitResult
from oloproof.storable import Unstorable, storable_problem
from oloproof.store.store import Store
from oloproof.suite.case import Case

# An execution kept for `inspect` but never reused (its snapshot failed) is stored under its
# cache key with this prefix, which no cache lookup asks for.
UNCACHED_PREFIX = "uncached:"


@dataclass
class Progress:
    """Counts a progress display reads; `on_change` is called after each case.

    `workers` is how many copies of the system the run has, `busy` how many of them were
    running a unit when the last results came in.
    """

    total: int
    done: int = 0
    errors: int = 0
    cache_hits: int = 0
    on_change: Callable[[Progress], None] | None = None
    workers: int = 1
    busy: int = 0

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
                 judges: tuple[int, ...], judge_keys: frozenset[str]) -> None:
        self.store = store
        self.analysis = analysis
        self.cache = cache
        self.progress = progress
        self.run_id = run_id
        self.evaluators = suite.evaluators
        self.trials = suite.trials
        self.slice_groups = slice_groups(suite.config.slices)
        self._evaluator_keys = keys.evaluators
        self._case_key_of = keys.case  # (the judgments' key of a case run here)
        self._judge_all = tuple(range(len(suite.evaluators)))
        # The judge criteria (docs/judges.md): their evaluator positions and keys.
        self._judges = judges
        self._judge_keys = judge_keys
        # The simulator's fidelity criterion (docs/conversations.md), if the suite has one.
        self._fidelity = next((i for i, e in enumerate(suite.evaluators)
                               if isinstance(e, SimulatorFidelity)), None)
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

    def _take_case(self, planned: PlannedCase, result: CaseResult, source_key: str) -> None:
        case = planned.case
        store = self.store
        store.add_case(case)
        execution = result.execution
        exec_key = planned.exec_key
        error: str | None = None
        if execution is None:
            self.cache.execution_hit += 1
            assert planned.cached is not None
            facts, latency = planned.cached
        else:
            self.cache.execution_miss += 1
            facts, latency = execution.facts, execution.latency_ms
            for conversation, key, turn in execution.simulator_turns:
                store.add_simulator_turn(conversation, key, turn)
            for attempt, earlier in enumerate(execution.attempt_errors, 1):
                self._record_error(planned, earlier, attempt, retried=True)
            if execution.error is not None:
                error = execution.error.kind
                self._record_error(planned, execution.error, execution.attempts)
        judgments = result.judgments
        hits = planned.hits
        self.cache.judgment_hit += len(hits)
        self.cache.judgment_miss += len(judgments)
        if hits:  # some verdicts were cached: each criterion's from where it is
            judged = dict(zip(planned.judge, judgments, strict=True))
            verdicts = [hits[i] if i in hits else (judged[i].code, judged[i].reason)
                        for i in self._judge_all]
            codes = "".join([verdict[0] for verdict in verdicts])
            reasons = tuple([verdict[1] for verdict in verdicts])
        else:
            codes = "".join([judgment.code for judgment in judgments])
            reasons = tuple([judgment.reason for judgment in judgments])
        case_key = None
        if error is None:
            case_key = planned.case_key or self._case_key_of(case, exec_key, source_key)
            if judgments:
                evaluator_keys = self._evaluator_keys
                kept = {evaluator_keys[i]: (judgment.code, judgment.reason, judgment.details)
                        for i, judgment in zip(planned.judge, judgments, strict=True)}
                if self._judges:
                    self._judge_failures(planned, kept)
                try:
                    if kept:
                        store.add_judgments(case_key, kept)
                except Unstorable:  # (the details of a judgment: the case errors, uncached)
                    self._record_error(planned, self._unstorable_judgment(planned, judgments),
                                       1 if execution is None else execution.attempts)
                    n = len(self.evaluators)
                    codes, reasons = "M" * n, ("case_errored",) * n
                    case_key, error = None, ErrorKind.UNSTORABLE_OUTPUT
            if execution is not None and error is None:
                exec_key = self._keep_execution(planned, execution)
        elif execution is not None and execution.artifacts:
            exec_key = self._keep_errored(planned, execution)
        shown = self._shown(planned, judgments) if self._judges and error is None else None
        # (an execution reused from the cache and judged again is cached: the system was not
        # called for it — docs/failures.md#accounting)
        self._tally(planned, codes, reasons, case_key, None if error is not None else facts,
                    latency, error=error, cached=execution is None, exec_key=exec_key,
                    noted=execution is not None and execution.snapshot_error is not None,
                    attempts=1 if execution is None else execution.attempts, shown=shown)

    def _judge_failures(self, planned: PlannedCase, kept: dict[str, Any]) -> None:
        """A judge that failed (`judge_error`, `judge_unparseable`) is recorded as the run's
        error of that kind, and its judgment is not cached: the next run asks again. The
        case itself is not errored: its other criteria stand."""
        for short in self._judge_keys:
            entry = kept.get(short)
            if entry is not None and entry[1] in JUDGE_FAILURES:
                del kept[short]
                self.cache.judge_miss = (self.cache.judge_miss or 0) + 1
                details = entry[2] or {}
                self._record_error(planned, CaseError(
                    ErrorKind(entry[1]), f"{details.get('judge', 'the judge')}: "
                    f"{details.get('error') or entry[1]}"))

    def _shown(self, planned: PlannedCase, judgments: list[Any]
               ) -> tuple[list[str | None], list[int | None] | None]:
        """The digest of what each judge criterion's judge was shown for this case (None for
        the other criteria), from the judgments made now or the cached ones; and what its
        verdicts cost, [input tokens, output tokens] (None when no verdict said)."""
        made = dict(zip(planned.judge, judgments, strict=True))
        shown: list[str | None] = [None] * len(self.evaluators)
        tokens: list[int | None] = [None, None]
        for i in self._judges:
            if i in made:
                details = made[i].details
            else:
                hit = planned.hits.get(i)
                details = hit[2] if hit is not None and len(hit) > 2 else None
            if not isinstance(details, dict):
                continue
            if isinstance(details.get("shown_digest"), str):
                shown[i] = details["shown_digest"]
            for at, key in enumerate(("input_tokens", "output_tokens")):
                value = details.get(key)
                if isinstance(value, int) and not isinstance(value, bool):
                    tokens[at] = (tokens[at] or 0) + value
        return shown, (tokens if tokens != [None, None] else None)

    def _unstorable_judgment(self, planned: PlannedCase, judgments: list[Judgment]
                             ) -> CaseError:
        """Which judgment of a case the store cannot keep, and why."""
        for i, judgment in zip(planned.judge, judgments, strict=True):
            criterion = self.evaluators[i].criterion
            # (as the row holds it: the details are three levels down)
            problem = storable_problem({criterion: [judgment.code, judgment.reason,
                                                    judgment.details]}, ("judgments",))
            if problem is not None:
                return CaseError(ErrorKind.UNSTORABLE_OUTPUT,
                                 f"the judgment of {criterion} cannot be stored: {problem}")
        return CaseError(ErrorKind.UNSTORABLE_OUTPUT, "a judgment of this case cannot be stored")

    def _keep_execution(self, planned: PlannedCase, execution: Execution) -> str:
        """Write a fresh execution and its artifacts; the key it is stored under."""
        case = planned.case
        self._write_texts(case, execution)
        key = planned.exec_key
        if execution.snapshot_error is not None:
            self._record_error(planned, execution.snapshot_error, execution.attempts)
            key = UNCACHED_PREFIX + key
        assert execution.output_text is not None
        self.store.add_execution(key, case.digest, execution.output_text, execution.artifacts,
                                 execution.facts, execution.latency_ms)
        return key

    def _keep_errored(self, planned: PlannedCase, execution: Execution) -> str:
        """Write what an errored execution recorded (an imported run's errored trial: the
        trajectory its harness kept, docs/imports.md#how-an-import-is-stored), for `inspect`
        and the exports; never reused from the cache. The key it is stored under."""
        self._write_texts(planned.case, execution)
        key = UNCACHED_PREFIX + planned.exec_key
        self.store.add_execution(key, planned.case.digest, "null", execution.artifacts,
                                 execution.facts, execution.latency_ms)
        return key

    def _write_texts(self, case: Case, execution: Execution) -> None:
        for text in execution.texts:
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
        self._tally(planned, codes, reasons, planned.case_key, facts, latency, error=None,
                    cached=True, exec_key=planned.exec_key,
                    shown=self._shown(planned, []) if self._judges else None)

    def _tally_errored(self, planned: PlannedCase, error: CaseError) -> None:
        self.store.add_case(planned.case)
        self._record_error(planned, error)
        n = len(self.evaluators)
        self._tally(planned, "M" * n, ("case_errored",) * n, None, None, None, error=error.kind,
                    cached=False, exec_key=planned.exec_key)

    def _tally(
        self, planned: PlannedCase, codes: str, reasons: tuple[str | None, ...],
        case_key: str | None, facts: dict[str, Any] | None, latency: float | None, *,
        error: str | None, cached: bool, exec_key: str, noted: bool = False, attempts: int = 1,
        shown: tuple[list[str | None], list[int | None] | None] | None = None,
    ) -> None:
        case = planned.case
        if facts is not None and "conversation" in facts:
            # The simulator's failure: every criterion of the agent is missing (never failed,
            # never excluded; docs/conversations.md#the-simulator-is-audited-never-trusted).
            codes, reasons = audited(codes, reasons, facts, self._fidelity)
        # In the fields' order, not by keyword: a class called with keywords first gathers
        # them into a dict (for these sixteen, twice the time of making the outcome).
        outcome = CaseOutcome(case.id, codes, reasons, case_key, facts, latency,
                              self.slice_groups(facts, case.metadata), error, case.source_id,
                              case.transform, case.cluster, cached, planned.trial, case.digest,
                              attempts, noted)
        if shown is not None:
            outcome.shown, outcome.judge_usage = shown
        self.analysis.add(outcome)
        self.store.add_run_case(self.run_id, planned.seq, case.id, case.digest, exec_key,
                                outcome.to_json())
        self.progress.case_done(error is not None or noted, cached)


__all__ = ["CacheCounts", "PlannedCase", "Progress", "ResultIntake"]
