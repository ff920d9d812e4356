"""The scripted OpenAI-compatible server of tests/judges/scripted_openai.py in a process of its
own (so it does not share the measured run's interpreter), answering judges' requests and
simulated users' turns at a fixed delay, and a measured `oloproof.run` in a fresh process.

Used by `speed/judges.py` (where it was first written) and `speed/conversations.py`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from benchmarks._versions import ROOT

SERVER = ROOT / "tests" / "judges" / "scripted_openai.py"


class ScriptedServerProcess:
    """`python scripted_openai.py DELAY_S`, driven over its stdin: `calls()` so far, `ask`
    a command (`mark` starts measuring afresh; `stats` answers the most requests it held at
    once and the first request to the last answer)."""

    def __init__(self, delay_s: float) -> None:
        self.process = subprocess.Popen([sys.executable, str(SERVER), str(delay_s)],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True)
        assert self.process.stdout is not None
        self.base_url = self.process.stdout.readline().strip()

    def calls(self) -> int:
        return int(self.ask("count"))

    def stats(self) -> dict[str, Any]:
        return dict(json.loads(self.ask("stats")))

    def ask(self, command: str) -> str:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write(command + "\n")
        self.process.stdin.flush()
        return self.process.stdout.readline().strip()

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def run_in_child(child: str, config: Path, key_env: str, *args: str) -> dict[str, Any]:
    """The JSON the script `child` prints last, run in a fresh process on `config` (its first
    argument; `args` after it) with `key_env` set to a key the scripted server takes."""
    env = {"CI": "1", "PATH": "/usr/bin:/bin", key_env: "bench",
           "HOME": os.environ.get("HOME", "/tmp")}
    out = subprocess.run([sys.executable, "-c", child, str(config), *args], capture_output=True,
                         text=True, check=True, env=env)
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))
