"""The coordinator of one run: cache lookups → jobs for workers → results → store and tallies.

Units (a source case with its metamorphic copies) stream through in chunks. For each chunk the
caches are asked once (one query per table, not one per case). A unit whose executions and
judgments are all cached is tallied straight from the stored facts and verdicts, without
reading its output; a unit that needs no system call (its executions and replays are cached,
only some judgments are not) is judged here; the rest become `UnitJob`s, handed in batches to
the transport, which runs them whole on a worker and returns `UnitResult`s in bulk. Results
are written through the store's batched background writer, at least once a second.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

from oloproof.analysis.facts import slice_groups
from oloproof.analysis.metrics import Analysis
from oloproof.analysis.outcome import CaseOutcome
from oloproof.digest import combine, digest
from oloproof.errors import ErrorKind
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.faults import FaultRecovery
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.verdicts import JUDGE_FAILURES
from oloproof.execution.judging import asks_for, judge_positions
from oloproof.execution.lanes import Transport, local_transport
from oloproof.execution.plan import SuiteToRun
from oloproof.execution.procedure import run_without_system
from oloproof.execution.retries import Throttle
from oloproof.execution.units import (
    CachedExecution,
    CaseError,
    CaseJob,
    CaseResult,
    Execution,
    ReplayJob,
    UnitJob,
    UnitResult,
)
from oloproof.execution.worker import Worker
from oloproof.storable import Unstorable, storable_problem
from oloproof.store.store import JUDGMENT_CASE_KEY, Store
from oloproof.suite.case import Case

CHUNK = 512
# The first chunk is smaller: the first calls start once its cases are read, digested and
# looked up, not 512 cases' worth later; the next chunk is planned while they run.
FIRST_CHUNK = 64
FLUSH_SECONDS = 1.0
FLUSH_ROWS = 20_000
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


class _Slot:
    """One case of a chunk, with its keys and what the caches already hold."""

    __slots__ = ("cached", "case", "case_key", "exec_key", "hits", "judge", "seq", "trial")

    def __init__(self, case: Case, seq: int, exec_key: str, trial: int) -> None:
        self.case = case
        self.seq = seq
        self.exec_key = exec_key
        self.trial = trial
        self.cached: tuple[Any, float | None] | None = None  # (facts, latency_ms) if executed
        self.case_key: str | None = None  # the judgments' shared key (made once it is needed)
        # cached verdicts by position: (code, reason), and for a judge criterion its details
        self.hits: dict[int, tuple[Any, ...]] = _NO_HITS
        self.judge: tuple[int, ...] = ()  # the evaluators its job judges (those not in `hits`)


_NO_HITS: dict[int, tuple[Any, ...]] = {}  # (shared, never written to)


def _batched(items: Iterable[Any], size: int, first: int | None = None) -> Iterator[list[Any]]:
    """`items` in lists of `size` (the first of `first`, when given)."""
    iterator = iter(items)
    batch = list(islice(iterator, size if first is None else first))
    while batch:
        yield batch
        batch = list(islice(iterator, size))


class RunEngine:
    """Executes and judges a loaded suite into a store under one run id."""

    def __init__(
        self, suite: SuiteToRun, store: Store, run_id: str, *, no_cache: bool = False,
        concurrency: int | None = None, progress: Progress | None = None,
        transport: Transport | None = None,
    ) -> None:
        self.suite = suite
        self.store = store
        self.run_id = run_id
        self.no_cache = no_cache
        system = suite.config.system
        self.concurrency = concurrency or system.concurrency
        # Where jobs go: the workers the executor started (`executors.open_transport`), or by
        # default the suite's own system in this process.
        self.transport = transport if transport is not None else local_transport(
            [Worker(suite.target, suite.evaluators, system.timeout_s, retries=suite.retries,
                    throttle=Throttle() if suite.retries is not None else None)],
            self.concurrency)
        self.evaluators = suite.evaluators
        self.slice_groups = slice_groups(suite.config.slices)
        self.trials = suite.trials
        self.progress = progress or Progress(total=suite.case_count * suite.trials)
        self.cache = CacheCounts()
        self._errors: list[tuple[int, dict[str, Any]]] = []  # (slot.seq, entry)
        self.analysis: Analysis | None = None
        self.transform_digests = {t.name: d for t, d in suite.transforms}
        self._system_key = suite.system_key
        self._evaluator_keys = [e.cache_key for e in suite.evaluators]
        self._last_flush = time.monotonic()
        self._next_seq = 0
        self._next_unit = 0
        self._in_flight: dict[int, list[_Slot]] = {}
        # transform -> derived case id -> pair digest (validity labels are matched on these)
        self.pairs: dict[str, dict[str, str]] = {t.name: {} for t, _ in suite.transforms}
        self._faults = [(i, e, digest(e.plan(self.trials)))
                        for i, e in enumerate(suite.evaluators) if isinstance(e, FaultRecovery)]
        self._judge_all = tuple(range(len(suite.evaluators)))
        self.replays_run = 0
        # The judge criteria (docs/judges.md): their evaluator positions and keys.
        self._judges = judge_positions(suite.evaluators)
        self._judge_keys = frozenset(self._evaluator_keys[i] for i in self._judges)
        if self._judges:
            self.cache.judge_hit = self.cache.judge_miss = 0

    # ---- the run ---------------------------------------------------------------------------

    async def run(self, analysis: Analysis) -> None:
        """Execute and judge every case; tallies go to `analysis`. Cancellation-safe."""
        self.analysis = analysis
        self.store.start_writer()  # commits happen beside the event loop, not in it
        transport = self.transport
        self.progress.workers = transport.workers
        flusher = asyncio.create_task(self._flush_every_second())
        try:
            # A chunk holds about CHUNK jobs: with trials, fewer units, each run `trials` times
            # in a row, so a case's trials finish close together and its tallies are folded
            # (and forgotten) soon after. The first holds about FIRST_CHUNK jobs.
            for chunk in _batched(self.suite.iter_units(), max(1, CHUNK // self.trials),
                                  max(1, FIRST_CHUNK // self.trials)):
                jobs = self._plan_chunk(chunk)
                if jobs:
                    transport.submit(jobs)
                    await asyncio.sleep(0)  # the workers start these before the next is planned
                # Keep about one chunk queued beyond the one being planned: workers never run
                # dry, and memory stays bounded by two chunks.
                while len(self._in_flight) > CHUNK:
                    self._take_all(await transport.results())
                self._maybe_flush()
            self.store.finishing()
            while self._in_flight:  # every unit handed out: the last results come in
                self._take_all(await transport.results())
                self._flush_if_writer_idle()
        finally:
            flusher.cancel()
            await transport.close()
            if self._in_flight:  # stopped or broken: keep what finished all the same
                with contextlib.suppress(Exception):  # (the error that stopped it goes on)
                    self._take_all([r for r in transport.ready() if r.unit in self._in_flight])
            self.store.flush(wait=True)

    async def _flush_every_second(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS / 2)
            self._maybe_flush()

    def _flush_if_writer_idle(self) -> None:
        """Once every unit is handed out, hand what is pending to the store's writer whenever it
        is idle, rather than once a second: its rows are committed while the last cases still
        run, and what is left to commit after the last result is what came since (rather than
        up to a second of results, committed and merged after the calls have all ended)."""
        if self.store.pending and self.store.writer_idle:
            self.store.flush()
            self._last_flush = time.monotonic()

    def _maybe_flush(self) -> None:
        now = time.monotonic()
        if self.store.pending and (
            now - self._last_flush >= FLUSH_SECONDS or self.store.pending >= FLUSH_ROWS
        ):
            self.store.flush()
            self._last_flush = now

    # ---- keys --------------------------------------------------------------------------------

    def _case_key(self, slot: _Slot, source_key: str) -> str:
        """The judgments' shared key of this case (docs/concepts.md#digests-and-keys): one digest of
        (execution key, the case digest, and the source's execution key for a copy); a judgment's
        key is this followed by its evaluator's config digest, so nothing is hashed per judgment.

        The case digest covers `expected` (docs/concepts.md#digests-and-keys) and also the metadata:
        a case whose judgments are all cached is then known to be stored already, as it was run."""
        if slot.case_key is None:
            extra = source_key if slot.case.is_derived else ""
            slot.case_key = combine(slot.exec_key, slot.case.digest, extra)[
                7 : 7 + JUDGMENT_CASE_KEY]
        return slot.case_key

    def _execution_key(self, case: Case, trial: int = 1) -> str:
        """The execution key (docs/concepts.md#digests-and-keys); trial t > 1 adds its number
        (trial 1 keeps the key a run without trials has, so `trials: 1` reuses every stored
        execution, and raising `trials` runs only the new trials)."""
        transform = self.transform_digests.get(case.transform or "", "")
        key = combine(self._system_key, case.exec_digest, transform)
        return key if trial == 1 else combine(key, f"trial:{trial}")

    def _replay_key(self, case: Case, plan_digest: str, trial: int = 1) -> str:
        key = combine(self._system_key, case.digest, plan_digest)
        return key if trial == 1 else combine(key, f"trial:{trial}")

    # ---- planning a chunk --------------------------------------------------------------------

    def _plan_chunk(self, units: list[list[Case]]) -> list[UnitJob]:
        """Ask the caches for a chunk; tally or judge what needs no system; return the jobs."""
        planned = self._slots(units)
        cached = {} if self.no_cache else self.store.lookup_executions(
            [s.exec_key for slots in planned for s in slots])
        work = self._take_cached(planned, cached) if cached else planned
        if not work:
            return []
        reused = [s.exec_key for slots in work for s in slots if s.cached is not None]
        payloads = self.store.load_executions(reused) if reused else {}
        case_jobs = [[self._case_job(s, payloads) for s in slots] for slots in work]
        if self._judges and reused:
            self._judge_asks([job for jobs in case_jobs for job in jobs if job.cached])
        replays = self._replay_jobs(work) if self._faults else [[] for _ in work]
        jobs: list[UnitJob] = []
        unit = self._next_unit
        for slots, cases, replay_jobs in zip(work, case_jobs, replays, strict=True):
            # (trial, trials) in the fields' order: see `_tally` on keywords
            job = UnitJob(unit, cases, replay_jobs, slots[0].trial, self.trials)
            unit += 1
            if job.needs_system:
                self._in_flight[job.unit] = slots
                jobs.append(job)
            else:
                self._take(run_without_system(job, self.evaluators), slots)
        self._next_unit = unit
        return jobs

    def _slots(self, units: list[list[Case]]) -> list[list[_Slot]]:
        """Each trial of each unit of a chunk, as the slots of its cases (source first)."""
        planned: list[list[_Slot]] = []
        execution_key = self._execution_key
        seq = self._next_seq
        for unit in units:
            for case in unit:
                if case.transform is not None and case.pair_digest is not None:
                    self.pairs[case.transform][case.id] = case.pair_digest
            for trial in range(1, self.trials + 1):
                planned.append([_Slot(case, seq + n, execution_key(case, trial), trial)
                                for n, case in enumerate(unit)])
                seq += len(unit)
        self._next_seq = seq
        return planned

    def _take_cached(self, planned: list[list[_Slot]],
                     cached: dict[str, tuple[Any, float | None]]) -> list[list[_Slot]]:
        """Note what the caches hold of each slot; tally each unit whose executions and
        judgments are all cached; the units left to work on."""
        wanted: list[str] = []
        for slots in planned:
            source_key = slots[0].exec_key
            for slot in slots:
                slot.cached = cached.get(slot.exec_key)
                if slot.cached is not None:
                    case_key = self._case_key(slot, source_key)
                    wanted.extend([case_key + short for short in self._evaluator_keys])
        verdicts = self.store.lookup_judgments(wanted, self._judge_keys) if wanted else {}
        evaluators = len(self.evaluators)
        work: list[list[_Slot]] = []
        for slots in planned:
            if verdicts:
                for slot in slots:
                    if slot.case_key is not None:
                        keys = [slot.case_key + short for short in self._evaluator_keys]
                        slot.hits = {i: verdicts[k] for i, k in enumerate(keys) if k in verdicts}
            if all(s.cached is not None and len(s.hits) == evaluators for s in slots):
                for slot in slots:
                    self._tally_cached(slot)
            else:
                work.append(slots)
        return work

    def _judge_asks(self, jobs: list[CaseJob]) -> None:
        """The judge asks of cached executions still to be judged by a judge criterion, with
        the verdicts the judge cache holds (one query for the chunk): an unchanged case is
        never asked again, and a changed rubric asks without running the system."""
        evaluators = self.evaluators
        asked = []
        for job in jobs:
            positions = [i for i in job.judge if i in self._judges]
            if not positions:
                continue
            cached = job.cached
            assert cached is not None
            evidence = Evidence(job.case, cached.output, cached.artifacts,
                                latency_ms=cached.latency_ms, facts=cached.facts)
            job.asks = asks_for(evidence, evaluators, positions)
            asked.extend(job.asks)
        keys = [a.key for a in asked if a.key is not None and a.record is None]
        stored = self.store.lookup_judge_verdicts(keys) if keys and not self.no_cache else {}
        for ask in asked:
            if ask.key is not None and ask.record is None and ask.key in stored:
                ask.record = stored[ask.key]
                self.cache.judge_hit = (self.cache.judge_hit or 0) + 1

    def _replay_jobs(self, work: list[list[_Slot]]) -> list[list[ReplayJob]]:
        """Each unit's fault replays, with the stored records the replay cache holds."""
        wanted = [self._replays_wanted(slots[0]) for slots in work]
        keys = [key for each in wanted for _, key, _ in each]
        stored = {} if self.no_cache or not keys else self.store.lookup_replays(keys)
        return [[ReplayJob(i, key, plan, stored.get(key)) for i, key, plan in each]
                for each in wanted]

    def _case_job(self, slot: _Slot, payloads: dict[str, dict[str, Any]]) -> CaseJob:
        row = payloads.get(slot.exec_key) if slot.cached is not None else None
        if row is None:
            slot.cached, slot.hits = None, _NO_HITS  # not readable after all: run it again
            slot.judge = self._judge_all
            return CaseJob(slot.case, slot.judge)
        slot.judge = tuple(i for i in self._judge_all if i not in slot.hits)
        return CaseJob(slot.case, slot.judge, CachedExecution(
            row["output"], row["artifacts"], row["facts"], row["latency_ms"]))

    def _replays_wanted(self, source: _Slot) -> list[tuple[int, str, dict[str, Any]]]:
        """The fault replays this source case still needs (judged before: none)."""
        return [(i, self._replay_key(source.case, plan_digest, source.trial),
                 evaluator.plan(self.trials))
                for i, evaluator, plan_digest in self._faults if i not in source.hits]

    # ---- taking results ----------------------------------------------------------------------

    def _take_all(self, results: Iterable[UnitResult]) -> None:
        self.progress.busy = self.transport.busy()
        for result in results:
            # A result that arrives twice (a worker lost after it sent it, its job sent again)
            # is taken once: the first one is stored and tallied, the second is dropped.
            slots = self._in_flight.pop(result.unit, None)
            if slots is not None:
                self._take(result, slots)
        self._maybe_flush()

    @property
    def retried(self) -> int:
        """How many cases were sent to a worker again because theirs was lost."""
        return self.transport.retried

    @property
    def nodes(self) -> list[str] | None:
        """The cluster nodes the workers ran on (Ray), or None."""
        return self.transport.nodes

    def _take(self, result: UnitResult, slots: list[_Slot]) -> None:
        """Store and tally one unit's result."""
        if result.failure is not None:
            for slot in slots:
                if slot.cached is None:  # (it was looked up, and will be again next run)
                    self.cache.execution_miss += 1
                else:
                    self.cache.execution_hit += 1
                self._tally_errored(slot, result.failure)
            return
        for key, record in result.replays:
            self.replays_run += 1
            self.store.add_replay(key, record)
        if result.verdicts:
            self.cache.judge_miss = (self.cache.judge_miss or 0) + len(result.verdicts)
            for key, record in result.verdicts:
                self.store.add_judge_verdict(key, record)
        source_key = slots[0].exec_key
        for slot, case_result in zip(slots, result.cases, strict=True):
            self._take_case(slot, case_result, source_key)

    def _take_case(self, slot: _Slot, result: CaseResult, source_key: str) -> None:
        case = slot.case
        store = self.store
        store.add_case(case)
        execution = result.execution
        exec_key = slot.exec_key
        error: str | None = None
        if execution is None:
            self.cache.execution_hit += 1
            assert slot.cached is not None
            facts, latency = slot.cached
        else:
            self.cache.execution_miss += 1
            facts, latency = execution.facts, execution.latency_ms
            for attempt, earlier in enumerate(execution.attempt_errors, 1):
                self._record_error(slot, earlier, attempt, retried=True)
            if execution.error is not None:
                error = execution.error.kind
                self._record_error(slot, execution.error, execution.attempts)
        judgments = result.judgments
        hits = slot.hits
        self.cache.judgment_hit += len(hits)
        self.cache.judgment_miss += len(judgments)
        if hits:  # some verdicts were cached: each criterion's from where it is
            judged = dict(zip(slot.judge, judgments, strict=True))
            verdicts = [hits[i] if i in hits else (judged[i].code, judged[i].reason)
                        for i in self._judge_all]
            codes = "".join([verdict[0] for verdict in verdicts])
            reasons = tuple([verdict[1] for verdict in verdicts])
        else:
            codes = "".join([judgment.code for judgment in judgments])
            reasons = tuple([judgment.reason for judgment in judgments])
        case_key = None
        if error is None:
            case_key = self._case_key(slot, source_key)
            if judgments:
                evaluator_keys = self._evaluator_keys
                kept = {evaluator_keys[i]: (judgment.code, judgment.reason, judgment.details)
                        for i, judgment in zip(slot.judge, judgments, strict=True)}
                if self._judges:
                    self._judge_failures(slot, kept)
                try:
                    if kept:
                        store.add_judgments(case_key, kept)
                except Unstorable:  # (the details of a judgment: the case errors, uncached)
                    self._record_error(slot, self._unstorable_judgment(slot, judgments),
                                       1 if execution is None else execution.attempts)
                    n = len(self.evaluators)
                    codes, reasons = "M" * n, ("case_errored",) * n
                    case_key, error = None, ErrorKind.UNSTORABLE_OUTPUT
            if execution is not None and error is None:
                exec_key = self._keep_execution(slot, execution)
        shown = self._shown(slot, judgments) if self._judges and error is None else None
        self._tally(slot, codes, reasons, case_key, None if error is not None else facts,
                    latency, error=error, cached=False, exec_key=exec_key,
                    noted=execution is not None and execution.snapshot_error is not None,
                    attempts=1 if execution is None else execution.attempts, shown=shown)

    def _judge_failures(self, slot: _Slot, kept: dict[str, Any]) -> None:
        """A judge that failed (`judge_error`, `judge_unparseable`) is recorded as the run's
        error of that kind, and its judgment is not cached: the next run asks again. The
        case itself is not errored: its other criteria stand."""
        for short in self._judge_keys:
            entry = kept.get(short)
            if entry is not None and entry[1] in JUDGE_FAILURES:
                del kept[short]
                self.cache.judge_miss = (self.cache.judge_miss or 0) + 1
                details = entry[2] or {}
                self._record_error(slot, CaseError(
                    ErrorKind(entry[1]), f"{details.get('judge', 'the judge')}: "
                    f"{details.get('error') or entry[1]}"))

    def _shown(self, slot: _Slot, judgments: list[Any]) -> list[str | None]:
        """The digest of what each judge criterion's judge was shown for this case (None for
        the other criteria), from the judgments made now or the cached ones."""
        made = dict(zip(slot.judge, judgments, strict=True))
        shown: list[str | None] = [None] * len(self.evaluators)
        for i in self._judges:
            if i in made:
                details = made[i].details
            else:
                hit = slot.hits.get(i)
                details = hit[2] if hit is not None and len(hit) > 2 else None
            if isinstance(details, dict) and isinstance(details.get("shown_digest"), str):
                shown[i] = details["shown_digest"]
        return shown

    def _unstorable_judgment(self, slot: _Slot, judgments: list[Judgment]) -> CaseError:
        """Which judgment of a case the store cannot keep, and why."""
        for i, judgment in zip(slot.judge, judgments, strict=True):
            criterion = self.evaluators[i].criterion
            # (as the row holds it: the details are three levels down)
            problem = storable_problem({criterion: [judgment.code, judgment.reason,
                                                    judgment.details]}, ("judgments",))
            if problem is not None:
                return CaseError(ErrorKind.UNSTORABLE_OUTPUT,
                                 f"the judgment of {criterion} cannot be stored: {problem}")
        return CaseError(ErrorKind.UNSTORABLE_OUTPUT, "a judgment of this case cannot be stored")

    def _keep_execution(self, slot: _Slot, execution: Execution) -> str:
        """Write a fresh execution and its artifacts; the key it is stored under."""
        case = slot.case
        for text in execution.texts:
            if text.text is None:  # a `$ref` initial state: serialised once per run, here
                self.store.add_artifact_text(text.hash, text.kind, text.base, None,
                                             lazy_payload=case.initial_state or {})
            else:
                self.store.add_artifact_text(text.hash, text.kind, text.base, text.text)
        key = slot.exec_key
        if execution.snapshot_error is not None:
            self._record_error(slot, execution.snapshot_error, execution.attempts)
            key = UNCACHED_PREFIX + key
        assert execution.output_text is not None
        self.store.add_execution(key, case.digest, execution.output_text, execution.artifacts,
                                 execution.facts, execution.latency_ms)
        return key

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The run's errors in the dataset's order (each case's trials in turn), not in the
        order the cases happened to finish: the same run reads the same every time."""
        return [entry for _, entry in sorted(self._errors, key=lambda e: e[0])]

    def _record_error(self, slot: _Slot, error: CaseError, attempt: int = 1,
                      retried: bool = False) -> None:
        """Keep an error of a case; `retried`: an attempt another followed (stored, and shown
        by `inspect`, but not the case's error)."""
        case = slot.case
        if not retried:
            entry: dict[str, Any] = {"case": case.id, "kind": error.kind,
                                     "message": error.message}
            if self.trials > 1:
                entry["trial"] = slot.trial
            self._errors.append((slot.seq, entry))
        self.store.add_error(self.run_id, case.id, error.kind, error.message, error.traceback,
                             trial=slot.trial, attempt=attempt, retried=retried)

    # ---- tallying ----------------------------------------------------------------------------

    def _tally_cached(self, slot: _Slot) -> None:
        assert slot.cached is not None
        facts, latency = slot.cached
        hits = slot.hits
        self.cache.execution_hit += 1
        self.cache.judgment_hit += len(hits)
        codes = "".join([hits[i][0] for i in self._judge_all])
        reasons = tuple([hits[i][1] for i in self._judge_all])
        self._tally(slot, codes, reasons, slot.case_key, facts, latency, error=None,
                    cached=True, exec_key=slot.exec_key,
                    shown=self._shown(slot, []) if self._judges else None)

    def _tally_errored(self, slot: _Slot, error: CaseError) -> None:
        self.store.add_case(slot.case)
        self._record_error(slot, error)
        n = len(self.evaluators)
        self._tally(slot, "M" * n, ("case_errored",) * n, None, None, None, error=error.kind,
                    cached=False, exec_key=slot.exec_key)

    def _tally(
        self, slot: _Slot, codes: str, reasons: tuple[str | None, ...], case_key: str | None,
        facts: dict[str, Any] | None, latency: float | None, *, error: str | None,
        cached: bool, exec_key: str, noted: bool = False, attempts: int = 1,
        shown: list[str | None] | None = None,
    ) -> None:
        case = slot.case
        # In the fields' order, not by keyword: a class called with keywords first gathers
        # them into a dict (for these sixteen, twice the time of making the outcome).
        outcome = CaseOutcome(case.id, codes, reasons, case_key, facts, latency,
                              self.slice_groups(facts, case.metadata), error, case.source_id,
                              case.transform, case.cluster, cached, slot.trial, case.digest,
                              attempts, noted)
        if shown is not None:
            outcome.shown = shown
        assert self.analysis is not None
        self.analysis.add(outcome)
        self.store.add_run_case(self.run_id, slot.seq, case.id, case.digest, exec_key,
                                outcome.to_json())
        self.progress.case_done(error is not None or noted, cached)

__all__ = ["CacheCounts", "Progress", "RunEngine"]
