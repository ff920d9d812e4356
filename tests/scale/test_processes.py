"""`executor: processes` (docs/scaling.md#processes-every-core-of-this-machine): worker processes,
each with its own system and sandbox, and what happens when one is killed, a case runs too long, or
the run is stopped with Ctrl-C.

Every test here starts real worker processes and sends real signals. The desks (scale_support)
raise if a case ever sees a state that is not its own, and log which process ran each case.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import signal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from scale_support import DeskProject, desk_cases, held_desk_cases, wait_until, worker_children

from oloproof.errors import ConfigError
from oloproof.execution import process_start
from oloproof.execution.intake import Progress
from oloproof.execution.transports.dispatched import BATCH_SECONDS
from oloproof.own_process import YOUNG_THRESHOLD

pytestmark = pytest.mark.slow

# The stopping tests hold the cases from this one on (counting from 1): see held_desk_cases.
HELD_FROM = 7


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is gone for our purposes
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return False


def test_each_worker_is_a_process_of_its_own_and_only_the_coordinator_opens_the_store(
        tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(16, sleep=0.05, fds=True))

    result = project.run()

    document = result.to_json()
    assert document["errors"] == []
    assert result.metric("state_matches").passed == 16
    assert document["execution"] == {"executor": "processes", "workers": 2, "retried": 0}
    pids = {c["pid"] for c in project.calls()}
    assert len(pids) == 2 and os.getpid() not in pids
    # no worker ever had the store open while it ran a case
    outputs = _outputs(project)
    assert len(outputs) == 16 and not any(o["opens_store"] for o in outputs)
    assert not any(_alive(pid) for pid in pids), "the workers stopped with the run"


def test_a_worker_process_collects_young_objects_as_the_command_does_and_the_host_keeps_its_own(
        tmp_path: Path) -> None:
    # docs/scaling.md#a-cpu-bound-suite: a worker process is one of Oloproof's own; the
    # library leaves its caller's collector alone, on `local` as on `processes`.
    host = gc.get_threshold()
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(4, gc=True))

    assert project.run().to_json()["errors"] == []

    assert {o["young_threshold"] for o in _outputs(project)} == {YOUNG_THRESHOLD}
    assert gc.get_threshold() == host
    local = DeskProject(tmp_path / "local")
    local.write(desk_cases(4, gc=True))
    assert local.run().to_json()["errors"] == []
    assert {o["young_threshold"] for o in _outputs(local)} == {host[0]}
    assert gc.get_threshold() == host


def _outputs(project: DeskProject) -> list[dict]:
    db = sqlite3.connect(project.root / ".oloproof" / "store.sqlite")
    try:
        return [json.loads(row[0]) for row in db.execute("SELECT output FROM executions")]
    finally:
        db.close()


def test_a_worker_that_kills_itself_is_replaced_and_its_cases_tried_once_more(
        tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    cases = desk_cases(12, sleep=0.02)
    cases[5]["input"]["die"] = "died-once"  # SIGKILLs its worker the first time only
    project.write(cases)

    result = project.run()

    document = result.to_json()
    assert document["errors"] == []
    assert result.metric("state_matches").passed == 12
    assert document["execution"]["retried"] >= 1
    killed = int((project.root / "died-once").read_text())
    calls = project.calls()
    assert [c["pid"] for c in calls if c["case"] == "c005"] != [killed], \
        "the case was tried once more, in another process"
    assert not _alive(killed)
    # every case ran; a case that finished on the killed worker before its result was sent
    # back ran again: what was in flight is tried once more
    assert {c["case"] for c in calls} == {c["id"] for c in cases}
    assert len(calls) <= 12 + document["execution"]["retried"]


def test_a_case_that_loses_its_worker_twice_is_errored_worker_lost_and_not_cached(
        tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    cases = desk_cases(8, sleep=0.02)
    cases[3]["input"]["die_always"] = True
    project.write(cases)

    result = project.run()

    document = result.to_json()
    assert [(e["case"], e["kind"]) for e in document["errors"]] == [("c003", "worker_lost")]
    row = result.metric("state_matches")
    assert (row.passed, row.missing) == (7, 1)
    assert document["execution"]["retried"] >= 1
    again = project.run()  # not cached: the next run tries it again (and it is lost again)
    assert again.to_json()["cache"]["execution"] == {"hit": 7, "miss": 1}


def test_a_worker_killed_from_outside_mid_run_loses_only_its_cases_in_flight(
        tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(30, sleep=0.1))
    killed: list[int] = []

    def kill_one(progress: Progress) -> None:
        if progress.done >= 4 and not killed:
            pid = project.calls()[-1]["pid"]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    result = project.run(on_progress=kill_one)

    document = result.to_json()
    assert killed and document["errors"] == []
    assert result.metric("state_matches").passed == 30
    assert 1 <= document["execution"]["retried"] <= 30
    assert {c["case"] for c in project.calls()} == {f"c{i:03d}" for i in range(30)}


def test_a_timeout_is_enforced_in_the_worker_and_the_others_carry_on(tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["system"]["timeout_s"] = 0.5
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    cases = desk_cases(10, sleep=0.02)
    cases[2]["input"]["sleep"] = 3
    project.write(cases)

    result = project.run()

    document = result.to_json()
    assert [(e["case"], e["kind"]) for e in document["errors"]] == [("c002", "timeout")]
    assert "timeout_s=0.5" in document["errors"][0]["message"]
    assert result.metric("state_matches").passed == 9


def test_no_more_worker_processes_start_than_cases_to_run(tmp_path: Path) -> None:
    """`--workers 32` for 6 cases started 32 processes."""
    project = DeskProject(tmp_path / "p", factory="app:make_logged")
    project.suite["execution"] = {"executor": "processes", "workers": 8}
    with (project.root / "app.py").open("a", encoding="utf-8") as app:
        app.write("\n\ndef make_logged():\n"
                  "    with open(HERE / 'made.log', 'a') as made:\n"
                  "        made.write(f'{os.getpid()}\\n')\n"
                  "    return Desk()\n")
    project.write(desk_cases(3))

    result = project.run()

    assert result.to_json()["execution"] == {"executor": "processes", "workers": 3,
                                             "retried": 0}
    made = (project.root / "made.log").read_text(encoding="utf-8").split()
    assert len(made) == len(set(made)) == 1 + 3, "the coordinator's look, then three workers"
    assert str(os.getpid()) in made


def test_a_worker_that_cannot_load_the_system_is_a_configuration_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = DeskProject(tmp_path / "p", factory="app:factory_for_the_coordinator_only")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(4))
    monkeypatch.setenv("DESK_COORDINATOR_PID", str(os.getpid()))

    with pytest.raises(ConfigError) as raised:
        project.run()

    message = str(raised.value)
    assert "app:factory_for_the_coordinator_only" in message
    assert "no sandbox licence on this worker" in message and "worker process" in message
    assert project.calls() == []
    assert _runs(project) == 0, "no run was registered"


def test_worker_processes_started_for_a_suite_that_then_fails_to_load_are_stopped(
        tmp_path: Path) -> None:
    # The workers start as soon as the suite file asks for them (docs/scaling.md#a-cpu-bound-suite),
    # before the dataset is read: a dataset that is refused leaves no process behind.
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(4))
    with (project.root / "data" / "cases.jsonl").open("a", encoding="utf-8") as cases:
        cases.write("{not json\n")

    with pytest.raises(ConfigError, match=r"cases\.jsonl"):
        project.run()

    assert worker_children() == set()
    assert _runs(project) == 0


def _runs(project: DeskProject) -> int:
    path = project.root / ".oloproof" / "store.sqlite"
    if not path.exists():
        return 0
    db = sqlite3.connect(path)
    try:
        return int(db.execute("SELECT count(*) FROM runs").fetchone()[0])
    finally:
        db.close()


def test_ctrl_c_stops_every_worker_stores_what_finished_and_exits_5(
        tmp_path: Path, spawn_oloproof) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.suite["system"]["timeout_s"] = 300  # (the held cases wait for the test)
    # The cases from the 7th on wait: the run stops at a known point, however loaded the
    # machine is: six cases finished and stored, both workers busy with held ones. A case longer
    # than BATCH_SECONDS goes to its worker alone, so each finished case comes back alone (in
    # a batch with a held case, it would come back only with that one).
    cases = held_desk_cases(40, HELD_FROM)
    for case in cases[:HELD_FROM - 1]:
        case["input"]["sleep"] = BATCH_SECONDS + 0.05
    project.write(cases)

    # In a session of its own, like a terminal's foreground job: Ctrl-C reaches the whole group.
    run = spawn_oloproof("run", cwd=project.root, start_new_session=True)
    wait_until(lambda: (len(project.calls()) == HELD_FROM - 1 and len(project.held_pids()) == 2)
               or run.poll() is not None, "six cases finished and both workers hold one")
    wait_until(lambda: project.stored_executions() == HELD_FROM - 1 or run.poll() is not None,
               "the six are stored (the run commits at least once a second)")
    assert run.poll() is None
    os.killpg(run.pid, signal.SIGINT)
    _, err = run.communicate(timeout=60)
    project.release()

    assert run.returncode == 5, err
    pids = {c["pid"] for c in project.calls()} | project.held_pids()
    assert len(pids) == 2
    wait_until(lambda: not any(_alive(pid) for pid in pids), "every worker stopped", 30)
    assert len(project.calls()) == HELD_FROM - 1
    # what finished was stored, all of it: the next run (here in this process) reuses it
    again = project.run(executor="local", workers=4)
    assert again.to_json()["cache"]["execution"]["hit"] == HELD_FROM - 1
    assert again.metric("state_matches").passed == 40


# ---- started before the suite loads (execution/process_start.py) ----------------------------


def test_the_command_starts_the_workers_its_suite_file_asks_for_before_it_loads_the_suite(
        tmp_path: Path) -> None:
    # docs/scaling.md#a-cpu-bound-suite: `oloproof run` reads `execution:` (or --executor and
    # --workers) first and starts the processes while it imports the engine; the run takes them.
    suite = tmp_path / "oloproof.yaml"
    suite.write_text("version: 1\nexecution: {executor: processes, workers: 2}\n",
                     encoding="utf-8")
    cores = os.cpu_count() or 1
    with process_start.started_early(str(suite), None, None):
        early = list(process_start._EARLY.get() or [])
        assert len(early) == min(2, cores)
        taken = process_start.take_started(1)
        assert taken == early[:1], "the run took the processes started early, started none"
        assert process_start._EARLY.get() == []
        for other in early[1:]:
            assert other.process.poll() is not None, "the one the run did not take is stopped"
    try:
        assert taken[0].process.poll() is None, "the one the run took is the run's to stop"
    finally:
        process_start.discard_all(taken)
    with process_start.started_early(str(suite), "processes", 1):
        early = list(process_start._EARLY.get() or [])
        more = process_start.take_started(2)
        assert len(early) == 1 and more[:1] == early and len(more) == 2
    process_start.discard_all(more)
    assert worker_children() == set()


@pytest.mark.parametrize(("file", "executor", "workers", "wanted"), [
    ("execution: {executor: processes, workers: 2}", None, None, 2),
    ("execution: {executor: processes, workers: 2}", None, 1, 1),
    ("execution: {executor: processes, workers: 2}", "local", None, 0),
    ("execution: {executor: processes}", None, None, 1),
    ("execution: {workers: 4}", "processes", 3, 3),
    ("execution: {workers: 4}", None, None, 0),  # (local, the default)
    ("execution: {executor: processes, workers: two}", None, None, 0),  # (loading says why)
    ("execution: [processes]", None, None, 0),
    ("{not yaml", None, None, 0),
    (None, None, None, 0),  # no such file
    (None, "processes", 2, 2),  # (the flags say it all: the file is not read)
])
def test_how_many_worker_processes_the_command_starts_early(
        tmp_path: Path, file: str | None, executor: str | None, workers: int | None,
        wanted: int) -> None:
    suite = tmp_path / "oloproof.yaml"
    if file is not None:
        suite.write_text(f"version: 1\n{file}\n", encoding="utf-8")
    cores = os.cpu_count() or 1
    assert process_start.processes_wanted(str(suite), executor, workers) == min(wanted, cores)


def test_the_command_runs_on_the_processes_it_started_and_leaves_none_behind(
        tmp_path: Path, spawn_oloproof: Any) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(8))
    mark = f"oloproof-test-{os.getpid()}-{tmp_path.name}"

    run = spawn_oloproof("run", "--json", cwd=project.root, env={"DESK_RUN_MARK": mark})
    out, err = run.communicate(timeout=300)

    assert run.returncode == 0, err
    document = json.loads(out)
    assert document["execution"]["executor"] == "processes"
    pids = {c["pid"] for c in project.calls()}
    assert len(pids) == min(2, os.cpu_count() or 1) and run.pid not in pids
    wait_until(lambda: _marked_processes(mark) == set(), "every worker stopped", 30)

    # A suite that fails to load once the command has started its workers stops them.
    with (project.root / "data" / "cases.jsonl").open("a", encoding="utf-8") as cases:
        cases.write("{not json\n")
    run = spawn_oloproof("run", cwd=project.root, env={"DESK_RUN_MARK": mark})
    _, err = run.communicate(timeout=300)

    assert run.returncode == 2 and "cases.jsonl" in err, err
    wait_until(lambda: _marked_processes(mark) == set(), "every worker stopped", 30)


def _marked_processes(mark: str) -> set[int]:
    """The live processes whose environment holds `mark` (a command's and its workers')."""
    found = set()
    needle = f"DESK_RUN_MARK={mark}".encode()
    for environ in Path("/proc").glob("[0-9]*/environ"):
        try:
            if needle in environ.read_bytes().split(b"\0") and _alive(int(environ.parent.name)):
                found.add(int(environ.parent.name))
        except (OSError, ValueError):
            continue
    return found


def test_a_worker_takes_in_a_parcel_while_its_lanes_keep_finishing_cases() -> None:
    # A worker's lanes finish cases faster than it judges them: `results()` then returns at
    # once, again and again. The parcel the coordinator sent meanwhile must be taken in between
    # two sends, not once the lanes have nothing left to run (then the worker waits for it).
    from oloproof.execution.transports.processes import send_results

    class Lanes:
        finished = 0

        async def results(self) -> list[int]:
            if self.finished == 1000:  # (then nothing more: a worker that ran dry)
                await asyncio.get_running_loop().create_future()
            self.finished += 1
            return [self.finished]

    async def worker() -> tuple[int, int]:
        lanes, sent = Lanes(), []
        sender = asyncio.create_task(send_results(lanes, sent.append))  # type: ignore[arg-type]
        await asyncio.sleep(0)  # (the sender's turn)
        await asyncio.sleep(0)  # (a parcel taken in: this task's turn again)
        taken_in_after = len(sent)
        sender.cancel()
        return taken_in_after, lanes.finished

    sent_before, finished = asyncio.run(worker())
    assert sent_before <= 2 and finished < 1000
