"""The system of an imported run (docs/imports.md#how-an-import-is-stored): each trial played
back as its harness recorded it.

An import writes one case per case of the other harness's run (its input as recorded: what
`compare` pairs two runs' cases by) and, beside the cases, every trial's record in a
recordings file (`Recordings`: one line per case, each trial's record by trial number, read by
offset). While `playing(recordings)` holds, `play` gives the engine the trial it is asked for: a
scored or missing trial returns its scores (the `imported_score` evaluator reads them) and
records its trajectory and usage; an errored trial raises `RecordedError`, so it is stored as
an errored execution of its kind, never a failure. So an imported run is made, stored and
decided by the engine, like any run.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from oloproof.errors import ErrorKind, RecordedError, RecordingError
from oloproof.harnesses.records import ImportedTrial
from oloproof.recording.recorder import current_case
from oloproof.recording.trajectory import AgentTrajectory
from oloproof.recording.usage import USAGE_KIND

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


class Recordings:
    """The trials of an imported run, by case: a file of one JSON line per case (trial number
    → `trial_record`), each line read by its offset when its case is played, so memory holds
    the offsets, not the trials."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._out = path.open("wb")
        self._at = 0
        self.lines: dict[str, tuple[int, int]] = {}  # case id → (offset, length)
        self._fd: int | None = None

    def add(self, case_id: str, trials: dict[str, dict[str, Any]]) -> None:
        """Write one case's trials."""
        line = json.dumps(trials, ensure_ascii=False, allow_nan=False).encode() + b"\n"
        self._out.write(line)
        self.lines[case_id] = (self._at, len(line))
        self._at += len(line)

    def trials(self, case_id: str) -> dict[str, Any] | None:
        """One case's trials (thread-safe: a positional read)."""
        if self._fd is None:
            self._out.close()
            self._fd = os.open(self.path, os.O_RDONLY)
        where = self.lines.get(case_id)
        if where is None:
            return None
        found: dict[str, Any] = json.loads(os.pread(self._fd, where[1], where[0]))
        return found

    def close(self) -> None:
        self._out.close()
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


_playing: Recordings | None = None


@contextmanager
def playing(recordings: Recordings) -> Iterator[None]:
    """`play` plays `recordings` back while this holds (one import at a time)."""
    global _playing
    if _playing is not None:
        raise RuntimeError("an import is already playing a run back in this process")
    _playing = recordings
    try:
        yield
    finally:
        _playing = None
        recordings.close()


def play(case_input: Any) -> dict[str, Any]:
    """Play back the running trial of an imported case: its output and scores returned, its
    trajectory and usage recorded, or its recorded error raised as a `RecordedError`."""
    case = current_case()
    trials = _playing.trials(case.case_id) if _playing is not None else None
    if trials is None:
        raise RecordingError(
            "no imported run is being stored: this system plays back the trials of the run "
            "`oloproof import` is storing, and is not run by itself", case=case.case_id)
    record = trials.get(str(case.trial))
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
