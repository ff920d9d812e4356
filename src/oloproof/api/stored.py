"""Stored runs: listing them (`list_runs`), reading one (`load_run`, `stored_document`,
`load_case_trials`), tagging one (`tag`), and deciding one again without running anything
(`redecide`, `plan`). Every function here reads the store; only `tag` writes, and only the tag.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from oloproof.analysis.metrics import Analysis
from oloproof.analysis.outcome import CaseOutcome
from oloproof.api.deciding import (
    analysis_plan,
    check_baseline,
    compare_stored_runs,
    decide_run,
    simulator_any,
)
from oloproof.api.result import RunResult
from oloproof.errors import ConfigError
from oloproof.store.location import find_store, open_existing_store
from oloproof.store.store import Store
from oloproof.suite.policy import Policy, load_policy
from oloproof.suite.policy_checks import check_baseline_given, check_rule_metrics, stored_policy
from oloproof.suite.validity import validity_bound

if TYPE_CHECKING:
    from oloproof.analysis.trials import CaseTrials
    from oloproof.document import Plan, RunDocument, TransformValidity


def list_runs(
    limit: int | None = 20, config: str | Path = "oloproof.yaml", store: str | Path | None = None,
) -> list[dict[str, Any]]:
    """The project's stored runs, newest first, at most `limit` of them (None: all), as
    `oloproof runs` lists them: each a dict of `run_id`, `project`, `started_at`,
    `finished_at` (Unix times), `status` (`complete`, `stopped`, …: a `running` run whose
    process is gone is `incomplete`), `pid`, `host`, `system_name`, `system_version`,
    `n_cases`, `trials`, `tags` and `summary` (the run document as JSON; None for a run that
    did not complete). A project that has run nothing yet has no store, and no runs: `[]`.

    Raises:
        ConfigError: there is no store and no suite file `config` either (and no `store` or
            $OLOPROOF_STORE names one): not a project directory.
        StoreError: the store cannot be read.
    """
    path = find_store(config, store)
    if not path.is_file():
        if store is None and not Path(config).is_file() and not os.environ.get("OLOPROOF_STORE"):
            raise ConfigError(f"no {config} here; run this in a project directory (or pass "
                              "--config / --store)")
        return []
    with Store(path, read_only=True) as db:
        return db.list_runs(limit)


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
    run at a time: tagging another run moves it. Writes only the tag.

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run, or `name` cannot be a tag.
    """
    with open_existing_store(config, store, writing=True) as db:
        run_id = db.resolve_run(ref)
        moved = db.tag_run(run_id, name)
    return Tagged(name=name, run_id=run_id, moved_from=moved)


def load_run(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None
) -> RunResult:
    """Read a stored run (`latest`, `latest~N`, or a unique prefix or suffix of its id).

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run (or several).
    """
    with open_existing_store(config, store) as db:
        record = db.run_record(db.resolve_run(ref))
        return RunResult(document_of_record(db, record), [],
                         stored_policy(record["policy"], record["run_id"]))


def stored_document(db: Store, run_id: str) -> RunDocument:
    """The run document of a stored run, on a store already open (`oloproof view` reads it
    so): the stored one, or for a run without one (running, or it did not complete) the
    cases stored so far analysed and decided as `load_run` does. Writes nothing.

    Raises:
        UsageError: no run `run_id` is stored.
    """
    return document_of_record(db, db.run_record(run_id))


def document_of_record(db: Store, record: dict[str, Any]) -> RunDocument:
    """`stored_document` of a run record already read."""
    from oloproof.document import CacheCounts, CaseError, RunDocument, RunStatus

    if record["summary"] is not None:
        document = RunDocument.model_validate(record["summary"])
        document.status = RunStatus(record["status"])  # live: running, incomplete, stopped
        if document.failing_cases is None:  # stored before documents named failing cases
            reanalysed = _reanalyse(db, record["run_id"], record["suite"])
            document.failing_cases = reanalysed.first_cases.failing_cases()
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
        against = compare_stored_runs(db, db.resolve_baseline(policy.baseline_reference,
                                                          record["run_id"], record["project"]),
                                  record["run_id"], policy.confidence_level,
                                  reference=policy.baseline_reference,
                                  any_simulator=simulator_any(policy)).summary()
    return decide_run(db, record["run_id"], record["status"], suite_info, policy, analysis,
                   [], CacheCounts(), errors, [], baseline=against)


def _reanalyse(db: Store, run_id: str, suite_info: dict[str, Any]) -> Analysis:
    analysis = Analysis(analysis_plan(suite_info))
    for case_id, digest, _key, outcome in db.iter_run_cases(run_id):
        analysis.add(CaseOutcome.from_json(case_id, outcome, digest))
    return analysis


