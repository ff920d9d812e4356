"""The system of an imported run (docs/imports.md#how-an-import-is-stored): each trial played
back as its harness recorded it.

An import writes one case per case of the other harness's run, with every trial's record in
the case's input (`input.recording.trials`, keyed by trial number: `trial_record`). `play`
gives the engine the trial it is asked for: a scored or missing trial returns its scores
(the `imported_score` evaluator reads them) and records its trajectory and usage; an errored
trial raises `RecordedError`, so it is stored as an errored execution of its kind, never a
failure. So an imported run is made, stored and decided by the engine, like any run.
"""

from __future__ import annotations

from typing import Any

from oloproof.errors import ErrorKind, RecordedError, RecordingError
from oloproof.harnesses.records import ImportedTrial
from oloproof.recording.recorder import current_case
from oloproof.recording.trajectory import AgentTrajectory
from oloproof.recording.usage import USAGE_KIND

RECORDING_KEY = "recording"
#: A trial the case has no record of (an eval stopped before it ran every epoch).
NOT_IN_RUN = "not_in_imported_run"


def trial_record(trial: ImportedTrial) -> dict[str, Any]:
    """What `play` needs of one trial, as JSON: status, scores, error, trajectory, usage."""
    record: dict[str, Any] = {
        "status": trial.status,
        "scores": {s.criterion: {"value": s.value, "passed": s.passed, "missing": s.missing}
                   for s in trial.scores},
        "output": trial.output,
    }
    if trial.error is not None:
        record["error"] = {"kind": trial.error.kind, "message": trial.error.message,
                           "detail": trial.error.detail, "traceback": trial.error.traceback}
    if trial.missing is not None:
        record["missing"] = trial.missing
    if trial.trajectory is not None:
        record["trajectory"] = trial.trajectory.model_dump(mode="json")
    if trial.usage is not None and trial.usage.payload():
        record["usage"] = trial.usage.payload()
    if trial.source:
        record["source"] = trial.source
    return record


def play(case_input: dict[str, Any]) -> dict[str, Any]:
    """Play back the running trial of an imported case: its output and scores returned, its
    trajectory and usage recorded, or its recorded error raised as a `RecordedError`."""
    recording = case_input.get(RECORDING_KEY) if isinstance(case_input, dict) else None
    if not isinstance(recording, dict) or not isinstance(recording.get("trials"), dict):
        raise RecordingError(
            "this case's input has no recording (input.recording.trials); a run made by "
            "`oloproof import` keeps each trial's record there")
    case = current_case()
    record = recording["trials"].get(str(case.trial))
    if record is None:
        return {"answer": None, "scores": {}, "missing": NOT_IN_RUN}
    if record.get("trajectory") is not None:
        case.agent_trajectory(AgentTrajectory.model_validate(record["trajectory"]))
    if record.get("usage"):
        case.record(USAGE_KIND, record["usage"])
    error = record.get("error")
    if error is not None:
        detail = f" ({error['detail']})" if error.get("detail") else ""
        raise RecordedError(f"{error['message']}{detail}", error_kind=ErrorKind(error["kind"]),
                            traceback=error.get("traceback"))
    return {"answer": record.get("output"), "scores": record["scores"],
            "missing": record.get("missing")}
