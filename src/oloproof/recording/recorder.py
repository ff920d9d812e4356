"""`current_case()`: the recorder of the case being run
(docs/agents-and-tools.md#recording-a-trajectory).

The recorder lives in a context variable, so it is right under threads (each call runs in a
copied context) and under asyncio tasks.
"""

from __future__ import annotations

import contextvars
import json
import re
from types import MappingProxyType
from typing import Any

from oloproof.errors import RecordingError, UnstorableRecording
from oloproof.recording.steps import Replaying, StepRecorder
from oloproof.recording.trajectory import (
    TRAJECTORY_KIND,
    AgentCheckpoint,
    AgentTrajectory,
    trajectory_problems,
)
from oloproof.recording.usage import (
    USAGE_FIELDS,
    USAGE_KIND,
    add_usage,
    carried_usage,
    usage_problems,
)
from oloproof.recording.users import CONVERSATION_KIND, User
from oloproof.storable import storable_problem

_ARTIFACT_KIND = re.compile(r"^[a-z][a-z0-9_.-]*/v[0-9]+$")

_current: contextvars.ContextVar[CaseRecorder | None] = contextvars.ContextVar(
    "oloproof_current_case", default=None
)


#: A run's combination of `system.variants` as it travels with each job: (key, value) pairs in
#: the file's order; empty for a suite without variants (docs/board.md).
Variant = tuple[tuple[str, Any], ...]
_NO_VARIANT: MappingProxyType[str, Any] = MappingProxyType({})


