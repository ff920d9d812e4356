"""The terminal report of a run (docs/cli.md#oloproof-run), from the run's document only.

In order: the run (and which of several runs of its version it is), what broke, the gate,
Decisions (each with the comparison it made), Metrics, missing and excluded cases by reason,
transforms, Slices (the rows that differ from the rest of the suite; `--slices all` for every
row), the failing cases and where to read more, the cache, and the limits that apply to this
suite. Tables fit the console (`layout`): drawn as
tables when they fit, stacked when they do not, never cut. Every case-derived text is shown with
invisible and direction-changing characters escaped (`escape`).

The width is the terminal's; when the output is not a terminal (a pipe, a file, CI) it is
`$COLUMNS` if set, else 80.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.console import Console
from rich.text import Text

from oloproof.analysis.conversations import NAMED_CASES
from oloproof.document import (
    CaseError,
    Conversations,
    ErrorKind,
    Executions,
    FailingCases,
    RunDocument,
)
from oloproof.report.escape import safe_line
from oloproof.report.layout import (
    DEFAULT_WIDTH,
    Column,
    make_console,
    print_wrapped,
    render_table,
    table_width,
)
from oloproof.report.numbers import (
    NO_BOUND,
    conversations_text,
    estimate_text,
    executions_text,
    interval_text,
    n_text,
    usage_text,
)
from oloproof.report.reruns import record_lines
from oloproof.report.run_list import gate_words, kind_words, utc_text
from oloproof.report.run_tables import (
    SliceMode,
    cell,
    print_commands,
    render_decisions,
    render_judge_checks,
    render_metrics,
    render_missing_and_excluded,
    render_slices,
    render_transforms,
)
from oloproof.report.trial_counts import criteria_text
from oloproof.report.what_broke import error_groups, hint, leading

__all__ = ["DEFAULT_WIDTH", "NO_BOUND", "estimate_text", "interval_text", "make_console",
           "n_text", "render_decisions", "render_run"]



_ACTION_STYLE = {"ALLOW": "bold green", "WARN": "bold yellow", "BLOCK": "bold red"}


def render_run(document: RunDocument, console: Console, *,
               slices: SliceMode = "differing") -> None:
    """Print the whole report, in the order the module's text gives."""
    status = document.status
    nothing = document.executions is not None and document.executions.nothing_measured
    ended = any(e.kind == ErrorKind.PROCESS_EXIT for e in document.errors)
    print_wrapped(console, cell(
        f"Run {document.run_id} · {status}"
        + ("" if status == "complete" else " (nothing was measured: every execution errored)"
           if nothing else " (its system called os._exit, which would have ended it)" if ended
           else " (did not complete: figures cover what finished)")
        + f" · {document.system.name} {document.system.version}"
        + (f" ({document.system.variant})" if document.system.variant else "")
        + f" · {document.cases} case{'' if document.cases == 1 else 's'}"
        + subset_text(document)
    ))
    render_record(document, console)
    render_rescored(document, console)
    first = nothing or ended
    if first:  # a run that never ran, or that its system ended: why comes first
        render_errors(document.errors, console, document.run_id, document.executions,
                      document.imported_from)
    for warning in document.warnings:
        print_wrapped(console, cell(f"Warning: {warning}", "yellow"))
    if not first:
        render_errors(document.errors, console, document.run_id, document.executions,
                      document.imported_from)
    render_simulator_failures(document.conversations, console, document.run_id)
    render_gate(document, console)
    render_decisions(document.decisions, console, document.metrics, document.baseline)
    if document.baseline is not None:
        from oloproof.report.comparison import render_baseline_summary

        render_baseline_summary(document.baseline, console)
    render_metrics(document.metrics, console)
    render_missing_and_excluded(document.metrics, console, document.expected_key_hints)
    render_judge_checks(document.metrics, console)
    render_transforms(document.transforms, console)
    render_slices(document.slices, console, mode=slices, run_id=document.run_id)
    if document.failing_cases is not None:
        render_failing(document.failing_cases, console, document.run_id, document.trials or 1)
    if document.executions is not None:
        print_wrapped(console, "Executions: " + executions_text(document.executions,
                                                                 document.trials))
    if document.conversations is not None:
        print_wrapped(console, "Conversations: " + conversations_text(document.conversations))
    cache = document.cache
    rerun = (f" ({cache.rerun} re-run: errored in {cache.rerun_from})" if cache.rerun
             else "")
    print_wrapped(console,
                  f"Cache: execution {cache.execution.hit} hit/{cache.execution.miss} miss"
                  f"{rerun}; judgment {cache.judgment.hit} hit/{cache.judgment.miss} miss"
                  + (f"; judge {cache.judge.hit} hit/{cache.judge.miss} miss"
                     if cache.judge is not None else ""))
    render_usage(document, console)
    render_execution(document, console)
    render_limits(document.limits, console)


