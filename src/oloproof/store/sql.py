"""SQLite used plainly: the connection, one transaction helper, chunked `IN (…)` reads, multi-row
inserts, and the store's error for a failed write."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from oloproof.errors import StoreError

IN_CHUNK = 500
"""Keys per `IN (…)` list: well under SQLite's variable limit."""


def connect(path: Path) -> sqlite3.Connection:
    """A connection to the store: autocommit (transactions are explicit), WAL, busy timeout."""
    conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute("PRAGMA busy_timeout=60000")
    # Cache keys are random digests: a larger page cache keeps index inserts in memory.
    conn.execute("PRAGMA cache_size=-65536")
    return conn


def dumps(value: Any) -> str:
    """Compact JSON text for a column (pydantic-core's serialiser: several times faster than
    json's)."""
    return to_json(value).decode("utf-8")


@contextmanager
def transaction(conn: sqlite3.Connection) -> Iterator[None]:
    """One write transaction: `BEGIN IMMEDIATE`, then `COMMIT`, or `ROLLBACK` on any exception.

    SQLite rolls some failed transactions back by itself (a full disk, for one); rolling back
    again would only replace the real error with "cannot rollback - no transaction is active".
    """
    conn.execute("BEGIN IMMEDIATE")
    try:
        yield
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise


@contextmanager
def writing(path: Path) -> Iterator[None]:
    """An SQLite error while writing becomes a `StoreError` naming the store."""
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise StoreError(f"cannot write to the store: {exc}", file=path) from None


def select_in(conn: sqlite3.Connection, query: str, keys: Iterable[str]) -> Iterator[Any]:
    """The rows of `query … IN (keys)` for every key, asked `IN_CHUNK` keys at a time.

    `query` ends just before the list: `"SELECT key, body FROM replays WHERE key IN"`.
    """
    keys = list(keys)
    for start in range(0, len(keys), IN_CHUNK):
        part = keys[start : start + IN_CHUNK]
        yield from conn.execute(f"{query} ({','.join('?' * len(part))})", part)


# Python's sqlite3 releases the GIL only while SQLite works on a statement: `executemany`
# steps once per row, so the writer thread had to take the GIL back for every row, and beside
# a busy event loop it waited for it far longer than SQLite worked (measured: 30 µs of wall
# time per row for 6 µs of work). One statement of many rows is bound in one go and stepped
# once, GIL-free. Statements hold 256, 128, ..., 1 rows: a cached statement keeps a copy of
# its last bound values, so few sizes and small ones keep that memory small.
MAX_ROWS_PER_INSERT = 256


def insert_rows(conn: sqlite3.Connection, insert: str, width: int,
                rows: Sequence[tuple[Any, ...]]) -> None:
    """`insert` (a statement up to VALUES) for every row, several rows per statement."""
    group = "(" + ",".join("?" * width) + ")"
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width
    size = min(MAX_ROWS_PER_INSERT, 1 << (max(limit, 1).bit_length() - 1))
    start = 0
    while start < len(rows):
        while size > len(rows) - start:
            size //= 2
        part = rows[start : start + size]
        conn.execute(f"{insert} {','.join([group] * size)}", list(chain.from_iterable(part)))
        start += size
