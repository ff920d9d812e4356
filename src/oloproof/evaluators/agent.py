"""Agent evaluators (docs/agents-and-tools.md#the-agent-evaluators): they read the recorded
`agent_trajectory/v1`.

Every evaluator here judges a complete trace normally. On a truncated trace
(`trajectory.truncated`) the recorded steps are only a prefix of what the agent did, so a
count is a lower bound: each evaluator returns a settled pass or fail only when that prefix
already decides the question, and otherwise `missing("truncated")` (the "on a truncated trace"
column of docs/agents-and-tools.md#the-agent-evaluators).

An *identical call* is a `tool_call` step with the same `tool_name` and the same `arguments`
(compared as canonical JSON; a call recorded without arguments and one with `{}` are the same
call): `AgentTrajectory.call_keys()`.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field, model_validator

from oloproof.evaluators.base import Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import (
    FAILED,
    MISSING,
    PASSED,
    Judgment,
    failed,
    missing,
    passed,
)
from oloproof.evaluators.tool_matching import ArgumentRule, ExpectedCall, Mode, judge_calls
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentStep, AgentTrajectory

TRUNCATED = "truncated"
NO_DECLARED_TOOLS = "no_declared_tools"


# --- shared helpers --------------------------------------------------------------------------


@dataclass(frozen=True)
class CallRun:
    """Consecutive identical calls among the `tool_call` steps (other kinds in between are
    ignored): the tool, its arguments, and the indices of the steps in the run."""

    tool_name: str
    arguments: dict[str, Any]
    steps: tuple[int, ...]

    @property
    def length(self) -> int:
        return len(self.steps)

    def as_details(self) -> dict[str, Any]:
        return {
            "tool": self.tool_name,
            "arguments": self.arguments,
            "run_length": self.length,
            "steps": list(self.steps),
        }


def _repeats(trajectory: AgentTrajectory) -> Iterator[tuple[AgentStep, bool]]:
    """Each `tool_call` step, and whether it is identical to the call before it.

    Arguments are compared (as canonical text) only between neighbours that call the same
    tool: a trace that never calls one tool twice in a row needs no argument text at all.
    """
    facts = trajectory.step_facts()
    names = facts.names
    for i, step in enumerate(facts.calls):
        yield step, bool(i) and names[i] == names[i - 1] and (
            facts.call_keys[i] == facts.call_keys[i - 1])


def call_runs(trajectory: AgentTrajectory) -> list[CallRun]:
    """Split the `tool_call` steps into runs of identical consecutive calls, in order."""
    runs: list[CallRun] = []
    for step, same in _repeats(trajectory):
        if same:
            last = runs[-1]
            runs[-1] = CallRun(last.tool_name, last.arguments, last.steps + (step.index,))
        else:
            runs.append(CallRun(step.tool_name or "", dict(step.arguments or {}), (step.index,)))
    return runs


def longest_run(trajectory: AgentTrajectory) -> int:
    """The length of the longest run of identical consecutive calls (0 without a call)."""
    facts = trajectory.step_facts()
    names = facts.names
    if not names:
        return 0
    longest = run = 1
    for i in range(1, len(names)):  # as `_repeats`, without a pair made per call
        if names[i] == names[i - 1] and facts.call_keys[i] == facts.call_keys[i - 1]:
            run += 1
            longest = max(longest, run)
        else:
            run = 1
    return longest


def common_prefix_length(a: list[str], b: list[str]) -> int:
    """How many leading items two lists share (the 0-based index where they part)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def is_prefix(prefix: list[str], whole: list[str]) -> bool:
    """True when `prefix` is the start of `whole` (equal lists included)."""
    return len(prefix) <= len(whole) and whole[: len(prefix)] == prefix


class TrajectoryEvaluator(Evaluator):
    """Base of the evaluators that read `agent_trajectory/v1`.

    `judge_case` has already made a case without the artifact missing (`no_trajectory`).
    """

    reads = frozenset({TRAJECTORY_KIND})

    def judge(self, evidence: Evidence) -> Judgment:
        trajectory = evidence.trajectory
        if trajectory is None:
            return missing("no_trajectory")
        return self.judge_trajectory(trajectory, evidence)

    def judge_trajectory(
        self, trajectory: AgentTrajectory, evidence: Evidence
    ) -> Judgment:  # pragma: no cover - abstract
        raise NotImplementedError


class _DeclaredToolsEvaluator(TrajectoryEvaluator):
    """Applies only to cases that declare `expected.tools` (`[]` included)."""

    absent_expected = (NO_DECLARED_TOOLS, "tools")

    @staticmethod
    def expected_tools(evidence: Evidence) -> list[str]:
        """The names of `expected.tools` (an entry may be `{"name": ..., "arguments": ...}`)."""
        return [ExpectedCall.of(e).name for e in evidence.case.expected["tools"]]


