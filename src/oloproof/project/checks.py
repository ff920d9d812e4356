"""The checks across a project's files: what no one file can tell alone (the suite file against
the system it imports, its evaluators and judges, the dataset and the policy), each a
ConfigError naming the file and line before anything is called, or a warning.

`oloproof.project.load_suite` calls them in order once every part is loaded; a worker elsewhere
checks its judges again (`check_judges`), where they are called.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from oloproof.errors import ConfigError
from oloproof.evaluators.base import Evaluator
from oloproof.evaluators.judge import JudgeCriterion
from oloproof.execution.target import SystemTarget
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.recording.usage import USAGE_KIND
from oloproof.suite.config import ExecutionConfig, SuiteFile, TrialMetricConfig, quantile_metrics
from oloproof.suite.dataset import DatasetIndex
from oloproof.suite.json_lines import NO_FILE, file_problem
from oloproof.suite.judge_labels import JudgeLabels, load_judge_labels
from oloproof.suite.yaml_source import YamlDocument

if TYPE_CHECKING:
    from oloproof.project import LoadedSuite


#: The parts of a case (not of its output) a judge can be shown; a path into one of them must
#: exist in some case of the dataset.
CASE_PARTS = ("input", "expected", "metadata")


def check_judges(config: SuiteFile, evaluators: list[Evaluator], doc: YamlDocument,
                 project_dir: Path, where: str = "") -> None:
    """Every judge a criterion uses can be called: a `callable` imports, a `model` has the
    `openai` SDK installed and its API key's variable set — checked before any call (`where`
    says where it was checked, when not here)."""
    from oloproof.execution.judging import judge_problem

    used = {e.config.judge for e in evaluators if isinstance(e, JudgeCriterion)}
    for at, judge in enumerate(config.judges):
        if judge.name not in used:
            continue
        problem = judge_problem(judge, project_dir)
        if problem is not None:
            key = "callable" if judge.callable is not None else \
                "api_key_env" if "environment variable" in problem and judge.api_key_env \
                else "model"
            raise ConfigError(f"judge {judge.name!r}{where}: {problem}", file=doc.path,
                              line=doc.line_of(("judges", at, key)))


def check_judge_labels(evaluators: list[Evaluator], index: DatasetIndex, project_dir: Path,
                       doc: YamlDocument) -> tuple[dict[str, JudgeLabels], list[str]]:
    """Each judge criterion's shown case paths exist in the dataset, and its labels file (if
    it names one) reads; the labels by criterion, and warnings for files not (yet) usable."""
    labels: dict[str, JudgeLabels] = {}
    warnings: list[str] = []
    for i, evaluator in enumerate(evaluators):
        if not isinstance(evaluator, JudgeCriterion):
            continue
        for field_name in evaluator.shows:
            if field_name.split(".")[0] in CASE_PARTS and "." in field_name \
                    and field_name not in index.found_paths:
                raise ConfigError(
                    f"evaluator judge ({evaluator.criterion}) shows {field_name!r}, which no "
                    f"case of the dataset has; name a field the cases have (a typo here would "
                    "show the judge nothing)", file=doc.path,
                    line=doc.line_of(("evaluators", i, "shows")))
        if index.clustered:
            raise ConfigError(
                f"evaluator judge ({evaluator.criterion}): the dataset names clusters, and a "
                "judged criterion's corrected interval is over independent cases; judge a "
                "dataset without `cluster`", file=doc.path, line=doc.line_of(("evaluators", i)))
        judge = evaluator.judge_config
        samples = evaluator.config.samples
        if samples > 1 and judge is not None and judge.model is not None \
                and judge.temperature == 0:
            warnings.append(
                f"{evaluator.criterion}: samples: {samples} asks judge {judge.name} {samples} "
                "times at temperature 0, where a model mostly answers alike: the majority is "
                f"that one answer at {samples} times the cost; give the judge a temperature "
                "above 0, or leave samples out")
        if evaluator.config.labels is None:
            continue
        path = project_dir / evaluator.config.labels
        problem = file_problem(path)  # (never opened otherwise: a FIFO or a device never ends)
        if problem is not None and problem != NO_FILE:
            raise ConfigError(
                f"evaluator judge ({evaluator.criterion}): labels {evaluator.config.labels!r} "
                f"{problem} (looked for {path}); `labels:` names a JSON Lines file, relative "
                "to oloproof.yaml, that `oloproof labels sample` writes", file=doc.path,
                line=doc.line_of(("evaluators", i, "labels")))
        found = load_judge_labels(path,
                                  evaluator.config.labels, evaluator.criterion, index.ids)
        labels[evaluator.criterion] = found
        if found.missing:
            warnings.append(
                f"{evaluator.criterion}: the labels file {evaluator.config.labels} does not "
                "exist yet, so the judge is not checked against people; after this run, "
                f"write it with `oloproof labels sample --criterion {evaluator.criterion} "
                f"-o {evaluator.config.labels}` and label it with `oloproof labels review`")
        elif found.stale is not None:
            warnings.append(f"{evaluator.criterion}: {found.stale}")
    return labels, warnings


def check_workers(config: SuiteFile, doc: YamlDocument, execution: ExecutionConfig,
                  target: SystemTarget, overridden: bool) -> None:
    """A Stateful system given as one object cannot be several local workers: one object is
    one sandbox (docs/scaling.md#configuration)."""
    if (execution.executor != "local" or execution.workers == 1 or target.stateful is None
            or config.system.factory is not None):
        return
    asked = (f"--workers {execution.workers}" if overridden
             else f"execution.workers: {execution.workers}")
    raise ConfigError(
        f"{asked} on executor local needs system.factory: system.callable "
        f"{config.system.callable!r} is one Stateful object, and one object is one sandbox. "
        "Give `factory: module:function` (a zero-argument callable returning a fresh system) "
        "instead of `callable:`, or use executor processes, where each worker imports its own",
        file=doc.path,
        line=doc.line_of(("system", "callable")) if overridden
        else doc.line_of(("execution", "workers")),
    )


def check_metric_ids(config: SuiteFile, evaluators: list[Evaluator], doc: YamlDocument) -> None:
    """Metric ids are unique, and none is also a criterion's name."""
    criteria = {e.criterion for e in evaluators}
    seen: set[str] = set()
    for i, metric in enumerate(config.metrics):
        if metric.id in criteria or metric.id in seen:
            raise ConfigError(
                f"metric id {metric.id!r} is already used; metric and criterion names must be "
                "unique",
                file=doc.path, line=doc.line_of(("metrics", i, "id")),
            )
        seen.add(metric.id)


def check_trial_metrics(config: SuiteFile, evaluators: list[Evaluator], doc: YamlDocument,
                        trials: int, overridden: bool) -> None:
    """A `pass_hat_k` / `pass_at_k` names a criterion some evaluator produces, and its `k` is
    at most the number of trials (docs/reliability.md#what-passk-means: C(c, k) / C(trials, k) needs
    k ≤ trials)."""
    criteria = [e.criterion for e in evaluators]
    for at, metric in enumerate(config.metrics):
        if not isinstance(metric, TrialMetricConfig):
            continue
        if metric.criterion not in criteria:
            raise ConfigError(
                f"metric {metric.id!r} ({metric.type}) names criterion {metric.criterion!r}, "
                "which no evaluator produces; criteria in this suite: " + ", ".join(criteria),
                file=doc.path, line=doc.line_of(("metrics", at, "criterion")),
            )
        if metric.k > trials:
            given = (f"this run asks for {trials} trial(s) (--trials)" if overridden
                     else f"the suite runs trials: {trials}")
            raise ConfigError(
                f"metric {metric.id!r} ({metric.type}) has k: {metric.k}, but {given}; k counts "
                f"trials of one case, so it must be at most trials — raise `trials:` to at "
                f"least {metric.k} or lower k",
                file=doc.path, line=doc.line_of(("metrics", at, "k")),
            )


def check_requirements(
    config: SuiteFile, evaluators: list[Evaluator], target: SystemTarget, doc: YamlDocument
) -> None:
    """Evaluators that read an artifact refuse to run unless the system provides it."""
    records = config.system.recorded
    for i, evaluator in enumerate(evaluators):
        line = doc.line_of(("evaluators", i))
        if TRAJECTORY_KIND in evaluator.reads and TRAJECTORY_KIND not in records:
            raise ConfigError(
                f"evaluator {evaluator.type_name} ({evaluator.criterion}) reads "
                f"{TRAJECTORY_KIND}, but the system does not declare it; add "
                f"`records: [{TRAJECTORY_KIND}]` under system: (and to @system) and record it "
                "with current_case().agent_trajectory(...)",
                file=doc.path, line=line,
            )
        if (STATE_KIND in evaluator.reads or evaluator.needs_stateful) and target.stateful is None:
            raise ConfigError(
                f"evaluator {evaluator.type_name} ({evaluator.criterion}) reads the sandbox's end "
                f"state, but {config.system.entry} is not Stateful; implement "
                "reset(state) and snapshot() on the system object (oloproof.Stateful)",
                file=doc.path, line=line,
            )
        if evaluator.needs_replayable and target.replayable is None:
            raise ConfigError(
                f"evaluator {evaluator.type_name} ({evaluator.criterion}) replays cases, but "
                f"{config.system.entry} is not Replayable; implement "
                "replay(trajectory, *, checkpoint, change) (oloproof.Replayable)",
                file=doc.path, line=line,
            )
    declared = {t.name for t in (config.metamorphic.transforms if config.metamorphic else ())}
    for i, evaluator in enumerate(evaluators):
        transform = getattr(evaluator.config, "transform", None)
        if evaluator.judges_pairs and transform not in declared:
            raise ConfigError(
                f"evaluator {evaluator.type_name} names transform {transform!r}, which is not "
                "declared under metamorphic.transforms; declared: "
                + (", ".join(sorted(declared)) or "none"),
                file=doc.path, line=doc.line_of(("evaluators", i, "transform")),
            )
    for metric in quantile_metrics(config):
        if metric.source in ("tokens", "cost") and USAGE_KIND not in records:
            raise ConfigError(
                f"metric {metric.id!r} reads {metric.source} from {USAGE_KIND}, which the "
                f"system does not declare; add `records: [{USAGE_KIND}]` under system: and "
                "record it with current_case().usage(input_tokens=..., output_tokens=..., "
                "cost=...), or set `trace: otel` to read it from the spans",
                file=doc.path, line=doc.line_of(("metrics",)),
            )
        reads_steps = metric.source in ("agent_steps", "agent_tool_calls")
        if reads_steps and TRAJECTORY_KIND not in records:
            raise ConfigError(
                f"metric {metric.id!r} reads {metric.source} from {TRAJECTORY_KIND}, which the "
                f"system does not declare; add `records: [{TRAJECTORY_KIND}]` under system:",
                file=doc.path, line=doc.line_of(("metrics",)),
            )
    for s in config.slices:
        if not s.startswith("metadata.") and TRAJECTORY_KIND not in records:
            raise ConfigError(
                f"slice {s!r} reads {TRAJECTORY_KIND}, which the system does not declare; add "
                f"`records: [{TRAJECTORY_KIND}]` under system:",
                file=doc.path, line=doc.line_of(("slices",)),
            )


def metamorphic_warnings(suite: LoadedSuite) -> list[str]:
    """A suite with metamorphic transforms clusters each source case with its copies: the
    warning when the policy allows no approximate method or the dataset is too small for an
    interval over clusters to decide (the suite file, the policy and the dataset together)."""
    if not suite.transforms:
        return []
    problems = []
    if not suite.policy.allow_approximate_methods:
        problems.append(f"set `allow_approximate_methods: true` in {suite.policy_path.name}")
    if len(suite.dataset) < 20:
        problems.append(f"have at least 20 source cases (this suite has {len(suite.dataset)})")
    if not problems:
        return []
    return [
        "this suite declares metamorphic transforms, so each source case shares a cluster with "
        "its copies: " + " and ".join(problems) + ", or rules over any metric that counts "
        "several cases of one cluster (an interval over clusters) cannot decide"
    ]