def render_record(document: RunDocument, console: Console) -> None:
    """Which of several complete runs of its suite and version the run is (`Record: run 3 of
    desk 1.4`), when it is not the only one (docs/limits.md#re-runs-and-re-drawn-samples)."""
    if document.record is None:
        return
    head, *rest = record_lines(document.run_id, document.system, document.record)
    print_wrapped(console, cell(head, "bold" if document.record.resample else ""))
    for line in rest:
        print_wrapped(console, cell(line), 2, 2)


def render_gate(document: RunDocument, console: Console) -> None:
    """`Gate: ALLOW (exit 0)`; for a run of part of the suite, that it is not a release
    decision (docs/cli.md#running-part-of-the-suite)."""
    gate = document.gate
    print_wrapped(console, Text.assemble(
        "Gate: ", (gate.action, _ACTION_STYLE.get(gate.action, "")),
        f" (exit {int(gate.exit_code)})",
        (f" · {document.subset.note()}", "yellow") if document.subset is not None else "",
    ))


def subset_text(document: RunDocument) -> str:
    """` · subset: --case req-013` after the run line's cases, for a run of part of the suite
    (docs/cli.md#running-part-of-the-suite); else nothing."""
    subset = document.subset
    if subset is None:
        return ""
    return f" · subset: {subset.words}" if subset.words else " · subset"


def render_rescored(document: RunDocument, console: Console) -> None:
    """A rescored run (docs/cli.md#oloproof-rescore): the run it scored, and the cases it left
    out, by reason."""
    if document.rescored_from is None:
        return
    print_wrapped(console, f"Rescored from {document.rescored_from}: its stored outputs scored "
                  "by the suite's current evaluators and judges; no system was called")
    listed = document.not_rescored or []
    if not listed:
        return
    print_wrapped(console, Text(f"Not rescored: {len(listed)} case(s), listed by reason",
                                style="yellow"), 2, 4)
    for words, cases in document.not_rescored_by_reason():
        print_wrapped(console, cell(f"{words}: {shown_ids(cases)}"), 4, 2)


def shown_ids(ids: Sequence[str], shown: int = 8) -> str:
    """Case ids as a list names them: the first `shown`, then how many more."""
    return ", ".join(safe_line(i) for i in ids[:shown]) + (
        f" (+{len(ids) - shown} more)" if len(ids) > shown else "")


def render_usage(document: RunDocument, console: Console) -> None:
    """The run's token and cost totals (docs/traces.md#tokens-and-cost), when any case recorded
    them."""
    if document.usage is not None:
        for line in usage_text(document.usage).splitlines():
            print_wrapped(console, line)


def render_execution(document: RunDocument, console: Console) -> None:
    """Where the cases ran, when it was anything but one worker in this process, and how many
    cases were tried again because their worker was lost
    (docs/scaling.md#ray-a-local-instance-or-a-cluster)."""
    execution = document.execution
    if execution is None or (execution.executor == "local" and execution.workers == 1
                             and not execution.retried):
        return
    line = f"Workers: {execution.workers} ({execution.executor})"
    if execution.retried:
        line += (f"; {execution.retried} case(s) retried on another worker after theirs was "
                 "lost")
    print_wrapped(console, line)


def render_errors(errors: Sequence[CaseError], console: Console, run_id: str = "latest",
                  executions: Executions | None = None,
                  imported_from: str | None = None) -> None:
    """What broke: errored cases grouped by kind and first line of the message, commonest
    first, each case named once, with a hint for the kinds whose cause is known; led by the
    kind that dominates the run, when one does (`what_broke.leading`)."""
    if not errors:
        return
    groups = error_groups(errors)
    lead = leading(executions, groups, imported_from)
    errored = {case for g in groups if g.kind != ErrorKind.SNAPSHOT_FAILED for case in g.cases}
    failed_calls = sum(g.executions for g in groups if g.kind != ErrorKind.SNAPSHOT_FAILED)
    no_state = {case for g in groups if g.kind == ErrorKind.SNAPSHOT_FAILED for case in g.cases}
    said = [lead] if lead else []
    if errored:
        said.append(f"{len(errored)} case(s) errored"
                    + (f" ({failed_calls} executions)" if failed_calls != len(errored) else "")
                    + "; they count as missing for every criterion that needed their output")
    if no_state:
        # The output of such a case was judged: only what reads the end state lacks it.
        said.append(f"{len(no_state)} case(s) left no end state (snapshot() failed); their "
                    "output is judged, and they count as missing for every criterion that "
                    "reads the end state")
    print_wrapped(console, Text("What broke: " + ". ".join(said), style="bold red"))
    for group in groups:
        shown = ", ".join(safe_line(c) for c in group.cases[:8]) + (
            f" (+{len(group.cases) - 8} more)" if len(group.cases) > 8 else "")
        print_wrapped(console, cell(f"{group.kind} × {group.executions}: {group.message}"),
                      2, 4)
        print_wrapped(console, Text(f"cases: {shown}"), 4, 2)
        said_hint = hint(group.kind, group.message, imported_from)
        if said_hint is not None and not (lead and said_hint in lead):
            print_wrapped(console, Text(f"hint: {said_hint}"), 4, 2)
    print_commands(console, "Each with its traceback:", f"oloproof inspect {run_id} --failures")


