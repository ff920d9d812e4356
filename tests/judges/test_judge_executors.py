"""Judges on every executor (docs/judges.md#where-a-judge-sits): the judge call is made beside
the case on its worker, so `processes` and `ray` judge exactly as `local` — the same run
document, the same verdicts stored, the same number of calls."""

from __future__ import annotations

import json
import sqlite3
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)
from scripted_openai import ScriptedServer

import oloproof

pytestmark = pytest.mark.slow


def _document(result: oloproof.RunResult) -> Any:
    document = result.to_json()
    document.pop("run_id")
    document.pop("execution")
    return document


def _verdicts(project: JudgedProject) -> list[tuple[str, str]]:
    with sqlite3.connect(project.store) as db:
        rows = db.execute("SELECT key, body FROM judge_verdicts").fetchall()
    return sorted((key, json.dumps({k: v for k, v in json.loads(body).items()
                                    if k != "latency_ms"}, sort_keys=True))
                  for key, body in rows)


@pytest.mark.parametrize("executor", ["processes", "ray"])
def test_a_model_judge_judges_on_the_workers_as_on_local(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, executor: str) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-executors")
    cases = desk_cases(16, lies={3, 7, 11}, garbage={5})
    found = {}
    with ScriptedServer() as server:
        for name, workers in (("local", 1), (executor, 2)):
            project = JudgedProject(tmp_path / name)
            project.module = "desk_shared"  # (the same module name: one suite, two places)
            project.model_judge(server)
            project.suite["execution"] = {"executor": name, "workers": workers}
            if name == "ray":
                project.suite["execution"]["ray"] = {"num_cpus_per_worker": 0.5}
            project.write_cases(cases)
            (project.root / "desk_shared.py").write_text(
                (project.root / f"{project.suite['system']['callable'].split(':')[0]}.py")
                .read_text(encoding="utf-8"), encoding="utf-8")
            project.suite["system"]["callable"] = "desk_shared:run"
            project.write()
            before = server.calls
            result = oloproof.run(project.config)
            found[name] = (_document(result), _verdicts(project), server.calls - before)
    local, other = found["local"], found[executor]
    assert other[0] == local[0]
    assert other[1] == local[1]
    assert other[2] == local[2] == 16 + 1  # the unparseable reply asked again once
    assert local[0]["metrics"][0]["missing_by_reason"] == {"judge_unparseable": 1}
