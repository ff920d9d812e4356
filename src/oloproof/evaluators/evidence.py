"""What an evaluator reads about one case: the case, its output and its artifacts."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory
from oloproof.suite.case import Case


@dataclass
class Evidence:
    """One executed case as evaluators see it. Evaluators never call the system.

    `errored` is set when the system raised, timed out, returned a non-object or recorded an
    invalid artifact: every criterion that needs the output is then missing.
    """

    case: Case
    output: dict[str, Any] | None
    artifacts: dict[str, Any] = field(default_factory=dict)
    errored: str | None = None
    latency_ms: float | None = None
    initial_state: dict[str, Any] | None = None
    source: Evidence | None = None
    replays: dict[str, Any] = field(default_factory=dict)
    # The `judge_verdict/v1` record of each judge criterion (docs/judges.md), by criterion:
    # the execution layer calls the judge and puts its verdict here.
    # (None when there is none: no dict is made per case of a suite without judges.)
    verdicts: dict[str, Any] | None = None
    facts: dict[str, Any] | None = None  # trajectory facts, computed once by the engine
    state_error: str | None = None  # why a Stateful system's end state is missing (snapshot)
    _trajectory: AgentTrajectory | None = None

    @property
    def trajectory(self) -> AgentTrajectory | None:
        """The recorded `agent_trajectory/v1`, parsed once."""
        if self._trajectory is None:
            payload = self.artifacts.get(TRAJECTORY_KIND)
            if payload is None:
                return None
            if isinstance(payload, AgentTrajectory):
                self._trajectory = payload
            else:
                self._trajectory = AgentTrajectory.model_validate(payload)
        return self._trajectory

    @property
    def state(self) -> dict[str, Any] | None:
        """The recorded end state (`environment_state/v1`), if any."""
        value = self.artifacts.get(STATE_KIND)
        return value if isinstance(value, dict) else None
