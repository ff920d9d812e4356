"""`executor: ray` (docs/scaling.md#ray-a-local-instance-or-a-cluster): Ray actors, each with its
own system and sandbox.

Few tests, sharing one local Ray instance (`local_ray`, two CPUs) where they can: a run in
this process finds Ray initialised and uses it, and a command run in a process of its own
joins it by its address. The actors' processes are killed with real
SIGKILLs (the desks kill themselves inside a case); Ray restarts them, and Oloproof sends their
cases once more. A run with no Ray running starts a local instance of its own and shuts it down
after: that one runs the command line in a process of its own, and is stopped with Ctrl-C.
"""

from __future__ import annotations

import importlib.util
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from scale_support import DeskProject, desk_cases, held_desk_cases, wait_until

from oloproof.errors import ConfigError
from oloproof.execution.transports.dispatched import BATCH_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.ray]
# Looked up, not imported: Ray costs 0.3 s of CPU to import, in every worker that collects this
# module, and only one runs it (docs/architecture.md#tests).
if importlib.util.find_spec("ray") is None:
    pytest.skip("executor: ray needs Ray: pip install -e '.[ray]'", allow_module_level=True)

# The stopping test holds the cases from this one on (counting from 1): see held_desk_cases.
HELD_FROM = 7


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_actors_lost_to_sigkill_are_restarted_their_cases_retried_then_worker_lost(
        tmp_path: Path, local_ray: Any) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["system"]["timeout_s"] = 1
    project.suite["execution"] = {"executor": "ray", "workers": 2}
    cases = desk_cases(12, sleep=0.02, fds=True)
    cases[3]["input"]["die"] = "died-once"  # SIGKILLs its actor the first time only
    cases[7]["input"]["die_always"] = True  # SIGKILLs its actor every time
    cases[10]["input"]["sleep"] = 4  # past timeout_s: stopped where it runs
    project.write(cases)

    result = project.run()

    # (the tests' Ray listens on loopback only: tests/conftest.py)
    assert [n["NodeManagerAddress"] for n in local_ray.nodes()] == ["127.0.0.1"]
    document = result.to_json()
    assert sorted((e["case"], e["kind"]) for e in document["errors"]) == [
        ("c007", "worker_lost"), ("c010", "timeout")]
    assert result.metric("state_matches").passed == 10
    assert document["execution"]["executor"] == "ray"
    assert document["execution"]["retried"] >= 2
    # Every case was called, c010 too: timeout_s counts from the call on the worker (the
    # watchdog's clock starts once the sandbox is held), never from the queue or an actor's
    # restart. Its call need not return, though: abandoned past timeout_s, it sleeps on in its
    # actor until it returns or the run ends and kills the actors -- where c010 is the last
    # case back (loaded, the order of the losses and restarts varies), 1 s into its 4 s sleep.
    assert set(project.began()) == {f"c{i:03d}" for i in range(12)}
    calls = project.calls()
    assert os.getpid() not in {c["pid"] for c in calls}
    assert {c["case"] for c in calls} >= {f"c{i:03d}" for i in range(12)} - {"c007", "c010"}
    killed = int((project.root / "died-once").read_text())
    assert [c["pid"] for c in calls if c["case"] == "c003"] != [killed]


def test_run_json_on_ray_prints_the_document_alone_though_a_worker_died(
        tmp_path: Path, cli: Any, local_ray: Any) -> None:
    """Ray's '(raylet) A worker died ...' notice reached stdout, so `--json` was not JSON.

    The command joins the session's Ray instance by its address (as a run joins a cluster,
    where the notice was first seen), rather than starting an instance of its own."""
    import json

    project = DeskProject(tmp_path / "p")
    address = local_ray.get_runtime_context().gcs_address
    project.suite["execution"] = {"executor": "ray", "workers": 2, "ray": {"address": address}}
    cases = desk_cases(6)
    cases[2]["input"]["die_always"] = True  # SIGKILLs its actor every time
    project.write(cases)

    code, out, err = cli("run", "--json", cwd=project.root, timeout=240)

    assert code == 3, err  # 5 of 6 states cannot show the 50% floor
    document = json.loads(out)  # the document and nothing else
    assert [(e["case"], e["kind"]) for e in document["errors"]] == [("c002", "worker_lost")]
    assert "A worker died" in err, "Ray's notice was printed, to stderr"


def test_an_unreachable_ray_address_is_refused_within_seconds(tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    # Port 9 (discard) on loopback: nothing listens there.
    project.suite["execution"] = {"executor": "ray", "workers": 2,
                                  "ray": {"address": "127.0.0.1:9"}}
    project.write(desk_cases(3))

    started = time.monotonic()
    with pytest.raises(ConfigError) as raised:
        project.run()

    assert time.monotonic() - started < 10
    error = raised.value
    assert "cannot reach the Ray cluster" in error.message and "127.0.0.1:9" in error.message
    assert "ray start --head" in error.message
    lines = (project.root / "oloproof.yaml").read_text().splitlines()
    assert error.line is not None and "address" in lines[error.line - 1]
    assert project.calls() == []


def test_a_run_without_ray_running_starts_a_local_instance_and_ctrl_c_stops_it(
        tmp_path: Path, spawn_oloproof) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "ray", "workers": 2}
    project.suite["system"]["timeout_s"] = 300  # (the held cases wait for the test)
    # The cases from the 7th on wait: the run stops at a known point, however loaded the
    # machine is: six cases finished and stored, both actors busy with held ones. A case longer
    # than BATCH_SECONDS goes to its worker alone, so each finished case comes back alone (in
    # a batch with a held case, it would come back only with that one).
    cases = held_desk_cases(40, HELD_FROM)
    for case in cases[:HELD_FROM - 1]:
        case["input"]["sleep"] = BATCH_SECONDS + 0.05
    project.write(cases)

    run = spawn_oloproof("run", cwd=project.root, start_new_session=True)
    wait_until(lambda: (len(project.calls()) == HELD_FROM - 1 and len(project.held_pids()) == 2)
               or run.poll() is not None, "six cases finished and both actors hold one")
    wait_until(lambda: project.stored_executions() == HELD_FROM - 1 or run.poll() is not None,
               "the six are stored (the run commits at least once a second)")
    assert run.poll() is None
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=60)
    project.release()

    assert run.returncode == 5, err
    pids = {c["pid"] for c in project.calls()} | project.held_pids()
    assert len(pids) == 2
    wait_until(lambda: not any(_alive(pid) for pid in pids),
               "the actors went with the local instance", 30)
    assert len(project.calls()) == HELD_FROM - 1
    again = project.run(executor="local", workers=4)
    assert again.to_json()["cache"]["execution"]["hit"] == HELD_FROM - 1
    assert again.metric("state_matches").passed == 40
