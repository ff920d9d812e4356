"""The library surface the command line is a thin layer over (SPEC §3.6).

`run()` does everything `oloproof run` does and returns a RunResult; `load_run()` reads a stored
run; `redecide()` decides a stored run under another policy without running anything.

This module imports only what a run needs to start its first cases. What deciding and
reporting need — the run document's models, the decisions, NumPy and the statistics, the
terminal report — is imported in a thread beside the run once its cases are under way
(`_AFTER_THE_RUN`), and by the functions that use it.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import os
import sqlite3
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oloproof.analysis.judged import specs_of
from oloproof.analysis.metrics import Analysis, MetricPlan, QuantileSpec
from oloproof.analysis.outcome import CaseOutcome
from oloproof.errors import ConfigError, RunStopped, StoreError, UsageError
from oloproof.execution.engine import Progress, RunEngine
from oloproof.execution.executors import open_transport
from oloproof.project import LoadedSuite, describe_suite, load_suite
from oloproof.store.location import find_store, open_existing_store
from oloproof.store.sql import store_error
from oloproof.store.store import Store
from oloproof.suite.policy import (
    Policy,
    check_baseline_given,
    check_rule_metrics,
    load_policy,
    policy_warnings,
    stored_policy,
)
from oloproof.suite.validity import transform_validity, validity_bound

if TYPE_CHECKING:
    from oloproof.analysis.trials import CaseTrials
    from oloproof.comparison.stored import compare
    from oloproof.document import (
        BaselineSummary,
        CacheCounts,
        CaseError,
        Comparison,
        DecisionRow,
        Execution,
        Gate,
        MetricRow,
        Plan,
        QuantileRow,
        RateRow,
        RunDocument,
        RunStatus,
        TransformValidity,
    )


@dataclass
class RunResult:
    """A run as the reports show it; `to_json()` is the JSON document of SPEC §11.

    `document` is the typed run document (`oloproof.document.RunDocument`): `result.gate.action`,
    `result.metric("answer_correct").lower`, `result.decisions[0].state` read it.
    """

    document: RunDocument
    warnings: list[str] = field(default_factory=list)
    #: The policy the run was decided under (its `block_on` says which states block).
    policy: Policy | None = None

    @property
    def run_id(self) -> str:
        return self.document.run_id

    @property
    def status(self) -> str:
        return str(self.document.status)

    @property
    def gate(self) -> Gate:
        return self.document.gate

    @property
    def metrics(self) -> list[MetricRow]:
        return list(self.document.metrics)

    @property
    def decisions(self) -> list[DecisionRow]:
        return list(self.document.decisions)

    def metric(self, metric_id: str) -> RateRow | QuantileRow:
        """The metric row with this id (KeyError naming the metrics there are)."""
        return self.document.metric(metric_id)

    def to_json(self) -> dict[str, Any]:
        """The JSON document (SPEC §11), as `oloproof run --json` prints it."""
        return self.document.to_json()


def _plan(suite_info: dict[str, Any]) -> MetricPlan:
    trial_metrics = suite_info.get("trial_metrics", ())
    if trial_metrics:  # (repeated trials' code is imported only for a suite that has them)
        from oloproof.analysis.trials import TrialMetricSpec
    relation = {e["criterion"]: e["transform"] for e in suite_info["evaluators"]
                if e.get("type") == "metamorphic_relation"}
    criteria = list(suite_info["criteria"])
    return MetricPlan(
        criteria=criteria,
        quantiles=[QuantileSpec(m["id"], m["source"], m["quantile"])
                   for m in suite_info["metrics"]],
        slices=list(suite_info["slices"]),
        min_slice_support=int(suite_info["min_slice_support"]),
        relation_transforms=relation,
        # Runs stored before the key existed: keep cases by id, as a clustered suite needs.
        case_clusters=bool(suite_info.get("case_clusters", True)),
        trials=int(suite_info.get("trials", 1)),
        trial_metrics=[TrialMetricSpec(m["id"], m["type"], criteria.index(m["criterion"]),
                                       int(m["k"]))
                       for m in trial_metrics],
        judges=specs_of(criteria, suite_info.get("judges") or {}),
    )


def open_store(suite: LoadedSuite, store: str | Path | None = None) -> Store:
    """The store a run writes to: `store` if given, else the suite's (SPEC §4.2)."""
    return Store(Path(store) if store is not None else suite.store_path())


