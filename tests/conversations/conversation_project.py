"""A project whose cases are conversations (docs/conversations.md): a refund desk that keeps its
own loop and asks `current_case().user` for each next turn, the scripted OpenAI-compatible
server of tests/judges a `model:` simulator calls, and the same customer as a `callable:`.
The test modules of this folder import the fixtures from here."""

from __future__ import annotations

import secrets
import sys
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "judges"))

from judged_project import ProjectFolder, server_fixture  # noqa: E402, F401 - the fixture `server`
from scripted_openai import ScriptedServer  # noqa: E402

#: The desk. `RECORD` says how it records: `live` (its step recorder, each reply a message
#: step), `quiet` (its step recorder, replies left to Oloproof), `whole` (a trajectory handed
#: over at the end, the messages in it as the message adapters read them), `none` (no
#: trajectory). `CHANGED` is which reply this version words differently (0: none).
DESK = '''
import asyncio
import re

from oloproof import AgentStep, AgentTrajectory, current_case, system

VERSION = {version!r}
CHANGED = {changed}
RECORD = {record!r}


def _reply(message, n, case_input, steps, calls):
    order = re.search(r"ord-\\d+", message)
    if order is None:
        text = "Which order is it?"
    elif case_input.get("refuse"):
        text = f"Sorry, I cannot refund {{order.group(0)}}."
    else:
        result = {{"status": "refunded", "order": order.group(0)}}
        if steps is not None:
            steps.call_tool("issue_refund", {{"order": order.group(0)}}, lambda order: result)
        calls.append(order.group(0))
        text = f"Order {{order.group(0)}} has been refunded."
    if n == CHANGED:
        text = "(reworded) " + text
    return text


def _steps():
    return current_case().steps() if RECORD in ("live", "quiet") else None


def _finish(steps, said, calls):
    if RECORD in ("live", "quiet"):
        steps.finish("success")
    elif RECORD == "whole":
        made = []
        for role, text in said:
            made.append(AgentStep(index=len(made) + 1, kind="message",
                                  arguments={{"role": role, "content": text}}))
        for order in calls:
            made.append(AgentStep(index=len(made) + 1, kind="tool_call",
                                  tool_name="issue_refund", arguments={{"order": order}}))
        current_case().agent_trajectory(AgentTrajectory(steps=tuple(made),
                                                        terminal_status="success"))


@system(name="desk", version=VERSION, records=("agent_trajectory/v1",))
def run(case_input):
    user = current_case().user
    steps, said, calls, n = _steps(), [], [], 0
    message = user.first_message()
    while message is not None:
        n += 1
        said.append(("user", message))
        reply = _reply(message, n, case_input, steps, calls)
        if RECORD == "live":
            steps.message({{"text": reply}})
        said.append(("assistant", reply))
        message = user.respond(reply)
    _finish(steps, said, calls)
    return {{"answer": "refunded" if calls else "not refunded", "turns": n}}


@system(name="desk", version=VERSION, records=("agent_trajectory/v1",))
async def run_async(case_input):
    user = current_case().user
    steps, said, calls, n = _steps(), [], [], 0
    message = await user.afirst_message()
    while message is not None:
        n += 1
        said.append(("user", message))
        await asyncio.sleep(0)
        reply = _reply(message, n, case_input, steps, calls)
        if RECORD == "live":
            steps.message({{"text": reply}})
        said.append(("assistant", reply))
        message = await user.arespond(reply)
    _finish(steps, said, calls)
    return {{"answer": "refunded" if calls else "not refunded", "turns": n}}
'''

#: A `callable:` simulator answering as the server does (tests/conversations/scripted_customer).
USERS = '''
import sys
sys.path.insert(0, {here!r})
from scripted_customer import simulate
'''

KEY = "sk-simulator-0123456789abcdef"


class ConversationProject(ProjectFolder):
    """The desk and its suite; `simulator(...)` sets the simulator entry."""

    def __init__(self, root: Path, *, record: str = "live") -> None:
        self.root = root
        self.module = f"desk_{secrets.token_hex(4)}"
        self.users_module = f"users_{secrets.token_hex(4)}"
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / f"{self.users_module}.py").write_text(USERS.format(here=str(HERE)),
                                                      encoding="utf-8")
        self.record = record
        self.desk()
        self.suite: dict[str, Any] = {
            "version": 1, "project": "conversations", "dataset": "data/cases.jsonl",
            "system": {"name": "desk", "version": "v1", "callable": f"{self.module}:run",
                       "records": ["agent_trajectory/v1"], "concurrency": 4},
            "simulators": [{"name": "customer", "callable": f"{self.users_module}:simulate"}],
            "evaluators": [
                {"type": "exact_match", "criterion": "refunded", "field": "answer",
                 "expected_field": "answer"},
                {"type": "agent_tool_called", "tool_name": "issue_refund"},
            ],
        }
        self.policy: dict[str, Any] = {"version": 1, "rules": [
            {"id": "refunds", "metric": "refunded", "min": 0.5}]}
        self.write()

    def desk(self, version: str = "v1", changed: int = 0, record: str | None = None) -> None:
        """(Re)write the desk: `changed` is the reply this version words differently."""
        self.record = record or self.record
        (self.root / f"{self.module}.py").write_text(
            DESK.format(version=version, changed=changed, record=self.record),
            encoding="utf-8")

    def model_simulator(self, server: ScriptedServer, **fields: Any) -> None:
        self.suite["simulators"] = [{"name": "customer", "model": "customer-1",
                                     "base_url": server.base_url,
                                     "api_key_env": "SIMULATOR_TEST_KEY", "concurrency": 8,
                                     **fields}]
        self.write()

    def asynchronous(self) -> None:
        self.suite["system"]["callable"] = f"{self.module}:run_async"
        self.write()


def customers(n: int, *, refuse: set[int] = frozenset(), max_turns: int | None = None,
              **marks: set[int]) -> list[dict[str, Any]]:
    """`n` customers wanting order ord-00i refunded; the desk refuses those in `refuse`; a
    `marks` entry puts a `[marker]` in those customers' goals."""
    cases = []
    for i in range(1, n + 1):
        goal = f"get order ord-{i:03d} refunded; it arrived broken"
        for marker, which in marks.items():
            if i in which:
                goal += f" [{marker.replace('_', '-')}]"
        user: dict[str, Any] = {"simulator": "customer", "persona": "terse, in a hurry",
                                "goal": goal, "facts": {"order_id": f"ord-{i:03d}"}}
        if max_turns is not None:
            user["max_turns"] = max_turns
        case: dict[str, Any] = {"id": f"c{i:02d}", "input": {"channel": "chat"}, "user": user,
                                "expected": {"answer": "refunded"}}
        if i in refuse:
            case["input"]["refuse"] = True
        cases.append(case)
    return cases


# (Imported by the test modules under these names; the fixtures are `project` and `server`.)
@pytest.fixture(name="project")
def project_fixture(tmp_path: Path) -> ConversationProject:
    return ConversationProject(tmp_path / "conversations")


@pytest.fixture(name="keyed")
def keyed_fixture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SIMULATOR_TEST_KEY", KEY)
