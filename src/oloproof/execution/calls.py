"""One call of the system: the recorder, reset → call → snapshot, a replay
(docs/stateful-agents.md).

These functions run one case (or one replay) and turn whatever happened into a `CallResult`
(or `ReplayResult`); they never raise for a problem of the case. They do not lock the sandbox
nor enforce a timeout: the worker (`worker.py`) does both around them. Each has a sync and an
async form, with the same steps.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import time
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oloproof.digest import canonical_json, compact_json
from oloproof.errors import ErrorKind, RecordedError, RecordingError, UnstorableRecording
from oloproof.execution.exits import (
    CONTAINED,
    SYSTEM_EXITS,
    ProcessExit,
    exit_text,
    from_a_signal,
)
from oloproof.execution.target import SystemTarget
from oloproof.execution.units import CaseError
from oloproof.recording.protocols import STATE_KIND, ReplayChange, Stateful
from oloproof.recording.recorder import CaseRecorder, Variant, reset_current, set_current
from oloproof.recording.steps import Replaying
from oloproof.recording.trajectory import (
    TRAJECTORY_KIND,
    AgentCheckpoint,
    AgentTrajectory,
)
from oloproof.recording.users import CONVERSATION_KIND, SimulatedUser, User
from oloproof.state import diff as state_diff
from oloproof.storable import Unstorable, escaped, storable_problem
from oloproof.store.sql import stored_json
from oloproof.suite.case import Case

if TYPE_CHECKING:  # only a suite with `system.trace` reads spans (its target imports this)
    from oloproof.execution.otel_trace import CaseSpans


@dataclass(slots=True)
class CallResult:
    """What one system call produced."""

    output: dict[str, Any] | None
    artifacts: dict[str, Any] = field(default_factory=dict)
    trajectory: AgentTrajectory | None = None
    error: CaseError | None = None
    latency_ms: float | None = None
    state_patch: str | None = None  # canonical JSON of the end state's diff from initial_state
    snapshot_error: CaseError | None = None  # the call returned but snapshot() failed
    output_text: str | None = None  # the output as the store keeps it
    # Under system.retries (docs/failures.md#retries): what the call raised (a timeout as a
    # TimeoutError), how long to wait before the next attempt (None: none is made), and once
    # the case is done, how many attempts it took and each earlier attempt's error.
    raised: BaseException | None = None
    retry_in: float | None = None
    attempts: int = 1
    attempt_errors: list[CaseError] = field(default_factory=list)
    # A conversation's (docs/conversations.md): the turns its simulator made, (conversation
    # key, turn key, turn), for the coordinator to store, and how many calls they took.
    simulator_turns: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)
    simulator_calls: int = 0


#: What makes a case's user for its recorder (`simulating.Users.maker`).
MakeUser = Callable[[CaseRecorder], User]


@dataclass(slots=True)
class ReplayResult:
    """What one replay returned: the continuation after the checkpoint and the end state.

    `whole` marks a trajectory built with the replay's step recorder, numbered as the
    recording (the engine cuts it at the checkpoint itself); otherwise `trajectory` is the
    continuation numbered from 1 (docs/stateful-agents.md#a-sandbox-oloproof-resets).
    """

    trajectory: AgentTrajectory | None
    state: dict[str, Any] | None = None
    error: str | None = None
    whole: bool = False
    raised: BaseException | None = None  # what the replay raised (a timeout: TimeoutError)
    retry_in: float | None = None  # under system.retries: wait, then replay again


# ---- a case ------------------------------------------------------------------------------------


def call_sync(target: SystemTarget, case: Case, state: dict[str, Any] | None,
              trial: int = 1, trials: int = 1, base: Any = None,
              user: MakeUser | None = None, variant: Variant = ()) -> CallResult:
    """Reset the sandbox to `state` (a Stateful system), call the system, take the snapshot.

    `trial` of `trials` is what `current_case().trial` / `.trials` read inside the call;
    `user` makes the case's user (`current_case().user`), for a case that holds a
    conversation.
    """
    recorder = CaseRecorder(case.id, case.metadata, trial=trial, trials=trials,
                            variant=variant)
    if user is not None:
        recorder.set_user(user(recorder))
        return _with_conversation(_call_sync(target, case, state, base, recorder), recorder)
    return _call_sync(target, case, state, base, recorder)


def _call_sync(target: SystemTarget, case: Case, state: dict[str, Any] | None, base: Any,
               recorder: CaseRecorder) -> CallResult:
    token = set_current(recorder)
    try:
        stateful = target.stateful
        if stateful is not None:
            try:
                stateful.reset(state if state is not None else {})
            except CONTAINED as exc:
                return _failure(exc, "the sandbox's reset() raised")
        start = time.perf_counter()
        try:
            if target.trace is None:
                output = target.call(case.input)
            else:
                with target.trace.case(case.id) as spans:
                    output = target.call(case.input)
        except CONTAINED as exc:
            return _failure(exc, None, recorder)
        result = _finish(recorder, output, (time.perf_counter() - start) * 1000.0)
        if target.trace is not None:
            _from_spans(result, spans, recorder)
        if stateful is not None and result.error is None:
            _take_snapshot(stateful.snapshot, case.initial_state, result, base)
        return result
    finally:
        recorder.close()
        reset_current(token)


async def call_async(target: SystemTarget, case: Case, state: dict[str, Any] | None,
                     trial: int = 1, trials: int = 1, base: Any = None,
                     user: MakeUser | None = None, variant: Variant = ()) -> CallResult:
    """`call_sync` for an async system (its reset and snapshot may be async too)."""
    recorder = CaseRecorder(case.id, case.metadata, trial=trial, trials=trials,
                            variant=variant)
    if user is not None:
        recorder.set_user(user(recorder))
        return _with_conversation(await _call_async(target, case, state, base, recorder),
                                  recorder)
    return await _call_async(target, case, state, base, recorder)


async def _call_async(target: SystemTarget, case: Case, state: dict[str, Any] | None,
                      base: Any, recorder: CaseRecorder) -> CallResult:
    token = set_current(recorder)
    try:
        stateful = target.stateful
        if stateful is not None:
            try:
                await _maybe_await(_reset_of(stateful)(state if state is not None else {}))
            except CONTAINED as exc:
                return _failure(exc, "the sandbox's reset() raised")
        start = time.perf_counter()
        try:
            if target.trace is None:
                output = await target.call(case.input)
            else:
                with target.trace.case(case.id) as spans:
                    output = await target.call(case.input)
        except CONTAINED as exc:
            return _failure(exc, None, recorder)
        result = _finish(recorder, output, (time.perf_counter() - start) * 1000.0)
        if target.trace is not None:
            _from_spans(result, spans, recorder)
        if stateful is not None and result.error is None:
            try:
                snap = await _maybe_await(stateful.snapshot())
            except CONTAINED as exc:
                result.snapshot_error = _snapshot_error(exc)
            else:
                _take_snapshot(lambda: snap, case.initial_state, result, base)
        return result
    finally:
        recorder.close()
        reset_current(token)


def _with_conversation(result: CallResult, recorder: CaseRecorder) -> CallResult:
    """A conversation's call (docs/conversations.md): its `conversation/v1` record, the
    trajectory with the turns in their places (`recording/turn_steps.py`), and the turns its
    simulator made (kept whatever became of the call: they are the simulator's, and a retried
    attempt asks them again)."""
    from oloproof.execution.simulating import Conversation

    user = recorder.user
    if isinstance(user, SimulatedUser) and isinstance(user.source, Conversation):
        result.simulator_turns = user.source.made
        result.simulator_calls = user.source.calls
    if result.error is not None:
        return result
    result.artifacts[CONVERSATION_KIND] = user.record()
    trajectory = result.trajectory
    if trajectory is not None:
        try:
            trajectory = user.conversation_steps.finish(
                trajectory, built_by_steps=recorder.built_by_steps(trajectory),
                truncated=user.truncated)
        except RecordingError as exc:
            result.output, result.artifacts, result.trajectory = None, {}, None
            result.error = CaseError(ErrorKind.SYSTEM_ERROR, exc.message)
            return result
        result.trajectory = trajectory
        result.artifacts[TRAJECTORY_KIND] = trajectory
    return result


def timed_out(timeout_s: float | None) -> CallResult:
    """The result of a case whose call did not return in time (retried as a TimeoutError the
    call raised would be: docs/failures.md#retries)."""
    message = f"the system did not return within timeout_s={timeout_s:g} s"
    return CallResult(None, error=CaseError(ErrorKind.TIMEOUT, message),
                      latency_ms=(timeout_s or 0) * 1000.0, raised=TimeoutError(message))


# ---- a replay ----------------------------------------------------------------------------------


def replay_sync(
    target: SystemTarget, case: Case, state: dict[str, Any] | None, recorded: AgentTrajectory,
    checkpoint: AgentCheckpoint, change: ReplayChange, trial: int = 1, trials: int = 1,
    base: Any = None, variant: Variant = (),
) -> ReplayResult:
    """Reset the sandbox, call `replay`, take the snapshot: the control replay and the faulted
    one of docs/stateful-agents.md#a-tool-that-fails-fault-replays."""
    replayable = target.replayable
    assert replayable is not None
    stateful = target.stateful
    recorder = CaseRecorder(case.id, case.metadata, Replaying(recorded, checkpoint, change),
                            trial=trial, trials=trials, variant=variant)
    token = set_current(recorder)
    try:
        if stateful is not None:
            stateful.reset(state if state is not None else {})
        returned = replayable.replay(recorded, checkpoint=checkpoint, change=change)
        if inspect.isawaitable(returned):  # an async replay of a sync system: this thread's own
            returned = asyncio.run(_awaited(returned))
        return _replay_outcome(returned, recorder,
                               None if stateful is None else stateful.snapshot, case, base)
    except CONTAINED as exc:
        return _replay_failure(exc)
    finally:
        recorder.close()
        reset_current(token)


async def replay_async(
    target: SystemTarget, case: Case, state: dict[str, Any] | None, recorded: AgentTrajectory,
    checkpoint: AgentCheckpoint, change: ReplayChange, trial: int = 1, trials: int = 1,
    base: Any = None, variant: Variant = (),
) -> ReplayResult:
    """`replay_sync` for a system whose `replay` (and perhaps reset and snapshot) are async."""
    replayable = target.replayable
    assert replayable is not None
    stateful = target.stateful
    recorder = CaseRecorder(case.id, case.metadata, Replaying(recorded, checkpoint, change),
                            trial=trial, trials=trials, variant=variant)
    token = set_current(recorder)
    try:
        if stateful is not None:
            await _maybe_await(_reset_of(stateful)(state if state is not None else {}))
        returned = await _maybe_await(
            replayable.replay(recorded, checkpoint=checkpoint, change=change))
        snapshot: Callable[[], Any] | None = None
        if stateful is not None:
            snap = await _maybe_await(stateful.snapshot())
            snapshot = lambda: snap  # noqa: E731 - the value, taken while the sandbox is held
        return _replay_outcome(returned, recorder, snapshot, case, base)
    except CONTAINED as exc:
        return _replay_failure(exc)
    finally:
        recorder.close()
        reset_current(token)


def _replay_failure(exc: BaseException) -> ReplayResult:
    if from_a_signal(exc):
        raise exc
    if isinstance(exc, SYSTEM_EXITS):
        return ReplayResult(None, error=f"replay: {exit_text(exc)}", raised=exc)
    return ReplayResult(None, error=escaped(f"replay raised {type(exc).__name__}: {exc}"),
                        raised=exc)


def replay_timed_out(timeout_s: float | None) -> ReplayResult:
    message = f"replay timed out after {timeout_s:g} s"
    return ReplayResult(None, error=message, raised=TimeoutError(message))


def _replay_outcome(returned: Any, recorder: CaseRecorder, snapshot: Callable[[], Any] | None,
                    case: Case, base: Any = None) -> ReplayResult:
    whole = False
    if returned is None and TRAJECTORY_KIND in recorder.artifacts:
        returned = recorder.artifacts[TRAJECTORY_KIND]  # recorded with steps.finish()
    if isinstance(returned, AgentTrajectory):
        whole = recorder.built_by_steps(returned)
    elif isinstance(returned, dict):
        returned = AgentTrajectory.model_validate(returned)
    if not isinstance(returned, AgentTrajectory):
        return ReplayResult(None, error=f"replay returned {type(returned).__name__}, not an "
                            "AgentTrajectory")
    state = None
    if snapshot is not None:
        holder = CallResult(None)
        _take_snapshot(snapshot, case.initial_state, holder, base)
        state = holder.artifacts.get(STATE_KIND)
    return ReplayResult(returned, state, whole=whole)


# ---- shared steps ------------------------------------------------------------------------------


def _reset_of(stateful: Stateful) -> Callable[[dict[str, Any]], object]:
    """`stateful.reset`, typed for an async system whose reset returns an awaitable."""
    return stateful.reset


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _finish(recorder: CaseRecorder, output: Any, latency: float) -> CallResult:
    if not isinstance(output, dict):
        return CallResult(
            None,
            error=CaseError(
                ErrorKind.SYSTEM_ERROR,
                f"the system returned {type(output).__name__}, not a JSON object (dict)",
            ),
            latency_ms=latency,
        )
    try:
        text = output_text(output)
    except Unstorable as exc:
        return CallResult(None, error=CaseError(ErrorKind.UNSTORABLE_OUTPUT, exc.problem),
                          latency_ms=latency)
    artifacts = dict(recorder.artifacts)
    return CallResult(output, artifacts, _trajectory_of(artifacts), None, latency,
                      output_text=text)


def _trajectory_of(artifacts: dict[str, Any]) -> AgentTrajectory | None:
    trajectory = artifacts.get(TRAJECTORY_KIND)
    if trajectory is not None and not isinstance(trajectory, AgentTrajectory):
        trajectory = AgentTrajectory.model_validate(trajectory)
    return trajectory


def output_text(output: dict[str, Any]) -> str:
    """The output as the store keeps it, made here, where the case ran (the coordinator
    stores the text as it is); `Unstorable` saying what and where when it cannot be kept:
    a type JSON has no form for, NaN or an infinity (refused by the JSON writer), nesting
    deeper than the store keeps or a lone surrogate (refused by the store's serialiser)."""
    try:
        compact_json(output)
    except (TypeError, ValueError) as exc:
        problem = storable_problem(output, ("output",))
        raise Unstorable(problem if problem is not None else
                         f"the output is not JSON: {exc}") from None
    return stored_json(output, ("output",))


def _from_spans(result: CallResult, spans: CaseSpans, recorder: CaseRecorder) -> None:
    """`system.trace: otel`: the trajectory and usage read from the case's spans."""
    from oloproof.execution.otel_trace import record_from_spans

    if result.error is not None:
        return
    error = record_from_spans(spans, result.artifacts, recorder.uses_steps)
    if error is not None:
        result.output, result.artifacts, result.error = None, {}, error
        return
    result.trajectory = result.artifacts[TRAJECTORY_KIND]


def _take_snapshot(snapshot: Callable[[], Any], initial: dict[str, Any] | None,
                   result: CallResult, base: Any = None) -> None:
    """Record the end state as a diff against the initial state, while the sandbox is held.

    The diff is serialised at once, so a sandbox that later mutates its objects cannot change
    what was recorded, and a multi-megabyte state is never copied whole. A snapshot that
    raises or is not a JSON object leaves the case without state, with the error kept
    (`snapshot_failed`); the case itself is not errored. `base` (equal to `initial`) is what
    to take the diff against when the sandbox was reset from a copy sharing its parts.
    """
    try:
        state = snapshot()
        if not isinstance(state, dict):
            raise TypeError(f"snapshot() returned {type(state).__name__}, not a dict")
        patch_text = canonical_json(state_diff.diff(
            (initial or {}) if base is None else base, state))
    except CONTAINED as exc:
        result.snapshot_error = _snapshot_error(exc)
        return
    result.state_patch = patch_text
    result.artifacts[STATE_KIND] = state_diff.apply(initial or {}, json.loads(patch_text))


def _snapshot_error(exc: BaseException) -> CaseError:
    if from_a_signal(exc):
        raise exc
    what = exit_text(exc) if isinstance(exc, SYSTEM_EXITS) else f"{type(exc).__name__}: {exc}"
    return CaseError(ErrorKind.SNAPSHOT_FAILED,
                     escaped(f"the sandbox's snapshot() failed: {what}"),
                     escaped("".join(traceback.format_exception(exc))))


def _failure(exc: BaseException, prefix: str | None,
             recorder: CaseRecorder | None = None) -> CallResult:
    """The result of a call that raised: the case's error, `system_exit` for SystemExit and
    KeyboardInterrupt, `process_exit` for an `os._exit` the command stopped (Ctrl-C itself is
    raised on: it stops the run, `exits.py`). An imported run's recorded error keeps what its
    `recorder` holds (the trajectory the harness recorded: evidence, docs/imports.md)."""
    if from_a_signal(exc):
        raise exc
    kind = ErrorKind.SYSTEM_ERROR
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, RecordedError):  # an imported run's error, as its harness recorded it
        artifacts = dict(recorder.artifacts) if recorder is not None else {}
        return CallResult(None, artifacts, _trajectory_of(artifacts), error=CaseError(
            exc.error_kind, escaped(exc.message),
            escaped(exc.traceback) if exc.traceback else None), raised=exc)
    if isinstance(exc, RecordingError):
        text = exc.message
        if isinstance(exc, UnstorableRecording):
            kind = ErrorKind.UNSTORABLE_OUTPUT
    elif isinstance(exc, SYSTEM_EXITS):
        kind = ErrorKind.PROCESS_EXIT if isinstance(exc, ProcessExit) else ErrorKind.SYSTEM_EXIT
        text = exit_text(exc)
    message = f"{prefix}: {text}" if prefix else text
    kept = escaped(message)
    if kept is not message:  # a lone surrogate: the message is kept escaped, and says so
        problem = storable_problem(message, ("its message",))
        kind, kept = ErrorKind.UNSTORABLE_OUTPUT, (
            f"the system raised {type(exc).__name__}, and {problem}; kept escaped: {kept}")
    return CallResult(None, error=CaseError(
        kind, kept, escaped("".join(traceback.format_exception(exc)))), raised=exc)
