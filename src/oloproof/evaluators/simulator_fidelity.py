"""`simulator_fidelity:` (docs/conversations.md#unfaithful-a-judge-not-a-pattern): a judge over
each simulated user's conversation — did the user stay true to its persona, goal and facts?

Whether a simulator kept to its facts is for a judge, not a pattern. The judge is a judge
criterion like any other (`type: judge`): its calls, cache and verdicts are the judges', and
it is checked against people's labels (`oloproof labels sample --criterion
simulator_fidelity`); a case without a simulated user is excluded (`no_simulated_user`). A
conversation it fails is `unfaithful`: the simulator's failure, which makes the case missing
for every criterion of the agent (`analysis/conversations.py`), never the agent's own. This
criterion is the simulator's, not the agent's: it is never made missing that way.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from oloproof.errors import ConfigError
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judge import JudgeCriterion
from oloproof.evaluators.judgment import Judgment, excluded
from oloproof.suite.config import SimulatorFidelityConfig
from oloproof.suite.yaml_source import YamlDocument

FIDELITY_CRITERION = "simulator_fidelity"
#: What the fidelity judge is shown: the case's user (persona, goal, facts) and the whole
#: conversation (the agent's replies are what the user's turns answer).
FIDELITY_SHOWS = ("user", "conversation")
DEFAULT_RUBRIC = (
    "The simulated user stays true to the user it was given (user: its persona, goal and "
    "facts): every fact it states agrees with its facts and it states none it was not given, "
    "it pursues its goal, and it ends the conversation only when its goal is met, clearly "
    "cannot be met, or the assistant ends it.")


class SimulatorFidelity(JudgeCriterion):
    """Passes when the judge says a simulated user stayed true to its persona, goal and facts;
    excluded for a case without one."""

    type_name = FIDELITY_CRITERION

    def exclusion(self, evidence: Evidence) -> Judgment | None:
        if evidence.case.simulator is None:
            return excluded("no_simulated_user")
        return None

    def describe(self) -> dict[str, Any]:
        return super().describe() | {"simulator_fidelity": True}


def fidelity_criterion(config: SimulatorFidelityConfig, doc: YamlDocument,
                       base_dir: Path) -> SimulatorFidelity:
    """The `simulator_fidelity:` entry as its judge criterion (bound to its judge later, as
    every judge criterion is: `judge.bind_judges`)."""
    entry = {"type": "judge", "criterion": FIDELITY_CRITERION, "judge": config.judge,
             "rubric": config.rubric or DEFAULT_RUBRIC, "shows": list(FIDELITY_SHOWS),
             "minimum_agreement": config.minimum_agreement, "samples": config.samples}
    if config.labels is not None:
        entry["labels"] = config.labels
    try:
        return SimulatorFidelity(JudgeCriterion.Config.model_validate(entry), base_dir)
    except ValueError as exc:  # (checked by its own model already: a bug if it happens)
        raise ConfigError(f"simulator_fidelity: {exc}", file=doc.path,
                          line=doc.line_of(("simulator_fidelity",))) from None


__all__ = ["DEFAULT_RUBRIC", "FIDELITY_CRITERION", "FIDELITY_SHOWS", "SimulatorFidelity",
           "fidelity_criterion"]
