"""The system of an imported run (docs/imports.md#how-an-import-is-stored): each trial played
back as its harness recorded it.

An import writes one case per case of the other harness's run (its input as recorded: what
`compare` pairs two runs' cases by) and, beside the cases, every trial's record and
trajectory in a recordings file (`Recordings`, read by offset). While `playing(recordings)`
holds, `play` gives the engine the trial it is asked for: a scored or missing trial returns
its scores (the `imported_score` evaluator reads them) and
records its trajectory and usage; an errored trial raises `RecordedError`, so it is stored as
an errored execution of its kind, never a failure. So an imported run is made, stored and
decided by the engine, like any run.
"""

from __future__ import annotations

import json
import os
from array import array
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
    """What `play` needs of one trial but its trajectory, as JSON: status, scores, error,
    usage."""
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
    if trial.usage is not None and trial.usage.payload():
        record["usage"] = trial.usage.payload()
    if trial.source:
        record["source"] = trial.source
    return record


class Recordings:
    """The trials of an imported run: a file of two JSON lines per trial (`trial_record`, then
    the trajectory as pydantic writes it, `null` when none), each read by its offset when its
    trial is played. A case's trials are written together, so memory holds, per case, its id
    and number, and, per trial, four numbers in arrays (its trial, offset and two lengths):
    about 50 bytes a trial at 3 trials a case, where a dict of (case, trial) tuples held 240
    (docs/imports.md#how-an-import-is-stored)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._out = path.open("wb")
        self._at = 0
        self._cases: dict[str, int] = {}  # case id → its number, in the order written
        self._first = array("q")  # case number → the place of its first trial in the arrays
        self._trials = array("l")  # the trial, offset and lengths of each trial written
        self._offsets = array("q")
        self._record_lengths = array("q")
        self._trajectory_lengths = array("q")
        self._fd: int | None = None

    def add(self, trial: ImportedTrial) -> None:
        """Write one trial (a case's trials one after another).

        Raises:
            ValueError: a case's trial comes after another case's trials.
        """
        number = self._cases.get(trial.case_id)
        if number is None:
            self._cases[trial.case_id] = len(self._first)
            self._first.append(len(self._trials))
        elif number != len(self._first) - 1:
            raise ValueError(f"case {trial.case_id}: its trials are written together")
        record = json.dumps(trial_record(trial), ensure_ascii=False,
                            allow_nan=False).encode() + b"\n"
        trajectory = (trial.trajectory.model_dump_json().encode()
                      if trial.trajectory is not None else b"null") + b"\n"
        self._out.write(record)
        self._out.write(trajectory)
        self._trials.append(trial.trial)
        self._offsets.append(self._at)
        self._record_lengths.append(len(record))
        self._trajectory_lengths.append(len(trajectory))
        self._at += len(record) + len(trajectory)

    def _where(self, case_id: str, trial: int) -> int | None:
        """The place of a trial in the arrays, or None when the run has no such trial."""
        number = self._cases.get(case_id)
        if number is None:
            return None
        end = self._first[number + 1] if number + 1 < len(self._first) else len(self._trials)
        for at in range(self._first[number], end):
            if self._trials[at] == trial:
                return at
        return None

    def trial(self, case_id: str,
              trial: int) -> tuple[dict[str, Any], AgentTrajectory | None] | None:
        """One trial's record and trajectory, or None when the run has no such trial
        (thread-safe: a positional read)."""
        if self._fd is None:
            self._out.close()
            self._fd = os.open(self.path, os.O_RDONLY)
        at = self._where(case_id, trial)
        if at is None:
            return None
        record_length = self._record_lengths[at]
        both = os.pread(self._fd, record_length + self._trajectory_lengths[at],
                        self._offsets[at])
        record: dict[str, Any] = json.loads(both[:record_length])
        text = both[record_length:]
        trajectory = None if text.strip() == b"null" else \
            AgentTrajectory.model_validate_json(text)
        return record, trajectory

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
    if _playing is None:
        raise RecordingError(
            "no imported run is being stored: this system plays back the trials of the run "
            "`oloproof import` is storing, and is not run by itself", case=case.case_id)
    found = _playing.trial(case.case_id, case.trial)
    if found is None:
        return {"answer": None, "scores": {}, "missing": NOT_IN_RUN}
    record, trajectory = found
    if trajectory is not None:
        case.agent_trajectory(trajectory)
    if record.get("usage"):
        case.record(USAGE_KIND, record["usage"])
    error = record.get("error")
    if error is not None:
        detail = f" ({error['detail']})" if error.get("detail") else ""
        raise RecordedError(f"{error['message']}{detail}", error_kind=ErrorKind(error["kind"]),
                            traceback=error.get("traceback"))
    return {"answer": record.get("output"), "scores": record["scores"],
            "missing": record.get("missing")}
