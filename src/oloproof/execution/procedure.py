"""What a worker does with one unit: run its cases, replay its source, judge everything.

`unit_procedure(job, evaluators)` is a generator. It yields each thing that needs the system --
a `CallRequest` (reset → call → snapshot of one case) or a `ReplayRequest` -- and is sent back
the result; everything else (keeping artifacts as stored text, trajectory facts, judging) it
does itself. So one procedure serves every way of calling a system: a sync worker drives it
in a thread, an async worker on the event loop, and the coordinator drives a job that needs no
system (its executions and replays all cached) without calling anything.
"""

from __future__ import annotations

import traceback
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import Any

from oloproof.analysis.facts import case_facts
from oloproof.digest import canonical_json, combine, sha256_text
from oloproof.evaluators.base import Evaluator, judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.execution.calls import CallResult, ReplayResult
from oloproof.execution.replays import ReplayRequest, fault_replay
from oloproof.execution.units import (
    CaseError,
    CaseJob,
    CaseResult,
    Execution,
    StoredText,
    UnitJob,
    UnitResult,
)
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory
from oloproof.recording.usage import USAGE_KIND
from oloproof.suite.cases import Case
from oloproof.traces import READING_KIND


@dataclass(slots=True)
class CallRequest:
    """Run one case around the sandbox: reset, call, snapshot (trial `trial` of `trials`).

    (Not frozen: one is made per case, and a frozen dataclass costs five times as much.)
    """

    case: Case
    trial: int = 1
    trials: int = 1


Request = CallRequest | ReplayRequest
Procedure = Generator[Request, CallResult | ReplayResult, UnitResult]


def unit_procedure(job: UnitJob, evaluators: Sequence[Evaluator]) -> Procedure:
    """Run, replay and judge one unit (see the module docstring for how it is driven)."""
    evidence: list[Evidence] = []
    executions: list[Execution | None] = []
    for case_job in job.cases:
        if case_job.cached is not None:
            evidence.append(_cached_evidence(case_job))
            executions.append(None)
            continue
        call = yield CallRequest(case_job.case, job.trial, job.trials)
        assert isinstance(call, CallResult)
        execution, item = keep(case_job.case, call)
        evidence.append(item)
        executions.append(execution)
    source = evidence[0]
    for item in evidence[1:]:
        item.source = source
    new_replays: list[tuple[str, dict[str, Any]]] = []
    trajectory = source.trajectory if job.replays and source.errored is None else None
    if trajectory is not None:
        for replay in job.replays:
            record = replay.record
            if record is None:
                record = yield from _replay(source.case, trajectory, replay.plan, job.trial,
                                            job.trials)
                new_replays.append((replay.key, record))
            source.replays[evaluators[replay.evaluator].criterion] = record | {"key": replay.key}
    cases = []
    for case_job, kept, item in zip(job.cases, executions, evidence, strict=True):
        cases.append(CaseResult(kept, [judge_case(evaluators[i], item)
                                            for i in case_job.judge]))
    return UnitResult(job.unit, cases, new_replays)


def _replay(case: Case, trajectory: AgentTrajectory, plan: dict[str, Any], trial: int,
            trials: int) -> Generator[Request, CallResult | ReplayResult, dict[str, Any]]:
    steps = fault_replay(case, trajectory, plan, trial=trial, trials=trials)
    try:
        request = next(steps)
        while True:
            result = yield request
            assert isinstance(result, ReplayResult)
            request = steps.send(result)
    except StopIteration as done:
        record: dict[str, Any] = done.value
        return record


def run_without_system(job: UnitJob, evaluators: Sequence[Evaluator]) -> UnitResult:
    """Drive a job that needs no system call (`job.needs_system` is False)."""
    procedure = unit_procedure(job, evaluators)
    try:
        request = next(procedure)
    except StopIteration as done:
        result: UnitResult = done.value
        return result
    procedure.close()
    raise AssertionError(f"a job without system work asked for {type(request).__name__}")


def failed_unit(job: UnitJob, exc: BaseException) -> UnitResult:
    """The result of a unit that could not be run (an engine bug): every case errors."""
    text = "".join(traceback.format_exception(exc))
    return UnitResult(job.unit, [], failure=CaseError(
        "engine_error", f"{type(exc).__name__}: {exc}", text))


def _cached_evidence(job: CaseJob) -> Evidence:
    cached = job.cached
    assert cached is not None
    return Evidence(job.case, cached.output, cached.artifacts, latency_ms=cached.latency_ms,
                    initial_state=job.case.initial_state, facts=cached.facts)


def keep(case: Case, call: CallResult) -> tuple[Execution, Evidence]:
    """A call's result as stored text (content hashes, the state as a diff) and as evidence."""
    if call.error is not None:
        error = call.error
        return (Execution(None, {}, [], None, call.latency_ms, error=error),
                Evidence(case, None, {}, errored=f"{error.kind}: {error.message}",
                         latency_ms=call.latency_ms, initial_state=case.initial_state))
    refs: dict[str, str] = {}
    texts: list[StoredText] = []
    trajectory = call.trajectory
    reading = call.artifacts.get(READING_KIND)
    unread = sum(reading["skipped"].values()) if isinstance(reading, dict) else 0
    facts = case_facts(trajectory, call.artifacts.get(USAGE_KIND), unread)
    for kind, payload in call.artifacts.items():
        if kind == STATE_KIND:
            base = _state_base(case, texts)
            patch = call.state_patch or "{}"
            content_hash = combine(base, sha256_text(patch))
            texts.append(StoredText(content_hash, STATE_KIND, base, patch))
        elif kind == TRAJECTORY_KIND and isinstance(payload, AgentTrajectory):
            # pydantic's own serialiser: deterministic for a given model and much faster than
            # sorting keys in Python (equal trajectories built in another key order are stored
            # twice, which costs space, never correctness). Called as `model_dump_json` calls
            # it, without that method's keyword handling.
            text = payload.__pydantic_serializer__.to_json(payload).decode()
            content_hash = sha256_text(text)
            texts.append(StoredText(content_hash, kind, None, text))
        else:
            text = canonical_json(payload)
            content_hash = sha256_text(text)
            texts.append(StoredText(content_hash, kind, None, text))
        refs[kind] = content_hash
    snapshot_error = call.snapshot_error
    execution = Execution(call.output, refs, texts, facts, call.latency_ms,
                          snapshot_error=snapshot_error)
    return execution, Evidence(
        case, call.output, call.artifacts, latency_ms=call.latency_ms,
        initial_state=case.initial_state, facts=facts, _trajectory=trajectory,
        state_error=None if snapshot_error is None else snapshot_error.message)


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
