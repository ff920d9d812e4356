"""Running a suite: `run()` does everything `oloproof run` does and returns a RunResult;
`run_async()` is the same awaited on the caller's event loop; `rescore()` makes a run from a
stored run's executions, with the suite's current evaluators and judges, calling no system.

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
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oloproof.analysis.metrics import Analysis
from oloproof.api.deciding import (
    analysis_plan,
    check_baseline,
    compare_stored_runs,
    decide_run,
    simulator_any,
)
from oloproof.api.result import RunResult
from oloproof.errors import ConfigError, RunStopped, UsageError
from oloproof.execution.engine import RunEngine
from oloproof.execution.exits import exit_attempts
from oloproof.execution.intake import Progress
from oloproof.execution.stored_run import Refusal, StoredExecutions
from oloproof.execution.transports import open_transport
from oloproof.project import LoadedSuite, load_suite
from oloproof.project.describe import RESCORED, describe_suite
from oloproof.store.location import open_existing_store
from oloproof.store.reruns import WHOLE_SUITE
from oloproof.store.sql import store_error
from oloproof.store.store import Store
from oloproof.suite.config import ExecutionConfig
from oloproof.suite.policy_checks import check_baseline_given
from oloproof.suite.subset import Selection
from oloproof.suite.validity import transform_validity
from oloproof.suite.variants import VariantValue, combinations, find_variant, variant_text

if TYPE_CHECKING:
    from oloproof.execution.transports.processes import StartedProcess


def open_store(suite: LoadedSuite, store: str | Path | None = None) -> Store:
    """The store a run writes to: `store` if given, else the suite's
    (docs/configuration.md#oloproofyaml)."""
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


def _stored_executions(config: str | Path, store: str | Path | None, ref: str
                       ) -> StoredExecutions:
    """What a rescored run reads of the run `ref` names (docs/cli.md#oloproof-rescore)."""
    db = open_existing_store(config, store)
    try:
        return StoredExecutions.read(db, db.resolve_run(ref))
    finally:
        db.close()


def _rescored(suite: LoadedSuite, source: StoredExecutions, refused: list[Refusal]
              ) -> dict[str, Any]:
    """What a rescored run adds to its suite description once it has run: the cases it left
    out, each with why (first those of the dataset, in its order, then those the dataset no
    longer holds), and, when it holds fewer than the suite's cases, its subset."""
    from oloproof.document import NotRescored

    present = set(suite.dataset.ids)
    gone = [Refusal(case_id, "not_in_dataset") for case_id in source.source_ids
            if case_id not in present]
    listed = [*refused, *gone]
    taken = len(suite.dataset.run_ids) - len(refused)
    out: dict[str, Any] = {
        "not_rescored": [NotRescored(case=r.case, reason=r.reason, words=r.words()).to_json()
                         for r in listed]}
    if taken < len(suite.dataset.ids):
        chosen = source.subset or {}
        out["subset"] = {"cases": taken, "of": len(suite.dataset.ids),
                         "selection": dict(chosen.get("selection") or {})
                         | {"rescored_from": source.run_id},
                         # (a rescored subset is chosen as its run was)
                         "words": chosen.get("words") or f"rescore {source.run_id}"}
    return out


def _chosen_variant(suite: LoadedSuite, variant: str | None) -> dict[str, VariantValue]:
    """The combination of `system.variants` a run is of (docs/board.md): the one `variant`
    names; none for a suite without variants. Running every combination in one run is not
    built yet, so a suite with variants runs one at a time and fails closed without one."""
    matrix = suite.config.system.variants
    if variant is None:
        if matrix:
            raise ConfigError(
                "system.variants: running every combination in one run is not built yet; "
                f"run one with --variant {variant_text(combinations(matrix)[0])}",
                file=suite.path, line=suite.doc.line_of(("system", "variants")))
        return {}
    try:
        return find_variant(variant, matrix)
    except ValueError as exc:
        raise UsageError(f"--variant {variant}: {exc}") from None


class RunJob:
    """One run between registering it in the store and its result (shared by `run`,
    `run_async`, `rescore` and `import`)."""

    def __init__(
        self, config: str | Path, policy: str | Path | None, *, no_cache: bool,
        concurrency: int | None, on_progress: Callable[[Progress], None] | None,
        on_start: Callable[[LoadedSuite, str], None] | None, store: str | Path | None,
        trials: int | None = None, workers: int | None = None, executor: str | None = None,
        baseline: str | None = None, selection: Selection | None = None,
        rescore: str | None = None, variant: str | None = None,
    ) -> None:
        # A rescored run (`rescore`: a run reference) takes its executions from that run: its
        # cases, at its trials, on one local worker that the engine never calls.
        self.source: StoredExecutions | None = None
        if rescore is not None:
            self.source = _stored_executions(config, store, rescore)
            trials, workers, executor = self.source.trials, 1, "local"
            selection = Selection(tuple(self.source.source_ids), missing_ok=True,
                                  named_as=f"the cases of run {self.source.run_id}")
        # Worker processes start as soon as the suite file asks for them, and import the engine
        # while the rest of the suite loads here (docs/scaling.md#a-cpu-bound-suite); the run
        # stops them if it goes no further.
        self.started: list[StartedProcess] = []
        try:
            self.suite = load_suite(Path(config), Path(policy) if policy is not None else None,
                                    trials=trials, workers=workers, executor=executor,
                                    selection=selection, on_execution=self._start_processes)
            check_baseline_given(self.suite.policy, self.suite.policy_doc, baseline)
            # The combination of system.variants this run is of (docs/board.md), before the
            # store
            self.variant = _chosen_variant(self.suite, variant)
            self.db = open_store(self.suite, store)
        except BaseException:
            self.discard_processes()
            raise
        # The baseline is resolved before the run is registered, as `oloproof run` means it:
        # the run being made is `latest` (docs/compare.md#which-run-is-the-baseline). A bad baseline
        # stops here, before any call.
        reference = baseline if baseline is not None else self.suite.policy.baseline_reference
        self.reference = reference
        self.baseline: str | None = None
        if reference is not None:
            try:
                project = self.suite.config.project
                self.baseline = check_baseline(
                    self.db, self.db.resolve_baseline(reference, None, project), project,
                    set(self.suite.dataset.run_ids), gating=self.suite.policy.compares,
                    suite=describe_suite(self.suite), policy=self.suite.policy)
            except BaseException:
                self.db.close()
                self.discard_processes()
                raise
        self.run_id = new_run_id()
        # The run's kind in the runs registry, when it is not what its suite says (an import:
        # never counted among its version's runs, docs/limits.md#re-runs-and-re-drawn-samples)
        self.kind: str | None = None
        # The harness an imported run was recorded by (`Inspect`, `Harbor`): the document's
        # `imported_from`, so that reports say its errors happened there.
        self.imported_from: str | None = None
        # With trials, progress counts executions: every case, each trial.
        self.progress = Progress(total=self.suite.execution_count, on_change=on_progress)
        self.no_cache = no_cache
        self.concurrency = concurrency
        self.on_start = on_start

    def _start_processes(self, execution: ExecutionConfig) -> None:
        """Start the worker processes of `executor: processes` while the suite loads: one per
        core at most, as the dataset may yet say there are fewer units to run than workers
        asked for (the others start once it has: `ProcessWorkers.start`)."""
        if execution.executor == "processes":
            from oloproof.execution.transports.processes import spawn_workers

            self.started = spawn_workers(min(execution.workers, os.cpu_count() or 1))

    def discard_processes(self) -> None:
        """Stop the worker processes started for a run that will not take them on."""
        if self.started:
            from oloproof.execution.transports.processes import discard_all

            started, self.started = self.started, []
            discard_all(started)

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
        started, self.started = self.started, []
        try:
            suite_info = describe_suite(suite)
        except BaseException:
            self.started = started
            self.discard_processes()
            raise
        if self.variant:  # (docs/board.md: the run document and its reports name it)
            suite_info["variant"] = variant_text(self.variant)
        if self.source is not None:
            suite_info.pop("subset", None)  # (said once the run knows what it took)
            suite_info.update(kind=RESCORED, rescored_from=self.source.run_id)
        if self.imported_from is not None:
            suite_info["imported_from"] = self.imported_from
        # The policy is stored with its baseline resolved to a run id, so `gate` re-decides
        # this run against the same baseline whatever runs come after it.
        policy = suite.policy if self.baseline is None else \
            suite.policy.model_copy(update={"baseline": self.baseline})
        # The workers start (and load the system) before the run is registered: a worker that
        # cannot start is a configuration error, with nothing run and nothing stored.
        transport = await open_transport(suite, self.concurrency, db.lookup_judge_verdicts,
                                         started)
        try:
            db.begin_run(run_id, suite.config.project, suite.config.system.name,
                         suite.config.system.version, suite_info,
                         policy.model_dump(mode="json"), no_cache=self.no_cache,
                         kind=self.kind or str(suite_info.get("kind") or WHOLE_SUITE),
                         variant=variant_text(self.variant) or None)
        except BaseException:
            await transport.close()
            raise
        try:
            if self.on_start is not None:
                self.on_start(suite, run_id)
            engine = RunEngine(suite, db, run_id, no_cache=self.no_cache,
                               concurrency=self.concurrency, progress=self.progress,
                               transport=transport, executions_from=self.source,
                               variant=tuple(self.variant.items()))
            analysis = Analysis(analysis_plan(suite_info))
            guarded_before = len(exit_attempts())  # (only the command line guards os._exit)
            loop = asyncio.get_running_loop()
            importing = loop.call_soon(loop.call_soon, _import_beside_the_run)
            try:
                await engine.run(analysis)
            finally:
                importing.cancel()  # (a run that never waited has nothing beside it)
            from oloproof.document import (
                BaselineSummary,
                CacheCounts,
                CaseError,
                Execution,
                RunStatus,
                TransformValidity,
            )

            if self.source is not None:
                suite_info.update(_rescored(suite, self.source, engine.refused))

            execution = Execution(executor=suite.execution.executor,
                                  workers=suite.execution.workers, retried=engine.retried,
                                  nodes=engine.nodes)
            validity = transform_validity(suite.transforms, engine.pairs, suite.project_dir,
                                          suite.policy.confidence_level)
            against = None
            if self.baseline is not None and not analysis.cases:
                # (a rescored run that could take no case: nothing to pair, no pair decides)
                against = BaselineSummary(baseline=self.baseline)
            elif self.baseline is not None:
                db.stop_writer()  # the run's cases must be committed to be paired
                against = compare_stored_runs(db, self.baseline, run_id,
                                          suite.policy.confidence_level,
                                          candidate_complete=True,
                                          reference=self.reference,
                                          any_simulator=simulator_any(suite.policy)).summary()
            # A run every execution of which errored measured nothing: it is `failed`, exit 5
            # (never "more cases needed"; docs/failures.md#a-run-that-never-ran). So is one
            # whose system called os._exit, which would have ended it
            # (docs/failures.md#a-system-that-ends-the-process), and a rescored run that could
            # take no case from its stored run.
            ended = exit_attempts()[guarded_before:]
            status = RunStatus.FAILED if ended or analysis.execution_counts().nothing_measured \
                or (self.source is not None and not analysis.cases) else RunStatus.COMPLETE
            if status == RunStatus.COMPLETE:  # counted among the runs of its suite and version
                db.flush(wait=True)  # (the digest is of its cases as stored)
                db.set_suite_digest(run_id, suite_info["evaluator_keys"])
            cache = CacheCounts.model_validate(engine.cache.to_json())
            rerun = db.rerun_errored(run_id) if not self.no_cache else None
            if rerun is not None:  # (what errored before is never cached: it ran again)
                cache.rerun_from, cache.rerun = rerun
            document = decide_run(db, run_id, status, suite_info, suite.policy,
                               analysis,
                               [TransformValidity.model_validate(v) for v in validity],
                               cache,
                               [CaseError.model_validate(e) for e in engine.errors],
                               suite.warnings, execution, against, ended)
            db.finish_run(run_id, str(status), analysis.cases, document.to_json(),
                          suite=suite_info if self.source is not None else None)
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
    cases: Sequence[str] | None = None,
    pattern: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int | str | None = None,
    variant: str | None = None,
) -> RunResult:
    """Run a suite: load, execute, judge, analyse, decide, store. Returns the run's result.

    `trials` runs every case that many times (docs/reliability.md), instead of the suite's
    `trials:`; `workers` and `executor` (`local`, `processes` or `ray`) replace `execution.workers`
    and `execution.executor` (docs/scaling.md).
    `baseline` (a run reference) is the run `non_inferiority` rules compare with, instead of
    the policy's `baseline:` (docs/compare.md#which-run-is-the-baseline); the run being made counts
    as `latest`, so `latest~1` — or `latest`, which cannot name the run itself — is the newest run
    before it.

    `cases` (ids), `pattern` (a part of a case id or of a metadata value), `limit` (the first N)
    and `sample` (N drawn, fixed by `seed`) run part of the suite
    (docs/cli.md#running-part-of-the-suite): the run is stored as a subset, is never taken as a
    baseline unless named, and its gate never exits 0.

    `variant` (`k=v,…`, e.g. `model=large,prompt=v2`) runs that combination of the suite's
    `system.variants` (docs/board.md): the system reads it as `current_case().variant`, its
    executions are keyed apart, and the run is stored with it. A suite with variants needs one.

    `store` moves the store for this run (default: $OLOPROOF_STORE, else `store:` in the suite,
    else `.oloproof/store.sqlite` beside it). An unexpected error marks the run `failed` and is
    raised as it is. Inside a running event loop, use `run_async` instead (`run` refuses
    before it loads or stores anything). The interpreter is left as it was found: no garbage
    collector, thread switch interval or signal handler is changed.

    Raises:
        ConfigError: the configuration is wrong; before any system call.
        UsageError: inside a running event loop; a baseline that does not exist, is of
            another project or shares no case id with the suite; or a subset that names a
            case the dataset lacks or keeps no case; before any system call.
        StoreError: the store cannot be opened or written.
        RunStopped: interrupted (Ctrl-C); what finished is stored and reused by the next run.
    """
    _refuse_running_loop("run")
    job = RunJob(config, policy, no_cache=no_cache, concurrency=concurrency,
               on_progress=on_progress, on_start=on_start, store=store, trials=trials,
               workers=workers, executor=executor, baseline=baseline,
               selection=Selection.of(cases, pattern, limit, sample, seed), variant=variant)
    return _run_to_the_end(job)


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
    cases: Sequence[str] | None = None,
    pattern: str | None = None,
    limit: int | None = None,
    sample: int | None = None,
    seed: int | str | None = None,
    variant: str | None = None,
) -> RunResult:
    """`run`, awaited on the caller's event loop (a notebook, an async test or server).

    Async systems run on that loop, sync systems in threads of their own. Cancelling the
    awaiting task stops the run: it is marked `stopped`, what finished is stored, and the
    cancellation goes on. Loading the suite and opening the store happen before the first
    await, as in `run`.

    Raises:
        ConfigError: the configuration is wrong; before any system call.
        UsageError: a baseline that does not exist, is of another project or shares no case
            id with the suite; or a subset that names a case the dataset lacks or keeps no
            case; before any system call.
        StoreError: the store cannot be opened or written.
        RunStopped: interrupted (Ctrl-C); what finished is stored.
    """
    job = RunJob(config, policy, no_cache=no_cache, concurrency=concurrency,
               on_progress=on_progress, on_start=on_start, store=store, trials=trials,
               workers=workers, executor=executor, baseline=baseline,
               selection=Selection.of(cases, pattern, limit, sample, seed), variant=variant)
    try:
        return await job.execute()
    except KeyboardInterrupt:
        raise job.stopped() from None
    finally:
        job.db.close()


