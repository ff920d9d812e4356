"""Whether a value can be stored as JSON as it is, and if not, why, in words.

The store writes its columns with pydantic-core's serialiser (`store.sql.dumps`), which refuses
nesting deeper than `MAX_DEPTH` levels, and SQLite's text is UTF-8, which has no form for a
lone surrogate (`"\\ud800"`, half of a UTF-16 pair, which `json.loads` reads as a one-character
string). JSON itself has no NaN or infinity, and no sets, bytes or objects. A value that passes
`storable_problem` is stored and read back as it is.

The check walks the value in Python, so a caller on a hot path tries its fast parse or
serialisation first and asks here only when that refused (or to explain why it did).
"""

from __future__ import annotations

import math
from typing import Any

MAX_DEPTH = 255
"""The deepest nesting of arrays and objects the store keeps (`[]` is one level, `[[]]` two, and
`[[1]]` three: a value inside the innermost container counts as a level of its own):
pydantic-core's serialiser refuses a 256th (tests/test_storable.py checks it still does)."""

class Unstorable(ValueError):
    """A value the store cannot keep as it is; `problem` says what and where, in words
    (`output.note holds a lone surrogate \\ud800 …`)."""

    def __init__(self, problem: str) -> None:
        super().__init__(problem)
        self.problem = problem


def escaped(text: str) -> str:
    """`text` as the store can keep it: each lone surrogate written out as `\\udXXX` (an
    exception's message or traceback is kept so, rather than lost)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return text


_SCALARS = (str, int, float, bool, type(None))
# Keys JSON writers turn into text (json.dumps and pydantic-core alike): `{1: "a"}` → `{"1":"a"}`.
_KEYS = (str, int, float, bool, type(None))


def _where(path: tuple[str | int, ...]) -> str:
    """`input.items[2].name`; the root is `the value`; long paths are cut after five parts."""
    if not path:
        return "the value"
    out = ""
    for part in path[:5]:
        out += f"[{part}]" if isinstance(part, int) else ("." if out else "") + str(part)
    return out + ("…" if len(path) > 5 else "")


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        code = ord(text[exc.start])
        return (f"holds a lone surrogate \\u{code:04x} (half of a UTF-16 pair, not a "
                "character), which UTF-8 cannot store; write the character itself, or both "
                "halves of its pair")
    return None


def storable_problem(value: Any, root: tuple[str | int, ...] = ()) -> str | None:
    """Why `value` cannot be stored as JSON as it is — `input.deep[0][0][0][0]… nests deeper
    than the 255 levels the store keeps`, `input.name holds a lone surrogate \\ud800 …`,
    `output.score holds NaN …` — or None when it can. `root` is the path `value` is at (its
    words start there)."""
    # Depth first, in document order: a stack of (value, depth, path), children pushed reversed.
    stack: list[tuple[Any, int, tuple[str | int, ...]]] = [(value, 0, root)]
    while stack:
        item, depth, path = stack.pop()
        depth += 1  # (a value is one level below its container; the serialiser counts both)
        if depth > MAX_DEPTH:
            return (f"{_where(path)} nests deeper than the {MAX_DEPTH} levels of arrays and "
                    "objects the store keeps; flatten it")
        if isinstance(item, dict | list | tuple):
            if isinstance(item, dict):
                children: list[tuple[Any, int, tuple[str | int, ...]]] = []
                for key, child in item.items():
                    if not isinstance(key, _KEYS):
                        return (f"{_where(path)} has a key of type {type(key).__name__}, which "
                                "JSON has no form for (a key is text)")
                    if isinstance(key, str):
                        problem = _text_problem(key)
                        if problem is not None:
                            return f"a key of {_where(path)} {problem}"
                    children.append((child, depth, (*path, str(key))))
                stack.extend(reversed(children))
            else:
                stack.extend((item[i], depth, (*path, i)) for i in range(len(item) - 1, -1, -1))
        elif isinstance(item, str):
            problem = _text_problem(item)
            if problem is not None:
                return f"{_where(path)} {problem}"
        elif isinstance(item, float):
            if not math.isfinite(item):
                shown = "NaN" if math.isnan(item) else "Infinity" if item > 0 else "-Infinity"
                return (f"{_where(path)} holds {shown}, which JSON has no form for; write a "
                        "number or null")
        elif not isinstance(item, _SCALARS):
            return (f"{_where(path)} holds a value of type {type(item).__name__}, which JSON "
                    "has no form for")
    return None