_CROCKFORD = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"


def new_run_id() -> str:
    """`run_` and a ULID: 48 bits of Unix time in ms and 80 random bits, in Crockford base32
    (26 characters; ids of runs started in different milliseconds sort by time). Made here
    rather than by a ULID package, whose import reads package metadata (~0.1 s per command).
    """
    value = (time.time_ns() // 1_000_000) << 80 | int.from_bytes(os.urandom(10), "big")
    return "run_" + "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -5, -5))


def _refuse_running_loop(name: str) -> None:
    """`run()` owns its event loop: inside a running one (Jupyter, an async test) it cannot."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise UsageError(
        f"oloproof.{name}() was called inside a running event loop (a notebook, an async "
        "test or server); nothing was run or stored. There, use "
        "`result = await oloproof.run_async(...)`, which takes the same arguments"
    )


#: What deciding and reporting a run need and starting one does not, in the order they are
#: needed: the run document's models (pydantic builds them: 0.05 s; the first failing case
#: needs them), the decisions, NumPy and the statistics (with scipy.special, a fifth of a
#: second), comparing with a baseline, the projection, and the terminal report (Rich), which
#: `oloproof run` prints next — for a library caller, 0.05 s more in a thread while its cases
#: run.
_AFTER_THE_RUN = ("oloproof.document", "oloproof.decisions", "oloproof.report.limits", "numpy",
                  "oloproof.stats", "scipy.special", "oloproof.comparison",
                  "oloproof.decisions.plan", "oloproof.report.terminal")


def _import_modules(names: tuple[str, ...]) -> None:
    for name in names:
        importlib.import_module(name)


def _import_beside_the_run() -> None:
    """Import what deciding and reporting need in a thread of its own, once the run's first
    cases are under way: a system that waits on the network leaves the interpreter idle for
    it, and the decision need not wait. It starts after one turn of the event loop (the call
    is scheduled before the engine runs, and schedules the thread's start behind the first
    cases the engine hands out), so its imports do not compete with loading the suite and
    planning the first jobs. (The imports happen once per process either way; if they are
    not done when the run decides, deciding waits for them, as it would have imported them.)
    """
    wanted = tuple(name for name in _AFTER_THE_RUN if name not in sys.modules)
    if not wanted:
        return
    threading.Thread(target=_import_modules, args=(wanted,), name="oloproof-import",
                     daemon=True).start()


class _Run:
    """One run between registering it in the store and its result (shared by `run` and
    `run_async`)."""

    def __init__(
        self, config: str | Path, policy: str | Path | None, *, no_cache: bool,
        concurrency: int | None, on_progress: Callable[[Progress], None] | None,
        on_start: Callable[[LoadedSuite, str], None] | None, store: str | Path | None,
        trials: int | None = None, workers: int | None = None, executor: str | None = None,
        baseline: str | None = None,
    ) -> None:
        self.suite = load_suite(Path(config), Path(policy) if policy is not None else None,
                                trials=trials, workers=workers, executor=executor)
        check_baseline_given(self.suite.policy, self.suite.policy_doc, baseline)
        self.db = open_store(self.suite, store)
        # The baseline is resolved before the run is registered, as `oloproof run` means it:
        # the run being made is `latest` (SPEC §17). A bad baseline stops here, before any call.
        reference = baseline if baseline is not None else self.suite.policy.baseline_reference
        self.baseline: str | None = None
        if reference is not None:
            try:
                project = self.suite.config.project
                self.baseline = _check_baseline(
                    self.db, self.db.resolve_baseline(reference, None, project), project,
                    set(self.suite.dataset.ids), gating=self.suite.policy.compares)
            except BaseException:
                self.db.close()
                raise
        self.run_id = new_run_id()
        # With trials, progress counts executions: every case, each trial.
        self.progress = Progress(total=self.suite.execution_count, on_change=on_progress)
        self.no_cache = no_cache
        self.concurrency = concurrency
        self.on_start = on_start

    def stopped(self) -> RunStopped:
        done = "cases" if self.suite.trials == 1 else "case trials"
        return RunStopped(
            f"run {self.run_id} stopped after {self.progress.done} of {self.progress.total} "
            f"{done}; what finished is stored and the next `oloproof run` reuses it"
        )

    async def execute(self) -> RunResult:
        """Register, run, decide and store the run. On Ctrl-C or cancellation the run is
        marked `stopped` and the interruption goes on; on an unexpected error it is marked
        `failed` (what finished is stored) and the error goes on, with a note naming the run.
        """
        suite, db, run_id = self.suite, self.db, self.run_id
        suite_info = describe_suite(suite)
        # The policy is stored with its baseline resolved to a run id, so `gate` re-decides
        # this run against the same baseline whatever runs come after it.
        policy = suite.policy if self.baseline is None else \
            suite.policy.model_copy(update={"baseline": self.baseline})
        # The workers start (and load the system) before the run is registered: a worker that
        # cannot start is a configuration error, with nothing run and nothing stored.
        transport = await open_transport(suite, self.concurrency)
        try:
            db.begin_run(run_id, suite.config.project, suite.config.system.name,
                         suite.config.system.version, suite_info,
                         policy.model_dump(mode="json"))
        except BaseException:
            await transport.close()
            raise
        try:
            if self.on_start is not None:
                self.on_start(suite, run_id)
            engine = RunEngine(suite, db, run_id, no_cache=self.no_cache,
                               concurrency=self.concurrency, progress=self.progress,
                               transport=transport)
            analysis = Analysis(_plan(suite_info))
            loop = asyncio.get_running_loop()
            importing = loop.call_soon(loop.call_soon, _import_beside_the_run)
            try:
                await engine.run(analysis)
            finally:
                importing.cancel()  # (a run that never waited has nothing beside it)
            from oloproof.document import (
                CacheCounts,
                CaseError,
                Execution,
                RunStatus,
                TransformValidity,
            )

            execution = Execution(executor=suite.execution.executor,
                                  workers=suite.execution.workers, retried=engine.retried,
                                  nodes=engine.nodes)
            validity = transform_validity(suite.transforms, engine.pairs, suite.project_dir,
                                          suite.policy.confidence_level)
            against = None
            if self.baseline is not None:
                db.stop_writer()  # the run's cases must be committed to be paired
                against = _compare_stored(db, self.baseline, run_id,
                                          suite.policy.confidence_level,
                                          candidate_complete=True).summary()
            # A run every execution of which errored measured nothing: it is `failed`, exit 5
            # (never "more cases needed"; docs/failures.md#a-run-that-never-ran).
            status = RunStatus.FAILED if analysis.execution_counts().nothing_measured \
                else RunStatus.COMPLETE
            cache = CacheCounts.model_validate(engine.cache.to_json())
            rerun = db.rerun_errored(run_id) if not self.no_cache else None
            if rerun is not None:  # (what errored before is never cached: it ran again)
                cache.rerun_from, cache.rerun = rerun
            document = _decide(db, run_id, status, suite_info, suite.policy,
                               analysis,
                               [TransformValidity.model_validate(v) for v in validity],
                               cache,
                               [CaseError.model_validate(e) for e in engine.errors],
                               suite.warnings, execution, against)
            db.finish_run(run_id, str(status), analysis.cases, document.to_json())
        except (KeyboardInterrupt, asyncio.CancelledError):
            db.finish_run(run_id, "stopped", self.progress.done, None)
            raise
        except Exception as exc:
            with contextlib.suppress(Exception):  # the store itself may be what broke
                db.finish_run(run_id, "failed", self.progress.done, None)
            if isinstance(exc, sqlite3.DatabaseError):  # a read of the store failed
                raise store_error(exc, db.path, "read") from None
            exc.add_note(f"oloproof: the run {run_id} failed after {self.progress.done} of "
                         f"{self.progress.total} cases and is marked `failed`; what finished "
                         "is stored")
            raise
        return RunResult(document, list(document.warnings), suite.policy)


def run(
    config: str | Path = "oloproof.yaml",
    policy: str | Path | None = None,
    *,
    no_cache: bool = False,
    concurrency: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_start: Callable[[LoadedSuite, str], None] | None = None,
    store: str | Path | None = None,
    trials: int | None = None,
    workers: int | None = None,
    executor: str | None = None,
    baseline: str | None = None,
) -> RunResult:
    """Run a suite: load, execute, judge, analyse, decide, store. Returns the run's result.

    `trials` runs every case that many times (SPEC §15), instead of the suite's `trials:`;
    `workers` and `executor` (`local`, `processes` or `ray`) replace `execution.workers` and
    `execution.executor` (SPEC §14).
    `baseline` (a run reference) is the run `non_inferiority` rules compare with, instead of
    the policy's `baseline:` (SPEC §17); the run being made counts as `latest`, so
    `latest~1` — or `latest`, which cannot name the run itself — is the newest run before it.
    A baseline that does not exist, is of another project or shares no case id with the suite
    raises UsageError before any system call.

    Raises ConfigError before any system call when the configuration is wrong, and RunStopped
    when interrupted (what finished is stored and reused by the next run). `store` moves the
    store for this run (default: $OLOPROOF_STORE, else `store:` in the suite, else
    `.oloproof/store.sqlite` beside it). An unexpected error marks the run `failed` and is
    raised as it is. Inside a running event loop, use `run_async` instead (`run` refuses
    before it loads or stores anything). The interpreter is left as it was found: no garbage
    collector, thread switch interval or signal handler is changed.
    """
    _refuse_running_loop("run")
    job = _Run(config, policy, no_cache=no_cache, concurrency=concurrency,
               on_progress=on_progress, on_start=on_start, store=store, trials=trials,
               workers=workers, executor=executor, baseline=baseline)
    try:
        return asyncio.run(job.execute())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise job.stopped() from None
    finally:
        job.db.close()


async def run_async(
    config: str | Path = "oloproof.yaml",
    policy: str | Path | None = None,
    *,
    no_cache: bool = False,
    concurrency: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    on_start: Callable[[LoadedSuite, str], None] | None = None,
    store: str | Path | None = None,
    trials: int | None = None,
    workers: int | None = None,
    executor: str | None = None,
    baseline: str | None = None,
) -> RunResult:
    """`run`, awaited on the caller's event loop (a notebook, an async test or server).

    Async systems run on that loop, sync systems in threads of their own. Cancelling the
    awaiting task stops the run: it is marked `stopped`, what finished is stored, and the
    cancellation goes on. Loading the suite and opening the store happen before the first
    await, as in `run`.
    """
    job = _Run(config, policy, no_cache=no_cache, concurrency=concurrency,
               on_progress=on_progress, on_start=on_start, store=store, trials=trials,
               workers=workers, executor=executor, baseline=baseline)
    try:
        return await job.execute()
    except KeyboardInterrupt:
        raise job.stopped() from None
    finally:
        job.db.close()


def _check_baseline(db: Store, baseline: str, project: str, case_ids: set[str], *,
                    gating: bool) -> str:
    """A baseline for the run about to be made: of this project, sharing case ids with the
    suite, and complete when a rule decides on it (a UsageError saying which is not so)."""
    record = db.run_record(baseline)
    if record["project"] != project:
        raise UsageError(
            f"the baseline run {baseline} is of project {record['project']!r}, and this suite is "
            f"project {project!r}: a baseline must be a run of the same project (`oloproof runs` "
            "lists this store's runs)")
    if not any(case_id in case_ids for case_id, *_ in db.iter_run_verdicts(baseline)):
        raise UsageError(
            f"the baseline run {baseline} shares no case id with this suite: they have no case "
            "in common, so nothing can be paired; name a baseline run of this suite")
    if gating and record["status"] != "complete":
        raise UsageError(
            f"the baseline run {baseline} is {record['status']}: a release cannot be decided "
            "against a run that did not complete; name a complete run as the baseline")
    return baseline


def _compare_stored(db: Store, baseline: str, candidate: str, level: float, *,
                    candidate_complete: bool = False) -> Comparison:
    """Compare two stored runs. `candidate_complete`: the candidate is the run being decided
    (still registered as running), so no warning says it did not complete."""
    from oloproof.comparison import compare_sides, read_side
    cand = read_side(db, candidate)
    if candidate_complete:
        cand.record["status"] = "complete"
    return compare_sides(db, read_side(db, baseline), cand, level)


def _decide(
    db: Store, run_id: str, status: RunStatus | str, suite_info: dict[str, Any], policy: Policy,
    analysis: Analysis, validity: list[TransformValidity], cache: CacheCounts,
    errors: list[CaseError], warnings: list[str], execution: Execution | None = None,
    baseline: BaselineSummary | None = None,
) -> RunDocument:
    from oloproof.analysis.expected_keys import expected_key_hints
    from oloproof.decisions import decide
    from oloproof.document import ExitCode, Gate, GateAction, RunDocument, RunStatus, SystemRef
    from oloproof.report.limits import limits_for

    metrics, slices = analysis.finish(policy.confidence_level)
    analysis.attach_missing_examples(metrics, _missing_messages(db, analysis, suite_info, errors))
    checked = {v.transform: v.checked for v in validity}
    if baseline is None and policy.compares:
        raise ConfigError("the policy has a non_inferiority rule, and no baseline run was "
                          "given to compare with: give --baseline REF (or `baseline:` in the "
                          "policy)")
    executions = analysis.execution_counts()  # (max_errored rules decide on it)
    decisions, gate = decide(policy, metrics, checked, baseline, executions)
    warnings = [*warnings, *policy_warnings(policy)]
    if analysis.unread_cases:
        warnings = [*warnings, (
            f"{analysis.unread_items} trace item(s) in {analysis.unread_cases} case(s) were "
            "not understood and are not in those trajectories; `oloproof inspect --case ID` "
            "lists them by kind (trace_reading/v1)")]
    if status != RunStatus.COMPLETE:
        # Figures of a run that did not complete describe only the cases that finished: they
        # can be read, never used to release (exit 5: the run could not complete).
        gate = Gate(action=GateAction.BLOCK, exit_code=ExitCode.INCOMPLETE)
        if executions.nothing_measured:
            warnings = [*warnings, f"every execution of this run errored ({executions.cases} "
                        "of " f"{executions.cases}), so nothing was measured: the run is "
                        f"{status}, and its gate cannot allow a release; What broke says why"]
        else:
            warnings = [*warnings, f"this run is {status}: its figures cover only the "
                        f"{analysis.cases} cases that finished, and its gate cannot allow a "
                        "release"]
    return RunDocument(
        run_id=run_id,
        status=RunStatus(status),
        project=suite_info["project"],
        system=SystemRef(name=suite_info["system"]["name"],
                         version=suite_info["system"]["version"]),
        cases=analysis.cases,
        confidence_level=policy.confidence_level,
        gate=gate,
        decisions=decisions,
        metrics=metrics,
        slices=slices,
        transforms=validity,
        cache=cache,
        errors=errors,
        warnings=warnings,
        limits=limits_for(suite_info),
        failing_cases=analysis.failing_cases(),
        trials=int(suite_info.get("trials", 1)) if int(suite_info.get("trials", 1)) > 1
        else None,
        execution=execution if execution is not None else _stored_execution(suite_info),
        baseline=baseline,
        usage=analysis.usage_totals(),
        executions=executions,
        expected_key_hints=expected_key_hints(
            metrics, suite_info.get("absent_expected") or {},
            suite_info.get("expected_keys") or {}) or None,
    )


def _stored_execution(suite_info: dict[str, Any]) -> Execution | None:
    """Where a stored run ran, from its suite record (runs stored before workers: none)."""
    from oloproof.document import Execution

    stored = suite_info.get("execution")
    if not isinstance(stored, dict):
        return None
    return Execution(executor=str(stored["executor"]), workers=int(stored["workers"]))


def _missing_messages(
    db: Store, analysis: Analysis, suite_info: dict[str, Any], errors: list[CaseError]
) -> dict[tuple[str, str], str | None]:
    """The error text of the first case missing for each reason, where there is one: the case's
    own error for an errored case, else the `error` its judgment kept (an evaluator that
    raised)."""
    examples = analysis.missing_examples()
    if not examples:
        return {}
    case_errors: dict[str, str] = {}
    for error in errors:
        case_errors.setdefault(error.case, error.message)
    evaluator_keys = list(suite_info.get("evaluator_keys") or [])
    criteria = list(suite_info.get("criteria") or [])
    wanted: dict[tuple[str, str], str] = {}
    messages: dict[tuple[str, str], str | None] = {}
    for (criterion, reason), (case_id, case_key) in examples.items():
        if case_id in case_errors:
            messages[(criterion, reason)] = case_errors[case_id]
        elif case_key is not None and criterion in criteria \
                and criteria.index(criterion) < len(evaluator_keys):
            wanted[(criterion, reason)] = case_key + evaluator_keys[criteria.index(criterion)]
    if wanted:
        db.stop_writer()  # the judgments must be committed (and merged) to be read back
        found = db.load_judgments(wanted.values())
        for example, key in wanted.items():
            details = (found.get(key) or {}).get("details")
            text = details.get("error") if isinstance(details, dict) else None
            if isinstance(text, str):
                messages[example] = text
    return messages


def _open_existing(config: str | Path, store: str | Path | None) -> Store:
    """The project's store, opened read-only: reading a run never writes (SPEC §11.1)."""
    return open_existing_store(config, store)


@dataclass(frozen=True)
class Tagged:
    """What `tag` did: the run now tagged `name`, and the run the tag was on before (None if
    it was on none, or on this one already)."""

    name: str
    run_id: str
    moved_from: str | None = None


def tag(
    ref: str, name: str, config: str | Path = "oloproof.yaml", store: str | Path | None = None
) -> Tagged:
    """Tag a stored run `name`, as `oloproof tag RUN NAME` does: `baseline: {tag: NAME}` (or
    `--baseline tag:NAME`, or `tag:NAME` wherever a run is named) then names it. A tag is on one
    run at a time: tagging another run moves it. Writes only the tag; a UsageError for a name
    that cannot be a tag, a StoreError when no store or no such run exists."""
    path = find_store(config, store)
    if not path.is_file():
        raise StoreError("no store here yet: run `oloproof run` in the project directory "
                         "first", file=path)
    with Store(path) as db:
        run_id = db.resolve_run(ref)
        moved = db.tag_run(run_id, name)
    return Tagged(name=name, run_id=run_id, moved_from=moved)


def load_run(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None
) -> RunResult:
    """Read a stored run (`latest`, `latest~N`, or a unique prefix or suffix of its id)."""
    with _open_existing(config, store) as db:
        record = db.run_record(db.resolve_run(ref))
        return RunResult(_document_of(db, record), [],
                         stored_policy(record["policy"], record["run_id"]))


def stored_document(db: Store, run_id: str) -> RunDocument:
    """The run document of a stored run, on a store already open (`oloproof view` reads it
    so): the stored one, or for a run without one (running, or it did not complete) the
    cases stored so far analysed and decided as `load_run` does. Writes nothing."""
    return _document_of(db, db.run_record(run_id))


def _document_of(db: Store, record: dict[str, Any]) -> RunDocument:
    from oloproof.document import CacheCounts, CaseError, RunDocument, RunStatus

    if record["summary"] is not None:
        document = RunDocument.model_validate(record["summary"])
        document.status = RunStatus(record["status"])  # live: running, incomplete, stopped
        if document.failing_cases is None:  # stored before documents named failing cases
            document.failing_cases = _reanalyse(db, record["run_id"],
                                                record["suite"]).failing_cases()
        return document
    # An incomplete run: decide what was stored, and say that it did not complete.
    suite_info, policy = record["suite"], stored_policy(record["policy"], record["run_id"])
    analysis = _reanalyse(db, record["run_id"], suite_info)
    trials = int(record["suite"].get("trials", 1))
    errors = [CaseError(case=e["case"], kind=e["kind"], message=e["message"],
                        trial=e["trial"] if trials > 1 else None)
              for e in db.run_errors(record["run_id"])]
    against = None
    if policy.compares and policy.baseline_reference is not None:
        against = _compare_stored(db, db.resolve_baseline(policy.baseline_reference,
                                                          record["run_id"], record["project"]),
                                  record["run_id"],
                                  policy.confidence_level).summary()
    return _decide(db, record["run_id"], record["status"], suite_info, policy, analysis,
                   [], CacheCounts(), errors, [], baseline=against)


def _reanalyse(db: Store, run_id: str, suite_info: dict[str, Any]) -> Analysis:
    analysis = Analysis(_plan(suite_info))
    for case_id, digest, _key, outcome in db.iter_run_cases(run_id):
        analysis.add(CaseOutcome.from_json(case_id, outcome, digest))
    return analysis


def load_case_trials(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None
) -> list[CaseTrials]:
    """Every case of a stored run with its trials folded (SPEC §15.1), in stored order.

    Each `CaseTrials` holds, per criterion (in the suite's `criteria` order), the case's
    passed, failed, missing (errored or never run) and excluded trials — the `c`, `f`, `m`
    and `x` every per-case value is computed from (`oloproof.analysis.trials.case_values`),
    with the case's digest (the order intervals take cases in). A run without trials gives
    one trial per case. Reads only the stored run.
    """
    from oloproof.analysis.trials import iter_case_trials

    with _open_existing(config, store) as db:
        run_id = db.resolve_run(ref)
        record = db.run_record(run_id)
        suite = record["suite"]
        outcomes = (CaseOutcome.from_json(case_id, outcome, digest)
                    for case_id, digest, _key, outcome in db.iter_run_cases(run_id))
        return list(iter_case_trials(outcomes, len(suite["criteria"]),
                                     int(suite.get("trials", 1))))


def write_html_report(
    run_ref: str,
    path: str | Path,
    config: str | Path = "oloproof.yaml",
    store: str | Path | None = None,
    *,
    compress: bool | None = None,
    baseline: str | None = None,
) -> Path:
    """Write the HTML report of a stored run to `path`; returns the path written.

    `compress` forces (True) or forbids (False) gzip-compressed case details; by default only
    large runs are compressed. `baseline` (a run reference) adds the comparison with that run
    (SPEC §17): the broken cases first, each opening both runs' case panels side by side; a
    reference naming the run itself means the newest run before it.
    """
    # Imported here: the report's modules are not needed by a run.
    from oloproof.report.html import render_page
    from oloproof.report.html_data import build_report_data
    from oloproof.report.output_files import check_output_path, write_output

    check_output_path(path)  # before the store is read: a FIFO or a missing folder is exit 2

    with _open_existing(config, store) as db:
        record = db.run_record(db.resolve_run(run_ref))
        document = _document_of(db, record)
        comparison = None
        if baseline is not None:
            baseline_id = db.resolve_baseline(baseline, record["run_id"], record["project"])
            comparison = _compare_stored(db, baseline_id, record["run_id"],
                                         document.confidence_level)
        data = build_report_data(db, record["run_id"], document, compress=compress,
                                 comparison=comparison)
    return write_output(path, render_page(data))


def write_ci_reports(
    target: RunResult | Comparison, *, junit: str | Path | None = None,
    markdown: str | Path | None = None, config: str | Path = "oloproof.yaml",
    store: str | Path | None = None,
) -> list[Path]:
    """Write a run's (or a comparison's) results where CI systems read them (SPEC §19): JUnit
    XML to `junit`, GitHub-flavoured Markdown to `markdown`. A run's cases are read from the
    store, like every report. Returns the paths written."""
    from oloproof.document import Comparison
    from oloproof.report.junit import case_records, comparison_junit, run_junit
    from oloproof.report.markdown import comparison_markdown, run_markdown
    from oloproof.report.output_files import check_output_path, write_output

    for path in (junit, markdown):  # both checked before either is written
        if path is not None:
            check_output_path(path)
    written = []
    if junit is not None:
        if isinstance(target, Comparison):
            xml = comparison_junit(target)
        else:
            with _open_existing(config, store) as db:
                records = case_records(db, target.run_id)
            block_on = target.policy.block_on if target.policy is not None else \
                Policy().block_on
            xml = run_junit(target.document, records, block_on)
        written.append(write_output(junit, xml))
    if markdown is not None:
        text = comparison_markdown(target) if isinstance(target, Comparison) else \
            run_markdown(target.document)
        written.append(write_output(markdown, text))
    return written


def redecide(
    ref: str = "latest", policy: str | Path | None = None, config: str | Path = "oloproof.yaml",
    store: str | Path | None = None, baseline: str | None = None,
) -> RunResult:
    """Decide a stored run again, under its own policy or another one; runs nothing.

    `baseline` (a run reference) is the run `non_inferiority` rules compare with, instead of
    the policy's `baseline:`; a reference that names the run itself (`latest` for `gate
    latest`) means the newest run before it (SPEC §17).
    """
    return _redecided(ref, policy, config, store, baseline)[0]


def _redecided(
    ref: str, policy: str | Path | None, config: str | Path, store: str | Path | None,
    baseline: str | None,
) -> tuple[RunResult, Analysis]:
    """`redecide`, with the analysis it decided from (the plan reads per-case values in it)."""
    from oloproof.document import CacheCounts, RunDocument

    with _open_existing(config, store) as db:
        record = db.run_record(db.resolve_run(ref))
        suite_info = record["suite"]
        if policy is None:
            chosen = stored_policy(record["policy"], record["run_id"],
                                   stored_metric_kinds(suite_info))
            if chosen.compares and baseline is None and chosen.baseline_reference is None:
                raise ConfigError("the run's own policy has a non_inferiority rule and no "
                                  "baseline; give --baseline REF")
        else:
            chosen, doc = load_policy(Path(policy))
            check_rule_metrics(chosen, doc, stored_metric_kinds(suite_info))
            check_baseline_given(chosen, doc, baseline)
        analysis = _reanalyse(db, record["run_id"], suite_info)
        old = RunDocument.model_validate(record["summary"]) if record["summary"] else None
        validity = list(old.transforms) if old is not None else []
        if validity and policy is not None:
            validity = [_validity_at(v, chosen.confidence_level) for v in validity]
        reference = baseline if baseline is not None else chosen.baseline_reference
        against = None
        if reference is not None:
            baseline_id = db.resolve_baseline(reference, record["run_id"], record["project"])
            _check_baseline(db, baseline_id, record["project"],
                            {case_id for case_id, *_ in db.iter_run_verdicts(record["run_id"])},
                            gating=chosen.compares)
            against = _compare_stored(db, baseline_id, record["run_id"],
                                      chosen.confidence_level).summary()
        document = _decide(
            db, record["run_id"], record["status"], suite_info, chosen, analysis, validity,
            old.cache if old is not None else CacheCounts(),
            list(old.errors) if old is not None else [], [], baseline=against,
        )
        return RunResult(document, [], chosen), analysis


def plan(
    ref: str = "latest", policy: str | Path | None = None, config: str | Path = "oloproof.yaml",
    store: str | Path | None = None, baseline: str | None = None,
) -> Plan:
    """What it would take to decide each undecided rule of a stored run (SPEC §18).

    The run is decided under its own policy (or `policy`) as `redecide` does; each rule that
    is INSUFFICIENT_EVIDENCE gets a projection — the smallest number of observed cases whose
    interval at the current rate would settle it, and a number of cases that would settle it
    with an 80% chance if the rate is what was measured (exact for 0/1 per-case values,
    simulated from the run's per-case values for fractions) — or the reason there is none. A
    projection, not a promise; nothing is run.
    """
    from oloproof.decisions.plan import plan_decisions
    from oloproof.document import RuleState
    result, analysis = _redecided(ref, policy, config, store, baseline)
    document = result.document
    chosen = result.policy if result.policy is not None else Policy()
    undecided = {d.metric for d in document.decisions
                 if d.state == RuleState.INSUFFICIENT_EVIDENCE}
    values = {}
    for metric in undecided:
        found = analysis.observed_values(metric)
        if found is not None:
            values[metric] = found.tolist()
    return plan_decisions(document.run_id, chosen, document.decisions, document.metrics,
                          values)


def stored_metric_kinds(suite_info: dict[str, Any]) -> dict[str, str]:
    """Each metric of a stored run's suite with its kind (see `project.metric_kinds`)."""
    trials = int(suite_info.get("trials", 1))
    kinds = {c: "rate" for c in suite_info["criteria"]}
    kinds.update({m["id"]: "rate" if int(m["k"]) == trials else "fraction"
                  for m in suite_info.get("trial_metrics", ())})
    kinds.update({m["id"]: "quantile" for m in suite_info["metrics"]})
    return kinds


def _validity_at(validity: TransformValidity, level: float) -> TransformValidity:
    """A stored transform's validity, its bound and verdict taken at another confidence level."""
    lower, checked = validity_bound(validity.kept, validity.pairs, validity.minimum_validity,
                                    level)
    return validity.model_copy(update={"lower": lower, "checked": checked})


def __getattr__(name: str) -> Any:
    """`compare` (comparing two stored runs) and the run document's models (`RunDocument`,
    `Comparison`, `Plan`) are imported on first use: they need not be loaded before a run's
    first case starts."""
    if name == "compare":
        from oloproof.comparison.stored import compare

        return compare
    if name in ("RunDocument", "Comparison", "Plan"):
        from oloproof import document

        return getattr(document, name)
    raise AttributeError(f"module 'oloproof.api' has no attribute {name!r}")


__all__ = [
    "Comparison", "ConfigError", "Plan", "RunDocument", "RunResult", "Tagged", "compare",
    "find_store", "load_case_trials", "load_run", "plan", "redecide", "run", "run_async", "tag",
    "write_ci_reports", "write_html_report",
]
