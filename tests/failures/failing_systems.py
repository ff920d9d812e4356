"""Projects whose system fails in the ways real agents' calls fail (docs/failures.md).

`FAILING_SYSTEM` does what each case's input says (`do`): answer, raise, call `sys.exit`, raise
`KeyboardInterrupt`, let argparse refuse its arguments, end its process (`os._exit`, from its
own thread or one it starts; a segmentation fault; a SIGKILL), return what cannot be stored, fail
transiently on its first attempts, be rate-limited with a `retry_after`, or raise while a
file `down` lies beside it (`while_down`: an outage that ends). It logs the start
and the end of every call (case id, attempt, times) to `calls.log` beside it, so a test can
count attempts and see when each call started. `run` is sync, `run_async` async; `desk` is a
Stateful, Replayable system that fails as `run` does, and whose replay can exit too.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

FAILING_SYSTEM = '''\
import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path

from oloproof import AgentCheckpoint, AgentStep, AgentTrajectory, current_case, system

CALLS = Path(__file__).with_name("calls.log")
_tries = {}
_lock = threading.Lock()


class Transient(Exception):
    """What a flaky dependency raises for a while."""


class Undeclared(Exception):
    """An error no suite declares transient."""


class RateLimited(Exception):
    """A provider's 429: it says how long to wait."""

    def __init__(self, retry_after):
        super().__init__(f"rate limited: retry after {retry_after} s")
        self.retry_after = retry_after


class _Response:
    def __init__(self, headers):
        self.headers = headers
        self.status_code = 429


class HeaderLimited(Exception):
    """A rate limit that says how long to wait in an HTTP header, as SDKs do."""

    def __init__(self, seconds):
        super().__init__("429 Too Many Requests")
        self.response = _Response({"Retry-After": str(seconds)})


def _log(kind, case_id, attempt):
    fd = os.open(CALLS, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, f"{kind} {case_id} {attempt} {time.time():.6f} {os.getpid()}\\n".encode())
    finally:
        os.close(fd)


def _attempt(case):
    with _lock:
        key = (case.case_id, case.trial)
        _tries[key] = _tries.get(key, 0) + 1
        return _tries[key]


def _nested(depth):
    value = {"leaf": True}
    for _ in range(depth):
        value = {"next": value}
    return value


def _before(case_input, attempt):
    """What happens before the answer (raising here is the call failing)."""
    do = case_input.get("do", "ok")
    if do == "exit":
        sys.exit(3)
    if do == "os_exit":
        os._exit(case_input.get("code", 0))
    if do == "os_exit_thread":  # a thread of the system's own, outside the case's call
        ender = threading.Thread(target=os._exit, args=(0,), name="ender")
        ender.start()
        ender.join()
    if do == "segfault":
        import ctypes
        ctypes.string_at(0)
    if do == "sigkill":
        import signal
        os.kill(os.getpid(), signal.SIGKILL)
    if do == "interrupt":
        raise KeyboardInterrupt
    if do == "argparse":
        argparse.ArgumentParser(prog="lookup-tool").parse_args(["--no-such-flag"])
    if do == "raise":
        raise Undeclared("the order service is down")
    if do == "while_down" and CALLS.with_name("down").exists():
        raise Undeclared("the order service is down")
    if do == "surrogate_message":
        raise RuntimeError("bad byte " + chr(0xD800) + " in the reply")
    if do == "flaky" and attempt <= case_input.get("fails", 1):
        raise Transient(f"connection reset (attempt {attempt})")
    if do == "rate_limited" and attempt <= case_input.get("fails", 1):
        raise RateLimited(case_input.get("retry_after", 0.2))
    if do == "header_limited" and attempt <= case_input.get("fails", 1):
        raise HeaderLimited(case_input.get("retry_after", 0.2))
    if do == "slow_first":
        return case_input.get("sleep", 1.0) if attempt <= case_input.get("fails", 1) else 0
    return case_input.get("sleep", 0)


def _answer(case_input):
    do = case_input.get("do", "ok")
    case = current_case()
    arguments = {"id": case.case_id}
    if do == "deep_trajectory":
        arguments["filter"] = _nested(case_input.get("depth", 260))
    if do == "surrogate_trajectory":
        arguments["note"] = "a " + chr(0xDFFF)
    if do == "deep_artifact":
        case.record("notes/v1", _nested(case_input.get("depth", 260)))
    case.agent_trajectory(AgentTrajectory(steps=(
        AgentStep(index=1, kind="tool_call", tool_name="lookup", arguments=arguments),
        AgentStep(index=2, kind="tool_result", tool_name="lookup", result={"ok": True}),
        AgentStep(index=3, kind="final")), terminal_status="success"))
    if do == "deep":
        return {"answer": "yes", "detail": _nested(case_input.get("depth", 260))}
    if do == "deep_answer":  # storable as it is; one level deeper in a judgment's details
        return {"answer": _nested(case_input.get("depth", 252))}
    if do == "surrogate":
        return {"answer": "yes", "note": "a " + chr(0xD800) + " here"}
    if do == "non_json":
        return {"answer": "yes", "when": object()}
    return {"answer": case_input.get("answer", "yes")}


