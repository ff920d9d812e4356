"""A Harbor job folder read as trials (docs/imports.md#harbor): `read_harbor_job`.

A Harbor job writes one folder per trial, each with a `result.json` (Harbor's `TrialResult`)
and, from agents that record one, the ATIF trajectory `agent/trajectory.json`. The models
below follow the documented fields of `result.json` that an import reads (newer fields are
ignored: Harbor adds some, and dumps computed ones such as `reward_valid`); Oloproof does not
depend on Harbor, which needs a newer Python. The files the tests read were made by Harbor's
own models (tests/data/harnesses/README.md).

The mapping: a trial is a case (its task's name) × attempt (the task's trials in the order
they started); each verifier reward a criterion named after its key (`reward`), passed at
`pass_at` or more (default 1.0) and, in [0, 1], a value; a trial with an exception errored by
its kind (the exception wins over a reward); one with neither reward nor exception missing
(`no_reward`) — never 0, as Harbor's own mean counts it; the trajectory read by `from_atif`'s
reader; tokens and cost as the agent's result records them, else as the trajectory does.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from oloproof.errors import TraceError
from oloproof.harnesses.records import (
    ImportedError,
    ImportedErrorKind,
    ImportedScore,
    ImportedTrial,
    ImportSummary,
    TrialStatus,
    check_pass_at,
)
from oloproof.traces.atif import read_atif
from oloproof.traces.documents import checked_document
from oloproof.traces.reading import TraceReading, TraceUsage

RESULT_FILE = "result.json"
TRAJECTORY_FILE = Path("agent") / "trajectory.json"
NO_REWARD = "no_reward"

# Harbor's exceptions that mean the agent ran out of an allowance it was given, and those that
# mean something took too long; every other exception is a `system_error`. By name, as Harbor
# records `exception_type`.
_LIMITS = frozenset({
    "ContextWindowExceededError", "ContextLengthExceededError", "OutputTokenExceededError",
    "OutputLengthExceededError", "BudgetExceededError", "MemoryLimitExceededError",
    "ApiUsageLimitError",
})


class _Reading(BaseModel):
    model_config = ConfigDict(extra="ignore")


class HarborModelInfo(_Reading):
    name: str
    provider: str | None = None


class HarborAgentInfo(_Reading):
    name: str
    version: str
    model_info: HarborModelInfo | None = None


class HarborAgentContext(_Reading):
    """What the agent's run used: input tokens include the cached ones."""

    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None


class HarborVerifierResult(_Reading):
    rewards: dict[str, float | int] | None = None


class HarborExceptionInfo(_Reading):
    exception_type: str
    exception_message: str
    exception_traceback: str
    occurred_at: datetime


class HarborStepResult(_Reading):
    step_name: str
    agent_result: HarborAgentContext | None = None
    verifier_result: HarborVerifierResult | None = None
    exception_info: HarborExceptionInfo | None = None


class HarborTrialResult(_Reading):
    """A trial's `result.json` (Harbor's `TrialResult`, schema version 1)."""

    schema_version: int = 1
    id: str
    task_name: str
    trial_name: str
    trial_uri: str
    source: str | None = None
    agent_info: HarborAgentInfo
    agent_result: HarborAgentContext | None = None
    verifier_result: HarborVerifierResult | None = None
    exception_info: HarborExceptionInfo | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    step_results: list[HarborStepResult] | None = None

    def exceptions(self) -> list[HarborExceptionInfo]:
        """The trial's exception first, then its steps' (as Harbor lists them)."""
        found = [self.exception_info] if self.exception_info is not None else []
        found.extend(s.exception_info for s in self.step_results or ()
                     if s.exception_info is not None)
        return found

    def system(self) -> str:
        """The agent and model that ran the trial, as one name."""
        model = self.agent_info.model_info
        return self.agent_info.name + (f" ({model.name})" if model is not None else "")


def load_trial_result(path: Path) -> HarborTrialResult:
    """One trial's `result.json`, checked.

    Raises:
        TraceError: naming the file and the first thing that is wrong.
    """
    result = checked_document(path, HarborTrialResult, "a Harbor trial result")
    if result.schema_version != 1:
        raise TraceError(f"Harbor trial result schema version {result.schema_version}: this "
                         f"reader knows version 1", file=path)
    return result


