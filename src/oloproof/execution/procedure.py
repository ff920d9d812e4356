"""What a worker does with one unit: run its cases, replay its source, judge everything.

A unit's work comes in two parts, so that a driver can do them on different threads:

- `unit_calls(job)` is a generator. It yields each thing that needs the system -- a
  `CallRequest` (reset → call → snapshot of one case) or a `ReplayRequest` -- is sent back
  the result, and returns the `UnitCalls` it gathered: only what the calls returned, nothing
  kept or judged yet.
- `judge_unit(calls, evaluators)` does everything else (the artifacts as stored text, the
  trajectory facts, every judgment) and returns the `UnitResult`.

A sync system's lanes (`transports.threads.ThreadLanes`) run only `unit_calls` in their
threads and judge on the event loop's thread; an async worker runs `unit_calls` on the loop
and judges there (`Worker.run_unit_async`); between the two, the judge criteria's calls are
made (`ask_judges`, docs/judges.md); the coordinator drives a job that needs no system (its
executions, replays and judge verdicts all cached) without calling anything.
"""

from __future__ import annotations

import contextlib
import json
import time
import traceback
from collections.abc import Generator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from oloproof.analysis.facts import case_facts
from oloproof.digest import canonical_json, combine, sha256_text
from oloproof.errors import ErrorKind
from oloproof.evaluators.base import Evaluator, judge_each
from oloproof.evaluators.evidence import Evidence
from oloproof.execution.calls import CallResult, ReplayResult
from oloproof.execution.judging import JudgePanel
from oloproof.execution.replays import ReplayRequest, fault_replay
from oloproof.execution.rows import CaseRows, RowMaking, case_rows
from oloproof.execution.units import (
    CaseError,
    CaseJob,
    CaseResult,
    Execution,
    JudgeAsk,
    StoredText,
    UnitJob,
    UnitResult,
)
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.recorder import Variant
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory
from oloproof.recording.usage import USAGE_KIND
from oloproof.recording.users import CONVERSATION_KIND
from oloproof.storable import Unstorable, storable_problem
from oloproof.store.sql import stored_json
from oloproof.suite.case import Case
from oloproof.traces import READING_KIND, gave_no_step


@dataclass(slots=True)
class CallRequest:
    """Run one case around the sandbox: reset, call, snapshot (trial `trial` of `trials`).

    (Not frozen: one is made per case, and a frozen dataclass costs five times as much.)
    """

    case: Case
    trial: int = 1
    trials: int = 1
    attempt: int = 1  # under system.retries: which attempt (docs/failures.md#retries)
    not_before: float = 0.0  # time.monotonic() before which it does not start (a backoff)
    # A simulated user's stored turns, by turn key (docs/conversations.md#seeds-and-caching).
    turns: dict[str, dict[str, Any]] | None = None
    variant: Variant = ()  # the run's combination of system.variants (docs/board.md)


@dataclass(slots=True)
class UnitCalls:
    """What a unit's calls and replays returned: everything judging needs of the system.

    `calls` has one entry per case of the job (None where its execution is cached);
    `replays` one record per replay of the job, the stored one or the one just run, or is
    None when no replay applies (the source case errored or recorded no trajectory).
    `cached_source` is the source case's evidence when its execution is cached and its
    replays were looked at (its trajectory read once, for both).
    """

    job: UnitJob
    calls: list[CallResult | None]
    replays: list[dict[str, Any]] | None
    cached_source: Evidence | None = None


Request = CallRequest | ReplayRequest
Response = CallResult | ReplayResult
Calls = Generator[Request, Response, UnitCalls]


def unit_calls(job: UnitJob) -> Calls:
    """Run a unit's cases and its source's fault replays (see the module docstring)."""
    calls: list[CallResult | None] = []
    for case_job in job.cases:
        if case_job.cached is not None:
            calls.append(None)
            continue
        request = CallRequest(case_job.case, job.trial, job.trials, turns=case_job.turns,
                              variant=job.variant)
        call = yield request
        assert isinstance(call, CallResult)
        if call.retry_in is not None:
            call = yield from _retried(request, call)
        calls.append(call)
    if not job.replays:
        return UnitCalls(job, calls, [])
    source_call = calls[0]
    cached_source = None
    if source_call is None:
        cached_source = _cached_evidence(job.cases[0])
        trajectory = cached_source.trajectory
    else:
        trajectory = source_call.trajectory if source_call.error is None else None
    if trajectory is None:
        return UnitCalls(job, calls, None, cached_source)
    records = []
    for replay in job.replays:
        record = replay.record
        if record is None:
            record = yield from _replay(job.cases[0].case, trajectory, replay.plan, job.trial,
                                        job.trials, job.variant)
        records.append(record)
    return UnitCalls(job, calls, records, cached_source)