class CaseRecorder:
    """Collects the artifacts one case records while its system runs.

    Inside `replay()` (docs/stateful-agents.md#a-tool-that-fails-fault-replays) it is the recorder
    of the case being replayed: `replay` says what the replay is about, and `steps()` records in the
    recording's numbering. `trial` and `trials` say which trial of the case is running (or, in a
    replay, whose recording is replayed).
    """

    __slots__ = ("_built", "_closed", "_replaying", "_steps", "_usage_sources", "_user",
                 "artifacts", "case_id", "metadata", "trial", "trials", "variant")

    def __init__(self, case_id: str, metadata: dict[str, Any] | None = None,
                 replaying: Replaying | None = None, *, trial: int = 1,
                 trials: int = 1, variant: Variant = ()) -> None:
        self.case_id = case_id
        #: The run's combination of `system.variants` (docs/board.md), a read-only mapping:
        #: `current_case().variant["model"]`; empty for a suite without variants.
        self.variant: MappingProxyType[str, Any] = \
            MappingProxyType(dict(variant)) if variant else _NO_VARIANT
        #: Which trial of the case this is, 1 … `trials` (docs/reliability.md): a system that
        #: samples can seed its randomness from (case_id, trial) to make a run reproducible.
        self.trial = trial
        #: How many trials each case of this run has.
        self.trials = trials
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.artifacts: dict[str, Any] = {}
        self._closed = False
        self._replaying = replaying
        self._steps: StepRecorder | None = None
        # After `close`: the trajectories the step recorder built (None: it was never opened).
        self._built: list[AgentTrajectory] | None = None
        # Where each usage field came from (`usage()` or a trajectory's messages).
        self._usage_sources: dict[str, str] = {}
        # The user of the case's conversation (docs/conversations.md), set by the engine.
        self._user: User | None = None

    @property
    def user(self) -> User:
        """The user this case's system holds a conversation with: scripted or simulated, as
        the case's `user` says (docs/conversations.md#the-loop).

        Raises:
            RecordingError: the case has no `user`, or this is a fault replay.
        """
        user = self._user
        if user is None:
            if self._replaying is not None:
                raise RecordingError(
                    "a fault replay has no user: it replays the recorded trajectory "
                    "(docs/conversations.md#what-a-simulated-user-cannot-tell-you)",
                    case=self.case_id)
            raise RecordingError("this case has no user: a conversation's case names one with "
                                 '"user": {"turns": [...]} or {"simulator": ..., "goal": ...} '
                                 "(docs/conversations.md#a-case-with-a-user)", case=self.case_id)
        return user

    def has_user(self) -> bool:
        """Whether the case holds a conversation (engine use)."""
        return self._user is not None

    def set_user(self, user: User) -> None:
        """Give the case its user (engine use)."""
        self._user = user

    @property
    def replay(self) -> Replaying | None:
        """In a replay: the recorded trajectory, the checkpoint and the change; else None."""
        return self._replaying

    def steps(self, after: AgentCheckpoint | None = None) -> StepRecorder:
        """The case's step recorder (the same one on every call within a case).

        `after` (in a replay only) starts it with the recording's steps up to that
        checkpoint, for a system that resumes from the checkpoint instead of working the
        request again from the start.
        """
        if after is not None:
            replaying = self._replaying
            if replaying is None:
                raise RecordingError("steps(after=...) is for a replay; in a case, call "
                                     "current_case().steps()", case=self.case_id)
            if after != replaying.checkpoint:
                raise RecordingError(
                    f"steps(after=...) must be given the replay's checkpoint "
                    f"{replaying.checkpoint.checkpoint_id!r}, not {after.checkpoint_id!r}",
                    case=self.case_id)
        if self._steps is None:
            self._steps = StepRecorder(self, self._replaying, resumed=after is not None)
            if self._user is not None:  # the turns so far come first
                self._user.steps_opened(self._steps)
        elif after is not None and not self._steps.resumed:
            raise RecordingError("steps(after=...) must come before any other steps() call "
                                 "of the replay", case=self.case_id)
        return self._steps

    @property
    def uses_steps(self) -> bool:
        """Whether the system opened the case's step recorder (engine use)."""
        return self._steps is not None or self._built is not None

    def built_by_steps(self, trajectory: AgentTrajectory) -> bool:
        """Whether this case's step recorder built `trajectory` (engine use)."""
        if self._steps is not None:
            return self._steps.built(trajectory)
        return self._built is not None and any(t is trajectory for t in self._built)

    def agent_trajectory(self, trajectory: AgentTrajectory) -> None:
        """Store the case's `agent_trajectory/v1` artifact (once per case)."""
        if not isinstance(trajectory, AgentTrajectory):
            raise RecordingError(
                f"agent_trajectory() takes an oloproof.AgentTrajectory, "
                f"not {type(trajectory).__name__}",
                case=self.case_id,
            )
        problems = trajectory_problems(trajectory.steps)
        if problems:
            raise RecordingError(
                "invalid agent_trajectory/v1: " + "; ".join(problems), case=self.case_id
            )
        # Kept as the model; the engine serialises it once, when it stores it.
        self._put(TRAJECTORY_KIND, trajectory)
        carried = carried_usage(trajectory)
        if carried:  # read from messages that recorded their usage (docs/traces.md#tokens-and-cost)
            self._add_usage(carried, "the trajectory's messages")

    def usage(self, *, input_tokens: int | None = None, output_tokens: int | None = None,
              cost: float | None = None) -> None:
        """Add tokens and cost to the case's `usage/v1` artifact (docs/traces.md#tokens-and-cost).

        Any of the three; called again, the fields are summed (one call per model request is
        fine). A field never given stays absent: it is not 0, and a `tokens` or `cost`
        quantile is missing for a case that recorded none.
        """
        given = {k: v for k, v in (("input_tokens", input_tokens),
                                   ("output_tokens", output_tokens), ("cost", cost))
                 if v is not None}
        problems = usage_problems(given)
        if problems:
            raise RecordingError("usage(): " + "; ".join(problems), case=self.case_id)
        self._add_usage(given, "current_case().usage()")

    def _add_usage(self, given: dict[str, Any], source: str) -> None:
        """Sum `given` into the case's `usage/v1`. A field both `usage()` and a trajectory's
        messages give is recorded twice: an error, never a doubled count."""
        if self._closed:
            raise RecordingError(f"{USAGE_KIND} recorded after the case had finished",
                                 case=self.case_id)
        for field in given:
            earlier = self._usage_sources.get(field)
            if earlier is not None and earlier != source and "messages" in earlier + source:
                raise RecordingError(
                    f"usage recorded twice: {field} both from {earlier} and from {source} "
                    "(from_langchain_messages keeps the messages' usage_metadata); record it "
                    "once", case=self.case_id)
            self._usage_sources[field] = source
        self.artifacts[USAGE_KIND] = add_usage(self.artifacts.get(USAGE_KIND), given)

    def record(self, kind: str, payload: Any) -> None:
        """Store any other typed artifact; `kind` is `name/vN`, the payload JSON."""
        if not isinstance(kind, str) or not _ARTIFACT_KIND.match(kind):
            raise RecordingError(
                f"artifact kind {kind!r} must look like 'name/v1'", case=self.case_id
            )
        if kind == TRAJECTORY_KIND:
            if isinstance(payload, AgentTrajectory):
                self.agent_trajectory(payload)
                return
            self.agent_trajectory(AgentTrajectory.model_validate(payload))
            return
        if kind == CONVERSATION_KIND:
            raise RecordingError(f"{kind} is recorded by Oloproof from the case's user "
                                 "(current_case().user); record it under another name",
                                 case=self.case_id)
        if kind == USAGE_KIND:
            problems = usage_problems(payload)
            if problems:
                raise RecordingError(f"invalid {USAGE_KIND}: " + "; ".join(problems) + "; or "
                                     "call current_case().usage(input_tokens=..., "
                                     "output_tokens=..., cost=...)", case=self.case_id)
            payload = {k: payload[k] for k in USAGE_FIELDS if k in payload}
        try:
            json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            problem = storable_problem(payload, (kind,))
            raise UnstorableRecording(
                f"artifact {kind} cannot be stored: {problem}" if problem is not None
                else f"artifact {kind} is not JSON: {exc}", case=self.case_id
            ) from None
        self._put(kind, payload)

    def _put(self, kind: str, payload: Any) -> None:
        if self._closed:
            raise RecordingError(
                f"{kind} recorded after the case had finished", case=self.case_id
            )
        if kind in self.artifacts:
            raise RecordingError(f"{kind} was recorded twice in one case", case=self.case_id)
        self.artifacts[kind] = payload

    def close(self) -> None:
        self._closed = True
        # The step recorder points back at this recorder: let go of it (keeping what it
        # built, for `built_by_steps`), so that the two are no reference cycle holding the
        # case's whole trajectory until the garbage collector finds it. Every trajectory is
        # then freed the moment its case is judged, and young collections find far less.
        steps = self._steps
        if steps is not None:
            self._built = steps.built_trajectories
            self._steps = None


def current_case() -> CaseRecorder:
    """The recorder of the case being run.

    Raises:
        RecordingError: called outside a system call Oloproof makes for a case.
    """
    recorder = _current.get()
    if recorder is None:
        raise RecordingError(
            "current_case() was called outside a case: it only works inside the system call "
            "that Oloproof makes for a case"
        )
    return recorder


def case_being_run() -> str | None:
    """The id of the case whose system call is running in this context, or None (engine use:
    what a guard reports; `current_case()` is the system's)."""
    recorder = _current.get()
    return recorder.case_id if recorder is not None else None


def set_current(recorder: CaseRecorder | None) -> contextvars.Token[CaseRecorder | None]:
    """Install `recorder` for the current context (engine use)."""
    return _current.set(recorder)


def reset_current(token: contextvars.Token[CaseRecorder | None]) -> None:
    _current.reset(token)