@dataclass
class HarborJob:
    """A Harbor job folder: its trials' results, and their records when `trials()` is
    iterated.

    Attributes:
        path: the job folder.
        results: each trial folder's checked result, in the order trials started.
        pass_at: the reward at or above which a trial passes.
        systems: the agents (and models) that ran trials, each with its trial count.
        warnings: what the import should say (several agents in one job, a multi-step trial).
    """

    path: Path
    results: list[tuple[Path, HarborTrialResult]]
    pass_at: float
    systems: dict[str, int]
    warnings: list[str] = field(default_factory=list)
    summary: ImportSummary = field(default_factory=ImportSummary)

    def trials(self, system: str | None = None) -> Iterator[ImportedTrial]:
        """Each trial as an `ImportedTrial` (of `system` only, when given), its attempt
        numbered within its task.

        Raises:
            TraceError: a trial's trajectory is not ATIF.
        """
        attempts: dict[str, int] = defaultdict(int)
        for folder, result in self.results:
            if system is not None and result.system() != system:
                continue
            attempts[result.task_name] += 1
            yield self.summary.count(
                trial_of(folder, result, attempts[result.task_name], self.pass_at))


def read_harbor_job(job_dir: str | Path, *, pass_at: float = 1.0) -> HarborJob:
    """Read a Harbor job folder: every trial folder holding a `result.json`.

    Raises:
        UsageError: `pass_at` is not a pass mark a reward in [0, 1] can reach.
        TraceError: naming the folder or file, when it is not a Harbor job or a trial's
            result is not one.
    """
    check_pass_at(pass_at)
    where = Path(job_dir)
    if not where.is_dir():
        raise TraceError("not a folder (a Harbor job is a folder of trial folders)",
                         file=where)
    results = [(folder, load_trial_result(folder / RESULT_FILE))
               for folder in sorted(p for p in where.iterdir() if p.is_dir())
               if (folder / RESULT_FILE).is_file()]
    if not results:
        raise TraceError("no trial folder with a result.json: not a Harbor job folder, or a "
                         "job that has not finished a trial", file=where)
    results.sort(key=lambda fr: (fr[1].started_at is None, fr[1].started_at or datetime.min,
                                 fr[1].trial_name))
    systems: dict[str, int] = defaultdict(int)
    for _, result in results:
        systems[result.system()] += 1
    job = HarborJob(where, results, pass_at, dict(systems))
    if len(systems) > 1:
        job.warnings.append(f"the job ran {len(systems)} agents or models "
                            f"({', '.join(sorted(systems))}): each is a run of its own")
    multi = sum(1 for _, r in results if r.step_results)
    if multi:
        job.warnings.append(f"{multi} multi-step trial(s): the trial's own reward and "
                            f"trajectory are read, not each step's")
    return job


def error_kind(exception_type: str) -> ImportedErrorKind:
    """The kind of errored execution a Harbor exception is, by its recorded type name."""
    if exception_type in _LIMITS:
        return "limit"
    if "Timeout" in exception_type:
        return "timeout"
    return "system_error"


def trial_of(folder: Path, result: HarborTrialResult, attempt: int,
             pass_at: float = 1.0) -> ImportedTrial:
    """One trial's result (and trajectory) as an `ImportedTrial`."""
    scores: list[ImportedScore] = []
    rewards = result.verifier_result.rewards if result.verifier_result else None
    for key, reward in (rewards or {}).items():
        value = float(reward) if 0 <= reward <= 1 else None
        scores.append(ImportedScore(key, value, reward >= pass_at, recorded=reward))
    reading = _trajectory(folder)
    error: ImportedError | None = None
    exceptions = result.exceptions()
    if exceptions:
        first = exceptions[0]
        error = ImportedError(error_kind(first.exception_type), first.exception_message,
                              detail=first.exception_type,
                              traceback=first.exception_traceback or None)
    status: TrialStatus = ("errored" if error is not None else "scored" if scores
                           else "missing")
    return ImportedTrial(
        case_id=result.task_name, trial=attempt, status=status, scores=tuple(scores),
        error=error, missing=NO_REWARD if status == "missing" else None,
        trajectory=reading.trajectory if reading else None,
        usage=_usage(result) or (reading.usage if reading else None),
        input=reading.input if reading else None, output=reading.output if reading else None,
        source=str(folder),
    )


def _trajectory(folder: Path) -> TraceReading | None:
    path = folder / TRAJECTORY_FILE
    return read_atif(path) if path.is_file() else None


def _usage(result: HarborTrialResult) -> TraceUsage | None:
    contexts = ([result.agent_result] if result.agent_result is not None
                else [s.agent_result for s in result.step_results or ()
                      if s.agent_result is not None])
    totals: list[Any] = [None, None, None]
    for context in contexts:
        for i, value in enumerate((context.n_input_tokens, context.n_output_tokens,
                                   context.cost_usd)):
            if value is not None:
                totals[i] = (totals[i] or 0) + value
    if totals == [None, None, None]:
        return None
    return TraceUsage(totals[0], totals[1], totals[2])
