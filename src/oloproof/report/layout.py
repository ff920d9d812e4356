"""Tables that fit the terminal: never a dropped or truncated value.

A table that fits the console's width is drawn as a table, one line per row. One that does not
is *stacked*: each row's leading cells on one line, aligned under a header line, and each
stacked column's value on a line of its own below, indented; a grouping column (a slice's
group) becomes a heading over its rows. A value longer than the width wraps onto indented
lines; nothing is cut.

```
Metrics
  Metric                          Estimate  Interval
    N
  ────────────────────────────────────────────────────
  answer_correct                  82.5%     [67.2%, 92.7%]
    33 / 40 observed · 0 missing · 0 excluded
  ────────────────────────────────────────────────────
```
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from rich.cells import cell_len
from rich.console import Console
from rich.table import Table
from rich.text import Text

#: The width of output that is not a terminal, unless $COLUMNS says otherwise.
DEFAULT_WIDTH = 80
#: The narrowest width the report lays itself out for.
MIN_WIDTH = 40


def output_width(environ: dict[str, str] | None = None) -> int | None:
    """$COLUMNS when it is a number (at least MIN_WIDTH), else None."""
    value = (environ if environ is not None else os.environ).get("COLUMNS", "").strip()
    return max(int(value), MIN_WIDTH) if value.isdigit() else None


def make_console(stream: Any = None) -> Console:
    """The report's console: the terminal's width, or $COLUMNS, or 80 when not a terminal.

    Output that is not a terminal keeps what Rich found when the console was made (not a
    terminal, and the height), rather than Rich asking again on every line it prints (the
    environment, `isatty`, the terminal size of three streams): that was a third of the time
    each printed line took."""
    console = Console(file=stream, highlight=False, soft_wrap=False)
    terminal = console.is_terminal
    width = output_width()
    if width is None and not terminal:
        width = DEFAULT_WIDTH
    if width is None:
        return console
    found: dict[str, Any] = {} if terminal else {"height": console.size.height,
                                                 "force_terminal": False}
    return Console(file=stream, highlight=False, soft_wrap=False, width=width, **found)


#: Spaces between the aligned cells of a stacked row.
GAP = 2
#: How far each level of a stacked table is indented.
STEP = 2


@dataclass(frozen=True)
class Column:
    """A column: its header; `stack` puts it on a line of its own when the table is stacked;
    `group` makes its value a heading over the rows that share it."""

    header: str
    stack: bool = False
    group: bool = False


Cell = str | Text


def _text(cell: Cell) -> Text:
    return cell if isinstance(cell, Text) else Text(cell)


def table_width(columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> int:
    """The width of the table drawn one line per row (Rich's heavy-head box, padding 1)."""
    widths = [cell_len(c.header) for c in columns]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], _text(cell).cell_len)
    return sum(widths) + 3 * len(columns) + 1


def print_wrapped(console: Console, text: Cell, indent: int = 0, hang: int = 2) -> None:
    """Print `text` at `indent`, wrapped to the console's width; continuation lines are
    indented `hang` more. Words longer than a line are folded, never cut."""
    body = _text(text)
    first_width = max(console.width - indent, 8)
    if body.justify in (None, "default") and "\n" not in body.plain \
            and "\t" not in body.plain and body.cell_len <= first_width:
        lines = [body.copy()]  # what wrapping a line that fits gives, at a fifth of the cost
    else:
        lines = list(body.wrap(console, first_width, overflow="fold"))
    if len(lines) > 1:  # the rest is narrower by the hanging indent: wrap it again
        for line in lines[1:]:
            line.rstrip()  # a line's trailing space would double the space it is joined by
        rest = Text(" ").join(lines[1:])
        lines = lines[:1] + list(rest.wrap(console, max(first_width - hang, 8),
                                           overflow="fold"))
    for n, line in enumerate(lines):
        pad = indent + (hang if n else 0)
        line.rstrip()
        console.print(Text(" " * pad) + line, overflow="fold", no_wrap=True, crop=False)


