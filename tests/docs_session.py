"""The ```console blocks of a docs page, run as a shell session and compared with what they show.

A block is `$ command` lines, each followed by the output it printed. The session runs each
command with bash at 80 columns (`COLUMNS=80`, `CI=1`: what a reader's terminal or a CI log
shows), `cd` changing the session's directory (also as `… && cd DIR && …`) and `echo $?`
answering the last exit code. A line `…` in a block stands for lines the page leaves out. Run
ids, clock times and a pytest session's duration differ from run to run, so both sides have
them replaced before they are compared; spaces at the end of a line (which a table pads with
and an editor strips) are not compared. The directory the session starts in is shown as `~`,
so a path a command prints reads `~/bad/oloproof.yaml`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import fork_server

RUN_ID = re.compile(r"run_[0-9A-HJKMNP-TV-Z]{26}")
STAMP = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d( UTC)?")
#: How long a pytest session took, at the end of its last line (`3 failed, 1 passed in 9.12s`).
DURATION = re.compile(r" in \d+\.\d\ds(?: \(\d+:\d\d:\d\d\))?$", re.M)
#: What the page shows for a run id and a time (and what a real one becomes).
SHOWN_ID, SHOWN_STAMP, SHOWN_DURATION = "run_<id>", "<time>", " in <time>"


@dataclass
class Step:
    command: str
    shown: list[str]


@dataclass
class Block:
    line: int  # the line of the page the block starts on (1-based)
    steps: list[Step] = field(default_factory=list)


def console_blocks(page: Path) -> list[Block]:
    """Every ```console block of `page`, as commands with the output each shows."""
    blocks: list[Block] = []
    current: Block | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1):
        if current is None:
            if line.strip() == "```console":
                current = Block(number)
            continue
        if line.strip() == "```":
            blocks.append(current)
            current = None
        elif line.startswith("$ "):
            current.steps.append(Step(line[2:], []))
        elif current.steps:
            current.steps[-1].shown.append(line)
    return blocks


def normalised(text: str) -> str:
    text = DURATION.sub(SHOWN_DURATION, STAMP.sub(SHOWN_STAMP, RUN_ID.sub(SHOWN_ID, text)))
    return "\n".join(line.rstrip(" ") for line in text.split("\n"))


def matches(shown: list[str], printed: str) -> bool:
    """Whether `printed` is what the block shows (`…` lines standing for any lines)."""
    pattern = ""
    for line in shown:
        if line.strip() == "…":
            pattern += r"(?:[^\n]*\n)*?"
        else:
            pattern += re.escape(normalised(line)) + r"\n"
    text = normalised(printed)
    if text and not text.endswith("\n"):
        text += "\n"
    return re.fullmatch(pattern, text) is not None


class Session:
    """A shell session in `cwd`: `oloproof` is the fork server's, the rest this environment's."""

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd
        self.home = cwd.resolve()
        # Where a command left the shell (bash writes `pwd` here), outside the session's tree.
        self._scratch = tempfile.TemporaryDirectory(prefix="docs-session-")
        self._where = Path(self._scratch.name) / "pwd"
        self.code = 0
        # `oloproof` is the fork server's (tests/fork_server.py: the command as a process forked
        # from one that imported the engine once); the rest of the environment's programs after.
        path = (str(fork_server.shared().program.parent), str(Path(sys.executable).parent),
                os.environ.get("PATH", ""))
        self.env = {k: v for k, v in os.environ.items() if k not in ("OLOPROOF_STORE",)}
        self.env.update(COLUMNS="80", CI="1", PYTHONIOENCODING="utf-8", PATH=os.pathsep.join(path))

    def run(self, command: str) -> str:
        """What `command` prints (stdout and stderr, as a terminal shows them)."""
        if command == "echo $?":
            return f"{self.code}\n"
        if command.startswith("cd "):
            self.cwd = (self.cwd / command[3:].strip()).resolve()
            self.code = 0
            return ""
        self._where.write_text("", encoding="utf-8")
        script = f"{command}\n__code=$?\npwd > '{self._where}'\nexit $__code"
        done = subprocess.run(["bash", "-c", script], cwd=self.cwd, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                              encoding="utf-8", timeout=300, check=False)
        self.code = done.returncode
        ended_in = self._where.read_text(encoding="utf-8").strip()
        if ended_in:  # `… && cd DIR && …` leaves a reader's shell in DIR
            self.cwd = Path(ended_in)
        return done.stdout.replace(str(self.home), "~")