def judge_unit(called: UnitCalls, evaluators: Sequence[Evaluator]) -> UnitResult:
    """Keep and judge what a unit's calls returned (see the module docstring)."""
    job = called.job
    evidence: list[Evidence] = []
    executions: list[Execution | None] = []
    for case_job, call in zip(job.cases, called.calls, strict=True):
        if call is None:
            cached = called.cached_source if not evidence else None  # (read for its replays)
            evidence.append(cached if cached is not None else _cached_evidence(case_job))
            executions.append(None)
            continue
        execution, item = keep(case_job.case, call)
        evidence.append(item)
        executions.append(execution)
    source = evidence[0]
    for item in evidence[1:]:
        item.source = source
    verdicts: list[tuple[str, dict[str, Any]]] = []
    hits = 0
    for case_job, item in zip(job.cases, evidence, strict=True):
        if case_job.asks:  # judge criteria: the verdicts their judge gave (docs/judges.md)
            item.verdicts = {evaluators[a.evaluator].criterion: a.record
                             for a in case_job.asks if a.record is not None}
            verdicts.extend((a.key, a.record) for a in case_job.asks
                            if a.fresh and a.key is not None and a.record is not None
                            and "status" not in a.record)
            hits += sum(1 for a in case_job.asks if a.cached)
    new_replays: list[tuple[str, dict[str, Any]]] = []
    if called.replays is not None:
        for replay, record in zip(job.replays, called.replays, strict=True):
            if replay.record is None:
                record = _storable_replay(record)
                new_replays.append((replay.key, record))
            source.replays[evaluators[replay.evaluator].criterion] = record | {"key": replay.key}
    cases = []
    for case_job, kept, item in zip(job.cases, executions, evidence, strict=True):
        cases.append(CaseResult(kept, judge_each([evaluators[i] for i in case_job.judge],
                                                 item)))
    if job.rows is not None:  # (a worker elsewhere: the rows are made here)
        return UnitResult(job.unit, _rows(job, job.rows, cases), new_replays,
                          verdicts=verdicts, verdict_hits=hits)
    return UnitResult(job.unit, cases, new_replays, verdicts=verdicts, verdict_hits=hits)


def _rows(job: UnitJob, making: RowMaking, results: list[CaseResult]) -> list[CaseRows]:
    """Each case's result as its stored rows (`rows.case_rows`), as the coordinator would
    make them of it."""
    source_key = job.cases[0].key
    return [case_rows(making, case_job.case, result, exec_key=case_job.key,
                      source_key=source_key, trial=job.trial,
                      cached=None if case_job.cached is None else (
                          case_job.cached.facts, case_job.cached.latency_ms),
                      case_key=None, hits=case_job.hits or {}, judge=case_job.judge)
            for case_job, result in zip(job.cases, results, strict=True)]


def judge_asks(called: UnitCalls, panel: JudgePanel) -> list[tuple[JudgeAsk, str, int]]:
    """The judge calls a unit's cases still need (docs/judges.md), each with its case id and
    trial: the asks of a fresh execution are made here, from what its call returned."""
    job = called.job

    def evidence(at: int) -> Evidence | None:
        call = called.calls[at]
        case_job = job.cases[at]
        if call is None:
            return _cached_evidence(case_job) if case_job.cached is not None else None
        if call.error is not None:
            return None
        return Evidence(case_job.case, call.output, call.artifacts, _trajectory=call.trajectory)

    pending = []
    for at, case_job in enumerate(job.cases):
        def this_case(_: int, at: int = at) -> Evidence | None:
            return evidence(at)

        for ask in panel.pending([case_job], this_case):
            pending.append((ask, case_job.case.id, job.trial))
    return pending


async def ask_judges(called: UnitCalls, panel: JudgePanel | None) -> UnitCalls:
    """Make the judge calls a unit still needs (none without a panel) and return it, its asks
    answered, ready to judge."""
    if panel is not None:
        asks = judge_asks(called, panel)
        if asks:
            await panel.answer(asks)
    return called


