"""Two stored runs compared (SPEC §17): the comparison document, and the checks before it.

`compare_runs(store, baseline, candidate)` reads both runs once (`sides.read_side`), pairs their
cases (`pairing`), compares every metric both define alike, and says what changed in the broken
cases, then the fixed ones (`changes`). A baseline must be a run of the same project whose
suite shares case ids with the candidate's: anything else is a usage error that says so, never
a comparison of nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from oloproof.analysis.metrics import case_order
from oloproof.comparison.changes import case_changes
from oloproof.comparison.pairing import compare_metric, pair_cases, shared_metrics
from oloproof.comparison.sides import RunSide, read_side
from oloproof.document import Comparison, SystemRef
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
    b_keys = dict(zip(baseline.criteria, baseline.suite.get("evaluator_keys") or [],
                      strict=False))
    c_keys = dict(zip(candidate.criteria, candidate.suite.get("evaluator_keys") or [],
                      strict=False))
    for criterion, key in c_keys.items():
        if criterion in b_keys and b_keys[criterion] != key:
            out.append(f"criterion {criterion} is judged with another evaluator configuration "
                       "in the candidate run: its verdicts are compared as each run judged them")
    if baseline.trials != candidate.trials:
        out.append(f"the baseline ran {baseline.trials} trial(s) per case and the candidate "
                   f"{candidate.trials}: per-case values (shares of passing trials) are paired")
    return out


def compare_sides(store: Store, baseline: RunSide, candidate: RunSide, level: float
                  ) -> Comparison:
    """The comparison of two runs already read (see the module's text)."""
    pairs = pair_cases(baseline, candidate)
    check_comparable(baseline.run_id, baseline.project, candidate.run_id, candidate.project,
                     len(pairs.ids) + len(pairs.changed))
    metrics, metric_warnings = shared_metrics(baseline, candidate)
    rows = []
    broken: dict[str, list[str]] = {}
    fixed: dict[str, list[str]] = {}
    for base_metric, cand_metric in metrics:
        paired = compare_metric(baseline, candidate, pairs, base_metric, cand_metric, level)
        rows.append(paired.row)
        broken[cand_metric.id] = paired.broken
        fixed[cand_metric.id] = paired.fixed
    shown = _first(_union(broken.values()), CHANGES_SHOWN)
    shown += _first(_union(fixed.values()) - set(shown), CHANGES_SHOWN - len(shown))
    return Comparison(
        baseline=baseline.run_id,
        candidate=candidate.run_id,
        project=candidate.project,
        confidence_level=level,
        baseline_system=_system(baseline),
        candidate_system=_system(candidate),
        criteria=rows,
        changed=pairs.changed,
        baseline_only=pairs.baseline_only,
        candidate_only=pairs.candidate_only,
        broken_cases=broken,
        fixed_cases=fixed,
        changes=case_changes(store, baseline, candidate, shown, metrics) if shown else [],
        warnings=_warnings(baseline, candidate) + metric_warnings,
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
