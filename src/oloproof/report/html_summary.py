"""The summary of the HTML report (docs/cli.md#oloproof-report): the run document with the
terminal's display strings added, so both reports show the same figures — each metric's and
slice's estimate and interval, each decision's comparison, each rule's threshold in words, the
errors grouped as `what_broke` groups them —, which of several runs of its version the run is
(and the baseline), the comparison with a baseline in words, and with
repeated trials the pass^k curves with their intervals. Computed here; the page only draws it.
"""

from __future__ import annotations

from typing import Any

from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.trial_rows import pass_hat_curve
from oloproof.analysis.trials import iter_case_trials
from oloproof.document import (
    Comparison,
    MetricRow,
    QuantileRow,
    RateRow,
    RunDocument,
    SliceRow,
    TransformValidity,
)
from oloproof.report.comparison import method_note, verdict_words
from oloproof.report.decision_words import decision_comparison
from oloproof.report.numbers import (
    conversations_text,
    difference_text,
    estimate_text,
    executions_text,
    interval_text,
    judge_check_text,
    judged_mark,
    n_text,
    p_value_text,
    threshold_text,
    usage_text,
)
from oloproof.report.reruns import record_lines, taken_text
from oloproof.report.what_broke import error_groups, hint, leading
from oloproof.stats import percent, percent_lower, percent_upper
from oloproof.store.store import Store
from oloproof.suite.policy import CONVERSATIONS_SUBJECT, ERRORED_SUBJECT


def _threshold_text(rule: dict[str, Any], metric: MetricRow | None) -> str:
    if rule.get("kind") == "observed_count":
        return f"at most {rule.get('max_failures')} observed failure(s)"
    if rule.get("kind") == "non_inferiority":
        return (f"difference from the baseline ≥ -{percent(float(rule.get('margin') or 0))} "
                "(non-inferiority margin)")
    if rule.get("kind") == "max_errored":  # (docs/failures.md#the-error-budget)
        if rule.get("max_count") is not None:
            return f"at most {rule.get('max_count')} errored execution(s)"
        share = threshold_text(float(rule.get("max_share") or 0), True)
        return f"at most {share} of the executions errored"
    if rule.get("kind") == "sequential":  # (docs/pytest.md#the-stored-run)
        return (f"case {rule.get('case')}: min {threshold_text(float(rule.get('min') or 0), True)}"
                f" over at most {rule.get('trials')} trials, stopped at the first decision")
    if rule.get("kind") == "max_simulator_failures":  # (docs/conversations.md)
        if rule.get("max_count") is not None:
            return f"at most {rule.get('max_count')} simulated conversation(s) failed a check"
        share = threshold_text(float(rule.get("max_share") or 0), True)
        return f"at most {share} of the simulated conversations failed a check"
    bound = "min" if rule.get("min") is not None else "max"
    value = rule.get(bound)
    if value is None:
        return ""
    if isinstance(metric, QuantileRow):
        shown = threshold_text(float(value), False, metric.unit)
    else:
        shown = threshold_text(float(value), True)
    return f"{bound} {shown}"


def _row_text(row: MetricRow | SliceRow) -> dict[str, str]:
    interval = interval_text(row) + judged_mark(row)
    return {"estimate": estimate_text(row), "interval": interval, "n": n_text(row)}


def _transform_text(v: TransformValidity) -> str:
    lower = percent_lower(v.lower) if v.lower is not None else "—"
    state = "checked" if v.checked else "NOT checked (transform_not_checked)"
    text = (f"{v.kept} of {v.pairs} pairs labelled kept; lower bound {lower} vs "
            f"minimum_validity {percent(v.minimum_validity)} → {state}")
    if v.stale_labels:
        text += f"; {v.stale_labels} stale label(s) ignored"
    return text


def _what_broke(document: RunDocument) -> dict[str, Any]:
    """The errors grouped as the terminal shows them (`report/what_broke.py`)."""
    groups = error_groups(document.errors)
    lead = leading(document.executions, groups, document.imported_from)
    return {"lead": lead, "cases": len({c for g in groups for c in g.cases}),
            "groups": [{"kind": str(g.kind), "message": g.message, "executions": g.executions,
                        "cases": g.cases, "hint": _unsaid(hint(g.kind, g.message,
                                                                 document.imported_from), lead)}
                       for g in groups]}


def _unsaid(said: str | None, lead: str | None) -> str | None:
    """A group's hint, unless the leading sentence says it already."""
    return None if said is None or (lead is not None and said in lead) else said