def _retried(request: CallRequest, call: CallResult) -> Generator[Request, Response,
                                                                    CallResult]:
    """The attempts after the first, as the worker said (`retry_in`: the matching error and
    its backoff, docs/failures.md#retries): each a whole request, from a freshly reset
    sandbox; the last one's result, with every earlier attempt's error kept."""
    errors: list[CaseError] = []
    # (a simulated user's turns made in an earlier attempt are the simulator's all the same:
    # kept, to store; the next attempt finds them in the panel's turns made lately)
    turns: list[tuple[str, str, dict[str, Any]]] = []
    calls = 0
    while call.retry_in is not None:
        assert call.error is not None
        errors.append(call.error)
        turns.extend(call.simulator_turns)
        calls += call.simulator_calls
        request = CallRequest(request.case, request.trial, request.trials, request.attempt + 1,
                              time.monotonic() + call.retry_in, request.turns, request.variant)
        response = yield request
        assert isinstance(response, CallResult)
        call = response
    call.attempts, call.attempt_errors = request.attempt, errors
    if turns:
        call.simulator_turns = turns + call.simulator_turns
    call.simulator_calls += calls
    return call


def _replay(case: Case, trajectory: AgentTrajectory, plan: dict[str, Any], trial: int,
            trials: int, variant: Variant) -> Generator[Request, Response, dict[str, Any]]:
    steps = fault_replay(case, trajectory, plan, trial=trial, trials=trials, variant=variant)
    try:
        request = next(steps)
        while True:
            result = yield request
            assert isinstance(result, ReplayResult)
            while result.retry_in is not None:  # (system.retries: the replay again)
                request = replace(request, attempt=request.attempt + 1,
                                  not_before=time.monotonic() + result.retry_in)
                result = yield request
                assert isinstance(result, ReplayResult)
            request = steps.send(result)
    except StopIteration as done:
        record: dict[str, Any] = done.value
        return record


def run_without_system(job: UnitJob, evaluators: Sequence[Evaluator]) -> UnitResult:
    """Judge a job that needs no system call (`job.needs_system` is False)."""
    calls = unit_calls(job)
    try:
        request = next(calls)
    except StopIteration as done:
        return judge_unit(done.value, evaluators)
    calls.close()
    raise AssertionError(f"a job without system work asked for {type(request).__name__}")


def judged(item: UnitCalls | UnitResult, evaluators: Sequence[Evaluator]) -> UnitResult:
    """The result of a unit whose calls came back (one that could not be run is already its
    result): an engine bug while judging errors the unit's cases, it never stops the run."""
    if isinstance(item, UnitResult):
        return item
    try:
        return judge_unit(item, evaluators)
    except Exception as exc:
        return failed_unit(item.job, exc)


