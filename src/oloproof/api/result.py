"""`RunResult`: a run as the library returns it — `run`, `load_run` and `redecide` give one;
`VariantRuns`: the runs `run` makes of a suite's `system.variants`, one per combination."""

from __future__ import annotations

from collections.abc import Iterator
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


#: The gates' exit codes from the worst to the best (docs/ci.md#exit-codes): a run that could
#: not complete, a FAIL, MANUAL_REVIEW, INSUFFICIENT_EVIDENCE, then an ALLOW or WARN.
_WORST_FIRST = (5, 1, 4, 3, 2, 0)


@dataclass
class VariantRuns:
    """The runs `run()` made of a suite's `system.variants`, one per combination in the file's
    order, each a `RunResult` (docs/board.md#running-every-variant).

    It reads as a sequence of them (`len(runs)`, `runs[0]`, `for result in runs`);
    `runs.of("model=large,prompt=v2")` is one combination's (keys in any order); `exit_code`
    is the worst of their gates' exit codes, what `oloproof run` exits with
    (docs/cli.md#oloproof-run).
    """

    runs: list[RunResult]

    def __len__(self) -> int:
        return len(self.runs)

    def __getitem__(self, index: int) -> RunResult:
        return self.runs[index]

    def __iter__(self) -> Iterator[RunResult]:
        return iter(self.runs)

    @property
    def run_ids(self) -> list[str]:
        return [r.run_id for r in self.runs]

    @property
    def variants(self) -> list[str]:
        """Each run's variant, `k=v,…`, in the runs' order."""
        return [r.document.system.variant or "" for r in self.runs]

    def of(self, variant: str) -> RunResult:
        """The run of this combination (`k=v,…`, its keys in any order); KeyError naming the
        variants there are."""
        wanted = {part.strip() for part in variant.split(",")}
        for result in self.runs:
            if set((result.document.system.variant or "").split(",")) == wanted:
                return result
        raise KeyError(f"no run of the variant {variant!r}; the variants are "
                       + "; ".join(self.variants))

    @property
    def exit_code(self) -> int:
        """The worst of the runs' gates' exit codes (docs/ci.md#exit-codes)."""
        return min((int(r.gate.exit_code) for r in self.runs), key=_WORST_FIRST.index)

    def to_json(self) -> dict[str, Any]:
        """`{"runs": [document, …]}`, each run's JSON document (docs/cli.md#the-json-document)
        in the runs' order, as `oloproof run --json` prints them."""
        return {"runs": [r.to_json() for r in self.runs]}
