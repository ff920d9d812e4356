"""Simulated users on every executor (docs/conversations.md#seeds-and-caching): the simulator
is called beside the case on its worker, its stored turns shipped with the job, so `processes`
and `ray` give the run document `local` gives — the same figures, the same turns stored, the
same number of calls."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from conversation_project import ConversationProject, customers
from scripted_openai import ScriptedServer

import oloproof

pytestmark = pytest.mark.slow

CASES = customers(10, refuse={2, 5}, leak={7}, done_first={9})


def _document(result: oloproof.RunResult) -> Any:
    document = result.to_json()
    document.pop("run_id")
    document.pop("execution")
    return document


def _turns(project: ConversationProject) -> list[tuple[str, str, str]]:
    with sqlite3.connect(project.store) as db:
        return sorted(db.execute("SELECT key, conversation, body FROM simulator_turns"))


def _project(root: Path, executor: str, workers: int) -> ConversationProject:
    project = ConversationProject(root)
    # (one module name in both projects: one suite, two places)
    desk = (root / f"{project.module}.py").read_text(encoding="utf-8")
    (root / "desk_shared.py").write_text(desk, encoding="utf-8")
    users = (root / f"{project.users_module}.py").read_text(encoding="utf-8")
    (root / "users_shared.py").write_text(users, encoding="utf-8")
    project.suite["system"]["callable"] = "desk_shared:run"
    project.suite["simulators"][0]["callable"] = "users_shared:simulate"
    project.suite["execution"] = {"executor": executor, "workers": workers}
    if executor == "ray":
        project.suite["execution"]["ray"] = {"num_cpus_per_worker": 0.5}
    project.write()
    project.write_cases(CASES)
    return project


@pytest.mark.parametrize("executor", ["processes", pytest.param("ray", marks=pytest.mark.ray)])
def test_a_callable_simulator_plays_on_the_workers_as_on_local(
        tmp_path: Path, executor: str, request: pytest.FixtureRequest) -> None:
    if executor == "ray":
        request.getfixturevalue("local_ray")  # the session's Ray instance, not one of its own
    found = {}
    for name, workers in (("local", 1), (executor, 2)):
        project = _project(tmp_path / name, name, workers)
        result = oloproof.run(project.config, trials=2)
        found[name] = (_document(result), _turns(project))
    local, other = found["local"], found[executor]
    assert other[0] == local[0]
    assert other[1] == local[1] and len(local[1]) == local[0]["conversations"]["simulator_calls"]
    assert local[0]["conversations"]["failures"] == {"ended_early": 2, "leaked_instructions": 2}


def test_a_model_simulator_on_worker_processes_asks_as_local_does(tmp_path: Path) -> None:
    found = {}
    with ScriptedServer() as server:
        for name, workers in (("local", 1), ("processes", 2)):
            project = _project(tmp_path / name, name, workers)
            # (the key from a variable every process has)
            project.model_simulator(server, api_key_env="PATH")
            before = server.calls
            first = oloproof.run(project.config)
            calls = server.calls - before
            # The desk's third reply changed: the workers find the first turns in what the
            # coordinator shipped with the job, as local finds them in the store.
            project.desk(version="v2", changed=3)
            project.suite["system"]["version"] = "v2"
            (project.root / "desk_shared.py").write_text(
                (project.root / f"{project.module}.py").read_text(encoding="utf-8"),
                encoding="utf-8")
            project.write()
            before = server.calls
            second = oloproof.run(project.config)
            found[name] = (_document(first), calls, _document(second), server.calls - before,
                           _turns(project))
    local, other = found["local"], found["processes"]
    assert other[0] == local[0] and other[1] == local[1]
    assert other[2] == local[2] and other[3] == local[3]
    assert other[4] == local[4]
    assert 0 < local[3] < local[1]  # only the turns after the changed reply were asked
    assert json.dumps(local[2]["conversations"]) == json.dumps(other[2]["conversations"])