def failed_cases_text(cases: Sequence[str], count: int, shown: int = 8) -> str:
    """The cases of `count` simulated conversations that failed one check, as the run names
    them (distinct ids, the first `NAMED_CASES`): the first `shown`, how many more, and, when
    the conversations outnumber the cases, that the others are their other trials."""
    text = ", ".join(safe_line(c) for c in cases[:shown])
    capped = len(cases) >= NAMED_CASES
    if len(cases) > shown:
        text += f" (+{len(cases) - shown}{'+' if capped else ''} more)"
    if count > len(cases) and not capped:
        text += f" · {count} conversations over their trials"
    return text


def render_simulator_failures(conversations: Conversations | None, console: Console,
                              run_id: str = "latest") -> None:
    """What broke, the simulators' part
    (docs/conversations.md#the-simulator-is-audited-never-trusted): the simulated
    conversations whose simulator failed a check, by the first check failed, with their cases
    — the simulator's failures, never the agent's."""
    if conversations is None or not conversations.failed:
        return
    failed = conversations.failed
    print_wrapped(console, Text(
        f"What broke: the simulator failed a check in {failed} of "
        f"{conversations.simulated} simulated conversation(s): the simulator's failure, not "
        "the agent's; each case counts as missing for every criterion of the agent "
        "(simulator:<check>)", style="bold red"))
    for check, count in conversations.failures.items():
        shown = failed_cases_text(conversations.failed_cases.get(check) or [], count)
        print_wrapped(console, cell(f"{check} × {count}"), 2, 4)
        print_wrapped(console, Text(f"cases: {shown}"), 4, 2)
    first = next(iter(conversations.failed_cases.values()), [])
    if first:
        print_commands(console, "Each conversation, turn by turn:",
                  f"oloproof inspect {run_id} --case {first[0]}")


def render_failing(failing: FailingCases, console: Console, run_id: str,
                   trials: int = 1) -> None:
    """The failing cases (up to ten, in case order) with what each failed — with trials, on
    how many of its `trials` — and where to read more."""
    if not failing.total:
        return
    n = len(failing.first)
    head = f"Failing cases: {failing.total} failed a criterion or errored" + (
        f" (the first {n} by case id)" if n < failing.total else "")
    print_wrapped(console, Text(head, style="bold"))
    for case in failing.first:
        line = cell(case.case)
        parts = []
        if case.error:
            parts.append(f"errored ({safe_line(case.error)})")
        if case.failed:
            parts.append("failed " + criteria_text(case.failed, case.failed_trials, trials))
        if case.missing:
            parts.append("missing " + criteria_text(case.missing, case.missing_trials, trials))
        line.append(": " + "; ".join(parts))
        print_wrapped(console, line, 2, 4)
    print_commands(console, "Each whole, then every case with its verdicts:",
              f"oloproof inspect {run_id} --failures", f"oloproof cases {run_id}")


def render_runs(rows: Sequence[dict[str, Any]], console: Console) -> None:
    """`oloproof runs`: newest first, each with its gate in words, its system and version, how
    many trials each case ran and the run's tags (so two runs of one version, or a run of one
    trial and one of three, can be told apart)."""
    table = []
    for r in rows:
        words = gate_words(str(r["status"]), (r.get("summary") or {}).get("gate"))
        cases = str(r["n_cases"]) if r.get("n_cases") is not None else "—"
        kind = kind_words(r)
        if kind:  # (a subset or a rescored run: docs/cli.md#running-part-of-the-suite)
            words += f" · {kind}"
        trials = int(r.get("trials") or 1)
        tags = ", ".join(r.get("tags") or ())
        table.append([Text(r["run_id"]), Text(utc_text(r.get("started_at"))),
                      Text(str(r["status"])),
                      cell(f"{r['system_name']} {r['system_version']}"
                           + (f" ({r['variant']})" if r.get("variant") else "")),
                      Text(cases), Text(f"{trials}"), cell(tags), Text(words)])
    columns = [Column(c) for c in ("Run", "Started", "Status", "System", "Cases", "Trials",
                                   "Tags", "Gate")]
    title = Text("Runs (newest first)", style="bold")
    if table_width(columns, table) <= console.width:
        render_table(console, title, columns, table)
        return
    # Stacked: the run and its gate on one line, the rest on the next.
    stacked = []
    for row, r in zip(table, rows, strict=True):
        trials = int(r.get("trials") or 1)
        text = Text(f"{row[1].plain} · {row[2].plain} · {row[3].plain} · {row[4].plain} cases "
                    f"× {trials} trial{'s' if trials != 1 else ''}")
        if row[6].plain:
            text.append(" · tagged ").append(row[6])
        stacked.append([row[0], row[7], text])
    render_table(console, title, [Column("Run"), Column("Gate"),
                                  Column("Started · status · system · cases × trials · tags",
                                         stack=True)],
                 stacked)


def render_limits(limits: Sequence[str], console: Console) -> None:
    if not limits:
        return
    print_wrapped(console, Text("What this run cannot tell you:", style="bold"))
    for line in limits:
        print_wrapped(console, f"• {line}", 2, 2)
