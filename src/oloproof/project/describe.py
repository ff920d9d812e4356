"""The suite as a run stores it (`describe_suite`): the description `gate`, `plan`, `compare`
and the reports read a stored run back by (`api/stored.py`, `analysis/judged.py`,
`report/limits.py`), so a stored run is decided again without its project's files.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from oloproof.evaluators.judge import JudgeCriterion
from oloproof.execution.keys import simulator_digest
from oloproof.suite.config import quantile_metrics, trial_metrics

#: The kinds of run a suite description names (`kind`; absent: a run of the whole suite). No
#: run of these kinds is counted among a version's runs, or taken as a baseline unless named
#: by its id or a tag (docs/compare.md#which-run-is-the-baseline).
SUBSET = "subset"
RESCORED = "rescored"

if TYPE_CHECKING:
    from oloproof.project import LoadedSuite


def describe_suite(suite: LoadedSuite) -> dict[str, Any]:
    """The suite as stored with a run (what `gate` and the reports need to re-read it)."""
    return {
        "project": suite.config.project,
        "config_path": str(suite.path),
        "dataset": str(suite.dataset.path),
        # (`variants` only where the suite has them: a suite without is described as before)
        "system": suite.config.system.model_dump(
            mode="json", exclude=None if suite.config.system.variants else {"variants"}),
        # Whether the engine reset and recorded a sandbox (a Stateful system records its end
        # state without declaring it under `records`).
        "stateful": suite.target.stateful is not None,
        "criteria": suite.criteria,
        "evaluator_keys": suite.evaluator_keys,
        "evaluators": [e.describe() | {"type": e.type_name} for e in suite.evaluators],
        "metrics": [m.model_dump(mode="json") for m in quantile_metrics(suite.config)],
        "trial_metrics": [m.model_dump(mode="json") for m in trial_metrics(suite.config)],
        "trials": suite.trials,
        # The cases the run plans (metamorphic copies included), so a run in progress can
        # say how far it has got (`oloproof view`).
        "cases": suite.case_count,
        "slices": list(suite.config.slices),
        "min_slice_support": suite.config.min_slice_support,
        "transforms": [t.model_dump(mode="json") | {"digest": d} for t, d in suite.transforms],
        "case_clusters": suite.dataset.clustered,
        # Which criterion excludes a case for a missing `expected` key, and the keys the cases
        # hold: what the run's report needs to point at a misspelt key.
        "absent_expected": {e.criterion: list(e.absent_expected) for e in suite.evaluators
                            if e.absent_expected is not None},
        "expected_keys": suite.dataset.expected_keys,
        "execution": {"executor": suite.execution.executor, "workers": suite.execution.workers},
        **({"judges": _describe_judges(suite)} if suite.config.judges else {}),
        **(_describe_conversations(suite) if suite.dataset.conversations else {}),
        # A run of part of the suite (docs/cli.md#running-part-of-the-suite): its kind, how many
        # of the suite's cases it holds and how they were chosen. A run of the whole suite has
        # neither key.
        **({"kind": SUBSET, "subset": subset} if (subset := suite.dataset.subset()) else {}),
    }


def _describe_conversations(suite: LoadedSuite) -> dict[str, Any]:
    """How many cases hold a conversation, and the simulators their users are played by, each
    as its digest (docs/conversations.md#the-simulator-is-part-of-the-measurement: runs whose
    simulators differ are not paired unless a rule says `simulator: any`) and definition."""
    used = [s for s in suite.config.simulators if s.name in suite.dataset.simulators]
    return {"conversations": suite.dataset.conversations,
            "simulators": {s.name: {"digest": simulator_digest(s),
                                    "definition": s.definition()} for s in used}}


def _describe_judges(suite: LoadedSuite) -> dict[str, Any]:
    """Each judge criterion as a run stores it: its judge, bar, which interval decides, and
    the labels it used (so `gate` re-decides the run on the same labels and interval)."""
    described: dict[str, Any] = {}
    for evaluator in suite.evaluators:
        if isinstance(evaluator, JudgeCriterion):
            labels = suite.judge_labels.get(evaluator.criterion)
            described[evaluator.criterion] = {
                "judge": evaluator.config.judge,
                "minimum_agreement": evaluator.config.minimum_agreement,
                "correction": evaluator.config.correction,
                "labels": labels.to_json() if labels is not None else None,
            }
    return described