@system(name="failing", records=("agent_trajectory/v1",))
def run(case_input):
    case = current_case()
    attempt = _attempt(case)
    _log("start", case.case_id, attempt)
    try:
        time.sleep(_before(case_input, attempt))
        return _answer(case_input)
    finally:
        _log("end", case.case_id, attempt)


@system(name="failing", records=("agent_trajectory/v1",))
async def run_async(case_input):
    case = current_case()
    attempt = _attempt(case)
    _log("start", case.case_id, attempt)
    try:
        await asyncio.sleep(_before(case_input, attempt))
        return _answer(case_input)
    finally:
        _log("end", case.case_id, attempt)


class Desk:
    """A Stateful, Replayable desk: one refund; its replay does what the case says."""

    def __init__(self):
        self.state = {}

    def reset(self, state):
        self.state = dict(state)

    def snapshot(self):
        return dict(self.state)

    def _steps(self, case_input, fault=None):
        result = fault if fault is not None else {"ok": True}
        return (AgentStep(index=1, kind="message", arguments={"text": "refund"}),
                AgentStep(index=2, kind="tool_call", tool_name="refund", arguments={}),
                AgentStep(index=3, kind="tool_result", tool_name="refund", result=result),
                AgentStep(index=4, kind="tool_call", tool_name="escalate", arguments={}),
                AgentStep(index=5, kind="tool_result", tool_name="escalate", result={}),
                AgentStep(index=6, kind="final"))

    def __call__(self, case_input):
        case = current_case()
        attempt = _attempt(case)
        _log("start", case.case_id, attempt)
        try:
            found = dict(self.state)  # what this attempt found in the sandbox
            if case_input.get("dirty"):  # it writes to the sandbox before the call fails
                self.state["written_by_attempt"] = attempt
            time.sleep(_before(case_input, attempt))
            self.state["refunded"] = True
            case.agent_trajectory(AgentTrajectory(
                steps=self._steps(case_input), terminal_status="success",
                checkpoints=(AgentCheckpoint(checkpoint_id="start", step_index=None,
                                             payload={"input": case_input}),)))
            return {"answer": "yes", "found": found} if case_input.get("dirty") \
                else {"answer": "yes"}
        finally:
            _log("end", case.case_id, attempt)

    def replay(self, trajectory, *, checkpoint, change):
        case_input = checkpoint.payload["input"]
        if case_input.get("do") == "replay_exit":
            sys.exit(4)
        if case_input.get("do") == "replay_interrupt":
            raise KeyboardInterrupt
        if case_input.get("do") == "replay_surrogate":
            return AgentTrajectory(steps=self._steps(case_input, {"error": "x" + chr(0xD800)}),
                                   terminal_status="failure")
        return AgentTrajectory(steps=self._steps(case_input, change.fault_result),
                               terminal_status="failure")


desk = Desk()
'''


class FailingProject:
    """A project around FAILING_SYSTEM: cases, both YAML files, and its call log."""

    def __init__(self, root: Path, callable_: str = "app:run") -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(exist_ok=True)
        (root / "app.py").write_text(FAILING_SYSTEM, encoding="utf-8")
        self.suite: dict[str, Any] = {
            "version": 1,
            "project": "failing",
            "dataset": "data/cases.jsonl",
            "system": {"name": "failing", "version": "v1", "callable": callable_,
                       "records": ["agent_trajectory/v1"], "concurrency": 4, "timeout_s": 10},
            "evaluators": [{"type": "exact_match", "criterion": "answer_correct",
                            "field": "answer", "expected_field": "answer"}],
        }
        self.policy: dict[str, Any] = {
            "version": 1, "rules": [{"id": "answers", "metric": "answer_correct", "min": 0.5}]}

    @property
    def path(self) -> Path:
        return self.root

    @property
    def store(self) -> Path:
        return self.root / ".oloproof" / "store.sqlite"

    def set_system(self, **fields: Any) -> FailingProject:
        self.suite["system"].update(fields)
        return self.write()

    def write(self, cases: list[dict[str, Any]] | None = None) -> FailingProject:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        (self.root / "release.yaml").write_text(yaml.safe_dump(self.policy, sort_keys=False),
                                                encoding="utf-8")
        if cases is not None:
            text = "".join(json.dumps(c) + "\n" for c in cases)
            (self.root / "data" / "cases.jsonl").write_text(text, encoding="utf-8")
        return self

    def calls(self) -> list[tuple[str, str, int, float]]:
        """Every logged call event: (start | end, case id, attempt, time.time())."""
        log = self.root / "calls.log"
        if not log.exists():
            return []
        events = []
        for line in log.read_text(encoding="utf-8").splitlines():
            kind, case_id, attempt, when, _pid = line.split()
            events.append((kind, case_id, int(attempt), float(when)))
        return events

    def starts(self) -> list[tuple[str, int, float]]:
        """(case id, attempt, time) of each call's start, in time order."""
        return sorted(((c, a, t) for kind, c, a, t in self.calls() if kind == "start"),
                      key=lambda s: s[2])

    def forget_calls(self) -> None:
        (self.root / "calls.log").unlink(missing_ok=True)


def case(case_id: str, do: str = "ok", **fields: Any) -> dict[str, Any]:
    """A case that does `do`, expecting the answer `yes`."""
    return {"id": case_id, "input": {"q": case_id, "do": do, **fields},
            "expected": {"answer": "yes"}}
