"""Multi-agent evaluators (docs/agents-and-tools.md#teams-of-agents): routes, tool permissions and
hand-offs.

The **route** of a trajectory is the sequence of agents that held control, consecutive repeats
collapsed: each step's `agent` holds control when it takes the step, and a `handoff` step's
`to_agent` holds it next (so a hand-off to a person, who takes no step, ends the route at
`person`; `AgentTrajectory.route()`). A **hand-off** is each change of controlling agent:
`len(route) - 1`.

A trajectory whose steps name no agent is missing (`agents_not_named`) for every criterion
here. Nothing here attributes a failure to an agent: a route divergence says where two routes
part, a permission violation which step called which tool.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import Field

from oloproof.evaluators.agent import TRUNCATED, TrajectoryEvaluator, common_prefix_length
from oloproof.evaluators.base import EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, failed, missing, passed
from oloproof.recording.trajectory import AgentTrajectory

AGENTS_NOT_NAMED = "agents_not_named"
NO_DECLARED_ROUTE = "no_declared_route"


def handoffs_of(route: Sequence[str]) -> int:
    """The number of changes of controlling agent along a route."""
    return max(len(route) - 1, 0)


class _RouteEvaluator(TrajectoryEvaluator):
    """Computes the route once; a trajectory naming no agent is missing."""

    def judge_trajectory(self, trajectory: AgentTrajectory, evidence: Evidence) -> Judgment:
        route = trajectory.route()
        if route is None:
            return missing(AGENTS_NOT_NAMED)
        return self.judge_route(route, trajectory, evidence)

    def judge_route(
        self, route: list[str], trajectory: AgentTrajectory, evidence: Evidence
    ) -> Judgment:  # pragma: no cover - abstract
        raise NotImplementedError


@register("agent_route")
class AgentRoute(_RouteEvaluator):
    """Passes when the route equals the case's `expected.route`.

    Cases without `expected.route` are excluded (`no_declared_route`). On a truncated trace:
    a fail once the recorded route departs from the expected one (it is not a prefix of it, or
    is already longer), else missing. A failure's details give both routes and `diverges_at`,
    the 0-based position where they part.

    Args:
        (none): the expected route is the case's `expected.route`.
    """

    config: EvaluatorConfig

    absent_expected = (NO_DECLARED_ROUTE, "route")

    def judge_route(
        self, route: list[str], trajectory: AgentTrajectory, evidence: Evidence
    ) -> Judgment:
        expected = list(evidence.case.expected["route"])
        details: dict[str, Any] = {"expected_route": expected, "recorded_route": route}
        if route == expected and not trajectory.truncated:
            return passed(None, **details)
        parted = common_prefix_length(route, expected)
        if trajectory.truncated and parted == len(route) and len(route) <= len(expected):
            return missing(TRUNCATED, **details)
        return failed("route_differs", diverges_at=parted, **details)


@register("agent_tool_permissions")
class AgentToolPermissions(_RouteEvaluator):
    """Passes when every `tool_call` was made by an agent whose list in `permissions` holds
    that tool. The map is closed: an agent not in it may call no tool.

    On a truncated trace: a fail once a violation is recorded, else missing. A failure lists
    each call outside the map (step, agent, tool).

    Args:
        permissions: agent name -> the tools it may call.
    """

    class Config(EvaluatorConfig):
        permissions: dict[str, list[str]]

    config: Config

    def judge_route(
        self, route: list[str], trajectory: AgentTrajectory, evidence: Evidence
    ) -> Judgment:
        allowed = {agent: set(tools) for agent, tools in self.config.permissions.items()}
        violations = [
            {"step": s.index, "agent": s.agent, "tool": s.tool_name}
            for s in trajectory.tool_calls()
            if s.tool_name not in allowed.get(s.agent or "", set())
        ]
        calls = len(trajectory.tool_calls())
        if violations:
            return failed("call_outside_permissions", violations=violations, tool_calls=calls)
        if trajectory.truncated:
            return missing(TRUNCATED, tool_calls=calls)
        return passed(None, tool_calls=calls)


@register("agent_max_handoffs")
class AgentMaxHandoffs(_RouteEvaluator):
    """Passes when the hand-offs (changes of controlling agent) are at most `max_handoffs`.

    On a truncated trace: a fail once the recorded hand-offs exceed the limit, else missing.

    Args:
        max_handoffs: the most hand-offs allowed.
    """

    class Config(EvaluatorConfig):
        max_handoffs: int = Field(ge=0)

    config: Config

    def default_criterion(self) -> str:
        return f"agent_handoffs_le_{self.config.max_handoffs}"

    def judge_route(
        self, route: list[str], trajectory: AgentTrajectory, evidence: Evidence
    ) -> Judgment:
        count = handoffs_of(route)
        details: dict[str, Any] = {
            "handoffs": count, "max_handoffs": self.config.max_handoffs, "route": route
        }
        if count > self.config.max_handoffs:
            return failed("too_many_handoffs", **details)
        if trajectory.truncated:
            return missing(TRUNCATED, **details)
        return passed(None, **details)
