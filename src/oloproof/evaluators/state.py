"""State evaluators (docs/stateful-agents.md#checking-what-changed): they read the sandbox's
recorded end state.

A case whose system recorded no state is missing (handled centrally by `judge_case`), never a
pass. Each judgment keeps the compared paths (expected, recorded, verdict) for the case panel.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field, model_validator

from oloproof.evaluators.base import Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, failed, passed
from oloproof.recording.protocols import STATE_KIND
from oloproof.state import (
    StateComparison,
    compare_changes,
    compare_paths,
    compare_subset,
    compare_unchanged,
    compare_whole,
    parse_dotted,
)

_STATE = frozenset({STATE_KIND})


def _verdict(comparison: StateComparison, **extra: Any) -> Judgment:
    details = comparison.to_json()
    details.pop("agreed", None)
    details.update(extra)
    if comparison.agreed:
        return passed(None, **details)
    return failed("state_differs", **details)


def _check_paths(paths: tuple[str, ...]) -> tuple[str, ...]:
    for path in paths:
        parse_dotted(path)  # raises ValueError with the problem
    return paths


@register("state_matches")
class StateMatches(Evaluator):
    """Passes when the recorded end state agrees with `expected.state` under `mode`.

    Args:
        mode: `whole` (deep equality, default), `subset` (every leaf in expected.state holds
            that value), `paths` (only the listed paths), `changes` (expected.state is a patch
            of initial_state; exactly that patch must have been applied).
        paths: dotted paths, for mode `paths`.
        tolerance: absolute tolerance for numbers, in any mode.
    """

    class Config(EvaluatorConfig):
        mode: Literal["whole", "subset", "paths", "changes"] = "whole"
        paths: tuple[str, ...] = ()
        tolerance: float | None = Field(default=None, ge=0)

        @model_validator(mode="after")
        def _paths_for_mode(self) -> Any:
            if self.mode == "paths" and not self.paths:
                raise ValueError("mode `paths` needs `paths: [dotted.path, ...]`")
            if self.mode != "paths" and self.paths:
                raise ValueError("`paths` is only used with mode `paths`")
            _check_paths(self.paths)
            return self

    config: Config
    reads = _STATE
    needs_stateful = True

    absent_expected = ("no_expected_state", "state")

    def judge(self, evidence: Evidence) -> Judgment:
        expected = evidence.case.expected["state"]
        recorded = evidence.state
        tolerance = self.config.tolerance
        mode = self.config.mode
        if mode == "whole":
            comparison = compare_whole(expected, recorded, tolerance)
        elif mode == "subset":
            comparison = compare_subset(expected, recorded, tolerance)
        elif mode == "paths":
            comparison = compare_paths(expected, recorded, self.config.paths, tolerance)
        else:
            comparison = compare_changes(evidence.initial_state or {}, expected, recorded,
                                         tolerance)
        return _verdict(comparison, mode=mode)


@register("state_unchanged")
class StateUnchanged(Evaluator):
    """Passes when every listed path still holds its initial value (absent stays absent).

    Args:
        paths: dotted paths, e.g. `orders.ord-999`.
    """

    class Config(EvaluatorConfig):
        paths: tuple[str, ...] = Field(min_length=1)

        @model_validator(mode="after")
        def _valid(self) -> Any:
            _check_paths(self.paths)
            return self

    config: Config
    reads = _STATE
    needs_stateful = True

    def judge(self, evidence: Evidence) -> Judgment:
        comparison = compare_unchanged(evidence.initial_state or {}, evidence.state,
                                       self.config.paths)
        return _verdict(comparison)
