"""One trial of another harness's run, as plain data: what an import stores
(docs/imports.md).

A reader (`inspect_logs`, `harbor`) turns each sample × epoch, or each trial, into an
`ImportedTrial`: the case and trial it is, how it ended (`scored`, `errored` with a kind, or
`missing` with a reason), its scores one criterion each, its trajectory and usage. What a reader
could not map (a score no criterion can hold) is an `ImportedSkip`, counted by name in the
reader's summary, never dropped silently.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

from oloproof.errors import UsageError
from oloproof.recording.trajectory import AgentTrajectory
from oloproof.traces.reading import TraceUsage


def check_pass_at(pass_at: float) -> float:
    """`pass_at`, when it is a pass mark a value in [0, 1] can reach: in (0, 1].

    Raises:
        UsageError: naming the option, when it is not.
    """
    if not 0 < pass_at <= 1:
        raise UsageError(f"--pass-at {pass_at:g} is not in (0, 1]: a score passes at that "
                         "value or more, and scores are values in [0, 1]")
    return pass_at


TrialStatus = Literal["scored", "errored", "missing"]
#: Why an imported execution errored: the engine's kinds (docs/failures.md#error-kinds), and
#: `limit` (a token, time, message or turn limit stopped the agent).
ImportedErrorKind = Literal["system_error", "timeout", "limit"]


@dataclass(frozen=True, slots=True)
class ImportedScore:
    """One criterion's score of one trial.

    Attributes:
        criterion: the criterion's name (a scorer's, `scorer.key` for a dict-valued score, or
            a verifier's reward key).
        value: the trial's value in [0, 1] (1 a pass, 0 a failure, a fraction a partial
            credit), or None when it has none (missing, or a number outside [0, 1]).
        passed: the verdict: True / False as recorded, else the value against the import's
            pass mark (`pass_at`: a grade's value, a number, a reward); None when there is no
            value.
        missing: why there is no value (`unscored`: the harness's scorer gave up), else None.
        recorded: the score as the harness recorded it.
    """

    criterion: str
    value: float | None
    passed: bool | None
    missing: str | None = None
    recorded: Any = None


@dataclass(frozen=True, slots=True)
class ImportedError:
    """Why a trial is an errored execution: its kind and the harness's own words."""

    kind: ImportedErrorKind
    message: str
    detail: str | None = None  # the exception's type, or the limit that stopped it
    traceback: str | None = None


@dataclass(frozen=True, slots=True)
class ImportedSkip:
    """A score no criterion can hold, named: where it was and why it was left out."""

    criterion: str
    reason: str  # e.g. "text value 'maybe'", "a list"


@dataclass(frozen=True, slots=True)
class ImportedTrial:
    """One trial of one case, as another harness recorded it.

    Attributes:
        case_id: the case (an Inspect sample's id, a Harbor task's name), as text.
        trial: which trial, from 1 (an Inspect epoch, a Harbor attempt).
        status: `scored`; `errored` (see `error`: never a failure); `missing` (see
            `missing`: nothing to judge, and no error either).
        scores: one per criterion, as recorded — also on an errored trial, where a harness
            scored what an interrupted agent left (they are not its verdicts).
        error: why the execution errored, when `status` is `errored`.
        missing: why a trial that ran has no score (`no_reward`), when `status` is `missing`.
        trajectory: what the agent did, or None when nothing was recorded.
        usage: tokens and cost, or None when none were recorded.
        input, output: the case's input and the agent's answer, as far as recorded.
        skipped: the scores left out, by name.
        source: where in the run this trial was read (a sample's key, a trial's folder).
    """

    case_id: str
    trial: int
    status: TrialStatus
    scores: tuple[ImportedScore, ...] = ()
    error: ImportedError | None = None
    missing: str | None = None
    trajectory: AgentTrajectory | None = None
    usage: TraceUsage | None = None
    input: Any = None
    output: Any = None
    skipped: tuple[ImportedSkip, ...] = ()
    source: str = ""

    def score(self, criterion: str) -> ImportedScore | None:
        """This trial's score of `criterion`, or None."""
        return next((s for s in self.scores if s.criterion == criterion), None)


@dataclass
class ImportSummary:
    """What one reading of a run met: counts for the import's one-line summary."""

    trials: int = 0
    by_status: Counter[str] = field(default_factory=Counter)
    errored: Counter[str] = field(default_factory=Counter)
    skipped: Counter[tuple[str, str]] = field(default_factory=Counter)
    warnings: list[str] = field(default_factory=list)

    def count(self, trial: ImportedTrial) -> ImportedTrial:
        """Count `trial` in, and hand it back."""
        self.trials += 1
        self.by_status[trial.status] += 1
        if trial.error is not None:
            self.errored[trial.error.kind] += 1
        for skip in trial.skipped:
            self.skipped[(skip.criterion, skip.reason)] += 1
        return trial

    def skipped_text(self) -> str:
        """The skipped scores in words (`answer: text value 'maybe' × 3`), or ''."""
        return "; ".join(f"{criterion}: {reason} × {n}"
                         for (criterion, reason), n in sorted(self.skipped.items()))
