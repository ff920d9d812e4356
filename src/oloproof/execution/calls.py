"""Calling the system for one case: concurrency, timeouts, the recorder, the sandbox (SPEC §4.3).

Async systems run on the run's event loop, up to `concurrency` at once; sync systems in a
thread pool of that size. A Stateful system's cases run one at a time around its sandbox
(reset → call → snapshot), and a call that timed out keeps the sandbox until it has really
returned, so a late write can never land in another case's state.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
import pickle
import queue
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from oloproof.digest import canonical_json
from oloproof.errors import RecordingError
from oloproof.execution.target import SystemTarget
from oloproof.recording.protocols import STATE_KIND, Stateful
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory
from oloproof.state import diff as state_diff
from oloproof.suite.cases import Case

_check_json = json.JSONEncoder(allow_nan=False, separators=(",", ":")).encode


@dataclass
class CaseError:
    """Why a case errored: kind (exception, timeout, invalid_output, invalid_artifact, ...)."""

    kind: str
    message: str
    traceback: str | None = None


@dataclass
class CallResult:
    """What one system call produced."""

    output: dict[str, Any] | None
    artifacts: dict[str, Any] = field(default_factory=dict)
    trajectory: AgentTrajectory | None = None
    error: CaseError | None = None
    latency_ms: float | None = None
    notes: list[str] = field(default_factory=list)
    state_patch: str | None = None  # canonical JSON of the end state's diff from initial_state


INLINE_MAX_SECONDS = 0.02
INLINE_MIN_WAIT = 0.002
INLINE_MIN_CPU_SHARE = 0.7
INLINE_WARM_UP = 3
INLINE_WINDOW = 8


class _Workers:
    """Threads that run sync system calls and hand each result back to the event loop.

    Leaner than a ThreadPoolExecutor plus `wrap_future` (one queue put and one
    `call_soon_threadsafe` per call); threads are daemons, so an abandoned call never keeps
    the process alive after the run.
    """

    def __init__(self, count: int) -> None:
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._count = count
        self._threads: list[threading.Thread] = []

    def submit(self, work: Any, case: Case, loop: asyncio.AbstractEventLoop,
               future: asyncio.Future[Any], released: Any) -> None:
        if len(self._threads) < self._count:
            thread = threading.Thread(target=self._serve, name="oloproof-case", daemon=True)
            thread.start()
            self._threads.append(thread)
        self._queue.put((work, case, loop, future, released))

    def _serve(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, case, loop, future, released = item
            try:
                result = work(case)
            except BaseException as exc:  # pragma: no cover - _run_sync catches case errors
                result = _failure("engine_error", exc, None)
            try:
                loop.call_soon_threadsafe(_deliver, future, result, released)
            except RuntimeError:  # the loop is closed: the run was stopped
                return
            # Hand the GIL to the event loop now: it has a result to process, and would
            # otherwise wait a whole switch interval behind workers running Python.
            time.sleep(0)

    def stop(self) -> None:
        for _ in self._threads:
            self._queue.put(None)


def _deliver(future: asyncio.Future[Any], result: Any, released: Any) -> None:
    released()
    if not future.done():
        future.set_result(result)


@dataclass
class ReplayResult:
    """What one replay returned: the continuation after the checkpoint and the end state."""

    trajectory: AgentTrajectory | None
    state: dict[str, Any] | None = None
    error: str | None = None


class _ReplayMixin:
    """Replays run around the sandbox exactly as case calls do: reset, replay, snapshot."""

    target: SystemTarget
    timeout_s: float | None
    _sandbox: asyncio.Lock | None

    def fresh_state(self, case: Case) -> dict[str, Any]:  # pragma: no cover - see SystemCaller
        raise NotImplementedError

    async def replay(
        self, case: Case, trajectory: AgentTrajectory, checkpoint: Any, change: Any
    ) -> ReplayResult:
        replayable = self.target.replayable
        assert replayable is not None
        if self._sandbox is not None:
            async with self._sandbox:
                return await self._replay_once(case, replayable, trajectory, checkpoint, change)
        return await self._replay_once(case, replayable, trajectory, checkpoint, change)

    async def _replay_once(
        self, case: Case, replayable: Any, trajectory: AgentTrajectory, checkpoint: Any,
        change: Any,
    ) -> ReplayResult:
        stateful = self.target.stateful
        is_async = inspect.iscoroutinefunction(replayable.replay)

        def in_sandbox() -> ReplayResult:
            if stateful is not None:
                stateful.reset(self.fresh_state(case))
            returned = replayable.replay(trajectory, checkpoint=checkpoint, change=change)
            return _replay_outcome(returned, None if stateful is None else stateful.snapshot,
                                   case)

        async def in_sandbox_async() -> ReplayResult:
            if stateful is not None:
                await _maybe_await(_reset_of(stateful)(self.fresh_state(case)))
            returned = await replayable.replay(trajectory, checkpoint=checkpoint, change=change)
            snap = None
            if stateful is not None:
                snap = await _maybe_await(stateful.snapshot())
            return _replay_outcome(returned, None if stateful is None else (lambda: snap), case)

        try:
            if is_async:
                return await asyncio.wait_for(in_sandbox_async(), self.timeout_s)
            # Holding the sandbox lock, a thread of its own; a timed-out replay keeps the
            # sandbox until it returns (the lock is released by the awaiting side only after).
            future = asyncio.get_running_loop().run_in_executor(None, in_sandbox)
            try:
                return await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
            except TimeoutError:
                await asyncio.wait([future])
                return ReplayResult(None, error=f"replay timed out after {self.timeout_s:g} s")
        except TimeoutError:
            return ReplayResult(None, error=f"replay timed out after {self.timeout_s:g} s")
        except Exception as exc:
            return ReplayResult(None, error=f"replay raised {type(exc).__name__}: {exc}")


class SystemCaller(_ReplayMixin):
    """Runs cases against one system target, bounded and isolated."""

    def __init__(self, target: SystemTarget, concurrency: int, timeout_s: float | None) -> None:
        self.target = target
        self.timeout_s = timeout_s
        self.concurrency = concurrency
        self._slots = asyncio.Semaphore(concurrency)
        # The seam for sandboxes: one lock per Stateful instance. Several independent instances
        # (e.g. one per worker process) are how stateful suites scale.
        self._sandbox = asyncio.Lock() if target.stateful is not None else None
        self._workers = None if target.is_async else _Workers(concurrency)
        # Sync systems start inline (see _call_inline) unless a timeout must be enforceable.
        self._inline = not target.is_async and timeout_s is None
        self._inline_calls = 0
        self._inline_window: list[tuple[float, float]] = []
        self._frozen_states: dict[str, bytes] = {}
        self.calls = 0

    def fresh_state(self, case: Case) -> dict[str, Any]:
        """A private copy of the case's initial state for `reset`.

        A state shared by `$ref` is pickled once per run and each case gets `pickle.loads` of
        it, several times faster than `deepcopy` on a multi-megabyte sandbox.
        """
        if case.state_ref is None or case.initial_state is None:
            return copy.deepcopy(case.initial_state or {})
        frozen = self._frozen_states.get(case.state_ref)
        if frozen is None:
            frozen = pickle.dumps(case.initial_state, protocol=pickle.HIGHEST_PROTOCOL)
            self._frozen_states[case.state_ref] = frozen
        state: dict[str, Any] = pickle.loads(frozen)
        return state

    def close(self) -> None:
        if self._workers is not None:
            self._workers.stop()

    async def call(self, case: Case) -> CallResult:
        """Execute one case. Never raises for a problem of the case itself."""
        self.calls += 1
        if self.target.is_async:
            return await self._call_async(case)
        return await self._call_sync(case)

    # ---- sync systems: a thread per call, released only when the call really returns -------

    async def _call_sync(self, case: Case) -> CallResult:
        if self._inline:
            return await self._call_inline(case)
        loop = asyncio.get_running_loop()
        if self._sandbox is not None:
            await self._sandbox.acquire()
        await self._slots.acquire()
        assert self._workers is not None
        future: asyncio.Future[CallResult] = loop.create_future()
        self._workers.submit(self._run_sync, case, loop, future, self._release)
        if self.timeout_s is None:
            return await future
        try:
            # shield: a timeout abandons the wait, never the call (a thread cannot be killed)
            return await asyncio.wait_for(asyncio.shield(future), self.timeout_s)
        except TimeoutError:
            return _timed_out(case, self.timeout_s)

    async def _call_inline(self, case: Case) -> CallResult:
        """Call a fast, CPU-bound sync system in the loop's own thread.

        Python code cannot overlap under the GIL, so for such a system worker threads only add
        a hand-off per case (measured: a quarter of the run for a scripted agent). Each inline
        call is measured and, after three warm-up calls, each window of eight is judged: if
        together they mostly waited (CPU under 70% of their wall time, each over 2 ms on
        average, i.e. I/O) or their median took over 20 ms, the system moves to worker threads
        for the rest of the run. Only used without `timeout_s`: a call in the
        loop's own thread cannot be abandoned.
        """
        if self._sandbox is not None:
            await self._sandbox.acquire()
        await self._slots.acquire()
        try:
            wall, cpu = time.perf_counter(), time.thread_time()
            result = self._run_sync(case)
            wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
            self._inline_calls += 1
            if self._inline_calls > INLINE_WARM_UP:
                self._judge_inline(wall, cpu)
            return result
        finally:
            self._release()

    def _judge_inline(self, wall: float, cpu: float) -> None:
        """Move to worker threads when the recent calls, taken together, wait or are slow.

        Judged over a window, not one call: a single call can be held up by a garbage
        collection or by the store's writer thread taking the GIL, which says nothing about
        the system.
        """
        window = self._inline_window
        window.append((wall, cpu))
        if len(window) < INLINE_WINDOW:
            return
        walls = sorted(w for w, _ in window)
        total_wall = sum(walls)
        waiting = (total_wall > INLINE_WINDOW * INLINE_MIN_WAIT
                   and sum(c for _, c in window) < INLINE_MIN_CPU_SHARE * total_wall)
        slow = walls[len(walls) // 2] > INLINE_MAX_SECONDS
        if waiting or slow:
            self._inline = False
        window.clear()

    def _release(self) -> None:
        self._slots.release()
        if self._sandbox is not None:
            self._sandbox.release()

    def _run_sync(self, case: Case) -> CallResult:
        recorder = CaseRecorder(case.id, case.metadata)
        token = set_current(recorder)
        try:
            stateful = self.target.stateful
            if stateful is not None:
                try:
                    stateful.reset(self.fresh_state(case))
                except Exception as exc:
                    return _failure("reset_failed", exc, "the sandbox's reset() raised")
            start = time.perf_counter()
            try:
                output = self.target.call(case.input)
            except Exception as exc:
                return _failure_from(exc)
            latency = (time.perf_counter() - start) * 1000.0
            result = _finish(recorder, output, latency)
            if stateful is not None and result.error is None:
                _take_snapshot(stateful.snapshot, case.initial_state, result)
            return result
        finally:
            recorder.close()
            reset_current(token)

    # ---- async systems: tasks on the run's loop ---------------------------------------------

    async def _call_async(self, case: Case) -> CallResult:
        async with self._slots:
            if self._sandbox is not None:
                async with self._sandbox:
                    return await self._guarded(case)
            return await self._guarded(case)

    async def _guarded(self, case: Case) -> CallResult:
        try:
            return await asyncio.wait_for(self._run_async(case), self.timeout_s)
        except TimeoutError:
            return _timed_out(case, self.timeout_s)

    async def _run_async(self, case: Case) -> CallResult:
        recorder = CaseRecorder(case.id, case.metadata)
        token = set_current(recorder)
        try:
            stateful = self.target.stateful
            if stateful is not None:
                try:
                    await _maybe_await(_reset_of(stateful)(self.fresh_state(case)))
                except Exception as exc:
                    return _failure("reset_failed", exc, "the sandbox's reset() raised")
            start = time.perf_counter()
            try:
                output = await self.target.call(case.input)
            except Exception as exc:
                return _failure_from(exc)
            latency = (time.perf_counter() - start) * 1000.0
            result = _finish(recorder, output, latency)
            if stateful is not None and result.error is None:
                try:
                    snap = await _maybe_await(stateful.snapshot())
                    _take_snapshot(lambda: snap, case.initial_state, result)
                except Exception as exc:
                    result.notes.append(f"snapshot() raised {type(exc).__name__}: {exc}")
            return result
        finally:
            recorder.close()
            reset_current(token)


def _replay_outcome(returned: Any, snapshot: Any, case: Case) -> ReplayResult:
    if isinstance(returned, dict):
        returned = AgentTrajectory.model_validate(returned)
    if not isinstance(returned, AgentTrajectory):
        return ReplayResult(None, error=f"replay returned {type(returned).__name__}, not an "
                            "AgentTrajectory")
    state = None
    if snapshot is not None:
        holder = CallResult(None)
        _take_snapshot(snapshot, case.initial_state, holder)
        state = holder.artifacts.get(STATE_KIND)
    return ReplayResult(returned, state)


def _reset_of(stateful: Stateful) -> Callable[[dict[str, Any]], object]:
    """`stateful.reset`, typed for an async system whose reset returns an awaitable."""
    return stateful.reset


async def _maybe_await(value: Any) -> Any:
    if inspect.isawaitable(value):
        return await value
    return value


def _finish(recorder: CaseRecorder, output: Any, latency: float) -> CallResult:
    if not isinstance(output, dict):
        return CallResult(
            None,
            error=CaseError(
                "invalid_output",
                f"the system returned {type(output).__name__}, not a JSON object (dict)",
            ),
            latency_ms=latency,
        )
    try:
        _check_json(output)
    except (TypeError, ValueError) as exc:
        return CallResult(
            None, error=CaseError("invalid_output", f"the output is not JSON: {exc}"),
            latency_ms=latency,
        )
    artifacts = dict(recorder.artifacts)
    trajectory = artifacts.get(TRAJECTORY_KIND)
    if trajectory is not None and not isinstance(trajectory, AgentTrajectory):
        trajectory = AgentTrajectory.model_validate(trajectory)
    return CallResult(output, artifacts, trajectory, None, latency)


def _take_snapshot(snapshot: Any, initial: dict[str, Any] | None, result: CallResult) -> None:
    """Record the end state as a diff against the initial state, while the sandbox is held.

    The diff is serialised at once, so a sandbox that later mutates its objects cannot change
    what was recorded, and a multi-megabyte state is never copied whole. A snapshot that
    raises or is not JSON leaves the case without state (it is not errored).
    """
    try:
        state = snapshot()
        if not isinstance(state, dict):
            raise TypeError(f"snapshot() returned {type(state).__name__}, not a dict")
        patch_text = canonical_json(state_diff.diff(initial or {}, state))
    except Exception as exc:
        result.notes.append(f"no state recorded: {type(exc).__name__}: {exc}")
        return
    result.state_patch = patch_text
    result.artifacts[STATE_KIND] = state_diff.apply(initial or {}, json.loads(patch_text))


def _failure_from(exc: BaseException) -> CallResult:
    if isinstance(exc, RecordingError):
        return _failure("invalid_artifact", exc, None)
    return _failure("exception", exc, None)


def _failure(kind: str, exc: BaseException, prefix: str | None) -> CallResult:
    text = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, RecordingError):
        text = exc.message
    message = f"{prefix}: {text}" if prefix else text
    return CallResult(
        None, error=CaseError(kind, message, "".join(traceback.format_exception(exc)))
    )


def _timed_out(case: Case, timeout_s: float | None) -> CallResult:
    return CallResult(
        None,
        error=CaseError(
            "timeout", f"the system did not return within timeout_s={timeout_s:g} s"
        ),
        latency_ms=(timeout_s or 0) * 1000.0,
    )
