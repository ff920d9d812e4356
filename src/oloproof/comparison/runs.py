"""Two stored runs compared (docs/compare.md#oloproof-compare-baseline-candidate): the comparison
document, and the checks before it.

`compare_runs(store, baseline, candidate)` reads both runs once (`sides.read_side`), pairs their
cases (`pairing`), compares every metric both define alike and judge with the same evaluator
configuration, and says what changed in the broken cases, then the fixed ones (`changes`). A
baseline must be a run of the same project whose suite shares case ids with the candidate's:
anything else is a usage error that says so, never a comparison of nothing. A baseline of the
same system name and version is compared, with a warning: two runs of one version measure
noise, not a change. A baseline whose version has several complete runs of its suite says
which of them it is, and why (`baseline_taken`).
"""

from __future__ import annotations

from collections.abc import Iterable

from oloproof.analysis.ordering import case_order
from oloproof.comparison.changes import case_changes
from oloproof.comparison.pairing import compare_metric, pair_cases, shared_metrics
from oloproof.comparison.sides import RunSide, read_side
from oloproof.document import BaselineTaken, Comparison, SystemRef
from oloproof.errors import UsageError
from oloproof.store.store import Store

#: How many cases `changes` describes (broken ones first, by case id; then fixed ones). Every
#: broken and fixed case is named in `broken_cases` / `fixed_cases` whatever their number.
CHANGES_SHOWN = 50


def check_comparable(baseline: str, baseline_project: str, candidate: str,
                     candidate_project: str, shared_ids: int | None = None) -> None:
    """A baseline of another project, the candidate itself, or one whose suite shares no case
    id with the candidate's, is a usage error naming both runs."""
    if baseline == candidate:
        raise UsageError(f"the baseline and the candidate are the same run ({candidate}); "
                         "name an earlier run as the baseline (`oloproof runs` lists them)")
    if baseline_project != candidate_project:
        raise UsageError(
            f"the baseline run {baseline} is of project {baseline_project!r} and the "
            f"candidate {candidate} of project {candidate_project!r}: a baseline must be a run "
            "of the same project (`oloproof runs` lists this store's runs)")
    if shared_ids == 0:
        raise UsageError(
            f"the baseline run {baseline} shares no case id with the candidate {candidate}: "
            "their suites have no case in common, so nothing can be paired; name a baseline "
            "run of this suite")


def _system(side: RunSide) -> SystemRef:
    return SystemRef(name=str(side.record["system_name"]),
                     version=str(side.record["system_version"]))


def _warnings(baseline: RunSide, candidate: RunSide) -> list[str]:
    out = []
    for side, name in ((baseline, "baseline"), (candidate, "candidate")):
        status = side.record["status"]
        if status != "complete":
            out.append(f"the {name} run {side.run_id} is {status}: only the cases it finished "
                       "are paired")
    base, cand = _system(baseline), _system(candidate)
    if (base.name, base.version) == (cand.name, cand.version):
        out.append(f"the baseline and the candidate are both {cand.name} {cand.version}: this "
                   "compares two runs of one version, so it measures noise (how much the "
                   "system varies from run to run), not a change; to compare with the "
                   "version you ship, name its run (`baseline: {version: ...}`, a tag, or a "
                   "run id; `oloproof runs` lists them)")
    if baseline.trials != candidate.trials:
        out.append(f"the baseline ran {baseline.trials} trial(s) per case and the candidate "
                   f"{candidate.trials}: each case's share of passing trials is paired, and a "
                   "share of fewer trials moves more by chance (2 of 3 in one run against 1 "
                   "of 1 in the other reads as a change though nothing changed); to compare "
                   "like with like, run the "
                   f"{'candidate' if candidate.trials < baseline.trials else 'baseline'} with "
                   f"--trials {max(baseline.trials, candidate.trials)}")
    return out


def baseline_taken(store: Store, baseline: str, candidate: str,
                   reference: str | None) -> BaselineTaken | None:
    """Which of the complete runs of its suite, version and variant the baseline is, and why
    (docs/compare.md#which-run-is-the-baseline); None when it is the only one, or not counted
    (it did not complete)."""
    counted = store.counted_runs(baseline)
    if counted is None:
        return None
    others = [r for r in counted.runs if r != candidate]
    if len(others) < 2:
        return None
    by_version = reference is not None and reference.startswith("version:")
    return BaselineTaken(run=others.index(baseline) + 1, runs=len(others), latest=others[-1],
                         why="latest" if by_version else "named", reference=reference)


