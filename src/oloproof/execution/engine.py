"""One run, end to end: cache lookup → execute → judge → tally → store (ARCHITECTURE flow).

Cases stream through in chunks. For each chunk the caches are asked once (one query per table,
not one per case); a case whose execution and judgments are all cached is tallied straight from
the stored facts and verdicts without reading its output. The rest run as tasks, a bounded
number at a time, each unit being a source case with its metamorphic copies (they are judged
together). Finished work is written in batches, at least once a second.
"""

from __future__ import annotations

import asyncio
import time
import traceback
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from oloproof.analysis.facts import slice_group, trajectory_facts
from oloproof.analysis.metrics import Analysis
from oloproof.analysis.outcome import CaseOutcome
from oloproof.digest import canonical_json, combine, digest, sha256_text
from oloproof.evaluators.base import judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.faults import FaultRecovery
from oloproof.execution.calls import CallResult, SystemCaller
from oloproof.execution.plan import SuiteToRun
from oloproof.execution.replays import fault_replay
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory
from oloproof.store.store import JUDGMENT_CASE_KEY, Store
from oloproof.suite.cases import Case

CHUNK = 512
FLUSH_SECONDS = 1.0
FLUSH_ROWS = 20_000


@dataclass
class Progress:
    """Counts a progress display reads; `on_change` is called after each case."""

    total: int
    done: int = 0
    errors: int = 0
    cache_hits: int = 0
    on_change: Callable[[Progress], None] | None = None

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

    def to_json(self) -> dict[str, dict[str, int]]:
        return {
            "execution": {"hit": self.execution_hit, "miss": self.execution_miss},
            "judgment": {"hit": self.judgment_hit, "miss": self.judgment_miss},
        }


@dataclass
class _Slot:
    """One case of a chunk, with its keys and what the caches already hold."""

    case: Case
    seq: int
    exec_key: str
    cached: tuple[Any, float | None] | None = None  # (facts, latency_ms) if executed before
    judgment_keys: list[str] = field(default_factory=list)


def _batched(items: Iterable[Any], size: int) -> Iterator[list[Any]]:
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


