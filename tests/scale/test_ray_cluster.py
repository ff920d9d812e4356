"""`executor: ray` on a real cluster: two Ray nodes on this machine, on 127.0.0.1 only (issue 30).

One cluster for the module (`cluster`): a head node (`ray start --head`, 1 CPU) and a second
node joined to it (1 CPU and a custom resource `second`), each with free ports of its own, a
temp directory and a working directory of its own; how, and why so, is in
`loopback_cluster.py`. With one CPU a node and two actors of one CPU each, Ray must place one
actor on each node. The runs are `oloproof run` processes with `execution.ray.address` set.

The tests run in order: the last one stops the second node mid-run. The fixture stops every
node even when a test fails, and fails if a process of the cluster is left (`ps`).
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from scale_support import DeskProject, desk_cases

pytestmark = [pytest.mark.slow, pytest.mark.ray]
# Looked up, not imported: Ray costs 0.3 s of CPU to import, in every worker that collects this
# module, and only one runs it (docs/architecture.md#tests).
if importlib.util.find_spec("ray") is None:
    pytest.skip("executor: ray needs Ray: pip install -e '.[ray]'", allow_module_level=True)

from loopback_cluster import (  # noqa: E402 (Ray must be importable first)
    LoopbackCluster,
    is_loopback_127,
    sockets,
)

# The system: a desk per actor, which logs every call (its node, process, working directory
# and the file `app` was imported from) to DESK_LOG, a file outside the project that the run
# passes to the actors through `execution.ray.runtime_env.env_vars`. A case can stall on one
# node (until the node is stopped) and kill its own worker when it is sent again.
APP = '''
import json
import os
import signal
import time
from pathlib import Path

import ray

HERE = Path(__file__).resolve().parent
LOG = os.environ.get("DESK_LOG") or str(HERE / "calls.log")
# A file that lies beside app.py: an actor reads it from the folder it was shipped.
SHIPPED = (HERE / "shipped.txt").read_text(encoding="utf-8").strip()


def _log(entry):
    line = (json.dumps(entry, sort_keys=True) + "\\n").encode()
    fd = os.open(LOG, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        os.write(fd, line)
    finally:
        os.close(fd)


def _began_before(case):
    try:
        text = Path(LOG).read_text(encoding="utf-8")
    except FileNotFoundError:
        return False
    # (the other node's actor may be appending its line as this one reads: a read can end
    # inside it, so only the lines that have their newline are whole)
    lines = text[:text.rfind("\\n") + 1].splitlines()
    return any(json.loads(line)["case"] == case for line in lines if line.strip())


class Desk:
    def __init__(self):
        self.state = None

    def reset(self, state):
        self.state = state

    def snapshot(self):
        return self.state

    def __call__(self, case_input):
        me = case_input["me"]
        again = _began_before(me)
        node = ray.get_runtime_context().get_node_id() if ray.is_initialized() else None
        _log({"case": me, "node": node, "pid": os.getpid(), "cwd": os.getcwd(),
              "app": __file__, "shipped": SHIPPED})
        if node is not None and node == case_input.get("stall_on"):
            time.sleep(600)  # until its node is stopped
        if again and case_input.get("die_when_sent_again"):
            os.kill(os.getpid(), signal.SIGKILL)
        time.sleep(case_input.get("sleep", 0))
        self.state["marks"].append(me)
        self.state["n"] = 1
        return {"owner": me}


def make_desk():
    return Desk()
'''


@pytest.fixture(scope="module")
def cluster() -> Iterator[LoopbackCluster]:
    started = LoopbackCluster()
    try:
        started.start_head(num_cpus=1)
        started.add_node("second", num_cpus=1, resources={"second": 1})
        yield started
    finally:
        started.stop()
        left = started.leftovers()
        assert not left, "processes of the cluster outlived it:\n" + "\n".join(left)


def _project(root: Path, cases: list[dict[str, Any]], log: Path,
             address: str | None) -> DeskProject:
    project = DeskProject(root)
    (root / "app.py").write_text(APP, encoding="utf-8")
    (root / "shipped.txt").write_text("from the project folder\n", encoding="utf-8")
    execution: dict[str, Any] = {"executor": "ray", "workers": 2}
    if address is not None:
        execution["ray"] = {"address": address,
                            "runtime_env": {"env_vars": {"DESK_LOG": str(log)}}}
    project.suite["execution"] = execution
    return project.write(cases)


def _log(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _comparable(document: dict[str, Any], project: Path) -> Any:
    document = dict(document)
    document.pop("run_id")
    document.pop("execution")
    return json.loads(json.dumps(document).replace(str(project), "<project>"))


def test_two_nodes_answer_on_127_0_0_1_only(cluster: LoopbackCluster) -> None:
    head, second = cluster.nodes

    # (the autoscaler reports a few seconds after the nodes start: "No cluster status" until)
    deadline = time.monotonic() + 60
    while True:
        status = cluster.ray("status")
        text = status.stdout
        if second.node_id in text or time.monotonic() > deadline:
            break
        time.sleep(1)
    assert status.returncode == 0, status.stderr
    assert f"1 node_{head.node_id}" in text and f"1 node_{second.node_id}" in text
    assert " 0.0/2.0 CPU" in text and " 0.0/1.0 second" in text, text

    nodes = cluster.python(
        "import json, sys, ray\n"
        "ray.init(address=sys.argv[1], include_dashboard=False, log_to_driver=False,"
        " logging_level='WARNING')\n"
        "print(json.dumps(ray.nodes()))")
    by_id = {n["NodeID"]: n for n in nodes}
    assert set(by_id) == {head.node_id, second.node_id}
    for node in nodes:
        assert node["Alive"] and node["NodeManagerAddress"] == "127.0.0.1", node
    assert by_id[head.node_id]["Resources"]["CPU"] == 1
    assert by_id[second.node_id]["Resources"]["CPU"] == 1
    assert by_id[second.node_id]["Resources"]["second"] == 1
    assert "second" not in by_id[head.node_id]["Resources"]

    # (what the fixture checks is gone at the end is here now)
    assert any("raylet" in line for line in cluster.leftovers())
    found = sockets(cluster.pids())
    listening = [s for s in found if s[2] == "LISTEN"]
    names = {s[1] for s in listening}
    assert {"gcs_server", "raylet"} <= names, listening
    assert all(is_loopback_127(s[3][0]) for s in found), found
    assert all(s[4] is None or is_loopback_127(s[4][0]) for s in found), found


def test_a_suite_runs_on_both_nodes_from_the_folder_it_ships_and_documents_as_local(
        cluster: LoopbackCluster, tmp_path: Path, cli: Any) -> None:
    head, second = cluster.nodes
    log = tmp_path / "calls.jsonl"
    cases = desk_cases(24, sleep=0.05)
    project = _project(tmp_path / "p", cases, log, cluster.address)

    code, out, err = cli("run", "--json", cwd=project.root, env=cluster.env(), timeout=240)

    assert code == 0, err
    document = json.loads(out)
    assert document["execution"] == {"executor": "ray", "workers": 2, "retried": 0,
                                     "nodes": sorted([head.node_id, second.node_id])}
    assert document["errors"] == []
    calls = _log(log)
    assert {c["case"] for c in calls} == {c["id"] for c in cases}
    assert {c["node"] for c in calls} == {head.node_id, second.node_id}
    # Each actor imported `app` from the folder the run shipped, unpacked by its own node,
    # and ran there; the nodes themselves run elsewhere and know nothing of the project.
    for call in calls:
        node = head if call["node"] == head.node_id else second
        app = Path(call["app"])
        assert app.is_relative_to(node.temp_dir) and "runtime_resources" in app.parts, app
        assert call["cwd"] == str(app.parent) and call["shipped"] == "from the project folder"
        assert not app.is_relative_to(project.root)
    assert not (project.root / "calls.log").exists()
    for node in cluster.nodes:
        assert not node.cwd.is_relative_to(project.root)

    # The same suite on `local` gives the same run document (ids, timings and the execution
    # block aside).
    local = tmp_path / "local"
    shutil.copytree(project.root, local, ignore=shutil.ignore_patterns(".oloproof"))
    suite = yaml.safe_load((local / "oloproof.yaml").read_text())
    suite["execution"] = {"executor": "local", "workers": 2}
    (local / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False))
    code, out_local, err = cli("run", "--json", cwd=local, timeout=120)
    assert code == 0, err
    assert _comparable(document, project.root) == _comparable(json.loads(out_local), local)


def test_a_stopped_node_loses_only_its_cases_retried_on_the_head_once_then_worker_lost(
        cluster: LoopbackCluster, tmp_path: Path, spawn_oloproof: Any) -> None:
    head, second = cluster.nodes
    log = tmp_path / "calls.jsonl"
    cases = desk_cases(16, sleep=0.05, stall_on=second.node_id)
    # The first two jobs each actor gets are sent before any returns (two out per worker):
    # c000, c002 to one actor and c001, c003 to the other. On the second node the first
    # stalls and the next waits behind it; both are lost with the node, and sent again, alone,
    # to the head -- where one of them (c000 or c001) kills its worker: lost twice.
    for case in cases[:2]:
        case["input"]["die_when_sent_again"] = True
    project = _project(tmp_path / "p", cases, log, cluster.address)

    run = spawn_oloproof("run", "--json", cwd=project.root, env=cluster.env())
    try:
        deadline = time.monotonic() + 180
        while not any(c["node"] == second.node_id for c in _log(log)):
            assert run.poll() is None, run.communicate()
            assert time.monotonic() < deadline, "no case reached the second node"
            time.sleep(0.1)
        # While the run waits on the stalled case: the run itself (the driver) and every
        # process of both nodes listen on, and talk to, 127.0.0.1 only.
        found = sockets(cluster.pids() | {run.pid})
        assert any(s[0] == run.pid and s[2] == "ESTABLISHED" for s in found), found
        assert all(is_loopback_127(s[3][0]) for s in found), found
        assert all(s[4] is None or is_loopback_127(s[4][0]) for s in found), found

        second.stop()
        assert second.pids() == set()
        assert head.pids(), "the head is still up"
        out, err = run.communicate(timeout=240)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()

    assert run.returncode == 0, err
    document = json.loads(out)
    calls = _log(log)
    (stalled,) = [c["case"] for c in calls if c["node"] == second.node_id]
    assert stalled in ("c000", "c001")
    behind = f"c{int(stalled[1:]) + 2:03d}"  # queued behind it on the second node
    assert document["status"] == "complete"
    assert document["execution"]["retried"] == 2
    assert document["execution"]["nodes"] == sorted([head.node_id, second.node_id])
    assert [(e["case"], e["kind"]) for e in document["errors"]] == [(stalled, "worker_lost")]
    assert [c["node"] for c in calls if c["case"] == stalled] == [second.node_id, head.node_id]
    assert [c["node"] for c in calls if c["case"] == behind] == [head.node_id]
    assert all(c["node"] == head.node_id for c in calls if c["case"] != stalled)
    passed = next(m for m in document["metrics"] if m["id"] == "state_matches")
    assert passed["passed"] == 15 and passed["observed"] == 15
