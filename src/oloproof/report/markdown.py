"""GitHub-flavoured Markdown for a pull request or `$GITHUB_STEP_SUMMARY`
(docs/ci.md#what-the-job-produces).

A run: the gate (and which of several runs of its version it is; for a run of part of the
suite, that it is not a release decision; for a rescored run, the run it scored and the cases
it left out), the Decisions table (each with the comparison it made), the Metrics table (a
judged criterion's interval marked `corrected`, `labels alone` or `uncalibrated`, as the
terminal marks it), each judge checked against people's labels (with the labels' own interval
beside the corrected one), the paired figures against a baseline when rules were decided on
one, what broke, and the first failing cases. A comparison: which run the baseline is, the
criteria table, the broken cases with what changed, then the fixed, changed and unpaired
cases. Figures are the terminal's (same rounding).

Every text from a case or a configuration is written with `text()`: control and
direction-changing characters as `\\uXXXX`, newlines as `\\n`, and every ASCII punctuation
character backslash-escaped — so `|` cannot split a table cell, a backtick cannot open code,
`<` and `&` cannot start HTML or an entity, and nothing can become a link or a heading (an
`@` is followed by an empty HTML comment, so GitHub's renderer finds no e-mail address to
link either: `xmpp:a@b.example` stays text).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from oloproof.document import (
    BaselineSummary,
    BaselineTaken,
    Comparison,
    CriterionComparison,
    MetricRow,
    RateRow,
    RunDocument,
    SystemRef,
)
from oloproof.report.comparison import method_note, verdict_words
from oloproof.report.decision_words import decision_comparison
from oloproof.report.escape import safe_line
from oloproof.report.expected_keys import expected_key_text
from oloproof.report.numbers import (
    difference_text,
    estimate_text,
    executions_text,
    interval_text,
    judge_check_text,
    judged_mark,
    n_text,
    p_value_text,
)
from oloproof.report.reruns import record_lines, taken_text
from oloproof.report.trial_counts import criteria_text
from oloproof.report.what_broke import error_groups, hint, leading

#: Failing or broken cases listed before `… and N more`.
CASES_SHOWN = 10

_PUNCTUATION = re.compile(r"""([!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~])""")

_GATE_WORDS = {0: "release allowed", 1: "blocked with a FAIL",
               3: "blocked on INSUFFICIENT_EVIDENCE only", 4: "blocked with MANUAL_REVIEW",
               5: "the run could not complete"}
_STATE_MARK = {"PASS": "✅", "FAIL": "❌", "INSUFFICIENT_EVIDENCE": "⚠️", "MANUAL_REVIEW": "👀"}


def text(value: object) -> str:
    """Untrusted text made inert in Markdown (see the module's text)."""
    escaped = _PUNCTUATION.sub(r"\\\1", safe_line(value))
    # GitHub finds e-mail addresses (and `mailto:` / `xmpp:` ones) in the text after escapes
    # are read, so `\@` alone still links: an empty comment after each `@` (shown as
    # nothing) keeps the address from being found. `www.` and `https://` are kept from
    # linking by the escaped `.` and `:`.
    return escaped.replace("\\@", "\\@<!-- -->") if "@" in escaped else escaped


def _plain(value: str) -> str:
    """Our own figures and words: only what could split a table cell is escaped."""
    return value.replace("|", "\\|")


def table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GFM table; cells are already escaped."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(row) + " |" for row in rows]
    return out


def criteria_table(rows: Sequence[CriterionComparison]) -> list[str]:
    """The paired figures, one row per criterion."""
    return table(["Criterion", "Paired", "Both passed", "Fixed", "Broken", "Both failed",
                  "Missing", "Difference [interval]", "McNemar p"],
                 [[text(r.criterion), str(r.paired), str(r.both_passed), str(r.fixed),
                   f"**{r.broken}**" if r.broken else "0", str(r.both_failed),
                   str(r.missing) + (f" + {r.dropped} dropped" if r.dropped else ""),
                   _plain(difference_text(r))
                   + (f" ≈ over {r.clusters} clusters" if r.approximate else ""),
                   _plain(p_value_text(r.mcnemar_p))]
                  for r in rows])


def _ids(ids: Sequence[str], shown: int = CASES_SHOWN) -> str:
    listed = ", ".join(text(i) for i in ids[:shown])
    return listed + (f" … and {len(ids) - shown} more" if len(ids) > shown else "")


def _baseline(summary: BaselineSummary) -> list[str]:
    out = ["", f"### Against baseline `{summary.baseline}`", "",
           "This run − baseline over the cases paired by id"
           + (f" ({summary.changed} changed, {summary.candidate_only} in this run only: not "
              "paired" + ("; a changed case's baseline side counts as dropped"
                          if summary.changed else "") + ")"
              if summary.changed or summary.candidate_only else "")
           + (f"; {summary.baseline_only} in the baseline only (dropped), each counted as a "
              "pair whose candidate side is missing" if summary.baseline_only else "")
           + ".", ""]
    if summary.baseline_taken is not None:
        out += [_plain(taken_text(summary.baseline, None, _escaped(summary.baseline_taken))),
                ""]
    out += criteria_table(summary.criteria)
    out += [f"> {text(w)}" for w in summary.warnings]
    if summary.dropped_cases:
        out += ["", "Dropped (in the baseline, not in this run as it was; a rule with "
                f"`dropped: ignore` leaves them out): {_ids(summary.dropped_cases)}"]
    return out


def _escaped(taken: BaselineTaken) -> BaselineTaken:
    """A baseline's reference as its user wrote it, escaped."""
    if taken.reference is None:
        return taken
    return taken.model_copy(update={"reference": text(taken.reference)})


def _what_broke(document: RunDocument) -> list[str]:
    """The errors by kind and first line, commonest first, each case named once."""
    if not document.errors:
        return []
    groups = error_groups(document.errors)
    cases = {case for group in groups for case in group.cases}
    out = ["", f"### What broke: {len(cases)} case(s) errored", ""]
    lead = leading(document.executions, groups, document.imported_from)
    if lead:
        out += [f"**{text(lead)}**", ""]
    for group in groups:
        line = (f"- {text(group.kind)} × {group.executions}: {text(group.message)} (cases: "
                f"{_ids(group.cases)})")
        said = hint(group.kind, group.message, document.imported_from)
        if said is not None and not (lead and said in lead):
            line += f"; hint: {text(said)}"
        out.append(line)
    return out


def _judge_checks(metrics: Sequence[MetricRow]) -> list[str]:
    """Each judge criterion checked against people's labels, as the terminal says it."""
    judged = [m for m in metrics if isinstance(m, RateRow) and m.judge is not None
              and m.metric_type is None]
    if not judged:
        return []
    out = ["", "### Judges, checked against people's labels", ""]
    for row in judged:
        assert row.judge is not None
        out.append(f"- {text(row.id)} (judge {text(row.judge.judge)}): "
                   f"{_plain(judge_check_text(row))}")
    return out


def _rescored(document: RunDocument) -> list[str]:
    """A rescored run: the run it scored, and the cases it left out, by reason."""
    if document.rescored_from is None:
        return []
    out = ["", f"Rescored from `{document.rescored_from}`: its stored outputs scored by the "
           "suite's current evaluators and judges; no system was called."]
    groups = document.not_rescored_by_reason()
    if groups:
        out += ["", f"Not rescored: {len(document.not_rescored or ())} case(s)", ""]
        out += [f"- {text(words)}: {_ids(cases)}" for words, cases in groups]
    return out


def run_markdown(document: RunDocument) -> str:
    """The Markdown summary of a run (see the module's text)."""
    gate = document.gate
    subset = document.subset
    words = subset.note() if subset is not None else _GATE_WORDS.get(int(gate.exit_code), "")
    out = [f"## Oloproof: {gate.action} (exit {int(gate.exit_code)})", "",
           f"{words} · run `{document.run_id}` · "
           f"{document.status} · {text(document.system.name)} {text(document.system.version)}"
           + (f" ({text(document.system.variant)})" if document.system.variant else "")
           + f" · {document.cases} cases · confidence level {document.confidence_level:g}"]
    if document.record is not None:  # our words; the system's name and version escaped
        system = SystemRef(name=text(document.system.name),
                           version=text(document.system.version))
        record = document.record.model_copy(
            update={"variant": None if document.record.variant is None
                    else text(document.record.variant)})
        head, *rest = (_plain(line) for line in record_lines(document.run_id, system, record))
        out += ["", (f"**{head}**" if record.resample else head)
                + "".join(f"  \n{line}" for line in rest)]
    if subset is not None:
        out += ["", f"> **Subset:** {subset.note()}"
                + (f" (chosen by {text(subset.words)})" if subset.words else "")]
    out += _rescored(document)
    if document.executions is not None:
        out += ["", "Executions: " + _plain(executions_text(document.executions,
                                                             document.trials))]
    nothing = document.executions is not None and document.executions.nothing_measured
    if nothing:  # a run that never ran: why comes first
        out += _what_broke(document)
    for warning in document.warnings:
        out += ["", f"> **Warning:** {text(warning)}"]
    metrics = {m.id: m for m in document.metrics}
    paired = {r.criterion: r for r in (document.baseline.criteria if document.baseline else ())}
    out += ["", "### Decisions", ""]
    if document.decisions:
        out += table(["Rule", "Metric", "State", "Compared", "Reasons"], [
            [text(d.rule), text(d.metric), f"{_STATE_MARK.get(d.state, '')} **{d.state}**",
             _plain(decision_comparison(d, metrics.get(d.metric), paired.get(d.metric))),
             _plain(", ".join(d.reasons))]
            for d in document.decisions])
    else:
        out.append("(no rules)")
    out += ["", "### Metrics", ""]
    out += table(["Metric", "Estimate", "Interval", "N"],
                 [[text(m.id), _plain(estimate_text(m)),
                   _plain(interval_text(m) + judged_mark(m)), _plain(n_text(m))]
                  for m in document.metrics])
    out += _judge_checks(document.metrics)
    for key_hint in document.expected_key_hints or ():
        out += ["", f"> **Note:** {expected_key_text(key_hint, text)}"]
    if document.baseline is not None:
        out += _baseline(document.baseline)
    if not nothing:
        out += _what_broke(document)
    failing = document.failing_cases
    trials = document.trials or 1
    if failing is not None and failing.total:
        out += ["", f"### Failing cases: {failing.total}", ""]
        for case in failing.first:
            parts = []
            if case.error:
                parts.append(f"errored ({text(case.error)})")
            if case.failed:
                parts.append("failed " + criteria_text(case.failed, case.failed_trials, trials,
                                                       text))
            if case.missing:
                parts.append("missing " + criteria_text(case.missing, case.missing_trials,
                                                        trials, text))
            out.append(f"- {text(case.case)}: " + "; ".join(parts))
        if failing.total > len(failing.first):
            out.append(f"- … and {failing.total - len(failing.first)} more: "
                       f"`oloproof inspect {document.run_id} --failures`")
    return "\n".join(out) + "\n"


def comparison_markdown(comparison: Comparison) -> str:
    """The Markdown summary of a comparison (see the module's text)."""
    total_broken = len({i for ids in comparison.broken_cases.values() for i in ids})
    total_fixed = len({i for ids in comparison.fixed_cases.values() for i in ids})
    out = [f"## Oloproof compare: {total_broken} broken, {total_fixed} fixed", "",
           f"Candidate `{comparison.candidate}` ({text(comparison.candidate_system.name)} "
           f"{text(comparison.candidate_system.version)}) against baseline "
           f"`{comparison.baseline}` ({text(comparison.baseline_system.name)} "
           f"{text(comparison.baseline_system.version)}) · confidence level "
           f"{comparison.confidence_level:g}", ""]
    if comparison.baseline_taken is not None:
        system = SystemRef(name=text(comparison.baseline_system.name),
                           version=text(comparison.baseline_system.version))
        out += [_plain(taken_text(comparison.baseline, system,
                                  _escaped(comparison.baseline_taken))), ""]
    for warning in comparison.warnings:
        out += [f"> **Warning:** {text(warning)}", ""]
    out += criteria_table(comparison.criteria)
    out += ["", _plain(method_note(comparison.criteria))]
    changes = {c.case: c for c in comparison.changes}
    if total_broken:
        out += ["", f"### Broken cases: {total_broken}", ""]
        for criterion, ids in comparison.broken_cases.items():
            if ids:
                out.append(f"- **{text(criterion)}**: {_ids(ids)}")
        described = [changes[i] for ids in comparison.broken_cases.values() for i in ids
                     if i in changes]
        seen: set[str] = set()
        lines = []
        for change in described:
            if change.case in seen or len(seen) >= CASES_SHOWN:
                continue
            seen.add(change.case)
            line = f"- {text(change.case)}: " + "; ".join(text(verdict_words(c))
                                                         for c in change.criteria)
            if change.parting is not None:
                line += (f" · trajectories part at step {change.parting.step} (baseline: "
                         f"{text(change.parting.baseline or '(ended)')}; candidate: "
                         f"{text(change.parting.candidate or '(ended)')})")
            lines.append(line)
        if lines:
            out += ["", "What changed:", "", *lines]
    if total_fixed:
        out += ["", f"### Fixed cases: {total_fixed}", ""]
        out += [f"- **{text(c)}**: {_ids(ids)}" for c, ids in comparison.fixed_cases.items()
                if ids]
    unpaired = [("Changed (input or expected changed; not paired)", comparison.changed),
                ("In the baseline only (dropped: each counted as a missing candidate side)",
                 comparison.baseline_only),
                ("In the candidate only", comparison.candidate_only)]
    if any(ids for _, ids in unpaired):
        out += ["", "### Not paired", ""]
        out += [f"- {label}: {_ids(ids)}" for label, ids in unpaired if ids]
    return "\n".join(out) + "\n"


def unfinished_markdown(headline: str, message: str) -> str:
    """The Markdown of a command that has no results: `headline` (our words) and `message`
    (escaped: an error may quote a case) — what stands in the file while a run goes and stays
    if it never finishes (docs/ci.md#output-files)."""
    return f"## Oloproof: {_plain(headline)}\n\n{text(message)}\n"