def load_case_trials(
    ref: str = "latest", config: str | Path = "oloproof.yaml", store: str | Path | None = None
) -> list[CaseTrials]:
    """Every case of a stored run with its trials folded (docs/reliability.md#what-passk-means), in
    stored order.

    Each `CaseTrials` holds, per criterion (in the suite's `criteria` order), the case's
    passed, failed, missing (errored or never run) and excluded trials — the `c`, `f`, `m`
    and `x` every per-case value is computed from (`oloproof.stats.pass_k.case_values`),
    with the case's digest (the order intervals take cases in). A run without trials gives
    one trial per case. Reads only the stored run.

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: `ref` names no stored run (or several).
    """
    from oloproof.analysis.trials import iter_case_trials

    with open_existing_store(config, store) as db:
        run_id = db.resolve_run(ref)
        record = db.run_record(run_id)
        suite = record["suite"]
        outcomes = (CaseOutcome.from_json(case_id, outcome, digest)
                    for case_id, digest, _key, outcome in db.iter_run_cases(run_id))
        return list(iter_case_trials(outcomes, len(suite["criteria"]),
                                     int(suite.get("trials", 1))))


def redecide(
    ref: str = "latest", policy: str | Path | None = None, config: str | Path = "oloproof.yaml",
    store: str | Path | None = None, baseline: str | None = None,
) -> RunResult:
    """Decide a stored run again, under its own policy or another one; runs nothing.

    `baseline` (a run reference) is the run `non_inferiority` rules compare with, instead of
    the policy's `baseline:`; a reference that names the run itself (`latest` for `gate
    latest`) means the newest run before it (docs/compare.md#which-run-is-the-baseline).

    Raises:
        ConfigError: `policy` is not valid, or does not fit the stored run (a rule on a metric
            it does not have; a `non_inferiority` rule and no baseline).
        StoreError: no store, or no run stored yet.
        UsageError: `ref` or `baseline` names no stored run, or a baseline that cannot be
            compared with the run.
    """
    return _redecided(ref, policy, config, store, baseline)[0]


def _redecided(
    ref: str, policy: str | Path | None, config: str | Path, store: str | Path | None,
    baseline: str | None,
) -> tuple[RunResult, Analysis]:
    """`redecide`, with the analysis it decided from (the plan reads per-case values in it)."""
    with open_existing_store(config, store) as db:
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
        reference = baseline if baseline is not None else chosen.baseline_reference
        baseline_id = None if reference is None else \
            db.resolve_baseline(reference, record["run_id"], record["project"])
        document, analysis = decide_stored(db, record, chosen, baseline_id, reference,
                                           other_policy=policy is not None)
        return RunResult(document, [], chosen), analysis


def decide_stored(db: Store, record: dict[str, Any], chosen: Policy, baseline_id: str | None,
                  reference: str | None, *, other_policy: bool = True
                  ) -> tuple[RunDocument, Analysis]:
    """A stored run (its `record`) decided under `chosen` against the run `baseline_id` (named
    `reference`; None: no comparison), on a store already open: what `redecide` and the board
    (`api.board`) decide a run by. `other_policy`: `chosen` is not the run's own, so its
    transforms' validity is taken at `chosen`'s level."""
    from oloproof.document import CacheCounts, RunDocument

    suite_info = record["suite"]
    analysis = _reanalyse(db, record["run_id"], suite_info)
    old = RunDocument.model_validate(record["summary"]) if record["summary"] else None
    validity = list(old.transforms) if old is not None else []
    if validity and other_policy:
        validity = [_validity_at(v, chosen.confidence_level) for v in validity]
    against = None
    if baseline_id is not None:
        check_baseline(db, baseline_id, record["project"],
                       {case_id for case_id, *_ in db.iter_run_verdicts(record["run_id"])},
                       gating=chosen.compares, suite=suite_info, run_id=record["run_id"],
                       policy=chosen)
        against = compare_stored_runs(db, baseline_id, record["run_id"],
                                      chosen.confidence_level, reference=reference,
                                      any_simulator=simulator_any(chosen)).summary()
    document = decide_run(
        db, record["run_id"], record["status"], suite_info, chosen, analysis, validity,
        old.cache if old is not None else CacheCounts(),
        list(old.errors) if old is not None else [], [], baseline=against,
    )
    return document, analysis


def plan(
    ref: str = "latest", policy: str | Path | None = None, config: str | Path = "oloproof.yaml",
    store: str | Path | None = None, baseline: str | None = None,
) -> Plan:
    """What it would take to decide each undecided rule of a stored run
    (docs/compare.md#what-it-would-take-to-decide-oloproof-plan).

    The run is decided under its own policy (or `policy`) as `redecide` does; each rule that
    is INSUFFICIENT_EVIDENCE gets a projection — the smallest number of observed cases whose
    interval at the current rate would settle it, and a number of cases that would settle it
    with an 80% chance if the rate is what was measured (exact for 0/1 per-case values,
    simulated from the run's per-case values for fractions) — or the reason there is none. A
    projection, not a promise; nothing is run.

    Raises:
        ConfigError: as `redecide`.
        StoreError: no store, or no run stored yet.
        UsageError: as `redecide`.
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
