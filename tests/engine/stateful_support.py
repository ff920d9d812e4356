"""A small project on disk around a Stateful (and perhaps Replayable) system, run in-process.

Tests write the system module (its source is theirs), the cases and both YAML files, run the
suite with `oloproof.run`, and read back each case's verdicts from the store. The system module
logs what it was asked to do into files next to it, so a test can count calls across runs.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

import oloproof
from oloproof.analysis.outcome import CaseOutcome
from oloproof.evaluators.judgment import CODE_VERDICTS
from oloproof.report.case_view import case_view
from oloproof.store.store import Store

LOG_HELPERS = '''
import json as _json
import os as _os
from pathlib import Path as _Path

_HERE = _Path(__file__).parent


def log(name, entry):
    """Append one JSON line to <project>/<name>.log (atomic enough for one line)."""
    fd = _os.open(_HERE / f"{name}.log", _os.O_WRONLY | _os.O_CREAT | _os.O_APPEND, 0o644)
    try:
        _os.write(fd, (_json.dumps(entry, sort_keys=True) + "\\n").encode())
    finally:
        _os.close(fd)
'''


class StatefulProject:
    """A project directory: `app` module, cases, oloproof.yaml, release.yaml."""

    def __init__(self, root: Path, app_source: str, *, callable_: str = "app:desk",
                 module: str = "app") -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        (root / "data").mkdir(exist_ok=True)
        (root / f"{module}.py").write_text(LOG_HELPERS + app_source, encoding="utf-8")
        self.suite: dict[str, Any] = {
            "version": 1,
            "project": root.name,
            "dataset": "data/cases.jsonl",
            "system": {"name": "desk", "version": "v1", "callable": callable_,
                       "records": ["agent_trajectory/v1"], "concurrency": 4, "timeout_s": 20},
            "evaluators": [{"type": "state_matches", "mode": "whole"}],
        }
        self.policy: dict[str, Any] = {"version": 1, "allow_approximate_methods": True,
                                       "rules": []}

    # ---- writing -----------------------------------------------------------------------

    def write(self, cases: list[dict[str, Any]] | None = None) -> StatefulProject:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        (self.root / "release.yaml").write_text(yaml.safe_dump(self.policy, sort_keys=False),
                                                encoding="utf-8")
        if cases is not None:
            text = "".join(json.dumps(c) + "\n" for c in cases)
            (self.root / "data" / "cases.jsonl").write_text(text, encoding="utf-8")
        return self

    def cases(self) -> list[dict[str, Any]]:
        lines = (self.root / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
        return [json.loads(line) for line in lines if line.strip()]

    # ---- running and reading -----------------------------------------------------------

    def run(self, **options: Any) -> oloproof.RunResult:
        return oloproof.run(self.root / "oloproof.yaml", policy=self.root / "release.yaml",
                            **options)

    @property
    def store_path(self) -> Path:
        return self.root / ".oloproof" / "store.sqlite"

    def verdicts(self, run_id: str) -> dict[str, dict[str, tuple[str, str | None]]]:
        """case id -> criterion -> (verdict, reason)."""
        store = Store(self.store_path)
        try:
            criteria = store.run_record(run_id)["suite"]["criteria"]
            out: dict[str, dict[str, tuple[str, str | None]]] = {}
            for case_id, _digest, _key, body in store.iter_run_cases(run_id):
                outcome = CaseOutcome.from_json(case_id, body)
                out[case_id] = {
                    name: (CODE_VERDICTS[code], reason)
                    for name, code, reason in zip(criteria, outcome.codes, outcome.reasons,
                                                  strict=True)
                }
            return out
        finally:
            store.close()

    def view(self, run_id: str, case_id: str) -> dict[str, Any]:
        """The case panel's data for one case (what `inspect --case --json` prints)."""
        store = Store(self.store_path)
        try:
            return case_view(store, run_id, case_id)
        finally:
            store.close()

    def log(self, name: str) -> list[Any]:
        path = self.root / f"{name}.log"
        if not path.exists():
            return []
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def metric(result: oloproof.RunResult, metric_id: str) -> dict[str, Any]:
    return result.metric(metric_id).to_json()


def decision(result: oloproof.RunResult, rule_id: str) -> dict[str, Any]:
    return next(d.to_json() for d in result.decisions if d.rule == rule_id)
