"""A project whose fixed and broken cases are known by construction (docs/compare.md tests).

The desk answers every case right except those its `wrong.json` names (it looks the case up,
and the lookup's result says whether it will answer right, so a broken case's trajectory parts
from its baseline's at step 2); those its `raise.json` names raise (missing for every
criterion). Changing those files and the system's version between two runs breaks and fixes
exactly the cases chosen.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

DESK = '''\
"""A desk that answers wrongly the cases wrong.json names, and raises on raise.json's."""

import json
import time
from pathlib import Path

from oloproof import AgentStep, AgentTrajectory, current_case, system

HERE = Path(__file__).parent


def _ids(name):
    path = HERE / name
    return set(json.loads(path.read_text())) if path.exists() else set()


def _delays():
    path = HERE / "delays.json"
    return json.loads(path.read_text()) if path.exists() else {}


@system(name="desk", records=("agent_trajectory/v1",))
def run(case_input):
    case = current_case()
    # How long a case takes (seconds), by case id: the order cases finish in.
    time.sleep(_delays().get(case.case_id, 0.0))
    with open(HERE / "calls.log", "a") as log:
        log.write(case.case_id + "\\n")
    if case.case_id in _ids("raise.json") or \\
            f"{case.case_id}#{case.trial}" in _ids("raise_trials.json"):
        raise RuntimeError(case_input.get("error", "the desk is down"))
    trial_wrong = _ids("wrong_trials.json")
    bad = case.case_id in _ids("wrong.json") or f"{case.case_id}#{case.trial}" in trial_wrong
    steps = (AgentStep(index=1, kind="tool_call", tool_name="lookup",
                       arguments={"id": case.case_id}),
             AgentStep(index=2, kind="tool_result", tool_name="lookup", result={"ok": not bad}),
             AgentStep(index=3, kind="final", arguments={"answer": "no" if bad else "yes"}))
    case.agent_trajectory(AgentTrajectory(steps=steps, terminal_status="success"))
    return {"answer": "no" if bad else "yes"}
'''


class Desk:
    """The desk project on disk: cases, both YAML files, and which cases go wrong."""

    def __init__(self, root: Path, n: int = 40, project: str = "desk") -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(exist_ok=True)
        (root / "app.py").write_text(DESK, encoding="utf-8")
        self.suite: dict[str, Any] = {
            "version": 1, "project": project, "dataset": "data/cases.jsonl",
            "system": {"name": "desk", "version": "v1", "callable": "app:run",
                       "records": ["agent_trajectory/v1"]},
            "evaluators": [
                {"type": "exact_match", "criterion": "answer_correct", "field": "answer",
                 "expected_field": "answer"},
                {"type": "agent_tool_called", "tool_name": "lookup"},
            ],
        }
        self.policy: dict[str, Any] = {
            "version": 1, "rules": [{"id": "answers", "metric": "answer_correct", "min": 0.5}]}
        self.cases = [self.case(f"c{i}") for i in range(1, n + 1)]
        self.write()

    @staticmethod
    def case(case_id: str, q: int | None = None) -> dict[str, Any]:
        return {"id": case_id, "input": {"q": q if q is not None else case_id},
                "expected": {"answer": "yes"}}

    @property
    def config(self) -> Path:
        return self.root / "oloproof.yaml"

    def write(self) -> None:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        self.write_policy()
        (self.root / "data" / "cases.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in self.cases), encoding="utf-8")

    def write_policy(self, name: str = "release.yaml",
                     policy: dict[str, Any] | None = None) -> Path:
        path = self.root / name
        path.write_text(yaml.safe_dump(policy or self.policy, sort_keys=False),
                        encoding="utf-8")
        return path

    def version(self, version: str) -> None:
        self.suite["system"]["version"] = version
        self.write()

    def wrong(self, *ids: str) -> None:
        (self.root / "wrong.json").write_text(json.dumps(list(ids)), encoding="utf-8")

    def wrong_trials(self, *ids: str) -> None:
        """`c3#2`: case c3 answers wrongly in its trial 2."""
        (self.root / "wrong_trials.json").write_text(json.dumps(list(ids)), encoding="utf-8")

    def calls(self) -> int:
        """How many times the system was called so far."""
        log = self.root / "calls.log"
        return len(log.read_text().splitlines()) if log.exists() else 0

    def raising_trials(self, *ids: str) -> None:
        """`c4#2`: case c4 raises in its trial 2 (that trial is missing)."""
        (self.root / "raise_trials.json").write_text(json.dumps(list(ids)), encoding="utf-8")

    def delays(self, seconds: dict[str, float]) -> None:
        """How long each case takes (by id): with concurrency, the order cases finish in."""
        (self.root / "delays.json").write_text(json.dumps(seconds), encoding="utf-8")

    def raising(self, *ids: str) -> None:
        (self.root / "raise.json").write_text(json.dumps(list(ids)), encoding="utf-8")
