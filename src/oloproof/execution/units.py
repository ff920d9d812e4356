"""What the coordinator hands a worker, and what a worker hands back (plain, picklable data).

A **unit** is a source case with its metamorphic copies: they are executed and judged together,
because a copy is judged against its source. The coordinator (`engine.RunEngine`) asks the
caches, then describes the work a unit still needs as a `UnitJob`; a worker
(`worker.Worker`) runs the job whole and returns a `UnitResult`. Nothing here refers to the
system, a sandbox, a store or an event loop, so a job and its result can cross a thread, a
process or a Ray actor call unchanged (issue 11 adds those transports on this interface).

Evaluators are referred to by their position in the suite's evaluator list: a worker holds the
same list (it loaded the same suite), so only indices travel.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oloproof.errors import ErrorKind
from oloproof.evaluators.judgment import Judgment
from oloproof.plain_data import pickled_by_fields
from oloproof.recording.recorder import Variant
from oloproof.suite.case import Case

if TYPE_CHECKING:
    from oloproof.execution.rows import CaseRows, RowMaking


@pickled_by_fields
@dataclass(slots=True)
class CaseError:
    """Why a case errored: its kind (one of `ErrorKind`, docs/failures.md#error-kinds), the
    message, and the traceback where something raised."""

    kind: ErrorKind
    message: str
    traceback: str | None = None


@pickled_by_fields
@dataclass(slots=True)
class CachedExecution:
    """A stored execution read back from the store, for a case that need not run again."""

    output: dict[str, Any]
    artifacts: dict[str, Any]  # kind -> payload (a state already rebuilt from its diff)
    facts: dict[str, Any] | None
    latency_ms: float | None


@pickled_by_fields
@dataclass(slots=True)
class JudgeAsk:
    """What a judge criterion (the evaluator at `evaluator`) needs of a judge for one case
    (docs/judges.md): the fields it is shown, their digest and the verdict's cache key.

    `record` is the `judge_verdict/v1` record once there is one -- the stored one the judge
    cache held, or the one a call just made (`fresh`; stored by the coordinator), or a
    record saying why nothing could be asked (a shown field the case lacks) or the call
    failed (`status` `judge_error` / `judge_unparseable`, never stored).
    """

    evaluator: int
    key: str | None
    shown_digest: str | None
    shown: dict[str, Any] | None
    record: dict[str, Any] | None = None
    fresh: bool = False
    # The record is a verdict made before for the same key (by another ask of this run, or
    # stored): a hit of the judge cache.
    cached: bool = False


@pickled_by_fields
@dataclass(slots=True)
class CaseJob:
    """One case of a unit: run it (`cached` None) or reuse its stored execution, then judge
    it with the evaluators at the positions in `judge` (the ones whose judgment is not
    cached).

    `asks` are its judge criteria's asks (docs/judges.md): made by the coordinator for a
    cached execution (with the records the judge cache holds), by the worker after the call
    for a fresh one (None until then).
    """

    case: Case
    judge: tuple[int, ...]
    cached: CachedExecution | None = None
    asks: list[JudgeAsk] | None = None
    # A case whose simulated user is asked for turns (docs/conversations.md#seeds-and-caching):
    # the turns the store holds of its conversation, by turn key.
    turns: dict[str, dict[str, Any]] | None = None
    # Where the worker makes the case's rows (`UnitJob.rows`): its execution key, and its
    # cached verdicts by position (those not in `judge`; None when there are none).
    key: str = ""
    hits: dict[int, tuple[Any, ...]] | None = None


@pickled_by_fields
@dataclass(slots=True)
class ReplayJob:
    """A fault replay of the unit's source case
    (docs/stateful-agents.md#a-tool-that-fails-fault-replays), for one `fault_recovery` evaluator.

    `record` is the stored replay when the replay cache holds it; otherwise the worker runs
    the control and the fault replay and returns the new record.
    """

    evaluator: int
    key: str
    plan: dict[str, Any]
    record: dict[str, Any] | None = None


@pickled_by_fields
@dataclass(slots=True)
class UnitJob:
    """Everything a worker needs to run one trial of one unit: its cases (source first) and
    replays.

    With `trials: k` (docs/reliability.md) a unit is run k times, one job per trial: a copy's trial
    t is judged against its source's trial t, and the source's trial t is what its fault replays
    replay. `trial` and `trials` are what `current_case().trial` / `.trials` read.
    """

    unit: int  # the job's number in this run (results are matched back by it)
    cases: list[CaseJob]
    replays: list[ReplayJob] = field(default_factory=list)
    trial: int = 1
    trials: int = 1
    variant: Variant = ()  # the run's combination of system.variants (docs/board.md)
    # Set for a worker elsewhere (`processes`, `ray`): it returns each case as its stored
    # rows (`rows.CaseRows`), made there, not as a `CaseResult` the coordinator makes them of.
    rows: RowMaking | None = None

    @property
    def needs_system(self) -> bool:
        """Whether running this job calls the system or a judge (else the coordinator judges
        it)."""
        return (any(c.cached is None for c in self.cases)
                or any(r.record is None for r in self.replays)
                or any(a.record is None for c in self.cases if c.asks for a in c.asks))


@pickled_by_fields
@dataclass(slots=True)
class StoredText:
    """An artifact as the store keeps it: content hash, kind, base (for a diff) and text."""

    hash: str
    kind: str
    base: str | None
    text: str | None  # None: the coordinator writes the base state it holds (a `$ref` state)


@pickled_by_fields
@dataclass(slots=True)
class Execution:
    """A fresh execution of one case, ready to store.

    `error` set: the case errored (nothing of it is cached). `snapshot_error` set: the call
    returned, but `snapshot()` failed, so the case has no state; its output and trajectory
    are judged, and the execution is kept for `inspect` but never reused from the cache.
    `attempts` above 1: `system.retries` tried it again (docs/failures.md#retries).
    """

    output_text: str | None  # the output as the store keeps it (made where the case ran)
    artifacts: dict[str, str]  # kind -> content hash (the execution row's references)
    texts: list[StoredText]
    facts: dict[str, Any] | None
    latency_ms: float | None
    error: CaseError | None = None
    snapshot_error: CaseError | None = None
    # Under system.retries: how many attempts the case took, and each earlier one's error
    # (the last attempt's is `error`, if it failed too).
    attempts: int = 1
    attempt_errors: list[CaseError] = field(default_factory=list)
    # The turns its simulated user's simulator made: (conversation key, turn key, turn).
    simulator_turns: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)


@pickled_by_fields
@dataclass(slots=True)
class CaseResult:
    """What became of one case of a unit: its execution if it ran, its new judgments."""

    execution: Execution | None  # None when the job reused a cached execution
    judgments: list[Judgment]  # (code, reason, details), in the order of the job's `judge`


@pickled_by_fields
@dataclass(slots=True)
class UnitResult:
    """What a worker returns for a `UnitJob`.

    `failure` is set (with a traceback) when the unit could not be run at all -- an engine bug
    or a dead worker; the coordinator then counts each of its cases errored.
    """

    unit: int
    cases: Sequence[CaseResult | CaseRows]  # (rows where the job said `rows`)
    replays: list[tuple[str, dict[str, Any]]] = field(default_factory=list)  # new (key, record)
    failure: CaseError | None = None
    # New judge verdicts to store, (verdict key, judge_verdict/v1 record) (docs/judges.md).
    verdicts: Sequence[tuple[str, dict[str, Any]]] = ()
    # Verdicts the worker's judges had made already for the same key (judge cache hits).
    verdict_hits: int = 0
