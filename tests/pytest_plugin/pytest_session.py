"""A pytest session as a user runs one: test files written into a directory of their own (pytest's
rootdir), `python -m pytest` run there in a fresh process with the plugin that the installed
package registers, and what came of it read back.

Each body that calls `called(NAME)` (the `counting` module written beside the tests) appends
NAME to `calls.log`, so a test can count the body's runs whatever process ran them; the
`conftest.py` written beside them keeps the plugin's own result of each marked test (what its
call report carries to the process that stores the session) in `results.jsonl`.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oloproof.stats.sequential import SequentialDecision, SequentialRate

COUNTING = '''
from pathlib import Path

LOG = Path(__file__).with_name("calls.log")


def called(name):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(name + "\\n")
'''

CONFTEST = '''
import json
import os
from pathlib import Path

RESULTS = Path(__file__).with_name("results.jsonl")


def pytest_runtest_logreport(report):
    data = getattr(report, "oloproof", None)
    if data is not None and report.when == "call" and not os.environ.get("PYTEST_XDIST_WORKER"):
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write(json.dumps(data) + "\\n")
'''

#: The ini file of every session: the rootdir is the session's directory; async fixtures'
#: loop scope said (pytest-asyncio warns otherwise); plugins the tests do not use left out
#: (Hypothesis's imports all of Hypothesis at the end of a session: 0.7 s of CPU each).
INI = """[pytest]
asyncio_default_fixture_loop_scope = function
addopts = -p no:cacheprovider -p no:langsmith_plugin -p no:hypothesispytest
"""


@dataclass
class Ran:
    """What a session did: its exit code and output, the bodies' calls, the plugin's results by
    node id."""

    code: int
    out: str
    calls: Counter[str]
    results: dict[str, dict[str, Any]]
    directory: Path


def environment(**extra: str) -> dict[str, str]:
    """This environment without what a surrounding pytest (or xdist worker) or the store set.

    Bytecode may be written: pytest rewrites the asserts of every module in a plugin's package
    -- the whole engine, here -- and keeps what it rewrote only where bytecode may be written
    (checked against the source's hash). Written by the first session, read by every later
    one: each session process spent 0.9 s of CPU rewriting the engine again, 40% of its CPU.
    """
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "OLOPROOF_"))
           and k not in ("COLUMNS", "PYTHONDONTWRITEBYTECODE")}
    env.update(COLUMNS="200", **extra)
    return env


def write(directory: Path, files: dict[str, str]) -> None:
    """The session's files, with the counting module, the conftest and the ini file."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in {"counting.py": COUNTING, "conftest.py": CONFTEST, "pytest.ini": INI,
                       **files}.items():
        (directory / name).write_text(textwrap.dedent(text).lstrip(), encoding="utf-8")


def run_pytest(directory: Path, *args: str, env: dict[str, str] | None = None,
               timeout: float = 600) -> Ran:
    """`python -m pytest ARGS` in `directory`; what it did."""
    for name in ("calls.log", "results.jsonl"):
        (directory / name).unlink(missing_ok=True)
    done = subprocess.run([sys.executable, "-m", "pytest", *args], cwd=directory,
                          env=env if env is not None else environment(),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          encoding="utf-8", timeout=timeout, check=False)
    log = directory / "calls.log"
    calls = Counter(log.read_text(encoding="utf-8").split()) if log.exists() else Counter()
    results: dict[str, dict[str, Any]] = {}
    found = directory / "results.jsonl"
    for line in found.read_text(encoding="utf-8").splitlines() if found.exists() else ():
        data = json.loads(line)
        results[data["nodeid"]] = data
    return Ran(done.returncode, done.stdout, calls, results, directory)


def decided(outcomes: list[str], minimum: float, trials: int,
            level: float = 0.95) -> SequentialDecision:
    """What `SequentialRate` decides on this sequence of outcomes, fed one at a time until it
    decides (the outcomes after that are never run)."""
    rate = SequentialRate(minimum, trials, level)
    for outcome in outcomes:
        if rate.decided:
            break
        rate = rate.add(outcome)
    return rate.decision()
