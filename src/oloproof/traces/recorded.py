"""The system of a suite made by `oloproof traces import`
(docs/traces.md#production-traces-oloproof-traces-import): the recording itself.

Each case's `input.recording` holds what production recorded — the answer, the trajectory read
from the trace, its usage and what the reader did not understand. `play` re-records them and
returns the answer, so the suite's evaluators, slices and gate judge real traffic without
re-running anything. The recording is part of the case's input, so its digest (and the cache)
change with it.
"""

from __future__ import annotations

from typing import Any

from oloproof.errors import RecordingError
from oloproof.recording.recorder import current_case
from oloproof.recording.trajectory import AgentTrajectory
from oloproof.recording.usage import USAGE_KIND
from oloproof.traces import READING_KIND

RECORDING_KEY = "recording"


def play(case_input: dict[str, Any]) -> dict[str, Any]:
    """Record the case's recorded trajectory (and usage), and return its recorded answer."""
    recording = case_input.get(RECORDING_KEY) if isinstance(case_input, dict) else None
    if not isinstance(recording, dict) or "trajectory" not in recording:
        raise RecordingError(
            "this case's input has no recording (input.recording.trajectory); a suite made "
            "by `oloproof traces import` keeps each trace's recording there")
    case = current_case()
    case.agent_trajectory(AgentTrajectory.model_validate(recording["trajectory"]))
    if recording.get("usage"):
        case.record(USAGE_KIND, recording["usage"])
    if recording.get("reading"):
        case.record(READING_KIND, recording["reading"])
    return {"answer": recording.get("answer")}
