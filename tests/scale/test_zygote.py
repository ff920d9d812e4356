"""A run's worker processes forked from one interpreter that imports the engine once
(execution/zygote.py, docs/scaling.md#a-cpu-bound-suite): each worker its own process with its
own pipes, seen by the coordinator as a process it started itself would be (its pid, its exit
code, killed, waited for), and nothing left behind.
"""

from __future__ import annotations

import os
import signal
import subprocess
from pathlib import Path

import pytest
from scale_support import DeskProject, desk_cases, process_stat, worker_children

from oloproof.execution import process_start
from oloproof.execution.zygote import ForkedProcess

pytestmark = pytest.mark.slow


def _threads(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text().splitlines()
    return next(int(line.split()[1]) for line in status if line.startswith("Threads:"))


def test_two_workers_are_forked_by_one_zygote_each_with_pipes_of_its_own() -> None:
    started = process_start.spawn_workers(2)
    try:
        processes = [one.process for one in started]
        assert all(isinstance(p, ForkedProcess) for p in processes)
        zygote = processes[0].zygote  # type: ignore[union-attr]
        assert processes[1].zygote is zygote  # type: ignore[union-attr]
        pids = [p.pid for p in processes]
        assert len(set(pids)) == 2 and os.getpid() not in pids
        assert worker_children() == {zygote.process.pid}, "the zygote is this process's only child"
        for pid in pids:
            assert int(process_stat(pid)[1]) == zygote.process.pid, "forked by the zygote"
        # (forked with one thread: a fork copies no other thread's locks half-held)
        assert _threads(zygote.process.pid) == 1
        for one in started:  # each answers on its own pipes: the system it is to load is
            one.outgoing.close()  # never sent, and a worker whose pipe closes exits 0
        assert [p.wait(timeout=30) for p in processes] == [0, 0]
    finally:
        process_start.discard_all(started)
    assert zygote.process.returncode == 0 and zygote.ended, "the zygote exited, and was reaped"
    assert worker_children() == set()


def test_a_forked_worker_killed_is_seen_as_killed_and_the_others_run_on() -> None:
    started = process_start.spawn_workers(3)
    try:
        killed, *others = [one.process for one in started]
        with pytest.raises(subprocess.TimeoutExpired):
            killed.wait(timeout=0.1)
        assert killed.poll() is None
        os.kill(killed.pid, signal.SIGKILL)
        assert killed.wait(timeout=30) == -signal.SIGKILL
        assert killed.poll() == -signal.SIGKILL
        with pytest.raises(EOFError):  # its pipe closed: what the coordinator sees it by
            started[0].incoming.recv_bytes()
        assert all(other.poll() is None for other in others)
        assert worker_children() == {killed.zygote.process.pid}  # type: ignore[union-attr]
    finally:
        process_start.discard_all(started)
    assert [one.process.poll() for one in started] == [-signal.SIGKILL] * 3
    assert worker_children() == set()


def test_a_zygote_that_dies_before_it_forks_leaves_its_workers_exited_with_its_code() -> None:
    started = process_start.spawn_workers(2)
    zygote = started[0].process.zygote  # type: ignore[union-attr]
    zygote.process.send_signal(signal.SIGKILL)  # (before it has imported the engine)
    assert zygote.until(lambda: zygote.ended, timeout=30)
    assert zygote.pids == [None, None], "it forked nothing"
    for one in started:
        with pytest.raises(EOFError):
            one.incoming.recv_bytes()
        assert one.process.wait(timeout=30) == -signal.SIGKILL
    with pytest.raises(ProcessLookupError):
        started[0].process.pid  # noqa: B018
    process_start.discard_all(started)
    assert worker_children() == set()


def test_a_run_on_two_forked_workers_reaps_them_and_their_zygote(tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(desk_cases(8))
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one core: a run starts one worker, alone")

    result = project.run()

    assert result.to_json()["errors"] == []
    assert result.metric("state_matches").passed == 8
    pids = {c["pid"] for c in project.calls()}
    assert len(pids) == 2 and os.getpid() not in pids
    assert worker_children() == set(), "the run reaped its zygote, which reaped its workers"
    for pid in pids:
        assert not Path(f"/proc/{pid}").exists()