class RunEngine:
    """Executes and judges a loaded suite into a store under one run id."""

    def __init__(
        self, suite: SuiteToRun, store: Store, run_id: str, *, no_cache: bool = False,
        concurrency: int | None = None, progress: Progress | None = None,
    ) -> None:
        self.suite = suite
        self.store = store
        self.run_id = run_id
        self.no_cache = no_cache
        system = suite.config.system
        self.concurrency = concurrency or system.concurrency
        self.caller = SystemCaller(suite.target, self.concurrency, system.timeout_s)
        self.evaluators = suite.evaluators
        self.slices = list(suite.config.slices)
        self.progress = progress or Progress(total=suite.case_count)
        self.cache = CacheCounts()
        self.errors: list[dict[str, Any]] = []
        self.analysis: Analysis | None = None
        self.transform_digests = {t.name: d for t, d in suite.transforms}
        self._system_key = suite.system_key
        self._evaluator_keys = [e.cache_key for e in suite.evaluators]
        self._last_flush = time.monotonic()
        self._state_hashes: dict[int, str] = {}
        self._next_seq = 0
        # transform -> derived case id -> pair digest (validity labels are matched on these)
        self.pairs: dict[str, dict[str, str]] = {t.name: {} for t, _ in suite.transforms}
        self.fault_evaluators = [e for e in suite.evaluators if isinstance(e, FaultRecovery)]
        self.replays_run = 0

    # ---- the run ---------------------------------------------------------------------------

    async def run(self, analysis: Analysis) -> None:
        """Execute and judge every case; tallies go to `analysis`. Cancellation-safe."""
        self.analysis = analysis
        self.store.start_writer()  # commits happen beside the event loop, not in it
        window = asyncio.Semaphore(max(4 * self.concurrency, 32))
        tasks: set[asyncio.Task[None]] = set()
        flusher = asyncio.create_task(self._flush_every_second())
        try:
            for chunk in _batched(self.suite.iter_units(), CHUNK):
                await self._run_chunk(chunk, window, tasks)
                self._maybe_flush()
            if tasks:
                await asyncio.gather(*tasks)
        except BaseException:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        finally:
            flusher.cancel()
            self.caller.close()
            self.store.flush(wait=True)

    async def _flush_every_second(self) -> None:
        while True:
            await asyncio.sleep(FLUSH_SECONDS / 2)
            self._maybe_flush()

    def _maybe_flush(self) -> None:
        now = time.monotonic()
        if self.store.pending and (
            now - self._last_flush >= FLUSH_SECONDS or self.store.pending >= FLUSH_ROWS
        ):
            self.store.flush()
            self._last_flush = now

    def _judgment_keys(self, slot: _Slot, source_key: str) -> list[str]:
        """The judgment cache key of each evaluator on this case (SPEC §4.2).

        One digest per case of (execution key, expected, and the source's execution key for a
        copy), joined with each evaluator's config digest: no hashing per judgment.
        """
        case_key = self._case_key(slot, source_key)
        return [case_key + short for short in self._evaluator_keys]

    def _case_key(self, slot: _Slot, source_key: str) -> str:
        # The case digest covers `expected` (SPEC §4.2) and also the metadata: a case whose
        # judgments are all cached is then known to be stored already, as it was run.
        extra = source_key if slot.case.is_derived else ""
        return combine(slot.exec_key, slot.case.digest, extra)[7 : 7 + JUDGMENT_CASE_KEY]

    def _execution_key(self, case: Case) -> str:
        transform = self.transform_digests.get(case.transform or "", "")
        return combine(self._system_key, case.exec_digest, transform)

    async def _run_chunk(
        self, units: list[list[Case]], window: asyncio.Semaphore, tasks: set[asyncio.Task[None]]
    ) -> None:
        planned: list[list[_Slot]] = []
        for unit in units:
            slots = []
            for case in unit:
                slots.append(_Slot(case, self._next_seq, self._execution_key(case)))
                self._next_seq += 1
                if case.transform is not None and case.pair_digest is not None:
                    self.pairs[case.transform][case.id] = case.pair_digest
            planned.append(slots)
        every = [slot for slots in planned for slot in slots]
        cached = {} if self.no_cache else self.store.lookup_executions(
            [s.exec_key for s in every])
        wanted: list[str] = []
        for slots in planned:
            source_key = slots[0].exec_key
            for slot in slots:
                slot.cached = cached.get(slot.exec_key)
                if slot.cached is not None:
                    slot.judgment_keys = self._judgment_keys(slot, source_key)
                    wanted.extend(slot.judgment_keys)
        verdicts = self.store.lookup_judgments(wanted) if wanted else {}
        need_payload: list[str] = []
        work: list[list[_Slot]] = []
        for slots in planned:
            if all(s.cached is not None and all(k in verdicts for k in s.judgment_keys)
                   for s in slots):
                for slot in slots:
                    self._tally_cached(slot, verdicts)
            else:
                work.append(slots)
                need_payload.extend(s.exec_key for s in slots if s.cached is not None)
        payloads = self.store.load_executions(need_payload) if need_payload else {}
        for slots in work:
            await window.acquire()
            task = asyncio.create_task(self._run_unit(slots, payloads, verdicts))
            tasks.add(task)

            def finished(done: asyncio.Task[None]) -> None:
                tasks.discard(done)
                window.release()

            task.add_done_callback(finished)

    # ---- a unit: a source case and its copies ---------------------------------------------

    async def _run_unit(
        self, slots: list[_Slot], payloads: dict[str, dict[str, Any]],
        verdicts: dict[str, tuple[str, str | None]],
    ) -> None:
        try:
            if len(slots) == 1:  # most units: no metamorphic copies, no gather task needed
                evidence = [await self._evidence(slots[0], payloads)]
            else:
                evidence = list(await asyncio.gather(
                    *(self._evidence(s, payloads) for s in slots)))
            source = evidence[0]
            for item in evidence[1:]:
                item.source = source
            if self.fault_evaluators:
                await self._replays(slots[0], source, verdicts)
            for slot, item in zip(slots, evidence, strict=True):
                self._judge_and_tally(slot, item, verdicts, source_key=slots[0].exec_key)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # an engine bug must not stop the run: the unit errors
            text = "".join(traceback.format_exception(exc))
            for slot in slots:
                self._tally_errored(slot, "engine_error", f"{type(exc).__name__}: {exc}", text)

    async def _evidence(self, slot: _Slot, payloads: dict[str, dict[str, Any]]) -> Evidence:
        case = slot.case
        self.store.add_case(case)
        row = payloads.get(slot.exec_key) if slot.cached is not None else None
        if row is not None:
            self.cache.execution_hit += 1
            return Evidence(case, row["output"], row["artifacts"], latency_ms=row["latency_ms"],
                            initial_state=case.initial_state, facts=row["facts"])
        self.cache.execution_miss += 1
        result = await self.caller.call(case)
        return self._keep_execution(slot, result)

    def _keep_execution(self, slot: _Slot, result: CallResult) -> Evidence:
        case = slot.case
        if result.error is not None:
            self._record_error(case, result.error.kind, result.error.message,
                               result.error.traceback)
            return Evidence(case, None, {}, errored=f"{result.error.kind}: {result.error.message}",
                            latency_ms=result.latency_ms, initial_state=case.initial_state)
        assert result.output is not None
        refs: dict[str, str] = {}
        trajectory = result.trajectory
        facts = trajectory_facts(trajectory) if trajectory is not None else None
        for kind, payload in result.artifacts.items():
            if kind == STATE_KIND:
                refs[kind] = self._store_end_state(case, result)
            elif kind == TRAJECTORY_KIND and isinstance(payload, AgentTrajectory):
                # pydantic's own serialiser: deterministic for a given model and much faster
                # than sorting keys in Python (equal trajectories built in another key order
                # are stored twice, which costs space, never correctness).
                text = payload.model_dump_json()
                refs[kind] = sha256_text(text)
                self.store.add_artifact_text(refs[kind], kind, None, text)
            else:
                refs[kind] = self._store_artifact(kind, payload)
        self.store.add_execution(slot.exec_key, case.digest, result.output, refs, facts,
                                 result.latency_ms)
        return Evidence(case, result.output, result.artifacts, latency_ms=result.latency_ms,
                        initial_state=case.initial_state, facts=facts, _trajectory=trajectory)

    async def _replays(
        self, slot: _Slot, evidence: Evidence, verdicts: dict[str, tuple[str, str | None]]
    ) -> None:
        """Fault replays this source case still needs (cached by system version and case)."""
        if evidence.errored is not None or evidence.trajectory is None:
            return
        wanted: list[tuple[Any, str]] = []
        keys = dict(zip(self.evaluators, self._judgment_keys(slot, slot.exec_key), strict=True))
        for evaluator in self.fault_evaluators:
            if slot.cached is not None and keys[evaluator] in verdicts:
                continue  # judged before: no replay needed
            plan = evaluator.plan()
            wanted.append((evaluator, combine(self.suite.system_key, slot.case.digest,
                                              digest(plan))))
        if not wanted:
            return
        stored = {} if self.no_cache else self.store.lookup_replays([k for _, k in wanted])
        for evaluator, key in wanted:
            record = stored.get(key)
            if record is None:
                record = await fault_replay(self.caller, slot.case, evidence.trajectory,
                                            evaluator.plan())
                self.replays_run += 1
                self.store.add_replay(key, record)
            evidence.replays[evaluator.criterion] = record | {"key": key}

    def _store_artifact(self, kind: str, payload: Any) -> str:
        text = canonical_json(payload)
        content_hash = sha256_text(text)
        self.store.add_artifact_text(content_hash, kind, None, text)
        return content_hash

    def _store_end_state(self, case: Case, result: CallResult) -> str:
        """The end state as a diff against the content-addressed initial state."""
        initial = case.initial_state or {}
        base = self._state_hashes.get(id(initial))
        if base is None:
            base = case.state_ref or digest(initial)
            self.store.add_artifact_text(base, "initial_state", None,
                                         None if case.state_ref else canonical_json(initial),
                                         lazy_payload=initial)
            if case.state_ref is not None:  # shared by reference: hashed once per run
                self._state_hashes[id(initial)] = base
        patch = result.state_patch or "{}"
        content_hash = combine(base, sha256_text(patch))
        self.store.add_artifact_text(content_hash, STATE_KIND, base, patch)
        return content_hash

    def _record_error(self, case: Case, kind: str, message: str, text: str | None) -> None:
        self.errors.append({"case": case.id, "kind": kind, "message": message})
        self.store.add_error(self.run_id, case.id, kind, message, text)

    # ---- judging ------------------------------------------------------------------------------

    def _judge_and_tally(
        self, slot: _Slot, evidence: Evidence, verdicts: dict[str, tuple[str, str | None]],
        source_key: str,
    ) -> None:
        case = slot.case
        errored = evidence.errored is not None
        all_keys = [None] * len(self.evaluators) if errored \
            else slot.judgment_keys or self._judgment_keys(slot, source_key)
        codes: list[str] = []
        reasons: list[str | None] = []
        for evaluator, key in zip(self.evaluators, all_keys, strict=True):
            hit = verdicts.get(key) if key is not None and slot.cached is not None else None
            if hit is not None:
                self.cache.judgment_hit += 1
                verdict, reason = hit
                codes.append(verdict)
                reasons.append(reason)
            else:
                self.cache.judgment_miss += 1
                judgment = judge_case(evaluator, evidence)
                codes.append(judgment.code)
                reasons.append(judgment.reason)
                if key is not None:
                    self.store.add_judgment(key, judgment.code, judgment.reason,
                                            judgment.details)
        facts = None if errored else evidence.facts
        case_key = None if errored else str(all_keys[0])[:JUDGMENT_CASE_KEY]
        self._tally(case, slot, "".join(codes), reasons, case_key, facts, evidence.latency_ms,
                    error=evidence.errored.split(":", 1)[0] if evidence.errored else None,
                    cached=False)

    def _tally_cached(self, slot: _Slot, verdicts: dict[str, tuple[str, str | None]]) -> None:
        assert slot.cached is not None
        facts, latency = slot.cached
        self.cache.execution_hit += 1
        self.cache.judgment_hit += len(slot.judgment_keys)
        codes = "".join(verdicts[k][0] for k in slot.judgment_keys)
        reasons = [verdicts[k][1] for k in slot.judgment_keys]
        self._tally(slot.case, slot, codes, reasons, slot.judgment_keys[0][:JUDGMENT_CASE_KEY]
                    if slot.judgment_keys else None, facts, latency,
                    error=None, cached=True)

    def _tally_errored(self, slot: _Slot, kind: str, message: str, text: str) -> None:
        self._record_error(slot.case, kind, message, text)
        n = len(self.evaluators)
        self._tally(slot.case, slot, "M" * n, ["case_errored"] * n, None, None, None,
                    error=kind, cached=False)

    def _tally(
        self, case: Case, slot: _Slot, codes: str, reasons: list[str | None],
        case_key: str | None, facts: dict[str, Any] | None, latency: float | None,
        *, error: str | None, cached: bool,
    ) -> None:
        groups = [slice_group(spec, facts, case.metadata) for spec in self.slices]
        outcome = CaseOutcome(
            case_id=case.id, codes=codes, reasons=reasons, case_key=case_key, facts=facts,
            latency_ms=latency, groups=groups, error=error, source=case.source_id,
            transform=case.transform, cluster=case.cluster, cached=cached,
        )
        assert self.analysis is not None
        self.analysis.add(outcome)
        self.store.add_run_case(self.run_id, slot.seq, case.id, case.digest, slot.exec_key,
                                outcome.to_json())
        self.progress.case_done(error is not None, cached)


__all__ = ["CacheCounts", "Progress", "RunEngine"]
