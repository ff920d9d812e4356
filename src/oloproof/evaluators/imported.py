"""The evaluator of an imported run (docs/imports.md#how-an-import-is-stored): the score the
other harness gave, read back as a verdict.

`imported_score` reads `output.scores[score]`, which the imported run's system
(`oloproof.harnesses.played:play`) returns for each trial: passed or failed where the harness
gave a verdict (a value against the import's pass mark, docs/imports.md#partial-credit), missing
where it gave none (`no_reward`, `unscored`, a trial not in the run). An errored trial never
reaches it: the engine counts it errored.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from oloproof.evaluators.base import Evaluator, EvaluatorConfig, register
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.judgment import Judgment, failed, missing, passed

#: A score recorded without a verdict (an import gives every value one, against its pass mark).
NO_VERDICT = "no_verdict"


@register("imported_score")
class ImportedScore(Evaluator):
    """Passes when the other harness's score `score` passed the trial.

    Args:
        score: the imported criterion (a scorer's name, `scorer.key`, a reward's key).
    """

    class Config(EvaluatorConfig):
        score: str = Field(min_length=1)

    config: Config

    def default_criterion(self) -> str:
        return self.config.score

    def judge(self, evidence: Evidence) -> Judgment:
        output: dict[str, Any] = evidence.output or {}
        if output.get("missing"):
            return missing(str(output["missing"]))
        score = (output.get("scores") or {}).get(self.config.score)
        if score is None:
            return missing("not_scored")
        if score.get("missing"):
            return missing(str(score["missing"]))
        if score.get("passed") is True:
            return passed()
        if score.get("passed") is False:
            return failed(None, value=score.get("value"))
        return missing(NO_VERDICT, value=score.get("value"))
