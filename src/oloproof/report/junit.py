"""JUnit XML for CI systems (docs/ci.md#what-the-job-produces), written from a stored run or a
comparison.

A run gives two test suites:

- `oloproof.rules`: one testcase per rule. `FAIL` is a failure; `INSUFFICIENT_EVIDENCE` and
  `MANUAL_REVIEW` are failures when the policy blocks on them, else skipped; the message is the
  rule's state, the comparison it made (bounds and threshold) and its reasons. A run of part of
  the suite has one more, `subset`, a failure: it is not a release decision (its properties
  say `subset`, and `rescored_from` for a rescored run).
- `oloproof.cases`: one testcase per case. A case that failed a criterion is a failure listing
  the criteria it failed (with trials, how many of its trials failed each); an errored case is
  an error carrying the error text; a case missing a criterion without an error says so in its
  output. A case a rescored run left out is skipped, saying why.

A comparison gives `oloproof.comparison` (a testcase per compared criterion: a failure when a
case broke) and `oloproof.compared_cases` (a testcase per case whose verdict moved: broken cases
fail, fixed cases pass; changed and one-run-only cases are skipped, saying why).
The runs of a suite's variants that one `oloproof run` made give each run's two suites in turn,
named with its variant.

Every text from a case goes through `escape.safe` (control and direction-changing characters
written as `\\uXXXX`, which also keeps characters XML 1.0 cannot hold out of the file), and the
XML writer escapes markup, so no case text can end an element or forge one.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from oloproof.document import (
    BaselineSummary,
    Comparison,
    DecisionRow,
    MetricRow,
    RuleState,
    RunDocument,
)
from oloproof.evaluators.judgment import CODE_VERDICTS
from oloproof.report.decision_words import decision_comparison
from oloproof.report.escape import safe
from oloproof.report.numbers import difference_text, executions_text, p_value_text
from oloproof.store.store import Store


@dataclass
class CaseRecord:
    """One case of a stored run, as the cases suite shows it."""

    case: str
    trials: int = 1
    failed: dict[str, int] = field(default_factory=dict)     # criterion -> failed trials
    missing: dict[str, str] = field(default_factory=dict)    # criterion -> first reason
    errors: list[tuple[str, str, str | None, int]] = field(default_factory=list)
    reasons: dict[str, str] = field(default_factory=dict)    # failed criterion -> reason


def case_records(store: Store, run_id: str) -> list[CaseRecord]:
    """Every case of a stored run with what it failed, missed and raised, in stored order."""
    record = store.run_record(run_id)
    suite = record["suite"] or {}
    criteria = list(suite.get("criteria") or [])
    trials = int(suite.get("trials", 1))
    cases: dict[str, CaseRecord] = {}
    for case_id, _digest, _key, outcome in store.iter_run_cases(run_id):
        case = cases.get(case_id)
        if case is None:
            case = cases[case_id] = CaseRecord(case_id, trials)
        reasons = outcome.get("r") or []
        for i, code in enumerate(outcome.get("c") or ""):
            name = criteria[i] if i < len(criteria) else f"criterion {i + 1}"
            reason = reasons[i] if i < len(reasons) else None
            if code == "F":
                case.failed[name] = case.failed.get(name, 0) + 1
                if reason and name not in case.reasons:
                    case.reasons[name] = str(reason)
            elif code == "M" and name not in case.missing:
                case.missing[name] = str(reason or CODE_VERDICTS["M"])
    for error in store.run_errors(run_id):
        case = cases.get(error["case"])
        if case is not None:
            case.errors.append((str(error["kind"]), str(error["message"]),
                                error.get("traceback"), int(error.get("trial") or 1)))
    return list(cases.values())


# Beyond what `safe` escapes: code points XML 1.0 cannot hold at all (lone surrogates, which a
# JSON string can carry, and U+FFFE / U+FFFF).
_NOT_XML = re.compile("[\ud800-\udfff\ufffe\uffff]")


def _text(value: object) -> str:
    text = safe(value)
    if _NOT_XML.search(text):
        text = _NOT_XML.sub(lambda m: f"\\u{ord(m.group()):04x}", text)
    return text


def _suite(parent: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(parent, "testsuite", name=name)


def _case(suite: ET.Element, name: str) -> ET.Element:
    return ET.SubElement(suite, "testcase", classname=suite.get("name", ""), name=_text(name))


def _finish(suite: ET.Element) -> tuple[int, int, int, int]:
    cases = suite.findall("testcase")
    counts = (len(cases), sum(1 for c in cases if c.find("failure") is not None),
              sum(1 for c in cases if c.find("error") is not None),
              sum(1 for c in cases if c.find("skipped") is not None))
    for key, value in zip(("tests", "failures", "errors", "skipped"), counts, strict=True):
        suite.set(key, str(value))
    return counts


def _document(root: ET.Element) -> str:
    totals = [0, 0, 0, 0]
    for suite in root.findall("testsuite"):
        for i, n in enumerate(_finish(suite)):
            totals[i] += n
    for key, value in zip(("tests", "failures", "errors", "skipped"), totals, strict=True):
        root.set(key, str(value))
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") \
        + "\n"


def _rule_message(decision: DecisionRow, metric: MetricRow | None,
                  baseline: BaselineSummary | None) -> str:
    paired = None
    if baseline is not None:
        paired = next((r for r in baseline.criteria if r.criterion == decision.metric), None)
    comparison = decision_comparison(decision, metric, paired)
    return (f"{decision.state}" + (f" · {comparison}" if comparison else "")
            + f" · reasons: {', '.join(decision.reasons) or 'none'}")


def _named(name: str, document: RunDocument | None, apart: bool) -> str:
    """A suite's name; among the runs of several variants, with its run's variant."""
    variant = document.system.variant if document is not None else None
    return f"{name}[{_text(variant)}]" if apart and variant else name


def rules_suite(root: ET.Element, document: RunDocument, block_on: Sequence[str],
                apart: bool = False) -> None:
    """The rules suite: a testcase per rule (see the module's text); `apart`, named with
    the run's variant, beside the other variants' runs."""
    suite = _suite(root, _named("oloproof.rules", document, apart))
    properties = ET.SubElement(suite, "properties")
    for name, value in (("run_id", document.run_id), ("status", str(document.status)),
                        ("gate", f"{document.gate.action} (exit {int(document.gate.exit_code)})"),
                        ("system", f"{document.system.name} {document.system.version}")):
        ET.SubElement(properties, "property", name=name, value=_text(value))
    if document.system.variant is not None:  # (docs/board.md)
        ET.SubElement(properties, "property", name="variant",
                      value=_text(document.system.variant))
    if document.subset is not None:
        ET.SubElement(properties, "property", name="subset",
                      value=_text(f"{document.subset.cases} of {document.subset.of} cases: "
                                  f"{document.subset.words}"))
    if document.rescored_from is not None:
        ET.SubElement(properties, "property", name="rescored_from",
                      value=_text(document.rescored_from))
    executions = document.executions
    if executions is not None:  # (docs/failures.md#accounting: errors by kind)
        ET.SubElement(properties, "property", name="executions",
                      value=_text(executions_text(executions, document.trials)))
        for kind, count in executions.errored.items():
            ET.SubElement(properties, "property", name=f"errored.{kind}", value=str(count))
    metrics = {m.id: m for m in document.metrics}
    for decision in document.decisions:
        case = _case(suite, decision.rule)
        message = _text(_rule_message(decision, metrics.get(decision.metric), document.baseline))
        text = _text(f"rule {decision.rule} on {decision.metric}: {message}")
        if decision.state == RuleState.FAIL:
            ET.SubElement(case, "failure", type=str(decision.state), message=message).text = text
        elif decision.state != RuleState.PASS:
            if decision.state in block_on:
                ET.SubElement(case, "failure", type=str(decision.state),
                              message=message).text = text + " (the policy blocks on it)"
            else:
                ET.SubElement(case, "skipped", message=message)
    if document.subset is not None:  # (docs/cli.md#running-part-of-the-suite)
        note = document.subset.note()
        ET.SubElement(_case(suite, "subset"), "failure", type="subset",
                      message=_text(note)).text = _text(
            f"{note}; chosen by {document.subset.words or 'the run'}: run the whole suite "
            "to decide a release")


def cases_suite(root: ET.Element, records: Iterable[CaseRecord],
                document: RunDocument | None = None, apart: bool = False) -> None:
    """The cases suite: a testcase per case (see the module's text)."""
    suite = _suite(root, _named("oloproof.cases", document, apart))
    for record in records:
        case = _case(suite, record.case)
        if record.errors:
            kind, message, _traceback, trial = record.errors[0]
            first_line = message.splitlines()[0] if message.strip() else kind
            where = f" (trial {trial})" if record.trials > 1 else ""
            body = "\n\n".join(
                f"{k}{f' (trial {t})' if record.trials > 1 else ''}: {m}"
                + (f"\n{tb}" if tb else "") for k, m, tb, t in record.errors)
            ET.SubElement(case, "error", type=_text(kind),
                          message=_text(f"{kind}{where}: {first_line}")).text = _text(body)
        if record.failed:
            parts = []
            for name, failed in record.failed.items():
                count = f" ({failed} of {record.trials} trials)" if record.trials > 1 else ""
                reason = record.reasons.get(name)
                parts.append(f"{name}{count}" + (f": {reason}" if reason else ""))
            ET.SubElement(case, "failure", type="failed",
                          message=_text("failed " + ", ".join(record.failed))).text = \
                _text("\n".join(parts))
        if record.missing and not record.errors:
            ET.SubElement(case, "system-out").text = _text(
                "missing: " + ", ".join(f"{name} ({why})" for name, why in
                                        record.missing.items()))
    for item in (document.not_rescored if document is not None else None) or ():
        ET.SubElement(_case(suite, item.case), "skipped",
                      message=_text(f"not rescored: {item.words}"))


def run_junit(document: RunDocument, records: Iterable[CaseRecord],
              block_on: Sequence[str]) -> str:
    """The JUnit XML of a run: the rules suite, then the cases suite."""
    root = ET.Element("testsuites", name=_text(f"oloproof {document.run_id}"))
    rules_suite(root, document, block_on)
    cases_suite(root, records, document)
    return _document(root)


def variant_runs_junit(runs: Sequence[tuple[RunDocument, Iterable[CaseRecord],
                                             Sequence[str]]]) -> str:
    """The JUnit XML of the runs of a suite's variants made by one `oloproof run`
    (docs/board.md#running-every-variant): each run's rules and cases suites in turn, each
    named with its variant (`oloproof.rules[model=large,prompt=v2]`)."""
    root = ET.Element("testsuites", name=_text(
        f"oloproof {len(runs)} runs: " + " ".join(d.run_id for d, _, _ in runs)))
    for document, records, block_on in runs:
        rules_suite(root, document, block_on, apart=True)
        cases_suite(root, records, document, apart=True)
    return _document(root)


def comparison_junit(comparison: Comparison) -> str:
    """The JUnit XML of a comparison (see the module's text)."""
    root = ET.Element("testsuites", name=_text(
        f"oloproof compare {comparison.baseline} {comparison.candidate}"))
    suite = _suite(root, "oloproof.comparison")
    for row in comparison.criteria:
        case = _case(suite, row.criterion)
        message = _text(
            f"{row.broken} broken, {row.fixed} fixed, {row.missing} missing of {row.paired} "
            f"paired; difference {difference_text(row)}; McNemar p {p_value_text(row.mcnemar_p)}")
        if row.broken:
            ET.SubElement(case, "failure", type="broken", message=message).text = _text(
                "broken: " + ", ".join(comparison.broken_cases.get(row.criterion, [])))
        else:
            ET.SubElement(case, "system-out").text = message
    cases = _suite(root, "oloproof.compared_cases")
    moved: dict[str, tuple[list[str], list[str]]] = {}
    for criterion, ids in comparison.broken_cases.items():
        for case_id in ids:
            moved.setdefault(case_id, ([], []))[0].append(criterion)
    for criterion, ids in comparison.fixed_cases.items():
        for case_id in ids:
            moved.setdefault(case_id, ([], []))[1].append(criterion)
    changes = {c.case: c for c in comparison.changes}
    for case_id, (broke, fixed) in moved.items():
        case = _case(cases, case_id)
        change = changes.get(case_id)
        detail = []
        if change is not None and change.parting is not None:
            detail.append(f"trajectories part at step {change.parting.step}: baseline "
                          f"{change.parting.baseline or '(ended)'} · candidate "
                          f"{change.parting.candidate or '(ended)'}")
        if broke:
            ET.SubElement(case, "failure", type="broken",
                          message=_text("broken: " + ", ".join(broke))).text = _text(
                "\n".join(["broken: " + ", ".join(broke)]
                          + (["fixed: " + ", ".join(fixed)] if fixed else []) + detail))
        else:
            ET.SubElement(case, "system-out").text = _text(
                "\n".join(["fixed: " + ", ".join(fixed), *detail]))
    for label, ids in (("changed: its input or expected changed, not paired",
                        comparison.changed),
                       ("in the baseline only", comparison.baseline_only),
                       ("in the candidate only", comparison.candidate_only)):
        for case_id in ids:
            ET.SubElement(_case(cases, case_id), "skipped", message=label)
    return _document(root)


def unfinished_junit(command: str, headline: str, message: str) -> str:
    """The JUnit XML of a command that has no results: one suite, `oloproof.command`, holding
    one testcase in error (`headline`, then `message`) — what stands in the file while a run
    goes and stays if it never finishes (docs/ci.md#output-files), so an earlier run's results
    never look current."""
    root = ET.Element("testsuites", name=_text(command))
    case = _case(_suite(root, "oloproof.command"), command)
    ET.SubElement(case, "error", type="no_results",
                  message=_text(headline)).text = _text(f"{headline}\n\n{message}")
    return _document(root)
