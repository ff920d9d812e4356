"""Store errors say what to do (docs/configuration.md#how-oloproof-fails-closed, issue 10 §1): a
full disk, a read-only store, a damaged store. Each goes through the command line as a real process.

A full disk is made with SQLite's own limit on a database's size (`PRAGMA max_page_count`),
which fails a write with the error a full disk gives (SQLITE_FULL): the child (`python -c`
through the fork server, `ForkServer.python`: a forked process) wraps `sqlite3.connect` to set
it on every connection it opens, then runs the command line as `oloproof` does.

A read-only store is one the command's user may not write. Tests may run as root, whom
`chmod` does not stop, so there the store (and its directory) get the immutable attribute
(`chattr +i`), which stops root too; otherwise `chmod` makes them read-only.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
import textwrap
from collections.abc import Iterator
from pathlib import Path

import fork_server
import pytest
from conftest import Probe, cli_env

FULL_AFTER = textwrap.dedent("""\
    import os, sqlite3, sys
    _pages = int(os.environ["STORE_MAX_PAGES"])
    _connect = sqlite3.connect
    def connect(*args, **kwargs):
        conn = _connect(*args, **kwargs)
        conn.execute(f"PRAGMA max_page_count={_pages}")
        return conn
    sqlite3.connect = connect
    sys.argv = ["oloproof", *sys.argv[1:]]
    from oloproof.cli.main import main
    main()
    """)

READING_COMMANDS = [("runs",), ("inspect", "latest"), ("inspect", "latest", "--case", "c001"),
                    ("inspect", "latest", "--failures"), ("gate", "latest"),
                    ("cases", "latest"), ("compare", "latest~1", "latest")]


def _pages(store: Path) -> int:
    with sqlite3.connect(store) as db:
        return int(db.execute("PRAGMA page_count").fetchone()[0])


def _room(store: Path) -> int:
    """The store's pages once its free pages are given back (VACUUM): what it holds, so that
    a limit a few pages above it is reached by the next run's writes, whatever free pages the
    first run happened to leave behind (it left enough for a whole second run about half the
    time once a stored policy grew by a few bytes)."""
    with sqlite3.connect(store) as db:
        db.execute("VACUUM")
    return _pages(store)


def _run_with_disk_full_after(probe, pages: int) -> subprocess.CompletedProcess:
    env = cli_env(STORE_MAX_PAGES=str(pages))
    return subprocess.run([str(fork_server.shared().python), "-c", FULL_AFTER, "run",
                           "--no-cache"], cwd=probe.path, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False)


@pytest.mark.slow
def test_a_full_disk_says_what_to_do_and_the_next_run_reuses_what_was_stored(probe, cli):
    probe.write_cases(probe.plain_cases(600))
    assert cli("run", cwd=probe.path).code == 0
    room = _room(probe.store)  # a full run's worth: the second fills the disk half-way

    done = _run_with_disk_full_after(probe, room + 8)

    assert done.returncode == 5, done.stderr
    assert done.stdout == ""
    assert done.stderr.startswith("Store error: ") and str(probe.store) in done.stderr
    assert "disk that holds it is full" in done.stderr
    assert "Free space" in done.stderr and "--store" in done.stderr
    assert "no transaction is active" not in done.stderr and "Traceback" not in done.stderr
    # The store is intact: it lists both runs, and the one the full disk stopped never allows.
    code, out, err = cli("runs", cwd=probe.path, env={"COLUMNS": "200"})
    assert code == 0, err
    assert "failed" in out and out.count("ALLOW (exit 0)") == 1
    code, out, _ = cli("gate", "latest", cwd=probe.path)
    assert code == 5
    probe.forget_calls()
    code, out, _ = cli("run", cwd=probe.path)
    assert code == 0 and probe.calls() == [], "every case was cached by the first run"


@pytest.mark.slow
def test_a_disk_full_before_the_first_case_is_the_same_clear_error(probe):
    done = _run_with_disk_full_after(probe, 3)  # not even the schema fits

    assert done.returncode == 5
    assert done.stderr.startswith("Store error: ") and "disk that holds it is full" in done.stderr
    assert "Traceback" not in done.stderr
    assert probe.calls() == []


# ---- a read-only store ----------------------------------------------------------------------

def _set_read_only(path: Path, on: bool) -> None:
    """Make `path` one nobody may write: the immutable attribute for root (whom chmod does not
    stop), the mode bits for anyone else."""
    if os.geteuid() == 0:
        done = subprocess.run(["chattr", "+i" if on else "-i", str(path)], capture_output=True,
                              text=True, check=False)
        if done.returncode != 0:
            pytest.skip(f"running as root, and chattr cannot make {path} immutable here")
    else:
        mode = path.stat().st_mode
        os.chmod(path, mode & ~0o222 if on else mode | 0o200)


@pytest.fixture(params=["store file", "store file and its directory"])
def read_only_store(request, probe, cli) -> Iterator:
    """A project with two stored runs (one failing case in the second) whose store may be
    read and never written: the file alone, or the file and its directory."""
    assert cli("run", cwd=probe.path).code == 0
    cases = probe.plain_cases(10)
    cases[0]["input"]["answer"] = "no"
    probe.write_cases(cases)
    assert cli("run", cwd=probe.path).code == 0
    assert sorted(p.name for p in probe.store.parent.iterdir()) == ["store.sqlite"]
    locked = [probe.store] + ([probe.store.parent] if "directory" in request.param else [])
    for path in locked:
        _set_read_only(path, True)
    try:
        yield probe
    finally:
        for path in locked:
            _set_read_only(path, False)


def test_the_read_only_store_really_cannot_be_written(read_only_store):
    with pytest.raises(PermissionError):
        read_only_store.store.open("ab").close()


@pytest.mark.parametrize("args", READING_COMMANDS, ids=" ".join)
def test_reading_commands_work_on_a_read_only_store(read_only_store, cli, args):
    probe = read_only_store
    before = probe.store.read_bytes()

    code, out, err = cli(*args, cwd=probe.path, env={"COLUMNS": "120"})

    assert code == 0, err
    assert "Store error" not in err and "Traceback" not in err and out.strip()
    assert probe.store.read_bytes() == before
    if args[:2] == ("inspect", "latest") and len(args) == 2:
        assert "Gate: ALLOW (exit 0)" in out


def test_the_report_of_a_read_only_store_is_written(read_only_store, cli, tmp_path):
    code, _, err = cli("report", "latest", "--html", str(tmp_path / "r.html"),
                       cwd=read_only_store.path)

    assert code == 0, err
    assert "c001" in (tmp_path / "r.html").read_text(encoding="utf-8")


def test_a_run_on_a_read_only_store_says_what_to_do_before_any_call(read_only_store, cli):
    probe = read_only_store
    probe.forget_calls()

    code, out, err = cli("run", "--no-cache", cwd=probe.path)

    assert code == 5 and out == ""
    assert err.startswith(f"Store error: {probe.store}: ") and "read-only" in err
    assert "Reading commands" in err and "--store" in err and "Traceback" not in err
    assert probe.calls() == []


# ---- a damaged store ------------------------------------------------------------------------

def _damage_pages(store: Path, first_page: int, count: int) -> None:
    with store.open("r+b") as handle:
        handle.seek(4096 * first_page)
        handle.write(b"\xa5" * 4096 * count)


@pytest.mark.parametrize("args", [("run",), *READING_COMMANDS], ids=" ".join)
def test_a_store_that_is_not_a_database_names_the_file_and_the_way_out(probe, cli, args):
    probe.store.parent.mkdir()
    probe.store.write_text("this is not a database", encoding="utf-8")

    code, out, err = cli(*args, cwd=probe.path)

    assert code == 5 and out == ""
    assert err.startswith(f"Store error: {probe.store}: the store is damaged")
    assert f"mv {probe.store} {probe.store}.damaged" in err and "Traceback" not in err
    assert probe.calls() == []


@pytest.fixture(scope="module")
def stored_twice(new_probe, cli) -> Probe:
    """A probe project of 300 cases run twice (the second with --no-cache): made once, and
    copied whole for each test that damages its store."""
    probe = new_probe()
    probe.write_cases(probe.plain_cases(300))
    assert cli("run", cwd=probe.path).code == 0
    assert cli("run", "--no-cache", cwd=probe.path).code == 0
    return probe


@pytest.mark.parametrize("args", [("run",), *READING_COMMANDS], ids=" ".join)
def test_a_store_damaged_past_its_header_names_the_file_and_the_way_out(stored_twice, cli,
                                                                        tmp_path, args):
    probe = Probe(Path(shutil.copytree(stored_twice.root, tmp_path / "probe")))
    probe.forget_calls()
    _damage_pages(probe.store, 2, _pages(probe.store) - 2)

    code, out, err = cli(*args, "--json", cwd=probe.path) if args[0] in ("gate", "inspect") \
        else cli(*args, cwd=probe.path)

    said = out or err  # --json: the error document on stdout
    assert code == 5
    assert "the store is damaged" in said and "Traceback" not in err
    assert f"{probe.store}.damaged" in said
    assert probe.calls() == []
