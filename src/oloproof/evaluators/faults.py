"""`fault_recovery` (docs/stateful-agents.md#a-tool-that-fails-fault-replays): judge a case on its
replay with one tool call failing.

The engine runs the replays (control, then fault) and puts the result in
`evidence.replays[criterion]`; this evaluator only reads it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from oloproof.digest import digest
from oloproof.evaluators.base import Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, excluded, failed, missing, passed
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentTrajectory


@register("fault_recovery")
class FaultRecovery(Evaluator):
    """Passes when the agent recovers (or escalates) after a tool call fails in a replay.

    Args:
        tool: the tool whose call is made to fail.
        fault: `error`, `timeout` or `malformed` (a fixed result replaces the call's result).
        occurrence: which call of the tool (default 1).
        escalate_tools: tools that hand the case to a person; calling one after the fault
            passes.
        control: what makes the control replay trustworthy. `exact`
            (docs/stateful-agents.md#a-tool-that-fails-fault-replays; the default with one
            trial): the steps after the checkpoint come back exactly as recorded.
            `world` (docs/reliability.md#fault-replays-and-pairs-with-trials; the default with
            `trials` above 1): every tool result up to the agent's first different choice equals the
            recording's, so an agent that samples its replies can still be replayed, while a sandbox
            that was not restored still cannot.
    """

    class Config(EvaluatorConfig):
        tool: str = Field(min_length=1)
        fault: Literal["error", "timeout", "malformed"]
        occurrence: int = Field(default=1, ge=1)
        escalate_tools: tuple[str, ...] = ()
        control: Literal["exact", "world"] | None = None

    config: Config
    reads = frozenset({TRAJECTORY_KIND})
    needs_replayable = True

    def __init__(self, config: EvaluatorConfig, base_dir: Path | None = None) -> None:
        super().__init__(config, base_dir)
        if self.config.control is None:
            # Unset, `control` is not part of the config's digest: judgments stored before the
            # key existed stay cached.
            self.config_digest = digest(config.model_dump(mode="json", exclude={"control"}))
            self.cache_key = self.config_digest[7:31]

    def default_criterion(self) -> str:
        return f"recovers_from_{self.config.fault}_at_{self.config.tool}"

    def plan(self, trials: int = 1) -> dict[str, Any]:
        """What the replay does (its cache key), independent of how it is judged.

        `control` is in the plan only when it is `world` (the control replay is then checked
        by another rule), so plans — and replay keys — of one trial stay as they were.
        """
        plan: dict[str, Any] = {"tool": self.config.tool, "fault": self.config.fault,
                                "occurrence": self.config.occurrence}
        if self.control_mode(trials) == "world":
            plan["control"] = "world"
        return plan

    def control_mode(self, trials: int) -> str:
        """`exact` or `world`: the configured one, else `world` exactly when cases run more
        than one trial (docs/reliability.md#fault-replays-and-pairs-with-trials)."""
        if self.config.control is not None:
            return self.config.control
        return "world" if trials > 1 else "exact"

    def judge(self, evidence: Evidence) -> Judgment:
        trajectory = evidence.trajectory
        assert trajectory is not None
        target = trajectory.call_index(self.config.tool, self.config.occurrence)
        if target is None:
            return excluded("fault_target_not_called")
        replay = evidence.replays.get(self.criterion)
        if replay is None:
            return missing("not_replayed")
        status = replay["status"]
        key = {"replay_key": replay.get("key")}
        if status != "ok":
            return missing(status, **key, message=replay.get("message"))
        joined = AgentTrajectory.model_validate(replay["fault_trajectory"])
        broken = [c.name for c in joined.constraints if not c.passed]
        escalated = [
            s.index for s in joined.steps
            if s.kind == "tool_call" and s.index > target
            and s.tool_name in self.config.escalate_tools
        ]
        if broken:
            return failed("constraint_failed_after_fault", constraints=broken, **key)
        if joined.terminal_status == "failure" and not escalated:
            return failed("ended_in_failure_without_escalation", **key)
        if escalated:
            return passed("escalated", steps=escalated, **key)
        if joined.terminal_status == "success" and not joined.truncated:
            return passed("recovered", **key)
        return missing("replay_inconclusive", terminal_status=joined.terminal_status,
                       truncated=joined.truncated, **key)
