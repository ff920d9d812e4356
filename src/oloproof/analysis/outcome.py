"""A case's outcome: what analysis needs of one case, as stored in `run_cases.outcome`.

Kept small on purpose: verdict codes, reasons, judgment keys, trajectory facts, latency,
slice groups. `gate` and the reports re-read these rows; nothing else per case is needed to
recompute every metric and slice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from oloproof.errors import ErrorKind
from oloproof.plain_data import pickled_by_fields


@pickled_by_fields  # (made by a worker elsewhere: execution/rows.py)
@dataclass(slots=True)
class CaseOutcome:
    """One case, all criteria (in the suite's criterion order). The engine makes one per case
    with the fields in this order (not by keyword): add a field at the end."""

    case_id: str
    codes: str                      # one of P F M X per criterion
    reasons: Sequence[str | None]   # one per criterion (a list read back, a tuple made)
    case_key: str | None           # the judgments' shared key prefix; None if not judged
    facts: dict[str, Any] | None
    latency_ms: float | None
    groups: list[str | None]        # one per declared slice; None = joins no group
    error: str | None = None        # the ErrorKind when the case errored
    source: str | None = None       # source case id, for a metamorphic copy
    transform: str | None = None
    cluster: str | None = None
    cached: bool = False
    trial: int = 1                  # which trial of the case (docs/reliability.md)
    # The case's content digest (kept in its own column of `run_cases`, not in the outcome):
    # trial metrics take cases in digest order.
    digest: str | None = None
    # How many attempts its execution took under system.retries (docs/failures.md#retries).
    attempts: int = 1
    # Its sandbox's snapshot() failed: its output is judged, its end state missing.
    no_state: bool = False
    # The digest of what each judge criterion's judge was shown (None for other criteria;
    # None for a suite without judges): people's labels apply where it matches.
    shown: list[str | None] | None = None
    # What its judges' verdicts cost, [input tokens, output tokens] (None: no judge said;
    # docs/conversations.md#cost-accounting).
    judge_usage: list[int | None] | None = None

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"c": self.codes, "r": self.reasons, "k": self.case_key,
                                "f": self.facts, "l": self.latency_ms, "s": self.groups}
        if self.error is not None:
            body["e"] = self.error
        if self.source is not None:
            body["src"] = self.source
            body["t"] = self.transform
        if self.cluster is not None:
            body["cl"] = self.cluster
        if self.cached:
            body["h"] = 1
        if self.trial != 1:
            body["tr"] = self.trial
        if self.attempts != 1:
            body["a"] = self.attempts
        if self.no_state:
            body["ns"] = 1
        if self.shown is not None:
            body["j"] = self.shown
        if self.judge_usage is not None:
            body["ju"] = self.judge_usage
        return body

    @classmethod
    def from_json(cls, case_id: str, body: dict[str, Any],
                  digest: str | None = None) -> CaseOutcome:
        return cls(
            case_id=case_id, codes=body["c"], reasons=body["r"], case_key=body.get("k"),
            facts=body.get("f"), latency_ms=body.get("l"), groups=body.get("s") or [],
            error=None if body.get("e") is None else ErrorKind.of(body["e"]),
            source=body.get("src"), transform=body.get("t"),
            cluster=body.get("cl"), cached=bool(body.get("h")), trial=int(body.get("tr", 1)),
            digest=digest, attempts=int(body.get("a", 1)), no_state=bool(body.get("ns")),
            shown=body.get("j"), judge_usage=body.get("ju"),
        )


def judgment_keys(outcome: dict[str, Any], evaluator_keys: list[str]) -> list[str | None]:
    """The stored judgment key of each criterion of a case (None where it was not judged).

    A key is the case key followed by the evaluator's key (`Evaluator.cache_key`), in the
    suite's criterion order; the run keeps the evaluator keys in its suite description.
    """
    case_key = outcome.get("k")
    if case_key is None:
        return [None] * len(evaluator_keys)
    return [case_key + key for key in evaluator_keys]
