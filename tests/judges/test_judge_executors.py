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


@pytest.mark.parametrize("executor", ["processes", pytest.param("ray", marks=pytest.mark.ray)])
def test_a_model_judge_judges_on_the_workers_as_on_local(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, executor: str,
        request: pytest.FixtureRequest) -> None:
    if executor == "ray":
        request.getfixturevalue("local_ray")  # the session's Ray instance, not one of its own
    cases = desk_cases(16, lies={3, 7, 11}, garbage={5})
    found = {}
    with ScriptedServer() as server:
        for name, workers in (("local", 1), (executor, 2)):
            project = JudgedProject(tmp_path / name)
            project.module = "desk_shared"  # (the same module name: one suite, two places)
            # The key from a variable every process has: a Ray actor has the environment of
            # the Ray instance, which an earlier test may have started before any variable
            # this test could set (a worker without the key stops the run: the test below).
            project.model_judge(server, api_key_env="PATH")
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


def test_a_worker_without_the_key_is_a_configuration_error(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """The key's variable is checked where the judges are called too: a worker process that
    cannot see it stops the run before any call (exit 2), naming the judge's line."""
    from oloproof.errors import ConfigError
    from oloproof.project import load_worker_parts

    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-here")
    with ScriptedServer() as server:
        project = JudgedProject(tmp_path / "keyless")
        project.model_judge(server)
        project.write_cases(desk_cases(2))
        monkeypatch.delenv("JUDGE_TEST_KEY")  # as on a node that was never given it
        with pytest.raises(ConfigError) as raised:
            load_worker_parts("oloproof.yaml", str(project.root))
        assert server.calls == 0
    assert "(on this worker)" in raised.value.message
    assert "JUDGE_TEST_KEY, which is not set" in raised.value.message
    assert raised.value.line is not None


PID_DESK = '''
import os

from oloproof import system


@system(name="desk", version="v1")
def run(case_input):
    return {"answer": "Refunded.", "pid": os.getpid()}
'''

PID_JUDGE = '''
import os
from pathlib import Path


def grade(request):
    with open(Path(__file__).with_name("judged.txt"), "a") as out:
        out.write(f"{request.case_id} {request.shown['output.pid']} {os.getpid()}\\n")
    return {"verdict": "pass", "reason": "judged where the case ran"}
'''


@pytest.mark.parametrize("executor", ["local", "processes",
                                      pytest.param("ray", marks=pytest.mark.ray)])
def test_the_judge_is_called_in_the_process_the_case_ran_in(
        tmp_path: Any, executor: str, request: pytest.FixtureRequest) -> None:
    """The judge call is made beside the case, on its worker: each case is judged in the
    process its system call ran in — the run's own process with `local`, the workers'
    otherwise, never the coordinator for a worker's case."""
    import os

    if executor == "ray":
        request.getfixturevalue("local_ray")  # the session's Ray instance, not one of its own

    project = JudgedProject(tmp_path / executor)
    (project.root / "pid_desk.py").write_text(PID_DESK, encoding="utf-8")
    (project.root / "pid_judge.py").write_text(PID_JUDGE, encoding="utf-8")
    project.suite["system"] = {"name": "desk", "version": "v1", "callable": "pid_desk:run",
                               "concurrency": 2}
    project.suite["judges"] = [{"name": "house", "callable": "pid_judge:grade"}]
    project.suite["evaluators"][0]["shows"] = ["input.message", "output.answer", "output.pid"]
    project.suite["execution"] = {"executor": executor,
                                  "workers": 1 if executor == "local" else 2}
    if executor == "ray":
        project.suite["execution"]["ray"] = {"num_cpus_per_worker": 0.5}
    project.write()
    project.write_cases(desk_cases(12))
    result = oloproof.run(project.config)
    assert result.metric("reply_truthful").passed == 12
    rows = [line.split() for line in
            (project.root / "judged.txt").read_text(encoding="utf-8").splitlines()]
    assert sorted(r[0] for r in rows) == [f"r{i:03d}" for i in range(1, 13)]
    assert all(ran == judged for _, ran, judged in rows)  # judged where it ran
    places = {judged for _, _, judged in rows}
    if executor == "local":
        assert places == {str(os.getpid())}
    else:
        assert str(os.getpid()) not in places and 1 <= len(places) <= 2