def rescore(
    run: str = "latest",
    config: str | Path = "oloproof.yaml",
    policy: str | Path | None = None,
    *,
    concurrency: int | None = None,
    on_progress: Callable[[Progress], None] | None = None,
    store: str | Path | None = None,
    baseline: str | None = None,
) -> RunResult:
    """A new run from a stored run's executions, scored by the suite's current evaluators and
    judges, calling no system (docs/cli.md#oloproof-rescore).

    `run` (a run reference, default `latest`) is the run whose stored outputs, trajectories,
    states and fault replays are scored again, at its trials; a judge is asked only for a
    verdict its cache does not hold under its key. A case that run cannot give as it is now —
    its system (name, version, how its trajectory is obtained) or the case itself changed since,
    it errored there, or the dataset no longer holds it — is left out and listed in the new
    run's `not_rescored`; a run that holds fewer than the suite's cases is a subset (its gate
    never exits 0). The new run records `rescored_from`; it is not counted among its version's
    runs and is never taken as a baseline unless named. `policy`, `baseline` and `store` are
    `run`'s.

    Raises:
        ConfigError: the configuration is wrong; before anything is scored.
        StoreError: no store, or no run stored yet.
        UsageError: inside a running event loop; `run` names no stored run; none of its cases
            is in the dataset; or a baseline as `run` refuses it.
        RunStopped: interrupted (Ctrl-C); what finished is stored.
    """
    _refuse_running_loop("rescore")
    job = RunJob(config, policy, no_cache=False, concurrency=concurrency,
               on_progress=on_progress, on_start=None, store=store, baseline=baseline,
               rescore=run)
    return _run_to_the_end(job)


def _run_to_the_end(job: RunJob) -> RunResult:
    """`job` run on an event loop of its own; Ctrl-C ends it as `RunStopped`."""
    try:
        return asyncio.run(job.execute())
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise job.stopped() from None
    finally:
        job.db.close()
