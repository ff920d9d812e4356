"""The system of the run a pytest session is stored as (docs/pytest.md#the-stored-run): each
case is a marked test, its input the test's trials as they happened, and `play` gives back
trial t of them — its verdict as the output the `recorded` evaluator reads, or, for a trial
that errored, the error raised again. Nothing of the test is run again.

A trial the test did not run — it decided before, or the session's tests ran more trials than
this one's `trials` — is excluded (`decided_early`, `beyond_trials`), so the case's value is
its passes over the trials it ran (docs/reliability.md#what-passk-means).
"""

from __future__ import annotations

from typing import Any

from oloproof.errors import RecordingError
from oloproof.recording.recorder import current_case

#: The input key that holds a test's trials, and the one that holds its `trials` setting.
TRIALS_KEY, LIMIT_KEY = "trials", "most_trials"


class TrialError(RecordingError):
    """A trial that errored in the pytest session, raised again as it was recorded
    (`ConnectionError: refused`): an errored execution, whose message is the trial's."""


def play(case_input: dict[str, Any]) -> dict[str, Any]:
    """Trial `current_case().trial` of the test, as it happened: `{"verdict": "passed" |
    "failed", "details": {...}}`, an excluded verdict for a trial it did not run, or its
    error raised again."""
    trials = case_input.get(TRIALS_KEY) if isinstance(case_input, dict) else None
    if not isinstance(trials, list):
        raise RecordingError("this case's input has no trials (input.trials): a suite made "
                             "from a pytest session keeps each test's trials there")
    number = current_case().trial
    if number > len(trials):
        beyond = number > int(case_input.get(LIMIT_KEY) or len(trials))
        return {"verdict": "excluded", "reason": "beyond_trials" if beyond else "decided_early"}
    trial = trials[number - 1]
    # (how long it took stays in the input: an output is what the trial said)
    details = {key: trial[key] for key in ("message", "phase", "where")
               if trial.get(key) is not None}
    if trial["outcome"] == "errored":
        raise TrialError(str(trial.get("message") or "the trial errored"))
    return {"verdict": trial["outcome"], **({"details": details} if details else {})}