def failed_unit(job: UnitJob, exc: BaseException) -> UnitResult:
    """The result of a unit that could not be run (an engine bug): every case errors."""
    text = "".join(traceback.format_exception(exc))
    return UnitResult(job.unit, [], failure=CaseError(
        ErrorKind.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}", text))


def _storable_replay(record: dict[str, Any]) -> dict[str, Any]:
    """A new replay's record, or, when the store cannot keep it as it is (what the replay
    recorded nests too deep, or holds a lone surrogate), a failed replay saying why: judged
    as such here, and stored so."""
    try:
        stored_json(record, ("replay",))
    except Unstorable as exc:
        return {"status": "replay_failed", "message": f"the replay cannot be stored: "
                f"{exc.problem}"}
    return record


def _cached_evidence(job: CaseJob) -> Evidence:
    cached = job.cached
    assert cached is not None
    return Evidence(job.case, cached.output, cached.artifacts, latency_ms=cached.latency_ms,
                    initial_state=job.case.initial_state, facts=cached.facts)


def keep(case: Case, call: CallResult) -> tuple[Execution, Evidence]:
    """A call's result as stored text (content hashes, the state as a diff) and as evidence."""
    if call.error is not None:
        error = call.error
        refs: dict[str, str] = {}
        texts: list[StoredText] = []
        facts = None
        if call.artifacts:  # an imported run's errored trial: what its harness recorded
            facts = _facts(call)
            try:
                for kind, payload in call.artifacts.items():
                    refs[kind] = _artifact_text(case, kind, payload, call, texts)
            except ValueError:  # (kept as far as it can be: the error is the case's)
                refs, texts, facts = {}, [], None
        return (Execution(None, refs, texts, facts, call.latency_ms, error=error,
                          attempts=call.attempts, attempt_errors=call.attempt_errors,
                          simulator_turns=call.simulator_turns),
                Evidence(case, None, {}, errored=f"{error.kind}: {error.message}",
                         latency_ms=call.latency_ms, initial_state=case.initial_state))
    refs = {}
    texts = []
    trajectory = call.trajectory
    facts = _facts(call)
    for kind, payload in call.artifacts.items():
        try:
            content_hash = _artifact_text(case, kind, payload, call, texts)
        except ValueError:  # (UnicodeEncodeError, the serialiser's error, RecursionError's)
            return _unstorable(case, call, kind, payload)
        refs[kind] = content_hash
    snapshot_error = call.snapshot_error
    assert call.output_text is not None
    execution = Execution(call.output_text, refs, texts, facts, call.latency_ms,
                          snapshot_error=snapshot_error, attempts=call.attempts,
                          attempt_errors=call.attempt_errors,
                          simulator_turns=call.simulator_turns)
    return execution, Evidence(
        case, call.output, call.artifacts, latency_ms=call.latency_ms,
        initial_state=case.initial_state, facts=facts, _trajectory=trajectory,
        state_error=None if snapshot_error is None else snapshot_error.message)


def _facts(call: CallResult) -> dict[str, Any] | None:
    """What a call's trajectory and usage say of it (`analysis.facts.case_facts`)."""
    reading = call.artifacts.get(READING_KIND)
    unread = sum(reading["skipped"].values()) if isinstance(reading, dict) else 0
    return case_facts(call.trajectory, call.artifacts.get(USAGE_KIND), unread,
                      empty_trace=gave_no_step(call.trajectory, call.artifacts),
                      reader=reading.get("source") if isinstance(reading, dict) else None,
                      conversation=call.artifacts.get(CONVERSATION_KIND),
                      simulator_calls=call.simulator_calls)


def _artifact_text(case: Case, kind: str, payload: Any, call: CallResult,
                   texts: list[StoredText]) -> str:
    """Add one artifact's stored text to `texts`; its content hash. ValueError when it cannot
    be stored as it is (a lone surrogate, nesting the store does not keep)."""
    if kind == STATE_KIND:
        base = _state_base(case, texts)
        patch = call.state_patch or "{}"
        content_hash = combine(base, sha256_text(patch))
        texts.append(StoredText(content_hash, STATE_KIND, base, patch))
        return content_hash
    if kind == TRAJECTORY_KIND and isinstance(payload, AgentTrajectory):
        # pydantic's own serialiser: deterministic for a given model and much faster than
        # sorting keys in Python (equal trajectories built in another key order are stored
        # twice, which costs space, never correctness). Called as `model_dump_json` calls
        # it, without that method's keyword handling.
        text = payload.__pydantic_serializer__.to_json(payload).decode()
    else:
        text = canonical_json(payload)
    content_hash = sha256_text(text)
    texts.append(StoredText(content_hash, kind, None, text))
    return content_hash


def _unstorable(case: Case, call: CallResult, kind: str,
                payload: Any) -> tuple[Execution, Evidence]:
    """What an execution one of whose artifacts cannot be stored becomes: the case errored,
    `unstorable_output`, saying what and where."""
    with contextlib.suppress(ValueError, RecursionError):  # (the words are a courtesy)
        if kind == STATE_KIND and call.state_patch is not None:
            payload = json.loads(call.state_patch)  # (what is stored: the diff)
        elif isinstance(payload, AgentTrajectory):
            payload = payload.model_dump(mode="python")
    problem = None if isinstance(payload, AgentTrajectory) else \
        storable_problem(payload, (kind,))
    error = CaseError(ErrorKind.UNSTORABLE_OUTPUT, problem if problem is not None
                      else f"the {kind} artifact cannot be stored as it is")
    return keep(case, CallResult(None, error=error, latency_ms=call.latency_ms,
                                 attempts=call.attempts, attempt_errors=call.attempt_errors,
                                 simulator_turns=call.simulator_turns))


def _state_base(case: Case, texts: list[StoredText]) -> str:
    """The content hash of the case's initial state, the base its end state is a diff of.

    A state shared by `$ref` is already hashed (its text is written by the coordinator, which
    holds it, once per run); an inline state is hashed here and its text stored with it.
    """
    if case.state_ref is not None:
        texts.append(StoredText(case.state_ref, "initial_state", None, None))
        return case.state_ref
    text = canonical_json(case.initial_state or {})
    base = sha256_text(text)
    texts.append(StoredText(base, "initial_state", None, text))
    return base
