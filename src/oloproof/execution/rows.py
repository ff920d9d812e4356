"""A case's result as the store keeps it and the analysis counts it: `CaseRows`, made where the
case was judged (docs/scaling.md#a-cpu-bound-suite).

`case_rows` turns one case's `CaseResult` into the text of its rows -- its execution's row,
its judgments' row, its outcome in the run -- and the `CaseOutcome` the analysis tallies, with
the errors to record and what the caches counted. It reads no store and keeps nothing, so it
gives the same bytes in any process. On `executor: local` the coordinator's `ResultIntake`
calls it as each result comes in; a worker elsewhere (`processes`, `ray`) calls it itself
when its jobs carry the run's `RowMaking` (`procedure.judge_unit`), so the coordinator, whose
process does everything else of the run, only adds the rows it is sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from oloproof.analysis.conversations import audited
from oloproof.analysis.facts import slice_groups
from oloproof.analysis.outcome import CaseOutcome
from oloproof.errors import ErrorKind
from oloproof.evaluators.judgment import Judgment
from oloproof.evaluators.verdicts import JUDGE_FAILURES
from oloproof.execution.keys import RunKeys
from oloproof.execution.units import CaseError, CaseResult, StoredText
from oloproof.plain_data import pickled_by_fields
from oloproof.storable import Unstorable, storable_problem
from oloproof.store.sql import dumps, stored_json
from oloproof.suite.case import Case

# An execution kept for `inspect` but never reused (its snapshot failed) is stored under its
# cache key with this prefix, which no cache lookup asks for.
UNCACHED_PREFIX = "uncached:"


class RowMaking:
    """What making a case's rows needs of its run: each evaluator's key and criterion, the
    judge criteria, the simulator's fidelity criterion and the declared slices. One per run,
    shared by its jobs (pickled once per parcel); the slices' readers are made once per
    process."""

    __slots__ = (
        "_groups",
        "criteria",
        "evaluator_keys",
        "fidelity",
        "judge_keys",
        "judges",
        "slices",
    )

    def __init__(self, evaluator_keys: Sequence[str], criteria: Sequence[str],
                 judges: Sequence[int], fidelity: int | None, slices: Sequence[str]) -> None:
        self.evaluator_keys = tuple(evaluator_keys)
        self.criteria = tuple(criteria)
        self.judges = tuple(judges)
        self.judge_keys = frozenset(self.evaluator_keys[i] for i in self.judges)
        self.fidelity = fidelity
        self.slices = tuple(slices)
        self._groups: Callable[[dict[str, Any] | None, dict[str, Any]],
                               list[str | None]] | None = None

    def __reduce__(self) -> tuple[type[RowMaking], tuple[Any, ...]]:
        return RowMaking, (self.evaluator_keys, self.criteria, self.judges, self.fidelity,
                           self.slices)

    @property
    def groups(self) -> Callable[[dict[str, Any] | None, dict[str, Any]], list[str | None]]:
        """The group a case joins in each declared slice (`analysis.facts.slice_groups`)."""
        if self._groups is None:
            self._groups = slice_groups(self.slices)
        return self._groups


@pickled_by_fields
@dataclass(slots=True)
class CaseRows:
    """One case's result as text for the store's rows, and its outcome for the analysis.

    `execution` is its execution's row but for the case digest and the time it is written --
    (key, output, artifacts, facts, latency) -- when there is one to write; `texts` the
    artifacts it refers to; `judgments` (case key, the judgments' text) when there are new
    ones; `outcome` and `outcome_text` the case in the run; `errors` what to record, each
    (error, attempt, retried); `exec_key` the key the run's row names.
    """

    outcome: CaseOutcome
    outcome_text: str
    exec_key: str
    ran: bool  # the system ran (its execution was not taken from the cache)
    judgment_hits: int
    judgment_misses: int
    execution: tuple[str, str, str, str | None, float | None] | None = None
    texts: list[StoredText] = field(default_factory=list)
    judgments: tuple[str, str] | None = None
    errors: list[tuple[CaseError, int, bool]] = field(default_factory=list)
    # A judge that failed: not cached, counted as a miss of the judge cache (docs/judges.md).
    judge_misses: int = 0
    simulator_turns: list[tuple[str, str, dict[str, Any]]] = field(default_factory=list)

    @property
    def errored(self) -> bool:
        return self.outcome.error is not None or self.outcome.no_state


def case_rows(making: RowMaking, case: Case, result: CaseResult, *, exec_key: str,
              source_key: str, trial: int, cached: tuple[Any, float | None] | None,
              case_key: str | None, hits: dict[int, tuple[Any, ...]],
              judge: tuple[int, ...]) -> CaseRows:
    """The rows and outcome of one case (see the module docstring): `exec_key` its execution
    key, `source_key` its unit's source's; `cached` the stored (facts, latency) when its
    execution was reused; `case_key` its judgments' key if already made; `hits` its cached
    verdicts by position and `judge` the positions its job judged."""
    execution = result.execution
    errors: list[tuple[CaseError, int, bool]] = []
    error: str | None = None
    judge_misses = 0
    if execution is None:
        assert cached is not None
        facts, latency = cached
    else:
        facts, latency = execution.facts, execution.latency_ms
        errors.extend((earlier, attempt, True)
                      for attempt, earlier in enumerate(execution.attempt_errors, 1))
        if execution.error is not None:
            error = execution.error.kind
            errors.append((execution.error, execution.attempts, False))
    judgments = result.judgments
    if hits:  # some verdicts were cached: each criterion's from where it is
        judged = dict(zip(judge, judgments, strict=True))
        verdicts = [hits[i] if i in hits else (judged[i].code, judged[i].reason)
                    for i in range(len(making.evaluator_keys))]
        codes = "".join([verdict[0] for verdict in verdicts])
        reasons: tuple[str | None, ...] = tuple([verdict[1] for verdict in verdicts])
    else:
        codes = "".join([judgment.code for judgment in judgments])
        reasons = tuple([judgment.reason for judgment in judgments])
    stored_judgments = None
    stored_execution = None
    texts: list[StoredText] = []
    key = exec_key
    if error is None:
        case_key = case_key or RunKeys.case(case, exec_key, source_key)
        if judgments:
            evaluator_keys = making.evaluator_keys
            kept = {evaluator_keys[i]: (judgment.code, judgment.reason, judgment.details)
                    for i, judgment in zip(judge, judgments, strict=True)}
            if making.judge_keys:
                judge_misses = _judge_failures(making, kept, errors)
            try:
                if kept:
                    stored_judgments = (case_key, stored_json(kept, ("judgments",)))
            except Unstorable:  # (the details of a judgment: the case errors, uncached)
                errors.append((_unstorable_judgment(making, judge, judgments),
                               1 if execution is None else execution.attempts, False))
                n = len(making.evaluator_keys)
                codes, reasons = "M" * n, ("case_errored",) * n
                case_key, error = None, ErrorKind.UNSTORABLE_OUTPUT
        if execution is not None and error is None:
            texts = execution.texts
            if execution.snapshot_error is not None:
                errors.append((execution.snapshot_error, execution.attempts, False))
                key = UNCACHED_PREFIX + key
            assert execution.output_text is not None
            stored_execution = (key, execution.output_text, dumps(execution.artifacts),
                                None if execution.facts is None else dumps(execution.facts),
                                execution.latency_ms)
    elif execution is not None and execution.artifacts:
        # What an errored execution recorded (an imported run's errored trial: the trajectory
        # its harness kept, docs/imports.md#how-an-import-is-stored), for `inspect` and the
        # exports; never reused from the cache.
        texts = execution.texts
        key = UNCACHED_PREFIX + key
        stored_execution = (key, "null", dumps(execution.artifacts),
                            None if execution.facts is None else dumps(execution.facts),
                            execution.latency_ms)
    shown = _shown(making, judge, judgments, hits) if making.judges and error is None else None
    # (an execution reused from the cache and judged again is cached: the system was not
    # called for it — docs/failures.md#accounting)
    outcome = case_outcome(making, case, codes, reasons, case_key if error is None else None,
                           None if error is not None else facts, latency, error=error,
                           cached=execution is None, trial=trial,
                           noted=execution is not None and execution.snapshot_error is not None,
                           attempts=1 if execution is None else execution.attempts, shown=shown)
    return CaseRows(outcome, dumps(outcome.to_json()), key, execution is not None, len(hits),
                    len(judgments), stored_execution, texts, stored_judgments, errors,
                    judge_misses, [] if execution is None else execution.simulator_turns)


def case_outcome(
    making: RowMaking, case: Case, codes: str, reasons: tuple[str | None, ...],
    case_key: str | None, facts: dict[str, Any] | None, latency: float | None, *,
    error: str | None, cached: bool, trial: int, noted: bool = False, attempts: int = 1,
    shown: tuple[list[str | None], list[int | None] | None] | None = None,
) -> CaseOutcome:
    """The outcome the analysis counts and the run's row keeps of one case (one trial)."""
    if facts is not None and "conversation" in facts:
        # The simulator's failure: every criterion of the agent is missing (never failed,
        # never excluded; docs/conversations.md#the-simulator-is-audited-never-trusted).
        codes, reasons = audited(codes, reasons, facts, making.fidelity)
    # In the fields' order, not by keyword: a class called with keywords first gathers
    # them into a dict (for these sixteen, twice the time of making the outcome).
    outcome = CaseOutcome(case.id, codes, reasons, case_key, facts, latency,
                          making.groups(facts, case.metadata), error, case.source_id,
                          case.transform, case.cluster, cached, trial, case.digest,
                          attempts, noted)
    if shown is not None:
        outcome.shown, outcome.judge_usage = shown
    return outcome


def _judge_failures(making: RowMaking, kept: dict[str, Any],
                    errors: list[tuple[CaseError, int, bool]]) -> int:
    """A judge that failed (`judge_error`, `judge_unparseable`) is recorded as the run's
    error of that kind, and its judgment is not cached: the next run asks again. The
    case itself is not errored: its other criteria stand. How many failed."""
    failed = 0
    for short in making.judge_keys:
        entry = kept.get(short)
        if entry is not None and entry[1] in JUDGE_FAILURES:
            del kept[short]
            failed += 1
            details = entry[2] or {}
            errors.append((CaseError(
                ErrorKind(entry[1]), f"{details.get('judge', 'the judge')}: "
                f"{details.get('error') or entry[1]}"), 1, False))
    return failed


def _shown(making: RowMaking, judge: tuple[int, ...], judgments: list[Judgment],
           hits: dict[int, tuple[Any, ...]]
           ) -> tuple[list[str | None], list[int | None] | None]:
    """The digest of what each judge criterion's judge was shown for this case (None for
    the other criteria), from the judgments made now or the cached ones; and what its
    verdicts cost, [input tokens, output tokens] (None when no verdict said)."""
    made = dict(zip(judge, judgments, strict=True))
    shown: list[str | None] = [None] * len(making.evaluator_keys)
    tokens: list[int | None] = [None, None]
    for i in making.judges:
        if i in made:
            details = made[i].details
        else:
            hit = hits.get(i)
            details = hit[2] if hit is not None and len(hit) > 2 else None
        if not isinstance(details, dict):
            continue
        if isinstance(details.get("shown_digest"), str):
            shown[i] = details["shown_digest"]
        for at, key in enumerate(("input_tokens", "output_tokens")):
            value = details.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                tokens[at] = (tokens[at] or 0) + value
    return shown, (tokens if tokens != [None, None] else None)


def shown_of_hits(making: RowMaking, hits: dict[int, tuple[Any, ...]]
                  ) -> tuple[list[str | None], list[int | None] | None]:
    """`_shown` of a case whose verdicts are all cached."""
    return _shown(making, (), [], hits)


def _unstorable_judgment(making: RowMaking, judge: tuple[int, ...],
                         judgments: list[Judgment]) -> CaseError:
    """Which judgment of a case the store cannot keep, and why."""
    for i, judgment in zip(judge, judgments, strict=True):
        criterion = making.criteria[i]
        # (as the row holds it: the details are three levels down)
        problem = storable_problem({criterion: [judgment.code, judgment.reason,
                                                judgment.details]}, ("judgments",))
        if problem is not None:
            return CaseError(ErrorKind.UNSTORABLE_OUTPUT,
                             f"the judgment of {criterion} cannot be stored: {problem}")
    return CaseError(ErrorKind.UNSTORABLE_OUTPUT, "a judgment of this case cannot be stored")


__all__ = ["UNCACHED_PREFIX", "CaseRows", "RowMaking", "case_outcome", "case_rows",
           "shown_of_hits"]
