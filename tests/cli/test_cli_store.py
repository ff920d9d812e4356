"""Acceptance 4 — the store: SQLite in WAL mode under `.oloproof/`, safe against kills and races.

These tests start `oloproof run` as real processes and stop them with real signals: SIGKILL
(nothing can be cleaned up), SIGINT (Ctrl-C: stop cleanly), and two runs racing on one store.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time

import pytest
from terminal_text import table

from oloproof.store.schema import SCHEMA_VERSION

CONCURRENCY = 4
SLEEP_S = 0.02  # per case: 300 cases at concurrency 4 are about 1.5 s of work
# The stopping tests hold the calls from this case on (`held_cases`): before them, the cases
# all finish, and exactly CONCURRENCY held calls start, so the run stops at a known point.
HELD_FROM = 61


def _wait_for(condition, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def _runs_table(cli, probe) -> dict[str, dict[str, str]]:
    """`oloproof runs` as {run id: {column: text}}, in the order printed."""
    code, out, err = cli("runs", cwd=probe.path, env={"COLUMNS": "200"})
    assert code == 0, err
    return {r["Run"]: {k.lower(): v for k, v in r.items()} for r in table(out, "Runs")}


@pytest.fixture
def held_probe(probe):
    """300 cases whose calls from the 61st on wait for `probe.release()`: a run of them is
    still going however long a loaded machine keeps the test from signalling it."""
    probe.write_cases(probe.held_cases(300, HELD_FROM, sleep=SLEEP_S))
    probe.set_system(concurrency=CONCURRENCY)
    return probe


def test_the_store_is_sqlite_in_wal_mode_with_a_schema_version(probe, cli):
    assert cli("run", cwd=probe.path).code == 0

    assert probe.store == probe.path / ".oloproof" / "store.sqlite"
    with sqlite3.connect(probe.store) as db:
        assert db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1


def test_the_store_can_be_moved_with_oloproof_store(probe, cli, tmp_path):
    elsewhere = tmp_path / "elsewhere" / "store.sqlite"

    assert cli("run", cwd=probe.path, env={"OLOPROOF_STORE": str(elsewhere)}).code == 0

    assert elsewhere.is_file() and not probe.store.exists()
    code, out, _ = cli("runs", cwd=probe.path, env={"OLOPROOF_STORE": str(elsewhere)})
    assert code == 0 and "complete" in out


def test_run_store_option_wins_over_oloproof_store(probe, cli, tmp_path):
    chosen, other = tmp_path / "chosen.sqlite", tmp_path / "other.sqlite"

    code, _, _ = cli("run", "--store", str(chosen), cwd=probe.path,
                     env={"OLOPROOF_STORE": str(other)})

    assert code == 0 and chosen.is_file() and not other.exists() and not probe.store.exists()
    code, out, _ = cli("inspect", "latest", "--store", str(chosen), cwd=probe.path)
    assert code == 0 and "complete" in out


def test_the_store_can_be_moved_with_store_in_the_suite(probe, cli):
    probe.suite["store"] = "state/runs.sqlite"  # relative to oloproof.yaml
    probe.write_suite()

    assert cli("run", cwd=probe.path).code == 0

    moved = probe.path / "state" / "runs.sqlite"
    assert moved.is_file() and not probe.store.exists()
    code, out, _ = cli("runs", cwd=probe.path)
    assert code == 0 and "complete" in out


def test_a_killed_run_leaves_a_readable_store_and_its_work_is_reused(probe, cli,
                                                                   spawn_oloproof):
    sleep_s = 0.03  # 240 cases at concurrency 4: about 1.8 s of work, then the held ones
    probe.write_cases(probe.held_cases(300, 241, sleep=sleep_s))
    probe.set_system(concurrency=CONCURRENCY)
    process = spawn_oloproof("run", cwd=probe.path)
    _wait_for(lambda: len(probe.calls()) > 0)
    first_call = probe.call_times()[0]
    # about 2 s of work, or every unheld case: the run is still going (it waits on the held)
    _wait_for(lambda: time.time() - first_call > 2.0 or len(probe.calls()) >= 244)
    assert process.poll() is None, "the run finished before it could be killed"

    os.kill(process.pid, signal.SIGKILL)
    killed_at = time.time()
    process.communicate()
    started = probe.call_times()
    # Calls that began over 1.5 s before the kill had finished and been flushed (the runner
    # writes at least once a second); allow for the cases in flight.
    settled = sum(t < killed_at - 1.5 - sleep_s for t in started) - CONCURRENCY
    assert process.returncode == -signal.SIGKILL

    rows = _runs_table(cli, probe)
    assert len(rows) == 1
    ((killed_id, killed),) = rows.items()
    assert killed["status"] == "incomplete"
    assert killed["gate"].startswith("not decided")
    code, out, _ = cli("inspect", killed_id, "--json", cwd=probe.path)
    partial = json.loads(out)
    assert code == 0 and partial["status"] == "incomplete"
    assert 0 < partial["cases"] < 300, "what was stored of the killed run can be read"
    assert cli("gate", killed_id, cwd=probe.path).code == 5, "and it can never allow a release"

    probe.release()
    probe.forget_calls()
    code, out, _ = cli("run", "--json", cwd=probe.path)
    document = json.loads(out)
    execution = document["cache"]["execution"]
    assert code == 0 and document["status"] == "complete"
    assert execution["hit"] > 0
    assert execution["hit"] >= settled, (execution, len(started), settled)
    assert execution["hit"] + execution["miss"] == 300
    assert len(probe.calls()) == execution["miss"], "only what was lost is executed again"


def test_a_reading_command_does_not_wait_for_a_writer_to_merge_staged_rows(probe, cli):
    """Staged rows (a killed run's, or a live run's own) are merged by a reading command only
    if it can take the write lock at once: while a run holds it, `runs` reads as it is."""
    assert cli("run", cwd=probe.path).code == 0
    writer = sqlite3.connect(probe.store, isolation_level=None)
    writer.execute("INSERT INTO stage_executions SELECT * FROM executions LIMIT 1")
    writer.execute("BEGIN IMMEDIATE")  # a writer holds the lock (the busy timeout is 60 s)
    try:
        code, out, err = cli("runs", cwd=probe.path, timeout=30)
        assert code == 0 and "complete" in out, err
        assert writer.execute("SELECT count(*) FROM stage_executions").fetchone()[0] == 1
    finally:
        writer.execute("ROLLBACK")
    assert cli("runs", cwd=probe.path).code == 0
    assert writer.execute("SELECT count(*) FROM stage_executions").fetchone()[0] == 0, \
        "with the lock free, the staged rows are merged"
    writer.close()


def test_two_runs_at_once_on_one_store_both_complete(probe, cli, forked_oloproof):
    probe.write_cases(probe.plain_cases(100, sleep=SLEEP_S))
    probe.set_system(concurrency=CONCURRENCY)

    # two processes of their own (forked from the fork server), racing on one store
    processes = [forked_oloproof("run", "--json", cwd=probe.path) for _ in range(2)]
    results = [p.communicate(timeout=60) for p in processes]

    ids = []
    for process, (out, err) in zip(processes, results, strict=True):
        assert process.returncode == 0, (out, err)
        document = json.loads(out)
        assert document["status"] == "complete" and document["gate"]["exit_code"] == 0
        ids.append(document["run_id"])
    rows = _runs_table(cli, probe)
    assert set(rows) == set(ids)
    assert all(row["status"] == "complete" and row["gate"] == "ALLOW (exit 0)"
               for row in rows.values())


def test_an_unreadable_store_is_a_store_error_before_any_call(probe, cli):
    probe.store.parent.mkdir()
    probe.store.write_text("this is not a database", encoding="utf-8")

    code, out, err = cli("run", cwd=probe.path)

    assert code == 5
    assert err.startswith("Store error:") and "store.sqlite" in err
    assert "Traceback" not in err and out == ""
    assert probe.calls() == []


def _ignore_ctrl_c() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# SIGTERM takes Ctrl-C's path (asyncio.run's handler cancels the run); where SIGINT is ignored,
# as in a script's background job (`oloproof run & ... kill $!`), it still stops the run.
@pytest.mark.parametrize("ctrl_c", ["default", "ignored"])
def test_sigterm_stops_a_run_like_ctrl_c(held_probe, spawn_oloproof, ctrl_c):
    probe = held_probe
    process = spawn_oloproof("run", "--json", cwd=probe.path,
                             **({"preexec_fn": _ignore_ctrl_c} if ctrl_c == "ignored" else {}))
    _wait_for(lambda: len(probe.calls()) >= HELD_FROM)
    assert process.poll() is None

    process.send_signal(signal.SIGTERM)
    out, err = process.communicate(timeout=30)

    assert process.returncode == 5
    error = json.loads(out)["error"]
    assert error["kind"] == "stopped" and "of 300 cases" in error["message"]
    assert "Traceback" not in err


# ---- Ctrl-C -----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def interrupted(new_probe, spawn_oloproof):
    """A run stopped by SIGINT a fifth of the way through: the cases before HELD_FROM all
    finished, and CONCURRENCY held calls had started (and never finish)."""
    probe = new_probe()
    probe.write_cases(probe.held_cases(300, HELD_FROM, sleep=SLEEP_S))
    probe.set_system(concurrency=CONCURRENCY)
    process = spawn_oloproof("run", cwd=probe.path)
    _wait_for(lambda: len(probe.calls()) >= HELD_FROM - 1 + CONCURRENCY)
    assert process.poll() is None
    os.kill(process.pid, signal.SIGINT)
    out, err = process.communicate(timeout=30)
    calls_before = len(probe.calls())
    probe.release()  # (the next runs' calls go on)
    return probe, process.returncode, out, err, calls_before


def test_ctrl_c_stops_the_run_with_exit_5_and_the_next_run_resumes(interrupted, cli):
    probe, code, _, err, calls_before = interrupted

    assert code == 5
    assert err.startswith("Run stopped:") and "oloproof run" in err
    assert "Traceback" not in err, err
    rows = _runs_table(cli, probe)
    (stopped,) = rows.values()
    assert stopped["status"] == "stopped" and stopped["gate"].startswith("not decided")

    probe.forget_calls()
    code, out, _ = cli("run", "--json", cwd=probe.path)
    execution = json.loads(out)["cache"]["execution"]
    assert code == 0
    assert calls_before == HELD_FROM - 1 + CONCURRENCY
    assert execution["hit"] == HELD_FROM - 1, "what finished before Ctrl-C, all of it"
    assert execution["hit"] + execution["miss"] == 300
    assert len(probe.calls()) == execution["miss"]
    newest_first = [row["status"] for row in _runs_table(cli, probe).values()]
    assert newest_first == ["complete", "stopped"]


def test_gate_on_a_stopped_run_does_not_allow_a_release(interrupted, cli):
    probe, _, _, _, _ = interrupted
    stopped_id = next(run_id for run_id, row in _runs_table(cli, probe).items()
                      if row["status"] == "stopped")

    code, out, _ = cli("gate", stopped_id, cwd=probe.path)

    assert code == 5, out