def build_summary(document: RunDocument, record: dict[str, Any]) -> dict[str, Any]:
    """The run document plus display strings, rules with their thresholds, criteria, slices."""
    summary = document.to_json()
    by_id = {m.id: m for m in document.metrics}
    summary["metrics"] = [dict(m.to_json(), text=_row_text(m)) for m in document.metrics]
    paired = {r.criterion: r for r in (document.baseline.criteria
                                       if document.baseline is not None else ())}
    # Each decision with the comparison it made, as the terminal prints it.
    summary["decisions"] = [dict(d.to_json(), text=decision_comparison(
        d, by_id.get(d.metric), paired.get(d.metric))) for d in document.decisions]
    summary["slices"] = [dict(r.to_json(), text=_row_text(r)) for r in document.slices]
    summary["transforms"] = [dict(v.to_json(), text=_transform_text(v))
                             for v in document.transforms]
    summary["judge_checks"] = [{"criterion": m.id, "judge": m.judge.judge,
                                "status": m.judge.status, "text": judge_check_text(m)}
                               for m in document.metrics if isinstance(m, RateRow)
                               and m.judge is not None and m.metric_type is None]
    policy = record.get("policy") or {}
    rules = []
    for rule in policy.get("rules") or []:
        shown = dict(rule, text=_threshold_text(rule, by_id.get(rule.get("metric"))))
        if rule.get("kind") == "max_errored":  # it decides on the run's executions
            shown["metric"] = ERRORED_SUBJECT
        elif rule.get("kind") == "max_simulator_failures":
            shown["metric"] = CONVERSATIONS_SUBJECT
        rules.append(shown)
    summary["policy"] = {
        "rules": rules,
        "block_on": list(policy.get("block_on") or []),
        "warn_on": list(policy.get("warn_on") or []),
        "confidence_level": policy.get("confidence_level"),
    }
    suite = record.get("suite") or {}
    summary["criteria"] = list(suite.get("criteria") or [])
    if document.usage is not None:
        summary["usage_text"] = usage_text(document.usage)
    if document.executions is not None:
        summary["executions_text"] = executions_text(document.executions, document.trials)
    if document.record is not None:
        summary["record_text"] = record_lines(document.run_id, document.system,
                                              document.record)
    if document.conversations is not None:  # (docs/conversations.md#accounting)
        summary["conversations_text"] = conversations_text(document.conversations)
    summary["what_broke"] = _what_broke(document)
    if document.subset is not None:  # (docs/cli.md#running-part-of-the-suite)
        summary["subset_note"] = document.subset.note()
    if document.not_rescored:
        summary["not_rescored_groups"] = [{"words": words, "cases": cases} for words, cases
                                          in document.not_rescored_by_reason()]
    summary["slice_names"] = list(suite.get("slices") or [])
    summary["started_at"] = record.get("started_at")
    summary["finished_at"] = record.get("finished_at")
    return summary


def reliability_curves(store: Store, run_id: str, record: dict[str, Any], level: float
                       ) -> dict[str, Any] | None:
    """With repeated trials: pass^k against k = 1 … trials for each criterion, each point with
    its interval over cases (computed here; the page only draws them). None without trials."""
    suite = record.get("suite") or {}
    trials = int(suite.get("trials", 1))
    if trials < 2:
        return None
    criteria = list(suite.get("criteria") or [])
    outcomes = (CaseOutcome.from_json(case_id, outcome, digest)
                for case_id, digest, _key, outcome in store.iter_run_cases(run_id))
    cases = list(iter_case_trials(outcomes, len(criteria), trials))
    curves = []
    for i, name in enumerate(criteria):
        points = []
        for k, figures in enumerate(pass_hat_curve(cases, i, level), start=1):
            if not figures.cases:
                break
            points.append({
                "k": k, "estimate": figures.estimate, "lower": figures.lower,
                "upper": figures.upper, "method": figures.method,
                "observed": figures.observed, "missing": figures.missing,
                "text": {"estimate": "—" if figures.estimate is None
                         else percent(figures.estimate),
                         "interval": "—" if figures.lower is None or figures.upper is None
                         else f"[{percent_lower(figures.lower)}, "
                              f"{percent_upper(figures.upper)}]"},
            })
        if points:
            curves.append({"criterion": name, "points": points})
    return {"trials": trials, "level": level, "curves": curves}


def comparison_summary(comparison: Comparison) -> dict[str, Any]:
    """The comparison as the page shows it: the document, with the terminal's display strings
    (each criterion's difference and p-value, each change in words), computed here."""
    summary = comparison.to_json()
    summary["criteria"] = [dict(row.to_json(), text={
        "difference": difference_text(row) + (f" ≈ over {row.clusters} clusters"
                                              if row.approximate else ""),
        "missing": f"{row.missing}" + (f" + {row.dropped} dropped" if row.dropped else ""),
        "p": p_value_text(row.mcnemar_p)}) for row in comparison.criteria]
    summary["method_note"] = method_note(comparison.criteria)
    if comparison.baseline_taken is not None:
        summary["baseline_taken_text"] = taken_text(
            comparison.baseline, comparison.baseline_system, comparison.baseline_taken)
    changes = []
    for change in comparison.changes:
        item = change.to_json()
        item["words"] = [verdict_words(c) for c in change.criteria]
        changes.append(item)
    summary["changes"] = changes
    return summary
