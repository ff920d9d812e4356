"""`oloproof labels review FILE` (docs/judges.md#labelling): people label a judge criterion's
sampled cases in the terminal, one at a time.

Each case is shown as the judge was shown it (the rubric first, then each shown field), and
never with the judge's verdict. A key labels it: `p` pass, `f` fail, `s` skip (it stays
unlabelled, counted missing), `q` quit. The file is saved after every key, by replacing it
whole (`report.output_files.write_output`): stopping at any moment loses nothing labelled.
On a terminal a key is read as it is pressed; otherwise keys are read from standard input, one
character at a time (whitespace ignored), so a review can be scripted.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import click

from oloproof.report.escape import safe
from oloproof.report.output_files import write_output
from oloproof.suite.judge_labels import LabelsFile, read_labels_file

KEYS = {"p": "pass", "f": "fail"}


@dataclass
class Review:
    """What one review did."""

    labelled: int = 0
    skipped: int = 0
    left: int = 0
    stopped: bool = False


@contextlib.contextmanager
def _cbreak(stream: TextIO) -> Iterator[None]:
    """Keys as they are pressed (a terminal in cbreak mode, put back afterwards)."""
    import termios
    import tty

    fd = stream.fileno()
    saved = termios.tcgetattr(fd)
    try:
        tty.setcbreak(fd)
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSADRAIN, saved)


def key_reader(stream: TextIO) -> Callable[[], str | None]:
    """The next key from `stream` (None at its end), whitespace skipped."""
    def read() -> str | None:
        while True:
            char = stream.read(1)
            if not char:
                return None
            if not char.isspace():
                return char.lower()
    return read


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          sort_keys=True, indent=2)


def _show(labels: LabelsFile, index: int, position: int, total: int, echo: Callable[[str], None]
          ) -> None:
    row = labels.rows[index]
    trial = f" · trial {row.trial}" if row.trial is not None else ""
    echo(f"\n── {position} of {total} · case {safe(row.case)}{trial} " + "─" * 20)
    rubric = labels.sample.get("rubric")
    if rubric:
        echo(f"Rubric: {safe(rubric)}")
    shown = row.shown if isinstance(row.shown, dict) else {"shown": row.shown}
    for field, value in shown.items():
        echo(f"\n{safe(field)}:")
        for line in safe(_text(value)).splitlines() or [""]:
            echo(f"  {line}")


def review_file(path: Path, read_key: Callable[[], str | None],
                echo: Callable[[str], None]) -> Review:
    """Go through the unlabelled rows of the labels file at `path` (see the module docstring).
    """
    labels = read_labels_file(path)
    todo = [i for i, row in enumerate(labels.rows) if row.label is None]
    done = Review(left=len(todo))
    labelled_before = sum(1 for row in labels.rows if row.label is not None)
    echo(f"{path}: {len(labels.rows)} cases, {labelled_before} labelled, {len(todo)} to label. "
         "Keys: p pass · f fail · s skip · q quit (saved after every key).")
    for position, index in enumerate(todo, 1):
        _show(labels, index, position, len(todo), echo)
        while True:
            echo("[p]ass  [f]ail  [s]kip  [q]uit > ")
            key = read_key()
            if key is None or key == "q":
                done.stopped = True
                write_output(path, labels.text())
                return done
            if key in KEYS:
                labels.rows[index].label = KEYS[key]
                done.labelled += 1
                done.left -= 1
                echo(f"  {KEYS[key]}")
            elif key == "s":
                done.skipped += 1
                echo("  skipped")
            else:
                echo(f"  {safe(key)!r} is not a key here")
                continue
            write_output(path, labels.text())
            break
    return done


def run_review(path: Path) -> Review:
    """`labels review` on this process's terminal (or standard input)."""
    def echo(text: str) -> None:
        click.echo(text)

    if sys.stdin.isatty():
        with _cbreak(sys.stdin):
            return review_file(path, key_reader(sys.stdin), echo)
    return review_file(path, key_reader(sys.stdin), echo)
