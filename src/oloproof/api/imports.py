"""`oloproof import`: another harness's run stored as a run of the project
(docs/imports.md#how-an-import-is-stored).

A reader (`oloproof.harnesses`) gives the run's trials; they are written, case by case, as a
suite in a temporary folder whose system plays each trial back (`harnesses.played:play`) and
whose evaluators read each imported score (`imported_score`). The engine then runs that suite
into the project's store like any run — cached, tallied, decided — so `gate`, `compare`,
`report`, `view` and `inspect` read it as they read any run. The run's id comes from the
digest of what was imported: importing the same log twice stores it once. Everything is read
before anything is stored, so a log that cannot be read leaves the store untouched.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import re
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from oloproof.api.result import RunResult
from oloproof.api.run_job import RunJob
from oloproof.errors import StoreError, TraceError, UsageError
from oloproof.harnesses.played import Recordings, playing
from oloproof.harnesses.records import ImportedTrial, ImportSummary
from oloproof.store.location import find_store
from oloproof.store.reruns import IMPORTED
from oloproof.suite.config import MAX_TRIALS, load_suite_file

SUITE, POLICY, CASES, RECORDINGS = ("oloproof.yaml", "release.yaml", "cases.jsonl",
                                    "recordings.jsonl")
_CRITERION = re.compile(r"[^A-Za-z0-9_.-]+")
#: The harnesses an import reads, as a run's `imported_from` names them.
INSPECT, HARBOR = "Inspect", "Harbor"
#: The default project of a store of imported runs (a folder without oloproof.yaml).
IMPORTED_PROJECT = "imported"
#: The page cache of each of an import's store connections, in KiB (the store's default is
#: 64 MiB a connection): a connection's cache grows with the pages it touches, so at 64 MiB
#: an import's memory grew with the log — 35 MiB of pages on the two connections when 10,000
#: samples × 3 epochs were decided, 27 more than at 2,500 (docs/imports.md#how-an-import-is-stored).
IMPORT_PAGE_CACHE_KIB = 8192


@dataclass
class ImportedRun:
    """One imported run: its id, what it was read from, and its result.

    Attributes:
        run_id: the stored run (from the digest of the source: the same log, the same id).
        source: the log or job folder.
        system_name, system_version: the system it is stored under.
        already: the run was stored by an earlier import; nothing was stored now.
        result: the run's document and policy (for `already`, the stored run's).
        summary: what the reader met (trials by status, errors by kind, skipped scores).
        warnings: what the reader said (a reducer other than the mean, several agents).
        pass_at, harness: the pass mark the scores were judged at; who recorded the run.
        interrupted: earlier imports of the same source that were interrupted (stopped, or
            their process gone): kept as they are, each a run of its own.
        values: per criterion whose scores include a partial credit (a value strictly
            between 0 and 1), its mean value: the mean over cases of each case's mean over
            its scored trials — Inspect's own accuracy where every epoch ran
            (docs/imports.md#partial-credit). Empty for `already`.
    """

    run_id: str
    source: Path
    system_name: str
    system_version: str
    already: bool
    result: RunResult
    summary: ImportSummary = field(default_factory=ImportSummary)
    warnings: list[str] = field(default_factory=list)
    values: dict[str, MeanValue] = field(default_factory=dict)
    pass_at: float = 1.0
    harness: str = INSPECT
    interrupted: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MeanValue:
    """One criterion's mean value over an imported run's cases (partial credits as values).

    Attributes:
        mean: the mean over cases of each case's mean value over its scored trials.
        cases: the cases with at least one scored trial of a value.
        partial: the trials whose value is strictly between 0 and 1.
    """

    mean: float
    cases: int
    partial: int


@dataclass
class _Source:
    """One run to import: where from, under which system, its trials when iterated."""

    path: Path
    digest: str
    system_name: str
    system_version: str
    trials: Callable[[], Iterable[ImportedTrial]]
    summary: ImportSummary
    warnings: list[str]
    grouped: bool  # the trials come case by case (an Inspect `.eval` log)
    harness: str  # who recorded the run: `Inspect`, `Harbor`
    pass_at: float = 1.0


def import_inspect(paths: Iterable[str | Path], *, pass_at: float = 1.0,
                   policy: str | Path | None = None, config: str | Path = "oloproof.yaml",
                   store: str | Path | None = None) -> list[ImportedRun]:
    """Store each Inspect log (`.eval` or `.json`) as a run (docs/imports.md#inspect-ai),
    each score passed at `pass_at` or more (docs/imports.md#partial-credit).

    Raises:
        TraceError: a log cannot be read (naming it and what is wrong); the logs before it are
            stored, it and the logs after it are not.
        ConfigError, StoreError: the policy or the store cannot be used.
    """
    from oloproof.harnesses.inspect_logs import read_inspect_log

    runs: list[ImportedRun] = []
    for path in paths:
        log = read_inspect_log(path, pass_at=pass_at)
        # (the default pass mark keeps the digest of a plain import)
        kind = "inspect" if pass_at == 1.0 else f"inspect pass_at={pass_at!r}"
        source = _Source(log.path, _file_digest(log.path, kind), log.system_name,
                         log.system_version, log.trials, log.summary, log.warnings,
                         grouped=log.path.suffix == ".eval", harness=INSPECT,
                         pass_at=pass_at)
        runs.append(_import(source, policy, config, store))
    return runs


def import_harbor(job_dir: str | Path, *, pass_at: float = 1.0,
                  policy: str | Path | None = None, config: str | Path = "oloproof.yaml",
                  store: str | Path | None = None) -> list[ImportedRun]:
    """Store a Harbor job as a run, one per agent and model it ran
    (docs/imports.md#harbor).

    Raises:
        TraceError: the job folder, a trial's result or trajectory cannot be read.
        ConfigError, StoreError: the policy or the store cannot be used.
    """
    from oloproof.harnesses.harbor import read_harbor_job

    job = read_harbor_job(job_dir, pass_at=pass_at)
    hasher = hashlib.sha256(f"harbor pass_at={pass_at!r}\n".encode())
    for folder, _ in job.results:
        for name in ("result.json", "agent/trajectory.json"):
            if (folder / name).is_file():
                hasher.update(f"{folder.name}/{name}\n".encode())
                hasher.update(hashlib.sha256((folder / name).read_bytes()).digest())
    job_digest = hasher.hexdigest()
    runs = []
    for system in sorted(job.systems):
        digest = hashlib.sha256(f"{job_digest} {system}".encode()).hexdigest()
        version = next(r.agent_info.version for _, r in job.results if r.system() == system)
        source = _Source(job.path, digest, system, version,
                         functools.partial(job.trials, system), job.summary,
                         job.warnings, grouped=False, harness=HARBOR, pass_at=pass_at)
        runs.append(_import(source, policy, config, store))
    return runs


def _file_digest(path: Path, kind: str) -> str:
    hasher = hashlib.sha256(f"{kind}\n".encode())
    with path.open("rb") as handle:
        while chunk := handle.read(1 << 20):
            hasher.update(chunk)
    return hasher.hexdigest()


def imported_run_id(digest: str, attempt: int = 1) -> str:
    """The id of the run imported from a source of this digest (`run_` and 26 hex digits);
    `attempt` above 1: the import made after `attempt - 1` interrupted ones."""
    if attempt > 1:
        digest = hashlib.sha256(f"{digest} attempt {attempt}".encode()).hexdigest()
    return "run_" + digest[:26].upper()


#: The most imports of one source an interrupted import is followed by.
MAX_ATTEMPTS = 100


def _import(source: _Source, policy: str | Path | None, config: str | Path,
            store: str | Path | None) -> ImportedRun:
    store_path = find_store(config, store)
    run_id, stored, interrupted = _earlier_imports(store_path, source.digest)
    if stored:
        from oloproof.api.stored import load_run, redecide

        result = (redecide(run_id, policy, config=config, store=store_path)
                  if policy is not None else load_run(run_id, config, store_path))
        return ImportedRun(run_id, source.path, source.system_name, source.system_version,
                           already=True, result=result, warnings=list(source.warnings),
                           pass_at=source.pass_at, harness=source.harness,
                           interrupted=interrupted)
    project = _project(config)
    with tempfile.TemporaryDirectory(prefix="oloproof-import-") as folder:
        suite = Path(folder)
        recordings = Recordings(suite / RECORDINGS)
        with playing(recordings):
            trials, criteria, values = _write_cases(source, suite / CASES, recordings)
            _write_suite(suite, project, source, trials, criteria)
            # No execution is taken from the cache: another run's trials of the same input
            # are not this run's.
            job = RunJob(suite / SUITE, policy if policy is not None else suite / POLICY,
                       no_cache=True, concurrency=None, on_progress=None, on_start=None,
                       store=store_path)
            job.db.bound_page_cache(IMPORT_PAGE_CACHE_KIB)
            job.run_id = run_id
            job.kind = IMPORTED  # (a record of another harness: not one of its version's runs)
            job.imported_from = source.harness
            try:
                result = asyncio.run(job.execute())
            except KeyboardInterrupt:
                raise job.stopped() from None
            finally:
                job.db.close()
    return ImportedRun(run_id, source.path, source.system_name, source.system_version,
                       already=False, result=result, summary=source.summary,
                       warnings=list(source.warnings), values=values,
                       pass_at=source.pass_at, harness=source.harness,
                       interrupted=interrupted)


def _earlier_imports(store_path: Path, digest: str) -> tuple[str, bool, list[str]]:
    """The id this import of a source of `digest` stores under; whether a finished run of
    it is stored there already (else: store it now); and the earlier imports of it that
    were interrupted (stopped, or their process gone), which stay as they are.

    Raises:
        UsageError: an import of the same source is running now.
    """
    interrupted: list[str] = []
    if not store_path.is_file():
        return imported_run_id(digest), False, interrupted
    from oloproof.store.store import Store

    with Store(store_path, read_only=True) as db:
        for attempt in range(1, MAX_ATTEMPTS + 1):
            run_id = imported_run_id(digest, attempt)
            try:
                record = db.run_record(run_id)
            except StoreError:
                return run_id, False, interrupted
            status = str(record["status"])
            if status == "running":
                raise UsageError(f"run {run_id}, an import of this source, is running now "
                                 f"(process {record['pid']} on {record['host']}): wait for "
                                 "it, or stop it and import again")
            if status in ("complete", "failed") and record["summary"] is not None:
                return run_id, True, interrupted
            interrupted.append(run_id)  # stopped, incomplete, or failed before it finished
    raise UsageError(f"{MAX_ATTEMPTS} imports of this source were interrupted (the last: "
                     f"{interrupted[-1]}): import it into another store (--store)")


def _project(config: str | Path) -> str:
    """The project of the folder the import stores into: its oloproof.yaml's, else
    `imported`."""
    path = Path(config)
    if path.is_file():
        suite_file, _ = load_suite_file(path.resolve())
        return suite_file.project
    return IMPORTED_PROJECT


def _write_cases(source: _Source, path: Path, recordings: Recordings
                 ) -> tuple[int, dict[str, str], dict[str, MeanValue]]:
    """Write one case per imported case, and its trials to `recordings`; return the most
    trials a case has, the criteria met (criterion → the imported score's name) and the
    mean value of each imported score that holds a partial credit."""
    criteria: dict[str, str] = {}
    means = _Means()
    most = 0
    with path.open("w", encoding="utf-8") as out:
        for case_id, trials in _cases(source):
            for trial in trials:
                for score in trial.scores:
                    if score.criterion not in criteria.values():
                        criteria[_criterion_name(score.criterion, criteria)] = score.criterion
            means.add(trials)
            most = max(most, max(t.trial for t in trials))
            first = min(trials, key=lambda t: t.trial)
            for trial in trials:
                recordings.add(trial)
            line = {"id": case_id, "input": {"input": first.input}}
            out.write(json.dumps(line, ensure_ascii=False, allow_nan=False) + "\n")
    if most == 0:
        raise TraceError("the run holds no trial to import", file=source.path)
    if most > MAX_TRIALS:
        raise TraceError(f"a case has {most} trials; a run holds at most {MAX_TRIALS}",
                         file=source.path)
    return most, criteria, means.partial_credits()


class _Means:
    """Per imported score, the sum over cases of each case's mean value over its scored
    trials, and how many cases and partial credits (values strictly between 0 and 1)."""

    def __init__(self) -> None:
        self.sums: dict[str, list[float]] = {}  # score → [sum of case means, cases, partial]

    def add(self, trials: list[ImportedTrial]) -> None:
        case: dict[str, list[float]] = {}
        for trial in trials:
            if trial.status != "scored":
                continue
            for score in trial.scores:
                if score.value is not None:
                    case.setdefault(score.criterion, []).append(score.value)
        for name, values in case.items():
            total = self.sums.setdefault(name, [0.0, 0, 0])
            total[0] += sum(values) / len(values)
            total[1] += 1
            total[2] += sum(1 for v in values if 0 < v < 1)

    def partial_credits(self) -> dict[str, MeanValue]:
        return {name: MeanValue(total / cases, int(cases), int(partial))
                for name, (total, cases, partial) in sorted(self.sums.items()) if partial}


def _cases(source: _Source) -> Iterator[tuple[str, list[ImportedTrial]]]:
    """The trials case by case: as they come when the reader gives them so (memory holds
    one case), else gathered."""
    if source.grouped:
        current: list[ImportedTrial] = []
        done: set[str] = set()
        for trial in source.trials():
            if current and trial.case_id != current[0].case_id:
                done.add(current[0].case_id)
                yield current[0].case_id, current
                current = []
            if trial.case_id in done:
                raise TraceError(f"sample {trial.case_id} comes back after other samples",
                                 file=source.path)
            current.append(trial)
        if current:
            yield current[0].case_id, current
        return
    cases: dict[str, list[ImportedTrial]] = {}
    for trial in source.trials():
        cases.setdefault(trial.case_id, []).append(trial)
    yield from cases.items()


def _criterion_name(score: str, taken: dict[str, str]) -> str:
    """A criterion id for an imported score: the name, with what an id cannot hold as `_`."""
    name = _CRITERION.sub("_", score).strip("_.-") or "score"
    base, n = name, 1
    while name in taken:
        n += 1
        name = f"{base}_{n}"
    return name


def _write_suite(folder: Path, project: str, source: _Source, trials: int,
                 criteria: dict[str, str]) -> None:
    evaluators = [{"type": "imported_score", "criterion": name, "score": score}
                  for name, score in criteria.items()]
    if not evaluators:
        raise TraceError("no trial of the run holds a score Oloproof can judge "
                         "(see the skipped scores)", file=source.path)
    metrics: list[dict[str, Any]] = []
    if trials > 1:
        metrics = [{"id": f"{name}_pass_hat_{trials}", "type": "pass_hat_k",
                    "criterion": name, "k": trials} for name in criteria]
    body: dict[str, Any] = {
        "version": 1, "project": project, "dataset": CASES, "trials": trials,
        "system": {"name": source.system_name, "version": source.system_version,
                   "callable": "oloproof.harnesses.played:play",
                   "records": ["agent_trajectory/v1", "usage/v1"]},
        "evaluators": evaluators,
        "metrics": metrics,
    }
    (folder / SUITE).write_text(yaml.safe_dump(body, sort_keys=False), encoding="utf-8")
    (folder / POLICY).write_text("version: 1\nrules: []\n", encoding="utf-8")
