"""`metamorphic_relation` (docs/stateful-agents.md#the-same-request-changed-metamorphic-pairs):
compare each derived copy with its source case.

Judged on the derived case's row only; every other row is excluded (`not_a_metamorphic_pair`,
`another_transform`). Missing when either side lacks what the relation reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from oloproof.evaluators.base import OUTPUT, Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, excluded, failed, missing, passed
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.state import compare_whole

Relation = Literal["same_output", "same_actions", "same_state"]
_READS = {"same_output": OUTPUT, "same_actions": TRAJECTORY_KIND, "same_state": STATE_KIND}


@register("metamorphic_relation")
class MetamorphicRelation(Evaluator):
    """Passes when a derived copy relates to its source as `relation` says.

    Args:
        relation: `same_output` (equal outputs), `same_actions` (equal sequences of tool name
            and arguments over tool_call steps), `same_state` (equal recorded end states).
        transform: the transform whose pairs are judged.
    """

    class Config(EvaluatorConfig):
        relation: Relation
        transform: str

    config: Config
    judges_pairs = True

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        self.reads = frozenset({_READS[self.config.relation]})  # type: ignore[misc]
        self.needs_stateful = self.config.relation == "same_state"  # type: ignore[misc]

    def default_criterion(self) -> str:
        return f"{self.config.relation}_under_{self.config.transform}"

    def exclusion(self, evidence: Evidence) -> Judgment | None:
        case = evidence.case
        if not case.is_derived:
            return excluded("not_a_metamorphic_pair")
        if case.transform != self.config.transform:
            return excluded("another_transform")
        return None

    def judge(self, evidence: Evidence) -> Judgment:
        source = evidence.source
        if source is None or source.errored is not None:
            return missing("source_missing")
        relation = self.config.relation
        if relation == "same_output":
            return _equal(source.output, evidence.output, "output")
        if relation == "same_state":
            if source.state is None:
                return missing("source_has_no_state")
            return _equal(source.state, evidence.state, "state")
        mine, theirs = evidence.trajectory, source.trajectory
        if theirs is None:
            return missing("source_has_no_trajectory")
        assert mine is not None
        a, b = theirs.actions(), mine.actions()
        if theirs.truncated or mine.truncated:
            # A cut-off trace settles the relation only where the recorded actions already part.
            common = min(len(a), len(b))
            # A shorter side can still grow only if it is the truncated one.
            shorter_may_grow = (len(a) < len(b) and theirs.truncated) or (
                len(b) < len(a) and mine.truncated)
            if a[:common] != b[:common] or (len(a) != len(b) and not shorter_may_grow):
                return failed("actions_differ", source=a, copy=b)
            return missing("truncated", source=a, copy=b)
        if a == b:
            return passed(None, actions=a)
        return failed("actions_differ", source=a, copy=b)


def _equal(source: Any, copy: Any, what: str) -> Judgment:
    if source == copy:
        return passed()
    if what == "output":
        return failed("output_differs", source=source, copy=copy)
    # The paths where the copy's end state differs from the source's (expected = the source).
    comparison = compare_whole(source, copy)
    details = comparison.to_json()
    details.pop("agreed", None)
    return failed("state_differs", compared="source end state (expected) vs copy (recorded)",
                  **details)
