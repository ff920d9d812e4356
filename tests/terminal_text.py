"""Reading the terminal report as a person does: tables drawn as tables, or stacked.

The report draws a table one line per row when it fits the width and stacks it otherwise
(`oloproof.report.layout`). `table(output, title)` reads either back into rows of
{header: value}, so tests check the figures wherever the layout put them.
"""

from __future__ import annotations

import re

_FIELDS = re.compile(r" {2,}")


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def _section(output: str, title: str) -> list[str]:
    lines = output.splitlines()
    for i, line in enumerate(lines):
        if line.startswith(title):
            return lines[i + 1:]
    raise AssertionError(f"no section {title!r} in:\n{output}")


def _wide(lines: list[str]) -> list[dict[str, str]]:
    headers = [c.strip() for c in lines[1].strip().strip("┃").split("┃")]
    rows = []
    for line in lines[3:]:
        if line.startswith("└"):
            break
        cells = [c.strip() for c in line.strip().strip("│").split("│")]
        rows.append(dict(zip(headers, cells, strict=True)))
    return rows


def _stacked(lines: list[str]) -> list[dict[str, str]]:
    header: list[tuple[int, str]] = []
    body_at = 0
    for n, line in enumerate(lines):
        if line.strip().startswith("─"):
            body_at = n + 1
            break
        header.append((_indent(line), line.strip()))
    levels = sorted({indent for indent, _ in header})
    grouped = len(levels) == 3
    group_name = header[0][1] if grouped else None
    head_level = levels[1] if grouped else levels[0]
    line_level = head_level + 2
    names = next(_FIELDS.split(text) for indent, text in header if indent == head_level)
    stacked = [text for indent, text in header if indent == line_level]
    rows: list[dict[str, str]] = []
    group = ""
    pending: list[str] = []
    last_key = ""
    for line in lines[body_at:]:
        if line.strip().startswith("─"):
            break
        indent, text = _indent(line), line.strip()
        if grouped and indent == levels[0]:
            group = text
        elif indent == head_level:
            fields = _FIELDS.split(text)
            row = dict(zip(names, fields + [""] * (len(names) - len(fields)), strict=True))
            if group_name is not None:
                row[group_name] = group
            rows.append(row)
            pending = list(stacked)
        elif indent == line_level and pending:
            last_key = pending.pop(0)
            rows[-1][last_key] = text
        elif indent > line_level and rows and last_key:
            rows[-1][last_key] += " " + text  # a value wrapped onto the next line
        else:
            raise AssertionError(f"unexpected line in a stacked table: {line!r}")
    return rows


def table(output: str, title: str) -> list[dict[str, str]]:
    """The rows of the table under `title` ({header: value}), however it was laid out."""
    lines = _section(output, title)
    return _wide(lines) if lines and lines[0].startswith("┏") else _stacked(lines)


def row(output: str, title: str, **match: str) -> dict[str, str]:
    """The one row of the table under `title` whose columns have the values in `match`."""
    found = [r for r in table(output, title)
             if all(r.get(k) == v for k, v in match.items())]
    assert len(found) == 1, f"{len(found)} rows match {match} under {title!r} in:\n{output}"
    return found[0]
