"""A project whose system does, on each trial of a case, what the case's `plan` says.

`plan` is a string with one letter per trial: `P` answers right, `F` answers wrong, `E`
raises (the trial errors: missing for every criterion). Trials past the plan's end answer
right. Every call is logged as `case trial trials` in `calls.log`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

SCRIPTED = '''
import os
from oloproof import current_case, system

LOG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "calls.log")


@system(name="scripted", version="v1")
def run(case_input):
    case = current_case()
    with open(LOG, "a", encoding="utf-8") as log:
        log.write(f"{case.case_id} {case.trial} {case.trials}\\n")
    plan = case_input.get("plan", "")
    step = plan[case.trial - 1] if case.trial <= len(plan) else "P"
    if step == "E":
        raise RuntimeError(f"scripted error on trial {case.trial}")
    return {"answer": "yes" if step == "P" else "no"}
'''


class TrialProject:
    """A scripted project on disk: cases from plans, both YAML files, the call log."""

    def __init__(self, root: Path) -> None:
        self.root = root
        (root / "data").mkdir(parents=True, exist_ok=True)
        (root / "app.py").write_text(SCRIPTED, encoding="utf-8")
        self.suite: dict[str, Any] = {
            "version": 1, "project": "trials", "dataset": "data/cases.jsonl",
            "system": {"name": "scripted", "version": "v1", "callable": "app:run",
                       "concurrency": 4},
            "trials": 4,
            "evaluators": [{"type": "exact_match", "criterion": "answer_correct",
                            "field": "answer", "expected_field": "answer"}],
        }
        self.policy: dict[str, Any] = {"version": 1, "rules": []}
        self.write()

    def write(self) -> None:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        (self.root / "release.yaml").write_text(yaml.safe_dump(self.policy, sort_keys=False),
                                                encoding="utf-8")

    def cases(self, plans: dict[str, str]) -> None:
        lines = [json.dumps({"id": case_id, "input": {"plan": plan, "n": i},
                             "expected": {"answer": "yes"}})
                 for i, (case_id, plan) in enumerate(plans.items())]
        (self.root / "data" / "cases.jsonl").write_text("\n".join(lines) + "\n",
                                                        encoding="utf-8")

    def calls(self) -> list[tuple[str, int, int]]:
        log = self.root / "calls.log"
        if not log.exists():
            return []
        out = []
        for line in log.read_text(encoding="utf-8").splitlines():
            case_id, trial, trials = line.split()
            out.append((case_id, int(trial), int(trials)))
        return out

    def forget_calls(self) -> None:
        (self.root / "calls.log").unlink(missing_ok=True)

    @property
    def config(self) -> str:
        return str(self.root / "oloproof.yaml")


@pytest.fixture
def trial_project(tmp_path: Path) -> TrialProject:
    return TrialProject(tmp_path / "project")