# --- the evaluators -----------------------------------------------------------------------


@register("agent_tool_called")
class AgentToolCalled(TrajectoryEvaluator):
    """Passes when the tool was called at least `min_calls` times.

    On a truncated trace: a pass once `min_calls` is reached in the recorded part, else missing.

    Args:
        tool_name: the tool that must be called.
        min_calls: the least number of `tool_call` steps naming it (default 1).
    """

    class Config(EvaluatorConfig):
        tool_name: str = Field(min_length=1)
        min_calls: int = Field(default=1, ge=1)

    config: Config

    def default_criterion(self) -> str:
        return f"agent_tool_{self.config.tool_name}_called"

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        tool, least = self.config.tool_name, self.config.min_calls
        steps = [s.index for s in trajectory.step_facts().calls if s.tool_name == tool]
        details = {"tool": tool, "calls": len(steps), "min_calls": least, "steps": steps}
        if len(steps) >= least:
            return Judgment(PASSED, None, details)
        if trajectory.truncated:
            return Judgment(MISSING, TRUNCATED, details)
        return Judgment(FAILED, "too_few_calls", details)


@register("agent_no_tool_loop")
class AgentNoToolLoop(TrajectoryEvaluator):
    """Passes when no identical call (same tool, same arguments) occurs more than
    `max_repeats` times in a row among the `tool_call` steps.

    On a truncated trace: a fail once a longer run is recorded, else missing (a run reaching
    the end of the trace may go on). A run over the limit made only of calls recorded without
    arguments (a trace read with content capture off) is missing (`arguments_not_recorded`):
    such calls cannot be told apart.

    Args:
        max_repeats: the most identical calls allowed in a row (default 2).
    """

    class Config(EvaluatorConfig):
        max_repeats: int = Field(default=2, ge=1)

    config: Config

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        limit = self.config.max_repeats
        longest = longest_run(trajectory)
        if longest > limit:  # only then are the runs themselves needed, for the details
            runs = [r for r in call_runs(trajectory) if r.length > limit]
            steps = trajectory.steps
            # Calls of one tool whose arguments the trace did not record (content capture
            # off) look identical whether or not they were: not a loop anyone saw.
            loops = [r for r in runs if any(steps[i - 1].arguments is not None for i in r.steps)]
            if not loops:
                return missing("arguments_not_recorded", max_repeats=limit,
                               repeated_call=max(runs, key=lambda r: r.length).as_details())
            worst = max(loops, key=lambda r: r.length)
            return failed(
                "repeated_call",
                max_repeats=limit,
                repeated_call=worst.as_details(),
                runs_over_limit=[r.as_details() for r in loops[:10]],
            )
        if trajectory.truncated:
            return missing(TRUNCATED, max_repeats=limit, longest_run=longest)
        return passed(None, max_repeats=limit, longest_run=longest)


@register("agent_tool_sequence")
class AgentToolSequence(_DeclaredToolsEvaluator):
    """Passes when the called tools fit `expected.tools` under `mode`
    (docs/agents-and-tools.md#the-agent-evaluators); `expected.tools: []` expects no call at all
    (superset: any calls).

    Modes: `exact` (the same list in order; the default, `ordered: true` is its alias),
    `unordered` (the same multiset; `ordered: false`), `subset` (every call is an expected
    entry, in order), `superset` (every expected entry was called, in order, other calls
    between allowed). Entries are tool names, or with `arguments: exact | subset`
    `{"name": ..., "arguments": {...}}` (a bare name matches any arguments). The judgment's
    `alignment` pairs expected entries with calls, step by step.

    Cases without `expected.tools` are excluded (`no_declared_tools`). On a truncated trace:
    a fail once the recorded calls already depart from the expectation (exact: not a prefix
    of it or already longer; unordered: a call fits no entry left; subset: a call fits no
    later entry), a pass once superset already holds, else missing. A call recorded without
    arguments never fails an argument check: the case is missing when it decides the verdict.

    Args:
        mode: `exact` (default), `unordered`, `subset` or `superset`.
        ordered: the older switch: true is `exact`, false is `unordered`.
        arguments: `ignore` (default), `exact` or `subset`.
    """

    class Config(EvaluatorConfig):
        mode: Mode | None = None
        ordered: bool | None = None
        arguments: ArgumentRule = "ignore"

        @model_validator(mode="after")
        def _one_mode(self) -> AgentToolSequence.Config:
            if self.ordered is not None and self.mode is not None and (
                self.mode != ("exact" if self.ordered else "unordered")
            ):
                raise ValueError(
                    f"ordered: {str(self.ordered).lower()} contradicts mode: {self.mode} "
                    "(ordered: true means mode: exact, false means mode: unordered); give one"
                )
            return self

        @property
        def resolved_mode(self) -> Mode:
            if self.mode is not None:
                return self.mode
            return "unordered" if self.ordered is False else "exact"

    config: Config

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        # Read once (the config is frozen): `resolved_mode` is a property, read every case.
        self._mode: Mode = self.config.resolved_mode
        self._rule: ArgumentRule = self.config.arguments

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        of = ExpectedCall.of
        expected = [of(e) for e in evidence.case.expected["tools"]]
        outcome = judge_calls(self._mode, self._rule, expected, trajectory)
        if outcome.verdict == "passed":
            return Judgment(PASSED, None, outcome.details)
        if outcome.verdict == "missing":
            return Judgment(MISSING, outcome.reason or TRUNCATED, outcome.details)
        return Judgment(FAILED, outcome.reason or "sequence_differs", outcome.details)


