"""A case's outcome: what analysis needs of one case, as stored in `run_cases.outcome`.

Kept small on purpose: verdict codes, reasons, judgment keys, trajectory facts, latency,
slice groups. `gate` and the reports re-read these rows; nothing else per case is needed to
recompute every metric and slice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(slots=True)
class CaseOutcome:
    """One case, all criteria (in the suite's criterion order)."""

    case_id: str
    codes: str                      # one of P F M X per criterion
    reasons: list[str | None]
    judgment_keys: list[str | None]
    facts: dict[str, Any] | None
    latency_ms: float | None
    groups: list[str | None]        # one per declared slice; None = joins no group
    error: str | None = None        # error kind when the case errored
    source: str | None = None       # source case id, for a metamorphic copy
    transform: str | None = None
    cluster: str | None = None
    cached: bool = False

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"c": self.codes, "r": self.reasons, "j": self.judgment_keys,
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
        return body

    @classmethod
    def from_json(cls, case_id: str, body: dict[str, Any]) -> CaseOutcome:
        return cls(
            case_id=case_id, codes=body["c"], reasons=body["r"], judgment_keys=body["j"],
            facts=body.get("f"), latency_ms=body.get("l"), groups=body.get("s") or [],
            error=body.get("e"), source=body.get("src"), transform=body.get("t"),
            cluster=body.get("cl"), cached=bool(body.get("h")),
        )