def print_command(console: Console, command: str, indent: int = 4) -> None:
    """A shell command, whole, to be copied: on one line when it fits the width, else broken
    before its options (`--baseline REF` stays together) with each line but the last ending
    in ` \\`, so that the copied lines still run as one command."""
    if indent + cell_len(command) <= console.width:
        console.print(Text(" " * indent + command), no_wrap=True, overflow="ignore", crop=False)
        return
    chunks: list[str] = []  # the program with its arguments, then each option with its value
    for word in command.split(" "):
        last = chunks[-1] if chunks else None
        if last is not None and not word.startswith("--") and (
                not last.startswith("--") or " " not in last):
            chunks[-1] += " " + word
        else:
            chunks.append(word)
    lines = [chunks[0]]
    for chunk in chunks[1:]:
        pad = indent + (2 if len(lines) > 1 else 0)
        if pad + cell_len(lines[-1]) + 1 + cell_len(chunk) + 2 <= console.width:
            lines[-1] += " " + chunk
        else:
            lines.append(chunk)
    for n, line in enumerate(lines):
        text = " " * (indent + (2 if n else 0)) + line + (" \\" if n < len(lines) - 1 else "")
        console.print(Text(text), no_wrap=True, overflow="ignore", crop=False)


def render_table(console: Console, title: Cell | None, columns: Sequence[Column],
                 rows: Sequence[Sequence[Cell]]) -> None:
    """Draw `rows` under `title`: as a table when it fits the console, else stacked."""
    if title is not None:
        print_wrapped(console, _text(title))
    if table_width(columns, rows) <= console.width:
        table = Table(pad_edge=True)
        for column in columns:
            table.add_column(column.header, no_wrap=True)
        for row in rows:
            table.add_row(*[_text(c) for c in row])
        console.print(table)
        return
    _stacked(console, columns, rows)


def _stacked(console: Console, columns: Sequence[Column], rows: Sequence[Sequence[Cell]]) -> None:
    group = next((i for i, c in enumerate(columns) if c.group), None)
    head = [i for i, c in enumerate(columns) if not c.stack and not c.group]
    lines = [i for i, c in enumerate(columns) if c.stack]
    row_indent = STEP * (2 if group is not None else 1)
    widths = {i: max([cell_len(columns[i].header)] + [_text(r[i]).cell_len for r in rows])
              for i in head}
    # Leading cells that do not fit one line move below, ahead of the stacked ones.
    while len(head) > 1 and row_indent + sum(widths[i] for i in head) + GAP * (len(head) - 1) \
            > console.width:
        lines.insert(0, head.pop())
    line_indent = row_indent + STEP

    def head_line(cells: Sequence[Text]) -> Text:
        out = Text(" " * row_indent)
        for n, (i, cell) in enumerate(zip(head, cells, strict=True)):
            out.append_text(cell)
            if n < len(head) - 1:
                out.append(" " * (widths[i] - cell.cell_len + GAP))
        return out

    header_style = "bold"
    if group is not None:
        print_wrapped(console, Text(columns[group].header, style=header_style), STEP)
    print_wrapped(console, head_line([Text(columns[i].header, style=header_style)
                                      for i in head]), 0, row_indent + STEP)
    for i in lines:
        print_wrapped(console, Text(columns[i].header, style=header_style), line_indent)
    used = row_indent + sum(widths[i] for i in head) + GAP * (len(head) - 1)
    rule = Text(" " * STEP + "─" * max(4, min(console.width, used) - STEP), style="dim")
    console.print(rule)
    current: str | None = None
    for row in rows:
        if group is not None:
            value = _text(row[group])
            if value.plain != current:
                current = value.plain
                print_wrapped(console, Text.assemble(value, style="bold"), STEP)
        print_wrapped(console, head_line([_text(row[i]) for i in head]), 0, row_indent + STEP)
        for i in lines:
            cell = _text(row[i])
            print_wrapped(console, cell if cell.plain else Text("—"), line_indent)
    console.print(rule)  # the table ends here: what follows is not one of its rows
