"""`current_case()`: the recorder of the case being run (SPEC §3.2).

The recorder lives in a context variable, so it is right under threads (each call runs in a
copied context) and under asyncio tasks.
"""

from __future__ import annotations

import contextvars
import json
import re
from typing import Any

from oloproof.errors import RecordingError
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory, trajectory_problems

_ARTIFACT_KIND = re.compile(r"^[a-z][a-z0-9_.-]*/v[0-9]+$")

_current: contextvars.ContextVar[CaseRecorder | None] = contextvars.ContextVar(
    "oloproof_current_case", default=None
)


class CaseRecorder:
    """Collects the artifacts one case records while its system runs."""

    __slots__ = ("_closed", "artifacts", "case_id", "metadata")

    def __init__(self, case_id: str, metadata: dict[str, Any] | None = None) -> None:
        self.case_id = case_id
        self.metadata: dict[str, Any] = dict(metadata or {})
        self.artifacts: dict[str, Any] = {}
        self._closed = False

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
        try:
            json.dumps(payload, allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise RecordingError(
                f"artifact {kind} is not JSON: {exc}", case=self.case_id
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


def current_case() -> CaseRecorder:
    """The recorder of the case being run; raises outside a system call."""
    recorder = _current.get()
    if recorder is None:
        raise RecordingError(
            "current_case() was called outside a case: it only works inside the system call "
            "that Oloproof makes for a case"
        )
    return recorder


def set_current(recorder: CaseRecorder | None) -> contextvars.Token[CaseRecorder | None]:
    """Install `recorder` for the current context (engine use)."""
    return _current.set(recorder)


def reset_current(token: contextvars.Token[CaseRecorder | None]) -> None:
    _current.reset(token)
