"""A project loaded whole before anything runs: both files, the dataset, the system, the evaluators.

Everything that can be wrong with the configuration is found here, so that a run never calls
the system only to fail on its configuration later. This is the composition above `suite/`
(the files), `evaluators/` (built from them) and `execution/target` (the imported system):
`suite/` itself imports neither, and the engine reads a `LoadedSuite` only through
`execution.suite_to_run.SuiteToRun`. The checks across files are `project/checks.py`; what a run
stores of the suite is `project/describe.py`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING

from oloproof.errors import ConfigError, install_extra
from oloproof.evaluators.base import Evaluator
from oloproof.evaluators.catalog import build_evaluators
from oloproof.evaluators.judge import JudgeCriterion, bind_judges
from oloproof.evaluators.simulator_fidelity import fidelity_criterion
from oloproof.execution.judging import judge_problem
from oloproof.execution.keys import evaluator_keys, system_key
from oloproof.execution.retries import RetryPolicy, exception_class
from oloproof.execution.target import (
    SystemTarget,
    forget_foreign,
    load_targets,
    put_on_path,
    remember_imports,
)
from oloproof.project.checks import (
    CASE_PARTS,
    check_conversations,
    check_judge_labels,
    check_judges,
    check_metric_ids,
    check_requirements,
    check_trial_metrics,
    check_workers,
    metamorphic_warnings,
)
from oloproof.suite.case import Case
from oloproof.suite.config import (
    EXECUTORS,
    MAX_TRIALS,
    MAX_WORKERS,
    ExecutionConfig,
    RetriesConfig,
    SuiteFile,
    TransformConfig,
    load_suite_file,
)
from oloproof.suite.dataset import DatasetIndex, iter_cases, scan_dataset
from oloproof.suite.json_lines import file_problem
from oloproof.suite.judge_labels import JudgeLabels
from oloproof.suite.metamorphic import derive, transform_digest
from oloproof.suite.policy import Policy, load_policy
from oloproof.suite.policy_checks import check_rule_cases, check_rule_metrics
from oloproof.suite.state_files import StateFiles
from oloproof.suite.subset import Selection
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
        """The system's part of every execution key (`execution.keys.system_key`)."""
        return system_key(self.config.system)

    @cached_property
    def evaluator_keys(self) -> list[str]:
        """Each evaluator's key, in the suite's order (`execution.keys.evaluator_keys`: a
        custom check's source read once, when the run starts)."""
        return evaluator_keys(self.evaluators, self.project_dir)

    @property
    def criteria(self) -> list[str]:
        """The criteria, one per evaluator, in the suite's order."""
        return [e.criterion for e in self.evaluators]

    @property
    def case_count(self) -> int:
        """How many cases the run has, metamorphic copies included (a subset run's: those
        of the cases it chose)."""
        return len(self.dataset.run_ids) * (1 + len(self.transforms))

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
    evaluators = suite_evaluators(suite_file, doc, root)
    # Checked again where the judges are called: a Ray actor has its node's environment, which
    # may lack the variable that holds a judge's API key (and a simulator's).
    check_judges(suite_file, evaluators, doc, root, where=" (on this worker)")
    for simulator in suite_file.simulators:
        problem = judge_problem(simulator, root, what="simulator")
        if problem is not None:
            raise ConfigError(f"simulator {simulator.name!r} (on this worker): {problem}",
                              file=doc.path)
    return (target, evaluators, suite_file.system.timeout_s, suite_file.system.concurrency,
            retry_policy(suite_file.system.retries, doc), suite_file.simulators)


def suite_evaluators(config: SuiteFile, doc: YamlDocument, root: Path) -> list[Evaluator]:
    """The suite's evaluators in order — its `evaluators:`, then the simulator's fidelity judge
    when it has one (docs/conversations.md) — each judge criterion bound to its judge. A custom
    check's module is this project's own (`_own_check_modules`), and the modules the checks
    imported are noted: edited before the next run in this process (a notebook), they are
    imported afresh, as the system's module is."""
    _own_check_modules(config.evaluators, root)
    evaluators = build_evaluators(config.evaluators, doc, root)
    if config.simulator_fidelity is not None:
        evaluators.append(fidelity_criterion(config.simulator_fidelity, doc, root))
    remember_imports(root)
    bind_judges(evaluators, config.judges, doc.path, doc.line_of)
    return evaluators


