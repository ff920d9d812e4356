"""A project loaded whole before anything runs: both files, the dataset, the system, the evaluators.

Everything that can be wrong with the configuration is found here, so that a run never calls
the system only to fail on its configuration later. This is the composition above `suite/`
(the files), `evaluators/` (built from them) and `execution/target` (the imported system):
`suite/` itself imports neither, and the engine reads a `LoadedSuite` only through
`execution.suite_to_run.SuiteToRun`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oloproof.digest import combine
from oloproof.errors import ConfigError, install_extra
from oloproof.evaluators.base import Evaluator
from oloproof.evaluators.catalog import build_evaluators
from oloproof.evaluators.judge import JudgeCriterion, bind_judges
from oloproof.execution.retries import RetryPolicy, exception_class
from oloproof.execution.target import SystemTarget, load_targets, put_on_path
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.recording.usage import USAGE_KIND
from oloproof.suite.cases import (
    Case,
    DatasetIndex,
    StateFiles,
    file_problem,
    iter_cases,
    scan_dataset,
)
from oloproof.suite.config import (
    EXECUTORS,
    MAX_TRIALS,
    MAX_WORKERS,
    ExecutionConfig,
    RetriesConfig,
    SuiteFile,
    TransformConfig,
    TrialMetricConfig,
    load_suite_file,
    quantile_metrics,
    trial_metrics,
)
from oloproof.suite.judge_labels import JudgeLabels, load_judge_labels
from oloproof.suite.metamorphic import derive, transform_digest
from oloproof.suite.policy import Policy, check_rule_metrics, load_policy
from oloproof.suite.validity import check_labels_files
from oloproof.suite.yaml_source import YamlDocument

if TYPE_CHECKING:  # (a worker elsewhere: imported by the executors that start one)
    from oloproof.execution.worker_host import WorkerParts


@dataclass
class LoadedSuite:
    """A validated suite, ready to run."""

    path: Path
    project_dir: Path
    config: SuiteFile
    doc: YamlDocument
    policy: Policy
    policy_path: Path
    policy_doc: YamlDocument
    evaluators: list[Evaluator]
    dataset: DatasetIndex
    states: StateFiles
    target: SystemTarget
    transforms: list[tuple[TransformConfig, str]]
    warnings: list[str] = field(default_factory=list)
    #: How many times each case runs (docs/reliability.md): `trials:` in the suite, or the run's
    #: override.
    trials: int = 1
    #: Where the workers run and how many (docs/scaling.md#configuration), the run's overrides
    #: applied.
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)
    #: One system per local worker (`executor: local`); else the coordinator's own copy, which
    #: only tells what the system is (workers elsewhere import their own).
    targets: list[SystemTarget] = field(default_factory=list)
    #: People's labels of each judge criterion that names a labels file, by criterion.
    judge_labels: dict[str, JudgeLabels] = field(default_factory=dict)
    #: `system.retries:` with its exception classes imported; None: nothing is retried.
    retries: RetryPolicy | None = None

    @property
    def worker_loader(self) -> WorkerLoader:
        """What a worker elsewhere (a process, a Ray actor) calls to load the system and the
        evaluators from the suite file (`load_worker_parts`)."""
        return load_worker_parts

    @property
    def system_key(self) -> str:
        """The system's name and version as one cache-key part."""
        return combine(self.config.system.name, self.config.system.version)

    @property
    def criteria(self) -> list[str]:
        """The criteria, one per evaluator, in the suite's order."""
        return [e.criterion for e in self.evaluators]

    @property
    def case_count(self) -> int:
        """How many cases the run has, metamorphic copies included."""
        return len(self.dataset) * (1 + len(self.transforms))

    @property
    def execution_count(self) -> int:
        """How many executions the run has: every case, each trial."""
        return self.case_count * self.trials

    def store_path(self) -> Path:
        """The store: $OLOPROOF_STORE, else `store:` in the suite, else `.oloproof/store.sqlite`."""
        env = os.environ.get("OLOPROOF_STORE")
        if env:
            return Path(env)
        if self.config.store:
            return (self.project_dir / self.config.store).resolve()
        return self.project_dir / ".oloproof" / "store.sqlite"

    def iter_units(self) -> Iterator[list[Case]]:
        """Each source case followed by its metamorphic copies, in dataset order."""
        for case in iter_cases(self.dataset, self.states):
            if not self.transforms:
                yield [case]
                continue
            if case.cluster is None:
                case.cluster = case.id
            unit = [case]
            for transform, t_digest in self.transforms:
                unit.append(derive(case, transform, t_digest, self.dataset.path))
            yield unit

    def metric_kinds(self) -> dict[str, str]:
        """Each metric's kind (see `metric_kinds`)."""
        return metric_kinds(self.config, self.criteria, self.trials)


