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

#: The input keys: the test's outcomes, a letter a trial (`OUTCOME_CODES`), what each trial
#: that did not pass raised (by trial number), and the test's `trials` setting.
OUTCOMES_KEY, RAISED_KEY, LIMIT_KEY = "outcomes", "raised", "most_trials"
OUTCOME_CODES = {"passed": "P", "failed": "F", "errored": "E"}
_OUTCOMES = {code: outcome for outcome, code in OUTCOME_CODES.items()}


class TrialError(RecordingError):
    """A trial that errored in the pytest session, raised again as it was recorded
    (`ConnectionError: refused`): an errored execution, whose message is the trial's."""


def play(case_input: dict[str, Any]) -> dict[str, Any]:
    """Trial `current_case().trial` of the test, as it happened: `{"verdict": "passed" |
    "failed", "details": {...}}`, an excluded verdict for a trial it did not run, or its
    error raised again."""
    outcomes = case_input.get(OUTCOMES_KEY) if isinstance(case_input, dict) else None
    if not isinstance(outcomes, str):
        raise RecordingError("this case's input has no outcomes (input.outcomes): a suite made "
                             "from a pytest session keeps each test's trials there")
    number = current_case().trial
    if number > len(outcomes):
        beyond = number > int(case_input.get(LIMIT_KEY) or len(outcomes))
        return {"verdict": "excluded", "reason": "beyond_trials" if beyond else "decided_early"}
    outcome = _OUTCOMES[outcomes[number - 1]]
    raised = (case_input.get(RAISED_KEY) or {}).get(str(number)) or {}
    if outcome == "errored":
        raise TrialError(str(raised.get("message") or "the trial errored"))
    return {"verdict": outcome, **({"details": raised} if raised else {})}
