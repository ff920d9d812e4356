"""Running a suite: `run()` does everything `oloproof run` does and returns a RunResult;
`run_async()` is the same awaited on the caller's event loop; `rescore()` makes a run from a
stored run's executions, with the suite's current evaluators and judges, calling no system.

Each makes a `RunJob` (api/run_job.py: the suite loaded, the store opened, the baseline
checked, before any call) and sees its runs to the end on an event loop — its own, or, for
`run_async`, the caller's — turning an interruption into `RunStopped`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path

from oloproof.api.result import RunResult, VariantRuns
from oloproof.api.run_job import RunJob
from oloproof.errors import UsageError
from oloproof.execution.intake import Progress
from oloproof.project import LoadedSuite
from oloproof.suite.subset import Selection


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
) -> RunResult | VariantRuns:
    """Run a suite: load, execute, judge, analyse, decide, store. Returns the run's result;
    for a suite with `system.variants` and no `variant`, a `VariantRuns` of every
    combination's run.

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

    A suite with `system.variants` runs every combination, each its own run, stored with its
    variant, one after another in the file's order, over one load of the suite and one start
    of its workers (docs/board.md#running-every-variant); the result is a `VariantRuns` (a
    sequence of each run's `RunResult`; `exit_code`, the worst of their gates'). `variant`
    (`k=v,…`, e.g. `model=large,prompt=v2`) runs that combination alone, and returns its
    `RunResult`. The system reads its combination as `current_case().variant`, and its
    executions are keyed apart. A run that fails or is stopped keeps the runs before it
    stored; the error names them.

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
    return _run_to_the_end(job, every=variant is None)


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
) -> RunResult | VariantRuns:
    """`run`, awaited on the caller's event loop (a notebook, an async test or server); the
    same result (a `VariantRuns` for a suite with `system.variants` and no `variant`).

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
        return _result_of(job, await job.execute_each(), every=variant is None)
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
    result = _run_to_the_end(job)
    assert isinstance(result, RunResult)
    return result


def _result_of(job: RunJob, results: list[RunResult], every: bool
               ) -> RunResult | VariantRuns:
    """The one run's result, or, for every combination of a suite's variants, all of them."""
    if every and job.suite.config.system.variants:
        return VariantRuns(results)
    return results[0]


def _run_to_the_end(job: RunJob, every: bool = False) -> RunResult | VariantRuns:
    """`job`'s runs on an event loop of their own; Ctrl-C ends them as `RunStopped`."""
    try:
        return _result_of(job, asyncio.run(job.execute_each()), every)
    except (KeyboardInterrupt, asyncio.CancelledError):
        raise job.stopped() from None
    finally:
        job.db.close()