def compare_sides(store: Store, baseline: RunSide, candidate: RunSide, level: float, *,
                  baseline_reference: str | None = None) -> Comparison:
    """The comparison of two runs already read (see the module's text); `baseline_reference`
    is how the baseline was named, if it was (by id otherwise). A candidate that ran part of
    the suite is paired over its own cases only: the baseline's others were not chosen, not
    dropped (docs/compare.md#which-run-is-the-baseline)."""
    subset = (candidate.record.get("suite") or {}).get("subset")
    pairs = pair_cases(baseline, candidate, within_candidate=bool(subset))
    check_comparable(baseline.run_id, baseline.project, candidate.run_id, candidate.project,
                     pairs.paired + len(pairs.changed))
    metrics, metric_warnings, not_compared = shared_metrics(baseline, candidate)
    rows = []
    ignoring = []
    broken: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}
    for base_metric, cand_metric in metrics:
        paired = compare_metric(baseline, candidate, pairs, base_metric, cand_metric, level)
        rows.append(paired.row)
        broken[cand_metric.id] = paired.broken
        fixed[cand_metric.id] = paired.fixed
        if pairs.left_behind:
            ignoring.append(compare_metric(baseline, candidate, pairs, base_metric,
                                           cand_metric, level, ignore_dropped=True).row)
    shown = _first(_union(broken.values()), CHANGES_SHOWN)
    shown += _first(_union(fixed.values()) - set(shown), CHANGES_SHOWN - len(shown))
    dropped_note = []
    if pairs.left_behind and rows:
        n = len(pairs.left_behind)
        how = (" (dropped)" if not pairs.changed else " (changed)" if not pairs.baseline_only
               else f" ({len(pairs.baseline_only)} dropped, {len(pairs.changed)} changed)")
        dropped_note.append(
            f"{n} case{'s' if n != 1 else ''} of the baseline {'are' if n != 1 else 'is'} not "
            f"in the candidate as {'they were' if n != 1 else 'it was'}{how}: each counts as a "
            "pair whose candidate side is missing (a failure for the lower bound), so removing "
            "or editing failing cases cannot improve the comparison; a non_inferiority rule "
            "that allows removals says `dropped: ignore`")
    if subset:
        dropped_note.append(
            f"the candidate is a subset of {subset.get('cases')} of {subset.get('of')} cases: "
            "only its cases are paired (the baseline's others were not chosen, not dropped)")
    return Comparison(
        baseline=baseline.run_id,
        candidate=candidate.run_id,
        project=candidate.project,
        confidence_level=level,
        baseline_system=_system(baseline),
        candidate_system=_system(candidate),
        baseline_taken=baseline_taken(store, baseline.run_id, candidate.run_id,
                                      baseline_reference),
        criteria=rows,
        changed=pairs.changed,
        baseline_only=pairs.baseline_only,
        candidate_only=pairs.candidate_only,
        broken_cases=broken,
        fixed_cases=fixed,
        changes=case_changes(store, baseline, candidate, shown, metrics) if shown else [],
        warnings=_warnings(baseline, candidate) + metric_warnings + dropped_note,
        ignoring_dropped=ignoring if pairs.left_behind else None,
        not_compared=not_compared or None,
    )


def _union(lists: Iterable[list[str]]) -> set[str]:
    out: set[str] = set()
    for ids in lists:
        out.update(ids)
    return out


def _first(ids: set[str], n: int) -> list[str]:
    return sorted(ids, key=case_order)[:max(n, 0)]


def compare_runs(store: Store, baseline: str, candidate: str, level: float | None = None
                 ) -> Comparison:
    """Compare two stored runs (ids, already resolved) at `level` (default: the confidence
    level of the candidate's policy)."""
    if baseline == candidate:
        check_comparable(baseline, "", candidate, "")
    cand = read_side(store, candidate)
    base = read_side(store, baseline)
    check_comparable(baseline, base.project, candidate, cand.project)
    if level is None:
        level = float((cand.record.get("policy") or {}).get("confidence_level", 0.95))
    return compare_sides(store, base, cand, level)
