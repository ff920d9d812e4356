"""`RunResult`: a run as the library returns it — `run`, `load_run` and `redecide` give one."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oloproof.document import DecisionRow, Gate, MetricRow, QuantileRow, RateRow, RunDocument
    from oloproof.suite.policy import Policy


@dataclass
class RunResult:
    """A run as the reports show it; `to_json()` is the JSON document of
    docs/cli.md#the-json-document.

    `document` is the typed run document (`oloproof.document.RunDocument`): `result.gate.action`,
    `result.metric("answer_correct").lower`, `result.decisions[0].state` read it.
    """

    document: RunDocument
    warnings: list[str] = field(default_factory=list)
    #: The policy the run was decided under (its `block_on` says which states block).
    policy: Policy | None = None

    @property
    def run_id(self) -> str:
        return self.document.run_id

    @property
    def status(self) -> str:
        return str(self.document.status)

    @property
    def gate(self) -> Gate:
        return self.document.gate

    @property
    def metrics(self) -> list[MetricRow]:
        return list(self.document.metrics)

    @property
    def decisions(self) -> list[DecisionRow]:
        return list(self.document.decisions)

    def metric(self, metric_id: str) -> RateRow | QuantileRow:
        """The metric row with this id (KeyError naming the metrics there are)."""
        return self.document.metric(metric_id)

    def to_json(self) -> dict[str, Any]:
        """The JSON document (docs/cli.md#the-json-document), as `oloproof run --json` prints it."""
        return self.document.to_json()