WorkerLoader = Callable[[str, str | None], "WorkerParts"]


def load_worker_parts(config: str, project_dir: str | None) -> WorkerParts:
    """A worker's own copy of the system (one factory call, or the callable) and the suite's
    evaluators in order, loaded from the suite file `config` (relative to `project_dir`, or to
    the working directory -- a Ray cluster's shipped project folder -- when that is None).

    The coordinator has checked the suite whole already; a worker only loads what it runs.
    """
    root = Path(project_dir) if project_dir is not None else Path.cwd()
    path = root / config
    suite_file, doc = load_suite_file(path)
    put_on_path(root)
    target = load_targets(suite_file.system, root, doc, 1)[0]
    evaluators = build_evaluators(suite_file.evaluators, doc, root)
    bind_judges(evaluators, suite_file.judges, doc.path, doc.line_of)
    # Checked again where the judges are called: a Ray actor has its node's environment, which
    # may lack the variable that holds a judge's API key.
    _check_judges(suite_file, evaluators, doc, root, where=" (on this worker)")
    return (target, evaluators, suite_file.system.timeout_s, suite_file.system.concurrency,
            retry_policy(suite_file.system.retries, doc))


def retry_policy(config: RetriesConfig | None, doc: YamlDocument) -> RetryPolicy | None:
    """`system.retries:` with its `on:` classes imported (after the system's module: a class
    may be the system's own); a ConfigError at the name that does not import, before any
    call (docs/failures.md#retries)."""
    if config is None:
        return None
    classes = []
    for at, name in enumerate(config.on):
        try:
            classes.append(exception_class(name))
        except LookupError as exc:
            raise ConfigError(f"system.retries.on: {exc}; name an exception class the "
                              "system raises, as module:Class", file=doc.path,
                              line=doc.line_of(("system", "retries", "on", at))) from None
    return RetryPolicy(config.attempts, tuple(classes), config.backoff_s, config.max_backoff_s,
                       config.on)


def metric_kinds(config: SuiteFile, criteria: list[str], trials: int) -> dict[str, str]:
    """Each metric's kind: `rate` for a criterion and for a `pass_hat_k` / `pass_at_k` whose
    per-case values are 0 or 1 (k = trials), `fraction` for one whose values are fractions,
    `quantile` for a quantile metric."""
    kinds = {c: "rate" for c in criteria}
    for metric in config.metrics:
        if metric.type == "quantile":
            kinds[metric.id] = "quantile"
        else:
            kinds[metric.id] = "rate" if getattr(metric, "k", 0) == trials else "fraction"
    return kinds


