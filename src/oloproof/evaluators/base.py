"""The evaluator contract.

An evaluator type is a class with a pydantic `Config` (unknown fields rejected) registered under
its YAML `type` with `@register` (in the one registry, `oloproof.evaluators.registry`). An
instance judges one case at a time, purely, from Evidence.
What a whole family needs (the output, a trajectory, a state, a replay, the pair's source) is
declared in `reads`, so missing evidence is handled in one place (`judge_case`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ConfigDict, Field

from oloproof.digest import digest
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, excluded, missing
from oloproof.evaluators.registry import REGISTRY
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.suite.validation import ConfigModel
from oloproof.traces import EMPTY_TRAJECTORY, gave_no_step

OUTPUT = "output"
# What an errored case lacks: an evaluator reading any of these is missing on it.
_CALL_EVIDENCE = frozenset({OUTPUT, TRAJECTORY_KIND, STATE_KIND})


class EvaluatorConfig(ConfigModel):
    """Fields every evaluator takes (strict, see `ConfigModel`)."""

    # Each built-in type's Config is built (its pydantic schema) when a suite first uses that
    # type, not when the registry loads every built-in type's module.
    model_config = ConfigDict(defer_build=True)

    type: str
    criterion: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]+$")


class Evaluator:
    """Base class: subclasses set `Config`, `reads`, and implement `judge`."""

    Config: ClassVar[type[EvaluatorConfig]] = EvaluatorConfig
    type_name: ClassVar[str] = ""
    reads: ClassVar[frozenset[str]] = frozenset({OUTPUT})
    # Whether this evaluator judges metamorphic copies (only metamorphic_relation does).
    judges_pairs: ClassVar[bool] = False
    needs_stateful: ClassVar[bool] = False
    needs_replayable: ClassVar[bool] = False
    #: (reason, key): a case whose `expected` holds no `key` is excluded with `reason` — the
    #: criterion does not apply to it. The run names the pair, so a report can point at a
    #: misspelt key (`expected.tool` where `expected.tools` is looked for).
    absent_expected: tuple[str, str] | None = None
    #: The user's function this evaluator runs (a custom check), whose source is part of the
    #: evaluator's key (`execution.keys.evaluator_keys`); None for the built-in types.
    code: Any = None

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        self.config = config
        self.base_dir = base_dir
        self.criterion: str = config.criterion or self.default_criterion()
        self.config_digest: str = digest(config.model_dump(mode="json"))
        # The evaluator's part of a judgment cache key (96 bits of its config digest).
        self.cache_key: str = self.config_digest[7:31]

    def default_criterion(self) -> str:
        return self.type_name

    def exclusion(self, evidence: Evidence) -> Judgment | None:
        """An `excluded` judgment when the criterion does not apply to this case at all.

        Decided from the case alone, before any evidence is looked at, so an errored case the
        criterion does not apply to is excluded, not missing. By default: the case lacks the
        `expected` key of `absent_expected`.
        """
        absent = self.absent_expected
        if absent is not None and absent[1] not in evidence.case.expected:
            return excluded(absent[0])
        return None

    def judge(self, evidence: Evidence) -> Judgment:  # pragma: no cover - abstract
        raise NotImplementedError

    def describe(self) -> dict[str, Any]:
        return {"criterion": self.criterion, **self.config.model_dump(exclude_none=True)}


def register(type_name: str) -> Any:
    """Class decorator: make an evaluator usable as `{type: <type_name>}` in oloproof.yaml.

    The name joins the one registry (`oloproof.evaluators.registry`): a name registered
    elsewhere already is an error naming both places.
    """

    def attach(cls: type[Evaluator]) -> type[Evaluator]:
        REGISTRY.add(type_name, "type", cls)
        cls.type_name = type_name
        return cls

    return attach


def judge_case(evaluator: Evaluator, evidence: Evidence) -> Judgment:
    """Judge one case: exclusions and missing evidence first, then the evaluator itself.

    An exception inside an evaluator makes the case missing for that criterion, with the
    error kept in the judgment's details (it never stops the run).
    """
    return judge_each((evaluator,), evidence)[0]


_UNREAD: Any = object()


def judge_each(evaluators: Sequence[Evaluator], evidence: Evidence) -> list[Judgment]:
    """`judge_case` of each evaluator on one case, in order: what the case offers (whether it
    is a copy, errored, has a trajectory, a state, a trace that gave no step) is looked at
    once for them all."""
    derived = evidence.case.is_derived
    errored = evidence.errored
    artifacts = evidence.artifacts
    has_trajectory = TRAJECTORY_KIND in artifacts
    state: Any = _UNREAD
    empty: Any = _UNREAD  # whether the trajectory is a trace's that gave no step (or why not)
    judgments: list[Judgment] = []
    for evaluator in evaluators:
        if derived and not evaluator.judges_pairs:
            judgments.append(excluded("metamorphic_copy"))
            continue
        exclusion = evaluator.exclusion(evidence)
        if exclusion is not None:
            judgments.append(exclusion)
            continue
        reads = evaluator.reads
        if errored is not None and not reads.isdisjoint(_CALL_EVIDENCE):
            judgments.append(missing("case_errored", error=errored))
            continue
        reads_trajectory = TRAJECTORY_KIND in reads
        if reads_trajectory and not has_trajectory:
            judgments.append(missing("no_trajectory"))
            continue
        if STATE_KIND in reads:
            if state is _UNREAD:
                state = evidence.state
            if state is None:
                judgments.append(
                    missing("snapshot_failed", error=evidence.state_error)
                    if evidence.state_error is not None else missing("no_state"))
                continue
        try:
            if reads_trajectory:
                if empty is _UNREAD:
                    try:
                        empty = gave_no_step(evidence.trajectory, artifacts)
                    except Exception as exc:  # (the trajectory cannot be read: said each time)
                        empty = exc
                if isinstance(empty, Exception):
                    raise empty
                if empty:
                    judgments.append(missing(EMPTY_TRAJECTORY))  # a trace that gave no step
                    continue
            judgment = evaluator.judge(evidence)
        except Exception as exc:  # an evaluator bug must not stop the run
            judgment = missing("evaluator_error", error=f"{type(exc).__name__}: {exc}")
        judgments.append(judgment)
    return judgments
