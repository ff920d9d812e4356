"""Matching called tools against `expected.tools` (docs/agents-and-tools.md#the-agent-evaluators),
for `agent_tool_sequence`.

An expected entry is a tool name (any arguments) or `{"name": ..., "arguments": {...}}`. A
call matches an entry when the names agree and, under `arguments: exact`, its arguments equal
the entry's, or under `subset`, every path the entry gives holds that value in the call.

Four modes, each judging a complete trace and, on a truncated one (where later calls may
follow), giving a settled verdict only when the recorded calls already decide it:

- `exact`: the calls match the entries one to one, in order. Truncated: fail once a call
  departs or there are more calls than entries, else missing.
- `unordered`: one to one, in any order. Truncated: fail once a call fits no entry left.
- `subset`: each call matches an entry later than the previous call's (calls ⊆ expected, in
  order). Truncated: fail once a call fits no later entry, else missing.
- `superset`: the entries match calls in order, other calls between allowed (expected ⊆
  calls). Truncated: pass once every entry is matched (later calls cannot undo it), else
  missing; never fails.

A call recorded without arguments (a trace with content capture off) cannot be compared with
an entry that gives arguments: the case is judged both ways, and when the verdicts differ it is
missing (`arguments_not_recorded`), never failed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, NamedTuple

from oloproof.digest import canonical_json
from oloproof.recording.trajectory import AgentStep, AgentTrajectory

Mode = Literal["exact", "unordered", "subset", "superset"]
ArgumentRule = Literal["ignore", "exact", "subset"]
Verdict = Literal["passed", "failed", "missing"]
_ALIGNMENT_ROWS = 100


class ExpectedCall(NamedTuple):
    """One entry of `expected.tools`: a tool, and the arguments it must have (None: any)."""

    name: str
    arguments: dict[str, Any] | None = None
    given: Any = None  # the entry as the case wrote it
    arguments_text: str | None = None  # canonical JSON of `arguments`, made once per entry

    @staticmethod
    def of(entry: Any) -> ExpectedCall:
        if isinstance(entry, str):
            return ExpectedCall(entry, None, entry)
        if isinstance(entry, Mapping):
            arguments = entry.get("arguments")
            if arguments is None:
                return ExpectedCall(str(entry["name"]), None, entry)
            return ExpectedCall(str(entry["name"]), dict(arguments), entry,
                                canonical_json(arguments))
        return ExpectedCall(str(entry), None, entry)


def contains(whole: Any, part: Any) -> bool:
    """True when every leaf path of `part` holds the same value in `whole` (objects nest;
    a list or scalar must be equal whole)."""
    if isinstance(part, Mapping):
        return isinstance(whole, Mapping) and all(
            key in whole and contains(whole[key], value) for key, value in part.items()
        )
    return canonical_json(whole) == canonical_json(part)


def call_matches(call: AgentStep, key: tuple[str, str], want: ExpectedCall,
                 rule: ArgumentRule) -> bool | None:
    """Whether a call fits an entry; None when it cannot be told (arguments not recorded).

    `key` is the call's identity from `AgentTrajectory.call_keys()` (tool name, canonical
    arguments text), so no call's arguments are serialised again here.
    """
    if call.tool_name != want.name:
        return False
    if rule == "ignore" or want.arguments is None:
        return True
    if call.arguments is None:
        return None
    if rule == "exact":
        return key[1] == want.arguments_text
    return contains(call.arguments, want.arguments)


@dataclass(slots=True)
class Outcome:
    """A verdict with its reason and the details a judgment shows."""

    verdict: Verdict
    reason: str | None
    details: dict[str, Any]


# Whether call i fits entry j, as fits[i][j] (a call that cannot be told is given a side).
Fits = Sequence[Sequence[bool]]
# One row of an alignment: (call position or None, entry position or None, status).
Pair = tuple[int | None, int | None, str]


def judge_calls(mode: Mode, rule: ArgumentRule, expected: Sequence[ExpectedCall],
                trajectory: AgentTrajectory) -> Outcome:
    """The verdict of `agent_tool_sequence` for one case (see the module docstring)."""
    facts = trajectory.step_facts()
    calls, truncated = facts.calls, trajectory.truncated
    table: list[list[bool | None]]
    if rule == "ignore":  # names alone decide, and every call can be told
        table = [[name == e.name for e in expected] for name in facts.names]
        unknown = False
    else:
        # Only `arguments: exact` reads a call's canonical text: `subset` needs none made.
        keys = facts.call_keys if rule == "exact" else [("", "")] * len(calls)
        table = [[call_matches(c, key, e, rule) for e in expected]
                 for c, key in zip(calls, keys, strict=True)]
        unknown = any(None in row for row in table)
    judge = _MODES[mode]
    named = {"expected": [e.given for e in expected], "called": list(facts.names)}
    if not unknown:
        sure = judge(expected, calls, table, truncated, named)  # type: ignore[arg-type]
    else:  # judged both ways: every untold call not fitting, then fitting
        sure = judge(expected, calls, [[v is True for v in row] for row in table], truncated,
                     named)
        hopeful = judge(expected, calls, [[v is not False for v in row] for row in table],
                        truncated, named)
        if hopeful.verdict != sure.verdict:
            sure = Outcome("missing", "arguments_not_recorded", sure.details)
    sure.details["alignment"] = _rows(sure.details["alignment"], named["expected"], calls,
                                      table, rule)
    sure.details.update(mode=mode, arguments=rule)
    return sure


def _rows(pairs: list[Pair], given: list[Any], calls: Sequence[AgentStep],
          table: list[list[bool | None]], rule: ArgumentRule) -> list[dict[str, Any]]:
    """The alignment a judgment shows: the first 100 pairs as rows (a pair whose call could
    not be told from the entry marked `arguments_not_recorded`), then how many more."""
    out: list[dict[str, Any]] = []
    arguments = rule != "ignore"
    for i, j, status in pairs[:_ALIGNMENT_ROWS]:
        call = calls[i] if i is not None else None
        if i is not None and j is not None and table[i][j] is None:
            status = "arguments_not_recorded"
        row: dict[str, Any] = {
            "expected": given[j] if j is not None else None,
            "step": call.index if call is not None else None,
            "called": call.tool_name if call is not None else None,
        }
        if arguments:
            row["arguments"] = call.arguments if call is not None else None
        row["status"] = status
        out.append(row)
    if len(pairs) > _ALIGNMENT_ROWS:
        out.append({"status": "more", "rows": len(pairs) - _ALIGNMENT_ROWS})
    return out


def _exact(expected: Sequence[ExpectedCall], calls: Sequence[AgentStep], fits: Fits,
           truncated: bool, named: dict[str, Any]) -> Outcome:
    n, m = len(calls), len(expected)
    both = min(n, m)
    parted = both  # where a recorded call first differs from its entry
    pairs: list[Pair] = []
    for k in range(both):
        if fits[k][k]:
            pairs.append((k, k, "matched"))
        else:
            pairs.append((k, k, "different"))
            if parted == both:
                parted = k
    for k in range(both, n):
        pairs.append((k, None, "unexpected"))
    for k in range(both, m):
        pairs.append((None, k, "not_called"))
    details = {"ordered": True, **named, "alignment": pairs}
    departed = parted < n  # a recorded call already differs, or comes past the entries
    if not truncated and not departed and n == m:
        return Outcome("passed", None, details)
    if truncated and not departed:
        return Outcome("missing", "truncated", details)
    return Outcome("failed", "sequence_differs", {**details, "diverges_at": parted})


def _unordered(expected: Sequence[ExpectedCall], calls: Sequence[AgentStep], fits: Fits,
               truncated: bool, named: dict[str, Any]) -> Outcome:
    pair = _max_matching(len(calls), len(expected), fits)  # call index -> entry index
    taken = set(pair.values())
    rows: list[Pair] = [(i, pair.get(i), "matched" if i in pair else "unexpected")
                        for i in range(len(calls))]
    rows += [(None, j, "not_called") for j in range(len(expected)) if j not in taken]
    extra = Counter(calls[i].tool_name or "" for i in range(len(calls)) if i not in pair)
    lacking = Counter(expected[j].name for j in range(len(expected)) if j not in taken)
    details = {"ordered": False, **named, "alignment": rows}
    if not extra and not lacking and not truncated:
        return Outcome("passed", None, details)
    if truncated and not extra:
        return Outcome("missing", "truncated", {**details, "not_yet_called": dict(lacking)})
    return Outcome("failed", "calls_differ", {
        **details, "called_more_than_expected": dict(sorted(extra.items())),
        "called_less_than_expected": dict(sorted(lacking.items())),
    })


def _max_matching(n: int, m: int, fits: Fits) -> dict[int, int]:
    """A largest one-to-one pairing of calls with entries they fit (augmenting paths)."""
    entry_of: dict[int, int] = {}  # entry -> call

    def place(call: int, seen: set[int]) -> bool:
        for j in range(m):
            if j not in seen and fits[call][j]:
                seen.add(j)
                if j not in entry_of or place(entry_of[j], seen):
                    entry_of[j] = call
                    return True
        return False

    for i in range(n):
        place(i, set())
    return {call: entry for entry, call in entry_of.items()}


def _subset(expected: Sequence[ExpectedCall], calls: Sequence[AgentStep], fits: Fits,
            truncated: bool, named: dict[str, Any]) -> Outcome:
    # Greedy, each call to the earliest entry after the last one used: it finds a placement
    # whenever one exists.
    rows: list[Pair] = []
    j, outside = 0, None
    for i in range(len(calls)):
        k = next((k for k in range(j, len(expected)) if fits[i][k]), None)
        if k is None:
            rows.append((i, None, "unexpected"))
            outside = i if outside is None else outside
            continue
        rows += [(None, s, "not_called") for s in range(j, k)]
        rows.append((i, k, "matched"))
        j = k + 1
    rows += [(None, s, "not_called") for s in range(j, len(expected))]
    details = {**named, "alignment": rows}
    if outside is not None:
        return Outcome("failed", "called_outside_expected",
                       {**details, "first_outside": calls[outside].index})
    if truncated:
        return Outcome("missing", "truncated", details)
    return Outcome("passed", None, details)


def _superset(expected: Sequence[ExpectedCall], calls: Sequence[AgentStep], fits: Fits,
              truncated: bool, named: dict[str, Any]) -> Outcome:
    rows: list[Pair] = []
    j = 0
    for i in range(len(calls)):
        if j < len(expected) and fits[i][j]:
            rows.append((i, j, "matched"))
            j += 1
        else:
            rows.append((i, None, "other_call"))
    rows += [(None, s, "not_called") for s in range(j, len(expected))]
    details = {**named, "alignment": rows}
    if j == len(expected):
        return Outcome("passed", None, details)  # later calls cannot undo it
    not_called = [e.given for e in expected[j:]]
    if truncated:
        return Outcome("missing", "truncated", {**details, "not_yet_called": not_called})
    return Outcome("failed", "expected_not_called", {**details, "not_called": not_called})


# Each mode: (entries, calls, fits, truncated, the entries and called names for the details).
_MODES: dict[str, Callable[[Sequence[ExpectedCall], Sequence[AgentStep], Fits, bool,
                            dict[str, Any]], Outcome]] = {
    "exact": _exact, "unordered": _unordered, "subset": _subset, "superset": _superset,
}
