"""A project on disk whose system is built by a factory, for the tests of workers (docs/scaling.md).

The system module (`app.py`) holds sandboxed desks: each desk is one sandbox (reset → call →
snapshot) that raises if a case ever sees a state that is not its own, and logs every call --
which process and which desk object ran it, and when it began and ended -- to `calls.log` as it
returns, so a test can tell how many sandboxes ran at once, in how many processes; and each
call's case to `began.log` as it begins, so a test can tell a call that began and never
returned (abandoned past `timeout_s`, its process then killed) from one never made.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

import oloproof

APP = '''
import asyncio
import json
import os
import threading
import time
from pathlib import Path

HERE = Path(__file__).parent
_made = []


def log(entry, name="calls.log"):
    line = (json.dumps(entry, sort_keys=True) + "\\n").encode()
    fd = os.open(HERE / name, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


class _Desk:
    """One sandbox. A case's input says what to do: sleep (seconds), spin (seconds of Python),
    die (kill this worker process with SIGKILL, once per marker file), die_always (every time),
    raise, fds (say whether this process has the store open), gc (say its collector's
    youngest threshold)."""

    def __init__(self):
        self.state = None
        self.inside = 0
        self.lock = threading.Lock()
        _made.append(self)

    def reset(self, state):
        if self.inside:
            raise RuntimeError("reset() while a case is inside the sandbox")
        self.state = state

    def snapshot(self):
        return self.state

    def _enter(self, case_input):
        with self.lock:
            self.inside += 1
            if self.inside > 1:
                raise RuntimeError("two cases inside one sandbox at once")
        me = case_input["me"]
        if self.state.get("owner") != me or self.state.get("marks") != []:
            raise RuntimeError(f"{me} saw a state that is not its own: {self.state!r}")
        self.state["marks"].append(me)
        log({"case": me, "pid": os.getpid()}, "began.log")  # (calls.log: when a call ends)
        marker = case_input.get("die")
        if marker and not (HERE / marker).exists():
            (HERE / marker).write_text(str(os.getpid()))
            os.kill(os.getpid(), 9)
        if case_input.get("die_always"):
            os.kill(os.getpid(), 9)
        if case_input.get("raise"):
            raise ValueError(case_input["raise"])
        return me, time.time()

    def _leave(self, me, began, case_input):
        spin = case_input.get("spin", 0)
        end = time.perf_counter() + spin
        while time.perf_counter() < end:
            pass
        self.state["n"] = self.state.get("n", 0) + 1
        log({"case": me, "pid": os.getpid(), "desk": id(self), "began": began,
             "ended": time.time()})
        with self.lock:
            self.inside -= 1
        answer = {"owner": me, "pid": os.getpid()}
        if case_input.get("gc"):  # this process's collector: its youngest generation's threshold
            import gc
            answer["young_threshold"] = gc.get_threshold()[0]
        if case_input.get("fds"):  # which files this process has open (the store must not be)
            names = []
            for fd in os.listdir("/proc/self/fd"):
                try:
                    names.append(os.readlink(f"/proc/self/fd/{fd}"))
                except OSError:
                    pass
            answer["opens_store"] = any("store.sqlite" in name for name in names)
        return answer


def _hold(case_input):
    """A case whose input says `held` waits until the file `release` lies beside this module
    (at most two minutes), its process noted in `held.log` meanwhile: a test holds a run at a
    known point, whatever the machine's load."""
    if not case_input.get("held"):
        return
    with open(HERE / "held.log", "a") as held:
        held.write(f"{os.getpid()}\\n")
    deadline = time.monotonic() + 120
    while not (HERE / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.01)


class Desk(_Desk):
    def __call__(self, case_input):
        me, began = self._enter(case_input)
        time.sleep(case_input.get("sleep", 0))
        _hold(case_input)
        return self._leave(me, began, case_input)


class AsyncDesk(_Desk):
    async def __call__(self, case_input):
        me, began = self._enter(case_input)
        await asyncio.sleep(case_input.get("sleep", 0))
        return self._leave(me, began, case_input)


def make_desk():
    return Desk()


def make_async_desk():
    return AsyncDesk()


_one = Desk()


def same_desk():
    return _one


def broken_factory():
    raise RuntimeError("the sandbox database is not reachable")


def factory_for_the_coordinator_only():
    if os.getpid() != int(os.environ["DESK_COORDINATOR_PID"]):
        raise RuntimeError("no sandbox licence on this worker")
    return Desk()