@register("agent_no_undeclared_tool")
class AgentNoUndeclaredTool(_DeclaredToolsEvaluator):
    """Passes when no tool outside `expected.tools` was called (`[]`: no call at all).

    Cases without `expected.tools` are excluded (`no_declared_tools`). On a truncated trace:
    a fail once an undeclared call is recorded, else missing.

    Args:
        (none): the declared tools are the case's `expected.tools`.
    """

    config: EvaluatorConfig

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        declared = self.expected_tools(evidence)
        allowed = set(declared)
        undeclared = [
            {"step": s.index, "tool": s.tool_name}
            for s in trajectory.step_facts().calls
            if s.tool_name not in allowed
        ]
        if undeclared:
            return failed("undeclared_tool_called", declared=declared, undeclared=undeclared)
        if trajectory.truncated:
            return missing(TRUNCATED, declared=declared)
        return passed(None, declared=declared)


@register("agent_constraints_satisfied")
class AgentConstraintsSatisfied(TrajectoryEvaluator):
    """Passes when every recorded constraint check named in `constraints` passed (every
    recorded check when the list is omitted).

    A constraint may be checked more than once; it passes only if every check of it passed.
    Missing, never a pass: a named constraint the trajectory never recorded
    (`constraint_not_recorded`), or no constraint recorded at all while `constraints` is
    omitted (`no_constraints_recorded` — there is nothing to vouch for). A failed check is a
    fail even if another named constraint was not recorded (the case can no longer pass).
    Truncated traces are judged the same way, on the checks recorded: they describe what
    actually happened.

    Args:
        constraints: the constraint names to require (optional; non-empty when given).
    """

    class Config(EvaluatorConfig):
        constraints: list[str] | None = Field(default=None, min_length=1)

    config: Config

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        given = self.config.constraints
        # The names to require, each once, in the order given (None: whatever was recorded).
        self._required = None if given is None else tuple(dict.fromkeys(given))

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        recorded = trajectory.constraints
        checks: dict[str, int] = {}  # each recorded name, first seen first: how many checks
        for c in recorded:
            checks[c.name] = checks.get(c.name, 0) + 1
        if self._required is None:
            if not recorded:
                return missing("no_constraints_recorded", truncated=trajectory.truncated)
            names = list(checks)
            wanted: Collection[str] = checks
        else:
            names = list(self._required)
            wanted = self._required
        failures = [
            {"constraint": c.name, "step": c.step_index}
            for c in recorded
            if not c.passed and c.name in wanted
        ]
        if failures:
            return failed("constraint_failed", constraints=names, failed=failures)
        not_recorded = [n for n in names if n not in checks]
        if not_recorded:
            return missing(
                "constraint_not_recorded",
                constraints=names,
                not_recorded=not_recorded,
                truncated=trajectory.truncated,
            )
        return passed(None, constraints=names, checks={n: checks[n] for n in names})


@register("agent_max_steps")
class AgentMaxSteps(TrajectoryEvaluator):
    """Passes when the trajectory has at most `max_steps` steps.

    On a truncated trace the true count is larger than the recorded one: a fail once the
    recorded steps reach `max_steps`, else missing.

    Args:
        max_steps: the most steps allowed.
    """

    class Config(EvaluatorConfig):
        max_steps: int = Field(ge=1)

    config: Config

    def default_criterion(self) -> str:
        return f"agent_steps_le_{self.config.max_steps}"

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        n = trajectory.step_facts().agent_steps  # (a user's turns are not the agent's steps)
        limit = self.config.max_steps
        details = {"steps": n, "max_steps": limit, "truncated": trajectory.truncated}
        if trajectory.truncated:
            if n >= limit:
                return Judgment(FAILED, "too_many_steps", details)
            return Judgment(MISSING, TRUNCATED, details)
        if n <= limit:
            return Judgment(PASSED, None, details)
        return Judgment(FAILED, "too_many_steps", details)
