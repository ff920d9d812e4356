"""A criterion that excluded cases for an `expected` key they lack while they hold one of a
similar name (`analysis/expected_keys.py`), in words, for the terminal and the Markdown
summary."""

from __future__ import annotations

from collections.abc import Callable

from oloproof.document import ExpectedKeyHint
from oloproof.report.escape import safe_line


def _code(value: str) -> str:
    # Case-derived names inside a code span: a backtick would end it.
    return "`" + safe_line(value).replace("`", "'") + "`"


def expected_key_text(hint: ExpectedKeyHint, name: Callable[[str], str] = safe_line) -> str:
    """`3 cases excluded from agent_tool_sequence because `expected.tools` is absent: did you
    mean `tool`? (3 cases have `expected.tool`)`; `name` escapes the criterion's name."""
    cases = f"{hint.excluded} case{'s' if hint.excluded != 1 else ''}"
    holding = "cases have" if hint.similar_cases != 1 else "case has"
    return (f"{cases} excluded from {name(hint.criterion)} because "
            f"{_code('expected.' + hint.key)} is absent: did you mean {_code(hint.similar)}? "
            f"({hint.similar_cases} {holding} {_code('expected.' + hint.similar)})")
