"""The SQLite plumbing the store's modules share: one transaction helper, chunked `IN` reads."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from oloproof.errors import StoreError
from oloproof.store.sql import IN_CHUNK, connect, select_in, transaction, writing


@pytest.fixture
def conn(tmp_path: Path) -> sqlite3.Connection:
    conn = connect(tmp_path / "s.sqlite")
    conn.execute("CREATE TABLE t (key TEXT PRIMARY KEY, body TEXT)")
    return conn


def test_a_transaction_commits_when_its_block_ends(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute("INSERT INTO t VALUES ('a', '1')")
        assert conn.in_transaction
    assert not conn.in_transaction
    assert conn.execute("SELECT body FROM t").fetchall() == [("1",)]


def test_a_transaction_rolls_back_on_any_exception(conn: sqlite3.Connection) -> None:
    with pytest.raises(KeyboardInterrupt), transaction(conn):
        conn.execute("INSERT INTO t VALUES ('a', '1')")
        raise KeyboardInterrupt
    assert not conn.in_transaction
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_the_real_error_survives_when_sqlite_already_rolled_back(
    conn: sqlite3.Connection,
) -> None:
    """Some failures (a full disk) end the transaction inside SQLite: rolling back again would
    replace the error with "cannot rollback - no transaction is active"."""
    with pytest.raises(sqlite3.OperationalError, match="database or disk is full"), \
            transaction(conn):
        conn.execute("INSERT INTO t VALUES ('a', '1')")
        conn.execute("ROLLBACK")  # as SQLite does by itself on SQLITE_FULL
        raise sqlite3.OperationalError("database or disk is full")
    assert conn.execute("SELECT count(*) FROM t").fetchone() == (0,)


def test_a_failed_write_is_a_store_error_naming_the_store(tmp_path: Path) -> None:
    conn = connect(tmp_path / "s.sqlite")
    with pytest.raises(StoreError, match="cannot write to the store: no such table") as caught, \
            writing(tmp_path / "s.sqlite"):
        conn.execute("INSERT INTO missing VALUES (1)")
    assert caught.value.file == str(tmp_path / "s.sqlite")


def test_select_in_reads_every_key_whatever_their_number(conn: sqlite3.Connection) -> None:
    keys = [f"k{i:05}" for i in range(2 * IN_CHUNK + 7)]
    conn.executemany("INSERT INTO t VALUES (?, ?)", [(k, k.upper()) for k in keys])
    wanted = keys[::2] + ["absent"]
    rows = dict(select_in(conn, "SELECT key, body FROM t WHERE key IN", iter(wanted)))
    assert rows == {k: k.upper() for k in keys[::2]}
    assert list(select_in(conn, "SELECT key FROM t WHERE key IN", [])) == []


def test_a_new_store_waits_for_another_connection_to_let_go_instead_of_failing_at_once(
        tmp_path: Path) -> None:
    """Switching a new database to WAL takes its exclusive lock where SQLite does not wait
    for one: two runs opening a new store together saw one refused in a millisecond, said to
    be "locked for over a minute" (issue 30). Now the switch waits, as every statement does."""
    import threading
    import time

    from oloproof.store.store import Store

    path = tmp_path / "store.sqlite"
    # The other process, as it is halfway through its own switch: holding the new database's
    # write lock (still in the default rollback mode).
    other = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    other.execute("BEGIN IMMEDIATE")
    threading.Timer(0.5, other.execute, ("COMMIT",)).start()

    began = time.monotonic()
    store = Store(path)
    try:
        assert time.monotonic() - began >= 0.4, "it waited for the other connection"
        assert store.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        store.close()
        other.close()


def test_a_locked_store_is_said_to_be_held_for_a_minute_only_when_it_was() -> None:
    from oloproof.store.sql import BUSY_SECONDS, store_error

    busy = sqlite3.OperationalError("database is locked")
    busy.sqlite_errorcode = sqlite3.SQLITE_BUSY  # type: ignore[attr-defined]
    path = Path("store.sqlite")

    at_once = store_error(busy, path, "open", waited=0.002).message
    assert "gave up after 0.0 s without waiting" in at_once and "minute" not in at_once
    waited = store_error(busy, path, "open", waited=BUSY_SECONDS + 0.1).message
    assert "held it locked for over a minute" in waited
    unknown = store_error(busy, path, "read").message
    assert "holds it locked" in unknown and "minute" not in unknown


def test_a_store_another_process_creates_meanwhile_is_not_taken_for_a_damaged_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Opening a store reads its schema version, then its tables; a process that created the
    store between the two reads made it look like tables without a version ("damaged"). The
    other process's commit is made to land exactly there."""
    import oloproof.store.store as store_module
    from oloproof.store.schema import SCHEMA_VERSION, migrate
    from oloproof.store.store import Store

    path = tmp_path / "store.sqlite"
    connect(path).close()  # a new, empty store in WAL mode
    other = connect(path)

    def with_the_other_process(path_: Path) -> sqlite3.Connection:
        conn = connect(path_)

        def between(statement: str) -> None:
            if "FROM sqlite_master" in statement and not other.execute(
                    "PRAGMA user_version").fetchone()[0]:
                migrate(other)  # the other run creates the store, now

        conn.set_trace_callback(between)
        return conn

    monkeypatch.setattr(store_module, "connect", with_the_other_process)
    store = Store(path)
    try:
        assert store.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    finally:
        store.close()
        other.close()
