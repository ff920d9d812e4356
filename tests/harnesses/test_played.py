"""The recordings an import plays back (`harnesses.played.Recordings`): each trial read back by
its case and trial, and an index that holds a few numbers a trial, not a Python object each
(docs/imports.md#how-an-import-is-stored)."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import pytest

from oloproof.harnesses.played import Recordings
from oloproof.harnesses.records import ImportedError, ImportedScore, ImportedTrial


def _trial(case: int, trial: int) -> ImportedTrial:
    passed = (case + trial) % 2 == 0
    return ImportedTrial(
        case_id=f"case-{case:05d}", trial=trial, status="scored",
        scores=(ImportedScore("answer", float(passed), passed, recorded="C" if passed else "I"),),
        output=f"answer {case}.{trial}")


def test_each_trial_is_read_back_by_its_case_and_trial(tmp_path: Path) -> None:
    recordings = Recordings(tmp_path / "recordings.jsonl")
    errored = ImportedTrial(case_id="case-00001", trial=2, status="errored",
                            error=ImportedError("limit", "message limit", detail="limit 4"))
    # case 0 has trials 3, 1 (in that order); case 1 trials 1, 2; case 2 trial 2 alone
    for trial in (_trial(0, 3), _trial(0, 1), _trial(1, 1), errored, _trial(2, 2)):
        recordings.add(trial)
    try:
        for case, trial in ((0, 3), (0, 1), (1, 1), (2, 2)):
            found = recordings.trial(f"case-{case:05d}", trial)
            assert found is not None
            record, trajectory = found
            assert record["output"] == f"answer {case}.{trial}"
            assert record["scores"]["answer"]["passed"] is ((case + trial) % 2 == 0)
            assert trajectory is None
        found = recordings.trial("case-00001", 2)
        assert found is not None and found[0]["error"]["kind"] == "limit"
        # a trial or a case the run does not hold
        assert recordings.trial("case-00000", 2) is None
        assert recordings.trial("case-00002", 1) is None
        assert recordings.trial("case-00003", 1) is None
    finally:
        recordings.close()


def test_a_cases_trials_are_written_together(tmp_path: Path) -> None:
    recordings = Recordings(tmp_path / "recordings.jsonl")
    try:
        recordings.add(_trial(0, 1))
        recordings.add(_trial(1, 1))
        with pytest.raises(ValueError, match="case-00000"):
            recordings.add(_trial(0, 2))
    finally:
        recordings.close()


def test_the_index_holds_a_few_numbers_a_trial(tmp_path: Path) -> None:
    # (tracemalloc counts what stays allocated: no clock involved.) The index is a case id
    # and a number per case and four numbers a trial in arrays; a dict of (case, trial)
    # tuples held about 240 bytes a trial.
    trials = [_trial(case, trial) for case in range(2000) for trial in (1, 2, 3)]
    recordings = Recordings(tmp_path / "recordings.jsonl")
    try:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            for trial in trials:
                recordings.add(trial)
            held = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
    finally:
        recordings.close()
    assert held / len(trials) < 80, f"{held / len(trials):.0f} bytes a trial"
