"""A run job: a suite loaded once, with one store and one set of workers (one
`open_transport`) shared by its runs — one run, or one per combination of `system.variants` in
the file's order (docs/board.md#running-every-variant) —, each registered, run, decided and
stored before the next. `run`, `run_async` and `rescore` (api/running.py) and `oloproof
import` (api/imports.py) each make one; a rescored job takes its executions from a stored run
(docs/architecture.md#a-run-from-a-stored-runs-executions). Also the run id and the store a
run writes to.

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
from oloproof.errors import RunStopped, UsageError
from oloproof.execution.engine import RunEngine
from oloproof.execution.exits import exit_attempts
from oloproof.execution.intake import Progress
from oloproof.execution.stored_run import Refusal, StoredExecutions
from oloproof.execution.transports import Transport, open_transport
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
    from oloproof.execution.process_start import StartedProcess


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


def _chosen_variants(suite: LoadedSuite, variant: str | None) -> list[dict[str, VariantValue]]:
    """The combinations of `system.variants` a run of the suite makes a run each of
    (docs/board.md#running-every-variant): the one `variant` names, or every combination in
    the file's order; `[{}]`, one run of no variant, for a suite without variants."""
    matrix = suite.config.system.variants
    if variant is None:
        return combinations(matrix) if matrix else [{}]
    try:
        return [find_variant(variant, matrix)]
    except ValueError as exc:
        raise UsageError(f"--variant {variant}: {exc}") from None


class RunJob:
    """A suite loaded once and its runs, each between registering it in the store and its
    result: one run, or one per combination of `system.variants`, all on one store and one
    set of workers (shared by `run`, `run_async`, `rescore` and `import`)."""

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
            # The combinations of system.variants to run, a run each (docs/board.md), before
            # the store: a rescored run is of its stored run's variant.
            if self.source is not None:
                self.variants = [self._source_variant(self.source)]
            else:
                self.variants = _chosen_variants(self.suite, variant)
            self.variant = self.variants[0]
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
        self.on_progress = on_progress
        self.progress = Progress(total=self.suite.execution_count, on_change=on_progress)
        self.no_cache = no_cache
        self.concurrency = concurrency
        self.on_start = on_start
        # The runs made so far, when there are several (each stored whatever comes after it).
        self.done: list[RunResult] = []
        self._next_unit = 0  # (unit numbers go on from run to run over one transport)

    def _source_variant(self, source: StoredExecutions) -> dict[str, VariantValue]:
        """The combination a rescored run is of: its stored run's (docs/board.md), which the
        suite's `system.variants` must still list; none if the stored run had none."""
        if source.variant is None:
            return {}
        try:
            return find_variant(source.variant, self.suite.config.system.variants)
        except ValueError as exc:
            raise UsageError(f"run {source.run_id} is of the variant {source.variant}, which "
                             f"the suite no longer runs: {exc}") from None

    def _start_processes(self, execution: ExecutionConfig) -> None:
        """Start the worker processes of `executor: processes` while the suite loads (or take
        on those `oloproof run` started before it imported the engine): one per core at most,
        as the dataset may yet say there are fewer units to run than workers asked for (the
        others start once it has: `ProcessWorkers.start`)."""
        if execution.executor == "processes":
            from oloproof.execution.process_start import take_started

            self.started = take_started(min(execution.workers, os.cpu_count() or 1))

    def discard_processes(self) -> None:
        """Stop the worker processes started for a run that will not take them on."""
        if self.started:
            from oloproof.execution.process_start import discard_all

            started, self.started = self.started, []
            discard_all(started)

    def stopped(self) -> RunStopped:
        done = "cases" if self.suite.trials == 1 else "case trials"
        before = f"; {self._made_before().removeprefix('oloproof: ')}" if self.done else ""
        return RunStopped(
            f"run {self.run_id} stopped after {self.progress.done} of {self.progress.total} "
            f"{done}; what finished is stored and the next `oloproof run` reuses it{before}"
        )

    async def execute(self) -> RunResult:
        """Register, run, decide and store the one run (of the one variant, if any). On
        Ctrl-C or cancellation the run is marked `stopped` and the interruption goes on; on an
        unexpected error it is marked `failed` (what finished is stored) and the error goes
        on, with a note naming the run.
        """
        assert len(self.variants) == 1
        return (await self.execute_each())[0]

    async def execute_each(self) -> list[RunResult]:
        """Every combination's run in turn, in the file's order
        (docs/board.md#running-every-variant), over one set of workers started once: each
        registered, run, decided and stored before the next begins, so a run that fails or
        is stopped loses none of those before it (the error goes on with a note naming them);
        the runs after it are not made."""
        # The workers start (and load the system) before any run is registered: a worker
        # that cannot start is a configuration error, with nothing run and nothing stored.
        # Worker processes started while the suite loaded are taken on here.
        started, self.started = self.started, []
        transport = await open_transport(self.suite, self.concurrency,
                                         self.db.lookup_judge_verdicts, started)
        try:
            for at, variant in enumerate(self.variants):
                if at:
                    self.run_id = new_run_id()
                    self.progress = Progress(total=self.suite.execution_count,
                                             on_change=self.on_progress)
                if len(self.variants) > 1:
                    self.progress.run = f"{variant_text(variant)}, {at + 1} of " \
                        f"{len(self.variants)}"
                self.variant = variant
                try:
                    self.done.append(await self._execute_on(transport))
                except BaseException as exc:
                    if self.done:
                        exc.add_note(self._made_before())
                    raise
        finally:
            await transport.close()
        return self.done

    def _made_before(self) -> str:
        """The runs of other variants made before the one that failed or stopped, in words."""
        return ("oloproof: the runs made before it are stored: " + "; ".join(
            f"{r.run_id} ({variant_text(v)}, {r.status})"
            for r, v in zip(self.done, self.variants, strict=False)))

    async def _execute_on(self, transport: Transport) -> RunResult:
        """One run (of `self.variant`) on workers already started."""
        suite, db, run_id = self.suite, self.db, self.run_id
        suite_info = describe_suite(suite)
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
        db.begin_run(run_id, suite.config.project, suite.config.system.name,
                     suite.config.system.version, suite_info,
                     policy.model_dump(mode="json"), no_cache=self.no_cache,
                     kind=self.kind or str(suite_info.get("kind") or WHOLE_SUITE),
                     variant=variant_text(self.variant) or None)
        try:
            if self.on_start is not None:
                self.on_start(suite, run_id)
            engine = RunEngine(suite, db, run_id, no_cache=self.no_cache,
                               concurrency=self.concurrency, progress=self.progress,
                               transport=transport, executions_from=self.source,
                               variant=tuple(self.variant.items()),
                               first_unit=self._next_unit)
            analysis = Analysis(analysis_plan(suite_info))
            guarded_before = len(exit_attempts())  # (only the command line guards os._exit)
            loop = asyncio.get_running_loop()
            importing = loop.call_soon(loop.call_soon, _import_beside_the_run)
            try:
                await engine.run(analysis)
            finally:
                importing.cancel()  # (a run that never waited has nothing beside it)
                self._next_unit = engine.next_unit
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
