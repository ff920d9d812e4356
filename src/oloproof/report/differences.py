"""What differs between two sides of a case, computed once here for every report:
a metamorphic copy beside its source, a fault replay beside the recording.

The page draws these rows and never compares anything itself, so what it marks as differing is
what the evaluators compare: values with Python's `==` (as `same_output` and `same_state` do)
and actions as `AgentTrajectory.actions()` gives them (as `same_actions` does). In a text that
differs, whole words are marked (`declined` against `refunded`), never the characters two words
happen to share.
"""

from __future__ import annotations

import difflib
import json
import re
from typing import Any

from oloproof.recording.trajectory import trajectory_from_payload

#: Characters of one side's text in a row (the rest is cut, with "…").
CELL_TEXT = 400
#: Leaf paths flattened from one side of a value.
MAX_PATHS = 400

_TOKEN = re.compile(r"\w+|\s|[^\w\s]")

Parts = list[tuple[str, bool]]
"""A text as (piece, differs) pieces, in order."""


def word_marks(a: str, b: str) -> tuple[Parts, Parts]:
    """Both texts cut into pieces, the words (and signs) that differ marked; a space between two
    marked words is marked with them, so a changed phrase reads as one mark."""
    left, right = _TOKEN.findall(a), _TOKEN.findall(b)
    matcher = difflib.SequenceMatcher(a=left, b=right, autojunk=False)
    ours: list[tuple[str, bool]] = []
    theirs: list[tuple[str, bool]] = []
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        same = tag == "equal"
        ours.extend((t, not same) for t in left[i1:i2])
        theirs.extend((t, not same) for t in right[j1:j2])
    return _joined(ours), _joined(theirs)


def _joined(tokens: list[tuple[str, bool]]) -> Parts:
    marks = [m for _, m in tokens]
    for i in range(1, len(tokens) - 1):  # "a b" → mark the space between two marked words
        if not marks[i] and tokens[i][0].isspace() and marks[i - 1] and marks[i + 1]:
            marks[i] = True
    parts: Parts = []
    for (text, _), mark in zip(tokens, marks, strict=True):
        if parts and parts[-1][1] == mark:
            parts[-1] = (parts[-1][0] + text, mark)
        else:
            parts.append((text, mark))
    return parts


def _text(value: Any, limit: int = CELL_TEXT) -> str:
    """A value as a cell shows it: a string as itself, anything else as compact JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                           sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _flatten(value: Any, prefix: str = "", out: list[tuple[str, Any]] | None = None
             ) -> list[tuple[str, Any]]:
    """Leaf paths of a value (`order.items[0].sku`), keys in sorted order, at most MAX_PATHS."""
    found = [] if out is None else out
    if len(found) >= MAX_PATHS:
        return found
    if isinstance(value, dict) and value:
        for key in sorted(value, key=str):
            _flatten(value[key], f"{prefix}.{key}" if prefix else str(key), found)
    elif isinstance(value, list) and value:
        for i, item in enumerate(value):
            _flatten(item, f"{prefix}[{i}]", found)
    else:
        found.append((prefix, value))
    return found


def _cell(present: bool, value: Any, parts: Parts | None) -> dict[str, Any] | None:
    if not present:
        return None
    return {"text": _text(value), "parts": parts}


def _row(label: str, path: str, left: tuple[bool, Any], right: tuple[bool, Any]
         ) -> dict[str, Any]:
    (has_a, a), (has_b, b) = left, right
    differs = has_a != has_b or a != b
    parts_a = parts_b = None
    if differs and has_a and has_b:
        parts_a, parts_b = word_marks(_text(a), _text(b))
    return {"label": label, "path": path, "differs": differs,
            "left": _cell(has_a, a, parts_a), "right": _cell(has_b, b, parts_b)}


def _section(label: str, left: Any, right: Any) -> list[dict[str, Any]]:
    a, b = dict(_flatten(left)), dict(_flatten(right))
    paths = list(a) + [p for p in b if p not in a]
    return [_row(label, path, (path in a, a.get(path)), (path in b, b.get(path)))
            for path in paths]


def _actions(trajectory: Any) -> list[list[Any]] | None:
    if not isinstance(trajectory, dict):
        return None
    try:
        return trajectory_from_payload(trajectory).actions()
    except ValueError:  # not a valid trajectory: no actions to compare
        return None


def pair_rows(source: dict[str, Any], copy: dict[str, Any]) -> dict[str, Any]:
    """A metamorphic copy beside its source: input, output, actions and end state, one row per
    leaf path (per action), each saying whether it differs. End-state paths that agree are
    counted, not listed."""
    rows = _section("input", source.get("input"), copy.get("input"))
    rows += _section("output", source.get("output"), copy.get("output"))
    mine, theirs = _actions(source.get("trajectory")), _actions(copy.get("trajectory"))
    for i in range(max(len(mine or []), len(theirs or []))):
        a = mine[i] if mine is not None and i < len(mine) else None
        b = theirs[i] if theirs is not None and i < len(theirs) else None
        rows.append(_row("action", str(i + 1), (a is not None, a), (b is not None, b)))
    agreeing = 0
    if source.get("end_state") is not None or copy.get("end_state") is not None:
        for row in _section("end state", source.get("end_state"), copy.get("end_state")):
            if row["differs"]:
                rows.append(row)
            else:
                agreeing += 1
    return {"rows": rows, "agreeing_end_state_paths": agreeing}


def _step_key(step: dict[str, Any]) -> tuple[Any, ...]:
    return (step.get("kind"), step.get("agent"), step.get("to_agent"), step.get("tool_name"),
            step.get("arguments"), step.get("result"))


def replay_step_rows(recording: Any, replay: Any, after: int) -> list[bool]:
    """For each position after the checkpoint (step `after`): whether the recording's step and
    the fault replay's differ (a side that has ended differs from one that goes on)."""
    def steps(trajectory: Any) -> list[dict[str, Any]]:
        found = trajectory.get("steps") if isinstance(trajectory, dict) else None
        return [s for s in found or [] if isinstance(s, dict)
                and isinstance(s.get("index"), int) and s["index"] > after]

    left, right = steps(recording), steps(replay)
    return [i >= len(left) or i >= len(right) or _step_key(left[i]) != _step_key(right[i])
            for i in range(max(len(left), len(right)))]