desk = Desk()
'''


class DeskProject:
    """A project directory around `app.py`'s desks: cases, oloproof.yaml, release.yaml."""

    def __init__(self, root: Path, *, factory: str | None = "app:make_desk",
                 callable_: str | None = None) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(exist_ok=True)
        (root / "app.py").write_text(APP, encoding="utf-8")
        system: dict[str, Any] = {"name": "desk", "version": "v1", "concurrency": 4,
                                  "timeout_s": 30}
        if factory is not None:
            system["factory"] = factory
        if callable_ is not None:
            system["callable"] = callable_
        self.suite: dict[str, Any] = {
            "version": 1, "project": root.name, "dataset": "data/cases.jsonl",
            "system": system,
            "evaluators": [{"type": "state_matches", "mode": "whole"}],
        }
        self.policy: dict[str, Any] = {"version": 1, "rules": [
            {"id": "states", "metric": "state_matches", "min": 0.5}]}

    def write(self, cases: list[dict[str, Any]] | None = None) -> DeskProject:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        (self.root / "release.yaml").write_text(yaml.safe_dump(self.policy, sort_keys=False),
                                                encoding="utf-8")
        if cases is not None:
            text = "".join(json.dumps(c) + "\n" for c in cases)
            (self.root / "data" / "cases.jsonl").write_text(text, encoding="utf-8")
        return self

    def run(self, **options: Any) -> oloproof.RunResult:
        return oloproof.run(self.root / "oloproof.yaml", policy=self.root / "release.yaml",
                            **options)

    def calls(self) -> list[dict[str, Any]]:
        path = self.root / "calls.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in _whole_lines(path)]

    def began(self) -> list[str]:
        """The cases whose call began, in order, however it ended: a call is in `calls()`
        only once it returned (one abandoned past `timeout_s` is there only if its process
        lived until it returned)."""
        path = self.root / "began.log"
        if not path.exists():
            return []
        return [json.loads(line)["case"] for line in _whole_lines(path)]

    def forget_calls(self) -> None:
        (self.root / "calls.log").unlink(missing_ok=True)

    def held_pids(self) -> set[int]:
        """The processes in which a `held` case is waiting (or waited)."""
        path = self.root / "held.log"
        return {int(line) for line in path.read_text().split()} if path.exists() else set()

    def release(self) -> None:
        """Let the `held` cases go on."""
        (self.root / "release").touch()

    def stored_executions(self) -> int:
        """How many executions the store holds, committed (merged or still staged), as a
        reader sees them while a run writes."""
        path = self.root / ".oloproof" / "store.sqlite"
        if not path.exists():
            return 0
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True,
                                                timeout=10)) as db:
            try:
                return int(db.execute(
                    "SELECT count(*) FROM (SELECT key FROM executions UNION "
                    "SELECT key FROM stage_executions)").fetchone()[0])
            except sqlite3.OperationalError:  # the schema is not there yet
                return 0


def _whole_lines(path: Path) -> list[str]:
    """The log's lines that have their newline: a worker may be appending one as a test reads
    the log mid-run, and a read can end inside it."""
    text = path.read_text(encoding="utf-8")
    return [line for line in text[:text.rfind("\n") + 1].splitlines() if line.strip()]


def wait_until(condition: Callable[[], bool], what: str, timeout: float = 120.0) -> None:
    """Wait until `condition()` holds (checked every 20 ms), at most `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.02)


def held_desk_cases(n: int, held_from: int, **input_fields: Any) -> list[dict[str, Any]]:
    """`desk_cases(n)` whose cases from number `held_from` (counting from 1) on wait until
    `DeskProject.release()`: a run of them cannot end before that."""
    cases = desk_cases(n, **input_fields)
    for case in cases[held_from - 1:]:
        case["input"]["held"] = True
    return cases


def desk_cases(n: int, **input_fields: Any) -> list[dict[str, Any]]:
    """n cases, each expecting its own state back with its mark and one more visit."""
    cases = []
    for i in range(n):
        me = f"c{i:03d}"
        cases.append({
            "id": me,
            "input": {"me": me, **input_fields},
            "initial_state": {"owner": me, "marks": []},
            "expected": {"state": {"owner": me, "marks": [me], "n": 1}},
        })
    return cases


def most_at_once(calls: list[dict[str, Any]]) -> int:
    """How many calls were inside a sandbox at the same moment, at most."""
    events = sorted([(c["began"], 1) for c in calls] + [(c["ended"], -1) for c in calls],
                    key=lambda e: (e[0], e[1]))
    inside = best = 0
    for _, step in events:
        inside += step
        best = max(best, inside)
    return best


def process_stat(pid: int) -> list[str]:
    """`/proc/PID/stat`'s fields after the command name: [0] the state, [1] the parent's pid."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def worker_children() -> set[int]:
    """This process's children that are worker processes (or a zygote forking them), alive or
    not yet reaped."""
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            parent = int(process_stat(int(stat.parent.name))[1])
            command = (stat.parent / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"transports.processes" in command:
            found.add(int(stat.parent.name))
    return found
