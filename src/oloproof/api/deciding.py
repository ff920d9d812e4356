"""A run document from a run's analysis, shared by running a suite and re-deciding a stored run.

`analysis_plan` is what the analysis tallies (from the suite as stored with the run);
`decide_run` finishes the analysis, decides the policy's rules and builds the `RunDocument`;
`check_baseline` and `compare_stored_runs` pair the run with its baseline.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from oloproof.analysis.judged import specs_of
from oloproof.analysis.metrics import Analysis, MetricPlan, QuantileSpec
from oloproof.errors import ConfigError, ErrorKind, UsageError
from oloproof.execution.exits import ExitAttempt, ended_warning
from oloproof.store.reruns import distinct_samples
from oloproof.store.store import Store
from oloproof.suite.policy import Policy, policy_warnings

if TYPE_CHECKING:
    from oloproof.document import (
        BaselineSummary,
        CacheCounts,
        CaseError,
        Comparison,
        Execution,
        RunDocument,
        RunRecord,
        RunStatus,
        TransformValidity,
    )


def analysis_plan(suite_info: dict[str, Any]) -> MetricPlan:
    """What the analysis of a run tallies, from its suite as stored with the run."""
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
        fidelity=next((at for at, e in enumerate(suite_info["evaluators"])
                       if e.get("simulator_fidelity")), None),
    )


def simulator_any(policy: Policy) -> bool:
    """Whether the policy's non_inferiority rules pair runs whose simulators differ: each says
    `simulator: any` (docs/conversations.md#the-simulator-is-part-of-the-measurement)."""
    return all(rule.simulator == "any" for rule in policy.rules
               if rule.kind == "non_inferiority")


def check_baseline(db: Store, baseline: str, project: str, case_ids: set[str], *,
                   gating: bool, suite: dict[str, Any] | None = None,
                   run_id: str = "about to be made", policy: Policy | None = None) -> str:
    """A baseline for the run about to be made: of this project, sharing case ids with the
    suite, complete when a rule decides on it, and made with the same simulators as `suite`
    (this run's, described) unless the policy's rules say `simulator: any` (a UsageError
    saying which is not so)."""
    record = db.run_record(baseline)
    if suite is not None and policy is not None and policy.compares:
        from oloproof.comparison.runs import check_simulators

        check_simulators(baseline, record.get("suite") or {}, run_id, suite,
                         simulator_any(policy))
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


def compare_stored_runs(db: Store, baseline: str, candidate: str, level: float, *,
                        candidate_complete: bool = False, any_simulator: bool = False,
                        reference: str | None = None) -> Comparison:
    """Compare two stored runs. `candidate_complete`: the candidate is the run being decided
    (still registered as running), so no warning says it did not complete; `any_simulator`:
    pair them even if their simulators differ. `reference`: how the baseline was named (it
    says why that run was taken, docs/compare.md#which-run-is-the-baseline)."""
    from oloproof.comparison import compare_sides, read_side
    cand = read_side(db, candidate)
    if candidate_complete:
        cand.record["status"] = "complete"
    return compare_sides(db, read_side(db, baseline), cand, level, any_simulator,
                         baseline_reference=reference)


def decide_run(
    db: Store, run_id: str, status: RunStatus | str, suite_info: dict[str, Any], policy: Policy,
    analysis: Analysis, validity: list[TransformValidity], cache: CacheCounts,
    errors: list[CaseError], warnings: list[str], execution: Execution | None = None,
    baseline: BaselineSummary | None = None, ended: Sequence[ExitAttempt] = (),
) -> RunDocument:
    """The run document: `analysis` finished, the policy's rules decided, the gate and the
    warnings of a run that did not complete."""
    from oloproof.analysis.expected_keys import expected_key_hints
    from oloproof.decisions import decide
    from oloproof.document import (
        ExitCode,
        Gate,
        GateAction,
        NotRescored,
        RunDocument,
        RunStatus,
        Subset,
        SystemRef,
    )
    from oloproof.report.limits import limits_for

    metrics, slices = analysis.finish(policy.confidence_level,
                                      approximate=policy.allow_approximate_methods)
    analysis.first_cases.attach_missing_examples(
        metrics, _missing_messages(db, analysis, suite_info, errors))
    checked = {v.transform: v.checked for v in validity}
    if baseline is None and policy.compares:
        raise ConfigError("the policy has a non_inferiority rule, and no baseline run was "
                          "given to compare with: give --baseline REF (or `baseline:` in the "
                          "policy)")
    executions = analysis.execution_counts()  # (max_errored rules decide on it)
    conversations = analysis.conversations.document()  # (max_simulator_failures rules')
    decisions, gate = decide(policy, metrics, checked, baseline, executions,
                             _sequential_trials(db, run_id, suite_info, policy), conversations)
    warnings = [*warnings, *policy_warnings(policy)]
    if analysis.unread_cases:
        warnings = [*warnings, (
            f"{analysis.unread_items} trace item(s) in {analysis.unread_cases} case(s) were "
            f"not understood by the {', '.join(sorted(analysis.unread_by))} adapter and are "
            "not in those trajectories; `oloproof inspect --case ID` lists them by kind "
            "(trace_reading/v1)")]
    warnings = [*warnings, *_label_sample_warnings(db, suite_info)]
    if status != RunStatus.COMPLETE:
        # Figures of a run that did not complete describe only the cases that finished: they
        # can be read, never used to release (exit 5: the run could not complete).
        gate = Gate(action=GateAction.BLOCK, exit_code=ExitCode.INCOMPLETE)
        # (a stored run decided again: its os._exit calls, from the errors they left)
        ended = ended or [ExitAttempt(None, e.case, "") for e in errors
                          if e.kind == ErrorKind.PROCESS_EXIT]
        if executions.nothing_measured:
            warnings = [*warnings, f"every execution of this run errored ({executions.cases} "
                        "of " f"{executions.cases}), so nothing was measured: the run is "
                        f"{status}, and its gate cannot allow a release; What broke says why"]
        if ended:  # docs/failures.md#a-system-that-ends-the-process
            warnings = [*warnings, ended_warning(ended)]
        elif not executions.nothing_measured and not analysis.cases:
            warnings = [*warnings, f"this run is {status}: it holds no case, so nothing was "
                        "measured, and its gate cannot allow a release"]
        elif not executions.nothing_measured:
            warnings = [*warnings, f"this run is {status}: its figures cover only the "
                        f"{analysis.cases} cases that finished, and its gate cannot allow a "
                        "release"]
    subset = Subset.model_validate(suite_info["subset"]) if suite_info.get("subset") else None
    if subset is not None and gate.exit_code == ExitCode.OK:
        # Part of the suite decides nothing about a release (docs/cli.md#running-part-of-the-suite).
        gate = Gate(action=gate.action, exit_code=ExitCode.INSUFFICIENT_EVIDENCE)
    not_rescored = suite_info.get("not_rescored")
    return RunDocument(
        run_id=run_id,
        status=RunStatus(status),
        project=suite_info["project"],
        system=SystemRef(name=suite_info["system"]["name"],
                         version=suite_info["system"]["version"],
                         variant=suite_info.get("variant")),
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
        failing_cases=analysis.first_cases.failing_cases(),
        trials=int(suite_info.get("trials", 1)) if int(suite_info.get("trials", 1)) > 1
        else None,
        execution=execution if execution is not None else _stored_execution(suite_info),
        baseline=baseline,
        usage=analysis.usage_totals(),
        executions=executions,
        expected_key_hints=expected_key_hints(
            metrics, suite_info.get("absent_expected") or {},
            suite_info.get("expected_keys") or {}) or None,
        conversations=conversations,
        subset=subset,
        rescored_from=suite_info.get("rescored_from"),
        imported_from=suite_info.get("imported_from"),
        not_rescored=[NotRescored.model_validate(n) for n in not_rescored]
        if not_rescored else None,
        record=_record(db, run_id, complete=status == RunStatus.COMPLETE),
    )


def _record(db: Store, run_id: str, *, complete: bool) -> RunRecord | None:
    """Which of the complete runs of its suite, version and variant this run is
    (docs/limits.md#re-runs-and-re-drawn-samples); None when it is the only one, or is not
    counted. `complete`: the run is decided complete (while `oloproof run` decides it, its
    row still says running)."""
    from oloproof.document import RunRecord

    counted = db.counted_runs(run_id, as_complete=complete)
    if counted is None or len(counted.runs) < 2:
        return None
    at, runs = counted.at, counted.runs
    resampled = [r for i, r in enumerate(runs) if i > 0 and counted.no_cache[i]]
    return RunRecord(run=at + 1, runs=len(runs), earlier=runs[:at], later=runs[at + 1:],
                     no_cache=counted.no_cache[at], resampled=resampled, suite=counted.suite,
                     variant=counted.variant)


def _label_sample_warnings(db: Store, suite_info: dict[str, Any]) -> list[str]:
    """For each judge criterion with more than one labels sample drawn (another seed or n), a
    warning that lists them all (docs/judges.md#labelling)."""
    from oloproof.report.run_list import utc_text

    out = []
    for criterion, judged in (suite_info.get("judges") or {}).items():
        drawn = distinct_samples(db.label_samples(suite_info["project"], criterion))
        if len(drawn) < 2:
            continue
        held = ((judged or {}).get("labels") or {}).get("seed")
        listed = "; ".join(f"seed {s.seed}, n {s.n}, {utc_text(s.drawn_at)}" for s in drawn)
        out.append(
            f"{criterion}: {len(drawn)} labels samples were drawn ({listed})"
            + (f", and its labels file holds the one of seed {held}" if held is not None
               else "")
            + ": drawing samples until one suits makes the corrected rate look better than "
            "it is (docs/limits.md#re-runs-and-re-drawn-samples); report every sample drawn")
    return out


_TRIAL_OUTCOMES = {"P": "passed", "F": "failed", "M": "errored"}  # X: excluded, left out


def _sequential_trials(db: Store, run_id: str, suite_info: dict[str, Any],
                       policy: Policy) -> dict[str, list[str]]:
    """By sequential rule, its case's trial outcomes of its criterion in trial order, read
    from the store (docs/pytest.md#the-stored-run): a missing trial counts as errored, an
    excluded one is left out."""
    rules = [rule for rule in policy.rules if rule.kind == "sequential"]
    if not rules:
        return {}
    criteria = list(suite_info.get("criteria") or [])
    db.stop_writer()  # the run's cases must be committed to be read back
    found: dict[str, list[str]] = {}
    for rule in rules:
        if rule.metric not in criteria or rule.case is None:
            continue  # (a stored run decided under another policy: nothing to decide on)
        at = criteria.index(rule.metric)
        found[rule.id] = [_TRIAL_OUTCOMES[outcome["c"][at]]
                          for _digest, _key, outcome in db.run_case_trials(run_id, rule.case)
                          if outcome["c"][at] in _TRIAL_OUTCOMES]
    return found


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
    examples = analysis.first_cases.missing_examples()
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
