"""A judged project on disk: a refund desk whose replies a judge grades, and the scripted
OpenAI-compatible server (`scripted_openai.py`) a `model:` judge calls. The test modules of
this folder import the fixtures from here (a conftest.py here would shadow the one the other
folders import helpers from)."""

from __future__ import annotations

import json
import secrets
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

sys.path.insert(0, str(Path(__file__).parent))

from scripted_openai import ScriptedServer

DESK = '''
from oloproof import AgentStep, AgentTrajectory, current_case, system


@system(name="desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input):
    refund_ok = case_input.get("refund_ok", True)
    status = "ok" if refund_ok else "failed"
    steps = [
        AgentStep(index=1, kind="tool_call", tool_name="issue_refund",
                  arguments={"order": case_input["order"]}),
        AgentStep(index=2, kind="tool_result", tool_name="issue_refund",
                  result={"status": status}),
    ]
    current_case().agent_trajectory(AgentTrajectory(steps=tuple(steps),
                                                    terminal_status="success"))
    # The desk claims a refund whenever it tried one: a lie when the tool failed.
    answer = "Your order was refunded." if case_input.get("claims", True) else \\
        "We could not refund your order."
    return {"answer": answer + case_input.get("tail", "")}
'''

HOUSE_JUDGE = '''
import asyncio

from oloproof import JudgeVerdict

CALLS = []


def _verdict(request):
    answer = request.shown["output.answer"].lower()
    results = request.shown.get("trajectory.tool_results") or []
    failed = any((r.get("result") or {}).get("status") == "failed" for r in results)
    return "fail" if "refunded" in answer and failed else "pass"


def grade(request):
    CALLS.append(request.case_id)
    return JudgeVerdict(verdict=_verdict(request), reason="house rule", input_tokens=10)


async def grade_async(request):
    await asyncio.sleep(0)
    CALLS.append(request.case_id)
    return {"verdict": _verdict(request), "reason": "house rule"}
'''


class ProjectFolder:
    """A test project's folder: its suite and policy as dicts, written as oloproof.yaml and
    release.yaml; its dataset; where its store is. (Also the conversations tests' base.)"""

    root: Path
    suite: dict[str, Any]
    policy: dict[str, Any]

    def write(self) -> None:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        (self.root / "release.yaml").write_text(yaml.safe_dump(self.policy, sort_keys=False),
                                                encoding="utf-8")

    def write_cases(self, cases: list[dict[str, Any]]) -> None:
        (self.root / "data" / "cases.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")

    @property
    def config(self) -> Path:
        return self.root / "oloproof.yaml"

    @property
    def store(self) -> Path:
        return self.root / ".oloproof" / "store.sqlite"


class JudgedProject(ProjectFolder):
    """The desk and its suite; `judge(...)` sets the judge entry."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.module = f"desk_{secrets.token_hex(4)}"
        self.judges_module = f"house_{secrets.token_hex(4)}"
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / f"{self.module}.py").write_text(DESK, encoding="utf-8")
        (root / f"{self.judges_module}.py").write_text(HOUSE_JUDGE, encoding="utf-8")
        self.suite: dict[str, Any] = {
            "version": 1, "project": "judged", "dataset": "data/cases.jsonl",
            "system": {"name": "desk", "version": "v1", "callable": f"{self.module}:run",
                       "records": ["agent_trajectory/v1"], "concurrency": 4},
            "judges": [{"name": "house", "callable": f"{self.judges_module}:grade"}],
            "evaluators": [{
                "type": "judge", "criterion": "reply_truthful", "judge": "house",
                "rubric": "The reply says refunded only if the refund went through.",
                "shows": ["input.message", "output.answer", "trajectory.tool_results"],
            }],
        }
        self.policy: dict[str, Any] = {"version": 1, "rules": [
            {"id": "truthful", "metric": "reply_truthful", "min": 0.5}]}
        self.write()

    def model_judge(self, server: ScriptedServer, **fields: Any) -> None:
        self.suite["judges"] = [{"name": "house", "model": "grader-1", "base_url":
                                 server.base_url, "api_key_env": "JUDGE_TEST_KEY",
                                 "concurrency": 8, **fields}]
        self.write()


def desk_cases(n: int, lies: set[int] = frozenset(), **marks: set[int]) -> list[dict[str, Any]]:
    """`n` refund requests; the ones in `lies` fail the refund (and the desk claims it anyway);
    a `marks` entry puts a `[marker]` in those requests' messages."""
    cases = []
    for i in range(1, n + 1):
        message = f"Please refund order A{i:03d}."
        for marker, which in marks.items():
            if i in which:
                message += f" [{marker.replace('_', '-')}]"
        cases.append({"id": f"r{i:03d}", "input": {"message": message, "order": f"A{i:03d}",
                                                   "refund_ok": i not in lies}})
    return cases


def with_labels_file(judged: JudgedProject, cases: list[dict[str, Any]],
                     minimum_agreement: float) -> JudgedProject:
    """The desk on `cases`, its criterion reading `labels/truthful.jsonl` (not drawn yet)."""
    judged.write_cases(cases)
    judged.suite["evaluators"][0]["labels"] = "labels/truthful.jsonl"
    judged.suite["evaluators"][0]["minimum_agreement"] = minimum_agreement
    judged.write()
    (judged.root / "labels").mkdir()
    return judged


def label_all(path: Path, wrong: int = 0) -> None:
    """Label every row of a labels file as a careful person would (a refund claimed that
    failed is a fail), the first `wrong` of them the other way."""
    from oloproof.suite.judge_labels import read_labels_file

    labels = read_labels_file(path)
    for at, row in enumerate(labels.rows):
        results = row.shown["trajectory.tool_results"]
        failed = any(r["result"]["status"] == "failed" for r in results)
        says = "fail" if failed and "refunded" in row.shown["output.answer"] else "pass"
        row.label = says if at >= wrong else ("pass" if says == "fail" else "fail")
    path.write_text(labels.text(), encoding="utf-8")


# (Imported by the test modules under these names; the fixtures are `judged` and `server`.)
@pytest.fixture(name="judged")
def judged_fixture(tmp_path: Path) -> JudgedProject:
    return JudgedProject(tmp_path / "judged")


@pytest.fixture(name="server")
def server_fixture() -> Iterator[ScriptedServer]:
    with ScriptedServer() as running:
        yield running
