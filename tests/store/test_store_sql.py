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