def load_suite(config_path: Path, policy_path: Path | None = None, *,
               trials: int | None = None, workers: int | None = None,
               executor: str | None = None) -> LoadedSuite:
    """Read and check everything; raises ConfigError (nothing has been called yet).

    `trials` (from `--trials` or `oloproof.run(trials=...)`) replaces the suite's `trials:`;
    `workers` and `executor` (`--workers`, `--executor`) replace `execution.workers` and
    `execution.executor`. A run never has more workers than units to run (its cases times its
    trials). On `executor: local` the system's factory is called once per worker here, so a
    factory that fails is found before anything runs.
    """
    config_path = config_path.resolve()
    config, doc = load_suite_file(config_path)
    if trials is not None and not (isinstance(trials, int) and not isinstance(trials, bool)
                                   and 1 <= trials <= MAX_TRIALS):
        raise ConfigError(f"trials={trials!r} was asked for; trials is a whole number from 1 to "
                          f"{MAX_TRIALS} (how many times each case runs)", file=config_path)
    run_trials = trials if trials is not None else config.trials
    project_dir = config_path.parent
    policy_path = (policy_path or project_dir / "release.yaml").resolve()
    policy, policy_doc = load_policy(policy_path)
    put_on_path(project_dir)  # the system and custom evaluators import from the project
    execution = _execution(config, doc, workers, executor)
    # The system module first: it may register custom evaluators with @oloproof.evaluator.
    # (One system now; a local run's other workers' once the dataset says how many run.)
    local = execution.executor == "local"
    targets = load_targets(config.system, project_dir, doc, 1)
    target = targets[0]
    retries = retry_policy(config.system.retries, doc)
    _check_workers(config, doc, execution, target, workers is not None)
    evaluators = build_evaluators(config.evaluators, doc, project_dir)
    bind_judges(evaluators, config.judges, doc.path, doc.line_of)
    _check_judges(config, evaluators, doc, project_dir)
    _check_metric_ids(config, evaluators, doc)
    _check_trial_metrics(config, evaluators, doc, run_trials, trials is not None)
    _check_requirements(config, evaluators, target, doc)
    transforms = [(t, transform_digest(t)) for t in
                  (config.metamorphic.transforms if config.metamorphic else ())]
    check_labels_files([t for t, _ in transforms], project_dir, doc)
    check_rule_metrics(policy, policy_doc,
                       metric_kinds(config, [e.criterion for e in evaluators], run_trials))
    dataset_path = (project_dir / config.dataset).resolve()
    problem = file_problem(dataset_path)
    if problem is not None:
        raise ConfigError(
            f"dataset {config.dataset!r} {problem} (looked for {dataset_path}); `dataset:` "
            "names a JSON Lines file, relative to oloproof.yaml",
            file=config_path, line=doc.line_of(("dataset",)),
        )
    states = StateFiles(dataset_path.parent, project_dir)
    shown_paths = sorted({f for e in evaluators if isinstance(e, JudgeCriterion)
                          for f in e.shows if f.split(".")[0] in _CASE_PARTS})
    index = scan_dataset(dataset_path, states, [(t.name, t.field) for t, _ in transforms],
                         shown_paths)
    # Never more workers than units to run (a case's trials are units of their own): 32
    # workers for 6 cases started 32 processes, 26 of them idle.
    units = len(index) * run_trials
    if execution.workers > units:
        execution = execution.model_copy(update={"workers": units})
    if local and execution.workers > 1:
        targets = load_targets(config.system, project_dir, doc, execution.workers, targets)
    judge_labels, judge_warnings = _judge_labels(evaluators, index, project_dir, doc)
    suite = LoadedSuite(
        path=config_path, project_dir=project_dir, config=config, doc=doc, policy=policy,
        policy_path=policy_path, policy_doc=policy_doc, evaluators=evaluators, dataset=index,
        states=states, target=target, transforms=transforms, trials=run_trials,
        execution=execution, targets=targets if local else [target], retries=retries,
        judge_labels=judge_labels,
    )
    suite.warnings.extend(_metamorphic_warnings(suite))
    suite.warnings.extend(judge_warnings)
    return suite


#: The parts of a case (not of its output) a judge can be shown; a path into one of them must
#: exist in some case of the dataset.
_CASE_PARTS = ("input", "expected", "metadata")