def _own_check_modules(entries: Sequence[object], project_dir: Path) -> None:
    """A custom check's module of the same name that another project in this process imported
    (each project's `checks.py`) is dropped before the checks are built: this project's own is
    the one imported, as for the system's module and a judge's."""
    for entry in entries:
        reference = entry.get("callable") if isinstance(entry, dict) and \
            entry.get("type") == "custom" else None
        if isinstance(reference, str) and ":" in reference:
            forget_foreign(reference.partition(":")[0], project_dir.resolve())


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
               executor: str | None = None, selection: Selection | None = None,
               on_execution: Callable[[ExecutionConfig], None] | None = None,
               ) -> LoadedSuite:
    """Read and check everything; raises ConfigError (nothing has been called yet).

    `trials` (from `--trials` or `oloproof.run(trials=...)`) replaces the suite's `trials:`;
    `workers` and `executor` (`--workers`, `--executor`) replace `execution.workers` and
    `execution.executor`. A run never has more workers than units to run (its cases times its
    trials). On `executor: local` the system's factory is called once per worker here, so a
    factory that fails is found before anything runs. `selection` makes the run a subset
    (docs/cli.md#running-part-of-the-suite): its cases only, checked against the dataset.
    `on_execution` is called with the executor and workers as soon as the suite file gives
    them, before the system, the evaluators and the dataset are loaded (a run starts its
    worker processes then: docs/scaling.md#a-cpu-bound-suite); the number of workers may
    still fall to the number of units to run.
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
    if on_execution is not None:
        on_execution(execution)
    # The system module first: it may register custom evaluators with @oloproof.evaluator.
    # (One system now; a local run's other workers' once the dataset says how many run.)
    local = execution.executor == "local"
    targets = load_targets(config.system, project_dir, doc, 1)
    target = targets[0]
    retries = retry_policy(config.system.retries, doc)
    check_workers(config, doc, execution, target, workers is not None)
    evaluators = suite_evaluators(config, doc, project_dir)
    check_judges(config, evaluators, doc, project_dir)
    check_metric_ids(config, evaluators, doc)
    check_trial_metrics(config, evaluators, doc, run_trials, trials is not None)
    check_requirements(config, evaluators, target, doc)
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
                          for f in e.shows if f.split(".")[0] in CASE_PARTS})
    index = scan_dataset(dataset_path, states, [(t.name, t.field) for t, _ in transforms],
                         shown_paths, selection)
    check_rule_cases(policy, policy_doc, index.ids, [e.criterion for e in evaluators])
    # Never more workers than units to run (a case's trials are units of their own): 32
    # workers for 6 cases started 32 processes, 26 of them idle.
    units = len(index.run_ids) * run_trials
    if execution.workers > units:
        execution = execution.model_copy(update={"workers": units})
    if local and execution.workers > 1:
        targets = load_targets(config.system, project_dir, doc, execution.workers, targets)
    check_conversations(config, evaluators, index, doc, project_dir)
    judge_labels, judge_warnings = check_judge_labels(evaluators, index, project_dir, doc)
    suite = LoadedSuite(
        path=config_path, project_dir=project_dir, config=config, doc=doc, policy=policy,
        policy_path=policy_path, policy_doc=policy_doc, evaluators=evaluators, dataset=index,
        states=states, target=target, transforms=transforms, trials=run_trials,
        execution=execution, targets=targets if local else [target], retries=retries,
        judge_labels=judge_labels,
    )
    suite.warnings.extend(metamorphic_warnings(suite))
    suite.warnings.extend(judge_warnings)
    return suite


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
