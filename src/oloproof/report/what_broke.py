"""What broke in a run, as every report says it (docs/failures.md#what-broke).

The run document's errors grouped by kind and the first line of their message, commonest
first, each case named once (with repeated trials a case that errored in three trials is one
case, three executions); a hint for the kinds whose cause is known; and the sentence that leads
when one kind dominates -- every execution errored (a run that never ran), or more than half
errored with one kind.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from oloproof.document import CaseError, ErrorKind, Executions

_NO_MODULE = re.compile(r"No module named '([^']+)'")


@dataclass
class ErrorGroup:
    """Errors of one kind with the same first line: how many executions, which cases (each
    once, in the order they came)."""

    kind: ErrorKind
    message: str
    executions: int = 0
    cases: list[str] = field(default_factory=list)


def error_groups(errors: Sequence[CaseError]) -> list[ErrorGroup]:
    """The errors grouped by (kind, first line of the message), commonest first."""
    groups: dict[tuple[str, str], ErrorGroup] = {}
    seen: dict[tuple[str, str], set[str]] = {}
    for error in errors:
        first = error.message.splitlines()[0] if error.message.strip() else ""
        key = (str(error.kind), first)
        group = groups.get(key)
        if group is None:
            group = groups[key] = ErrorGroup(error.kind, first)
            seen[key] = set()
        group.executions += 1
        if error.case not in seen[key]:
            seen[key].add(error.case)
            group.cases.append(error.case)
    return sorted(groups.values(), key=lambda g: (-g.executions, str(g.kind), g.message))


def hint(kind: ErrorKind, message: str, imported_from: str | None = None) -> str | None:
    """What usually causes errors of this kind, and what to do (None: nothing to add). For a
    run `imported_from` another harness, what happened there: nothing ran here, so nothing
    here (`system.timeout_s`, `system.retries`) changes it."""
    if imported_from is not None:
        return _imported_hint(kind, imported_from)
    if kind == ErrorKind.NO_TRACE:
        return ("the instrumentation is not installed, or tracing is disabled (e.g. "
                "OPENAI_AGENTS_DISABLE_TRACING is set): no span of the case reached Oloproof; "
                "see docs/traces.md")
    missing = _NO_MODULE.search(message)
    if kind == ErrorKind.SYSTEM_ERROR and ("ImportError" in message or missing):
        module = f" ({missing.group(1)!r})" if missing else ""
        return (f"an ImportError: a module the system imports{module} is not installed in "
                "this environment; install it where the system runs")
    if kind == ErrorKind.TIMEOUT:
        return ("raise system.timeout_s, or if the slowness is transient declare "
                "builtins:TimeoutError under system.retries.on (docs/failures.md#retries)")
    if kind == ErrorKind.SYSTEM_EXIT and "KeyboardInterrupt" in message:
        return ("the system (or a library inside it) raised KeyboardInterrupt itself, as "
                "Ctrl-C would; catch it where the system calls that code")
    if kind == ErrorKind.SYSTEM_EXIT:
        return ("the system (or a tool inside it: argparse on arguments it refuses) called "
                "sys.exit; catch SystemExit where it calls the tool")
    if kind == ErrorKind.PROCESS_EXIT:
        return ("on `executor: local` the system runs in the command's own process: "
                "`executor: processes` keeps a process the system ends to one worker; or "
                "have the tool that calls os._exit raise instead")
    if kind == ErrorKind.WORKER_LOST:
        return ("the worker process died twice while running these cases (killed, crashed, "
                "out of memory); the next `oloproof run` tries them again")
    if kind == ErrorKind.SYSTEM_ERROR and ("RateLimit" in message or "429" in message):
        return ("a rate limit: declare its class under system.retries.on to wait and retry "
                "(docs/failures.md#retries)")
    return None


def _imported_hint(kind: ErrorKind, harness: str) -> str:
    if kind == ErrorKind.TIMEOUT:
        return (f"{harness} recorded this timeout in its own run: the agent or the verifier "
                f"ran past {harness}'s time limit there (the message names which); a longer "
                f"limit is {harness}'s setting, and the trial is missing here, not failed")
    if kind == ErrorKind.LIMIT:
        return (f"{harness} stopped the agent at a limit of its own run (the message says "
                f"which: messages, tokens, time, context); the limit is {harness}'s setting, "
                f"and the trial is missing here, not failed")
    return (f"{harness} recorded this error in its own run (its message and traceback); "
            f"the trial is missing here, not failed")


def ended_by_the_system(groups: Sequence[ErrorGroup]) -> list[str]:
    """The cases whose system called os._exit (docs/failures.md#a-system-that-ends-the-process):
    such a run is failed, whatever else its cases did."""
    return [case for g in groups if g.kind == ErrorKind.PROCESS_EXIT for case in g.cases]


def leading(executions: Executions | None, groups: Sequence[ErrorGroup],
            imported_from: str | None = None) -> str | None:
    """The sentence "What broke" leads with when one kind dominates the run: the system
    called os._exit (the run is failed), every execution errored (nothing was measured), or
    more than half errored with one kind."""
    ended = ended_by_the_system(groups)
    if ended:
        shown = ", ".join(ended[:8]) + (f" (+{len(ended) - 8} more)" if len(ended) > 8 else "")
        return (f"the system called os._exit while running case {shown}, which would have "
                "ended the run without a word; so the run is failed (exit 5)")
    # (a snapshot that failed leaves its case's output judged: not what leads)
    groups = [g for g in groups if g.kind != ErrorKind.SNAPSHOT_FAILED]
    if executions is None or not executions.cases or not groups:
        return None
    total = executions.cases
    by_kind: dict[ErrorKind, int] = {}
    for group in groups:
        by_kind[group.kind] = by_kind.get(group.kind, 0) + group.executions
    kind, count = max(by_kind.items(), key=lambda item: (item[1], str(item[0])))
    commonest = groups[0]
    said = hint(commonest.kind, commonest.message, imported_from)
    tail = f": {commonest.message}" + (f" (hint: {said})" if said else "")
    if executions.nothing_measured:
        return (f"every execution errored ({total:,} of {total:,}), so nothing was measured; "
                f"the commonest error is {commonest.kind}{tail}")
    if count * 2 > total:
        return f"{count:,} of {total:,} executions errored with {kind}{tail}"
    return None