def _check_judges(config: SuiteFile, evaluators: list[Evaluator], doc: YamlDocument,
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


def _judge_labels(evaluators: list[Evaluator], index: DatasetIndex, project_dir: Path,
                  doc: YamlDocument) -> tuple[dict[str, JudgeLabels], list[str]]:
    """Each judge criterion's shown case paths exist in the dataset, and its labels file (if
    it names one) reads; the labels by criterion, and warnings for files not (yet) usable."""
    labels: dict[str, JudgeLabels] = {}
    warnings: list[str] = []
    for i, evaluator in enumerate(evaluators):
        if not isinstance(evaluator, JudgeCriterion):
            continue
        for field_name in evaluator.shows:
            if field_name.split(".")[0] in _CASE_PARTS and "." in field_name \
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
        found = load_judge_labels(project_dir / evaluator.config.labels,
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


def _execution(config: SuiteFile, doc: YamlDocument, workers: int | None,
               executor: str | None) -> ExecutionConfig:
    """`execution:` with the run's `--workers` / `--executor` applied, and the executor
    available (Ray installed)."""
    execution = config.execution
    if workers is not None:
        if not (isinstance(workers, int) and not isinstance(workers, bool)
                and 1 <= workers <= MAX_WORKERS):
            raise ConfigError(f"workers={workers!r} was asked for; workers is a whole number "
                              f"from 1 to {MAX_WORKERS} (copies of the system, each with its own "
                              "sandbox)", file=doc.path)
        execution = execution.model_copy(update={"workers": workers})
    if executor is not None:
        if executor not in EXECUTORS:
            raise ConfigError(f"executor={executor!r} was asked for; the executors are "
                              + ", ".join(EXECUTORS), file=doc.path)
        execution = execution.model_copy(update={"executor": executor})
    if execution.executor == "ray":
        try:
            import ray  # noqa: F401 - only whether it is there
        except ImportError:
            where = "--executor ray" if executor is not None else "execution.executor: ray"
            raise ConfigError(
                f"{where} needs Ray, which is not installed in this environment; "
                f"{install_extra('ray')}, or choose executor local or processes",
                file=doc.path,
                line=doc.line_of(("execution", "executor")) if executor is None else None,
            ) from None
    return execution


def _check_workers(config: SuiteFile, doc: YamlDocument, execution: ExecutionConfig,
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


def _check_metric_ids(config: SuiteFile, evaluators: list[Evaluator], doc: YamlDocument) -> None:
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


def _check_trial_metrics(config: SuiteFile, evaluators: list[Evaluator], doc: YamlDocument,
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


def _check_requirements(
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


def _metamorphic_warnings(suite: LoadedSuite) -> list[str]:
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


def describe_suite(suite: LoadedSuite) -> dict[str, Any]:
    """The suite as stored with a run (what `gate` and the reports need to re-read it)."""
    return {
        "project": suite.config.project,
        "config_path": str(suite.path),
        "dataset": str(suite.dataset.path),
        "system": suite.config.system.model_dump(mode="json"),
        # Whether the engine reset and recorded a sandbox (a Stateful system records its end
        # state without declaring it under `records`).
        "stateful": suite.target.stateful is not None,
        "criteria": suite.criteria,
        "evaluator_keys": [e.cache_key for e in suite.evaluators],
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
    }


def _describe_judges(suite: LoadedSuite) -> dict[str, Any]:
    """Each judge criterion as a run stores it: its judge, bar, and the labels it used (so
    `gate` re-decides the run on the same labels)."""
    described: dict[str, Any] = {}
    for evaluator in suite.evaluators:
        if isinstance(evaluator, JudgeCriterion):
            labels = suite.judge_labels.get(evaluator.criterion)
            described[evaluator.criterion] = {
                "judge": evaluator.config.judge,
                "minimum_agreement": evaluator.config.minimum_agreement,
                "labels": labels.to_json() if labels is not None else None,
            }
    return described
