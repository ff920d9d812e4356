"""The coordinator of one run: cache lookups → jobs for workers → results → store and tallies.

Units (a source case with its metamorphic copies) stream through in chunks. For each chunk the
caches are asked once (one query per table, not one per case). A unit whose executions and
judgments are all cached is tallied straight from the stored facts and verdicts, without
reading its output; a unit that needs no system call (its executions and replays are cached,
only some judgments are not) is judged here; the rest become `UnitJob`s, handed in batches to
the transport, which runs them whole on a worker and returns `UnitResult`s in bulk. Results
are written through the store's batched background writer, at least once a second.

This module is the run loop and the planning of each chunk; the keys of each case come from
`keys.RunKeys`, and what comes back is stored and tallied by `intake.ResultIntake`. A run
whose executions come from a stored run (`executions_from`, `stored_run.StoredExecutions`:
`oloproof rescore`) is planned the same way, and never sends a unit to the system: a unit the
stored run cannot give whole is left out and listed (`refused`).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from oloproof.analysis.metrics import Analysis
from oloproof.digest import digest
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.faults import FaultRecovery
from oloproof.execution.intake import NO_HITS, CacheCounts, PlannedCase, Progress, ResultIntake
from oloproof.execution.judging import asks_for, judge_positions
from oloproof.execution.keys import RunKeys
from oloproof.execution.procedure import run_without_system
from oloproof.execution.retries import Throttle
from oloproof.execution.simulating import plan_conversation
from oloproof.execution.stored_run import Refusal, StoredExecutions, first_refusals
from oloproof.execution.suite_to_run import SuiteToRun
from oloproof.execution.transports import Transport, local_transport
from oloproof.execution.units import CachedExecution, CaseJob, ReplayJob, UnitJob, UnitResult
from oloproof.execution.worker import Worker
from oloproof.recording.recorder import Variant
from oloproof.store.store import Store
from oloproof.suite.case import Case

CHUNK = 512
# The first chunk is smaller: the first calls start once its cases are read, digested and
# looked up, not 512 cases' worth later; the next chunk is planned while they run.
FIRST_CHUNK = 64
FLUSH_SECONDS = 1.0
FLUSH_ROWS = 20_000


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
        transport: Transport | None = None, executions_from: StoredExecutions | None = None,
        variant: Variant = (), first_unit: int = 0,
    ) -> None:
        self.suite = suite
        # Where executions come from when not from the system: a stored run's (its units only).
        self.executions_from = executions_from
        self._refused: list[tuple[int, Refusal]] = []
        self.store = store
        self.run_id = run_id
        self.no_cache = no_cache
        system = suite.config.system
        self.concurrency = concurrency or system.concurrency
        # Where jobs go: the workers the executor started (`transports.open_transport`), which
        # several runs may share (a run per combination of system.variants) and whoever opened
        # them closes; or by default the suite's own system in this process, closed by `run`.
        self._owns_transport = transport is None
        # Workers elsewhere make each case's stored rows themselves (`rows.py`): the
        # coordinator's process, which does everything else of the run, only adds them.
        self._rows_elsewhere = transport is not None and suite.execution.executor != "local"
        self.transport = transport if transport is not None else local_transport(
            [Worker(suite.target, suite.evaluators, system.timeout_s, retries=suite.retries,
                    throttle=Throttle() if suite.retries is not None else None)],
            self.concurrency, verdicts=store.lookup_judge_verdicts)
        self.evaluators = suite.evaluators
        self.trials = suite.trials
        self.progress = progress or Progress(total=suite.case_count * suite.trials)
        self.cache = CacheCounts()
        # The run's combination of system.variants (docs/board.md): what every job carries to
        # `current_case().variant`, and part of every execution key.
        self.variant = variant
        self.keys = RunKeys.of(suite, variant)
        # Where results go: made by `run`, with the analysis it tallies into.
        self.intake: ResultIntake | None = None
        self._last_flush = time.monotonic()
        self._next_seq = 0
        # Unit numbers go on from the run before on a shared transport: a result that comes
        # back late (a job sent again after a lost worker) is never taken for this run's.
        self._next_unit = first_unit
        self._retried_before = 0
        # transform -> derived case id -> pair digest (validity labels are matched on these)
        self.pairs: dict[str, dict[str, str]] = {t.name: {} for t, _ in suite.transforms}
        self._faults = [(i, e, digest(e.plan(self.trials)))
                        for i, e in enumerate(suite.evaluators) if isinstance(e, FaultRecovery)]
        self._judge_all = tuple(range(len(suite.evaluators)))
        # The judge criteria (docs/judges.md): their evaluator positions and keys.
        self._judges = judge_positions(suite.evaluators)
        self._judge_keys = frozenset(self.keys.evaluators[i] for i in self._judges)
        if self._judges:
            self.cache.judge_hit = self.cache.judge_miss = 0
        # The simulators that play the cases' users (docs/conversations.md), by name.
        self._simulators = {s.name: s for s in suite.config.simulators}

    # ---- the run ---------------------------------------------------------------------------

    async def run(self, analysis: Analysis) -> None:
        """Execute and judge every case; tallies go to `analysis`. Cancellation-safe."""
        self.intake = intake = self._intake(analysis)
        in_flight = intake.in_flight
        self.store.start_writer()  # commits happen beside the event loop, not in it
        transport = self.transport
        self.progress.workers = transport.workers
        self._retried_before = transport.retried
        keep = CHUNK + transport.ahead
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
                # Keep about one chunk queued beyond the one being planned, and beyond what
                # workers elsewhere hold (`ahead`): workers never run dry, and memory stays
                # bounded by two chunks and that.
                while len(in_flight) > keep:
                    self._take_all(await transport.results())
                self._maybe_flush()
            self.store.finishing()
            while in_flight:  # every unit handed out: the last results come in
                self._take_all(await transport.results())
                self._flush_if_writer_idle()
        finally:
            flusher.cancel()
            if self._owns_transport:
                await transport.close()
            if in_flight:  # stopped or broken: keep what finished all the same
                with contextlib.suppress(Exception):  # (the error that stopped it goes on)
                    self._take_all([r for r in transport.ready() if r.unit in in_flight])
            self.store.flush(wait=True)

    def _intake(self, analysis: Analysis) -> ResultIntake:
        """What takes this run's results into the store and `analysis`."""
        return ResultIntake(self.store, analysis, self.cache, self.progress, run_id=self.run_id,
                            suite=self.suite, keys=self.keys, judges=self._judges)

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

    # ---- planning a chunk --------------------------------------------------------------------

    def _plan_chunk(self, units: list[list[Case]]) -> list[UnitJob]:
        """Ask the caches for a chunk; tally or judge what needs no system; return the jobs."""
        intake = self.intake
        assert intake is not None
        planned = self._planned(units)
        cached = {} if self.no_cache else self.store.lookup_executions(
            [p.exec_key for cases in planned for p in cases])
        if self.executions_from is not None:
            planned = self._from_stored_run(planned, cached)
        work = self._take_cached(planned, cached, intake) if cached else planned
        if not work:
            return []
        reused = [p.exec_key for cases in work for p in cases if p.cached is not None]
        payloads = self.store.load_executions(reused) if reused else {}
        case_jobs = [[self._case_job(p, payloads) for p in cases] for cases in work]
        if self._judges and reused:
            self._judge_asks([job for jobs in case_jobs for job in jobs if job.cached])
        if self._simulators:
            self._stored_turns(work, case_jobs)
        replays = self._replay_jobs(work) if self._faults else [[] for _ in work]
        jobs: list[UnitJob] = []
        unit = self._next_unit
        rows = intake.making if self._rows_elsewhere else None
        for cases, unit_case_jobs, replay_jobs in zip(work, case_jobs, replays, strict=True):
            # (trial, trials) in the fields' order: see `ResultIntake._tally` on keywords
            job = UnitJob(unit, unit_case_jobs, replay_jobs, cases[0].trial, self.trials,
                          self.variant, rows)
            if self.executions_from is not None and not self._whole(job, cases):
                continue  # (what the system would have to run: left out, listed)
            unit += 1
            if job.needs_system:
                intake.in_flight[job.unit] = cases
                jobs.append(job)
            else:
                intake.take(run_without_system(job, self.evaluators), cases)
        self._next_unit = unit
        return jobs

    def _from_stored_run(self, planned: list[list[PlannedCase]],
                         cached: dict[str, tuple[Any, float | None]]
                         ) -> list[list[PlannedCase]]:
        """The planned units the stored run gives whole — every case and trial of the unit
        held by it, unchanged, its execution in the store; the others are listed, not run."""
        source = self.executions_from
        assert source is not None
        refused: dict[str, Refusal] = {}  # by the unit's source case id
        for cases in planned:
            head = cases[0].case.id
            if head in refused:
                continue
            for p in cases:
                why = source.refusal(p.case.id, p.trial, p.case.digest, p.exec_key)
                if why is None and p.exec_key not in cached:
                    why = Refusal(p.case.id, "not_stored")
                if why is not None:
                    refused[head] = why
                    break
        if not refused:
            return planned
        kept = []
        for cases in planned:
            if cases[0].case.id in refused:
                self._refuse(cases, refused[cases[0].case.id])
            else:
                kept.append(cases)
        return kept

    def _whole(self, job: UnitJob, cases: list[PlannedCase]) -> bool:
        """Whether a unit of a run from a stored run needs nothing of the system (judges may
        still be asked); if it does, it is listed and left out."""
        if all(c.cached is not None for c in job.cases) and \
                all(r.record is not None for r in job.replays):
            return True
        lost = next((c.case.id for c in job.cases if c.cached is None), None)
        self._refuse(cases, Refusal(lost, "not_stored") if lost is not None
                     else Refusal(cases[0].case.id, "replay_not_stored"))
        return False

    def _refuse(self, cases: list[PlannedCase], why: Refusal) -> None:
        self._refused.append((cases[0].seq, why))
        self.progress.total -= len(cases)

    @property
    def refused(self) -> list[Refusal]:
        """The source cases a run from a stored run left out, each with why, in dataset
        order (empty for any other run)."""
        return first_refusals(why for _, why in sorted(self._refused, key=lambda r: r[0]))

    def _planned(self, units: list[list[Case]]) -> list[list[PlannedCase]]:
        """Each trial of each unit of a chunk, as its planned cases (source first)."""
        planned: list[list[PlannedCase]] = []
        execution_key = self.keys.execution
        seq = self._next_seq
        for unit in units:
            for case in unit:
                if case.transform is not None and case.pair_digest is not None:
                    self.pairs[case.transform][case.id] = case.pair_digest
            for trial in range(1, self.trials + 1):
                planned.append([PlannedCase(case, seq + n, execution_key(case, trial), trial)
                                for n, case in enumerate(unit)])
                seq += len(unit)
        self._next_seq = seq
        return planned

    def _take_cached(self, planned: list[list[PlannedCase]],
                     cached: dict[str, tuple[Any, float | None]], intake: ResultIntake,
                     ) -> list[list[PlannedCase]]:
        """Note what the caches hold of each planned case; tally each unit whose executions
        and judgments are all cached; the units left to work on."""
        wanted: list[str] = []
        judgment_keys, case_key = self.keys.judgments, self.keys.case
        for cases in planned:
            source_key = cases[0].exec_key
            for p in cases:
                p.cached = cached.get(p.exec_key)
                if p.cached is not None:
                    p.case_key = case_key(p.case, p.exec_key, source_key)
                    wanted.extend(judgment_keys(p.case_key))
        verdicts = self.store.lookup_judgments(wanted, self._judge_keys) if wanted else {}
        evaluators = len(self.evaluators)
        work: list[list[PlannedCase]] = []
        for cases in planned:
            if verdicts:
                for p in cases:
                    if p.case_key is not None:
                        keys = judgment_keys(p.case_key)
                        p.hits = {i: verdicts[k] for i, k in enumerate(keys) if k in verdicts}
            if all(p.cached is not None and len(p.hits) == evaluators for p in cases):
                for p in cases:
                    intake.tally_cached(p)
            else:
                work.append(cases)
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
        # (under --no-cache too: a verdict is of what the judge was shown, which running the
        # system again cannot change; docs/judges.md#the-judge-cache)
        stored = self.store.lookup_judge_verdicts(keys) if keys else {}
        for ask in asked:
            if ask.key is not None and ask.record is None and ask.key in stored:
                ask.record = stored[ask.key]
                self.cache.judge_hit = (self.cache.judge_hit or 0) + 1

    def _stored_turns(self, work: list[list[PlannedCase]], jobs: list[list[CaseJob]]) -> None:
        """Each simulated user to be asked for turns gets the turns the store holds of its
        conversation (one query for the chunk; under --no-cache too: a re-run meets the same
        user, docs/conversations.md#seeds-and-caching)."""
        wanted: list[tuple[CaseJob, str]] = []
        keys = self.keys.simulators
        for cases, case_jobs in zip(work, jobs, strict=True):
            for planned, job in zip(cases, case_jobs, strict=True):
                name = planned.case.simulator
                if job.cached is None and name is not None:
                    plan = plan_conversation(planned.case, planned.trial,
                                             self._simulators[name], keys[name])
                    wanted.append((job, plan.key))
        if not wanted:
            return
        stored = self.store.lookup_simulator_turns(list(dict.fromkeys(k for _, k in wanted)))
        for job, key in wanted:
            job.turns = stored.get(key)

    def _replay_jobs(self, work: list[list[PlannedCase]]) -> list[list[ReplayJob]]:
        """Each unit's fault replays, with the stored records the replay cache holds."""
        wanted = [self._replays_wanted(cases[0]) for cases in work]
        keys = [key for each in wanted for _, key, _ in each]
        stored = {} if self.no_cache or not keys else self.store.lookup_replays(keys)
        return [[ReplayJob(i, key, plan, stored.get(key)) for i, key, plan in each]
                for each in wanted]

    def _case_job(self, planned: PlannedCase, payloads: dict[str, dict[str, Any]]) -> CaseJob:
        row = payloads.get(planned.exec_key) if planned.cached is not None else None
        if row is None:
            planned.cached, planned.hits = None, NO_HITS  # not readable after all: run it again
            planned.judge = self._judge_all
            return CaseJob(planned.case, planned.judge, None, None, None, planned.exec_key)
        planned.judge = tuple(i for i in self._judge_all if i not in planned.hits)
        return CaseJob(planned.case, planned.judge, CachedExecution(
            row["output"], row["artifacts"], row["facts"], row["latency_ms"]), None, None,
            planned.exec_key, planned.hits or None)

    def _replays_wanted(self, source: PlannedCase) -> list[tuple[int, str, dict[str, Any]]]:
        """The fault replays this source case still needs (judged before: none)."""
        return [(i, self.keys.replay(source.case, plan_digest, source.trial),
                 evaluator.plan(self.trials))
                for i, evaluator, plan_digest in self._faults if i not in source.hits]

    # ---- taking results ----------------------------------------------------------------------

    def _take_all(self, results: Iterable[UnitResult]) -> None:
        self.progress.busy = self.transport.busy()
        assert self.intake is not None
        self.intake.take_all(results)
        self._maybe_flush()

    @property
    def errors(self) -> list[dict[str, Any]]:
        """The run's errors in the dataset's order (`ResultIntake.errors`)."""
        return [] if self.intake is None else self.intake.errors

    @property
    def replays_run(self) -> int:
        """How many fault replays ran (not taken from the replay cache)."""
        return 0 if self.intake is None else self.intake.replays_run

    @property
    def next_unit(self) -> int:
        """The number the next run on this transport starts its units at."""
        return self._next_unit

    @property
    def retried(self) -> int:
        """How many cases of this run were sent to a worker again because theirs was lost."""
        return self.transport.retried - self._retried_before

    @property
    def nodes(self) -> list[str] | None:
        """The cluster nodes the workers ran on (Ray), or None."""
        return self.transport.nodes


__all__ = ["CacheCounts", "Progress", "RunEngine"]
