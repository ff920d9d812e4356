"""SQLite used plainly: the connections (read-write, and read-only for the reading commands), one
transaction helper, chunked `IN (…)` reads, multi-row inserts, and the store's errors in words
that say what to do."""

from __future__ import annotations

import os
import sqlite3
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from itertools import chain
from pathlib import Path
from typing import Any
from urllib.parse import quote

from pydantic_core import to_json

from oloproof.errors import StoreError
from oloproof.storable import Unstorable, storable_problem

IN_CHUNK = 500
"""Keys per `IN (…)` list: well under SQLite's variable limit."""

BUSY_SECONDS = 60.0
"""How long a statement waits for another process's lock before SQLite says it is busy."""

PAGE_BYTES = 16384
"""The page size of a new store (one made before keeps its own). A run writes each row
twice (staged, then merged in key order) and every page twice (to the WAL, then checkpointed),
one system call per page: on 20,000 support_agent cases, 16 KiB pages rather than SQLite's
4 KiB wrote a quarter less (113 MB stored instead of 153: large rows fit pages better) with
a third less of the writer thread's CPU, and read warm runs no slower
(benchmarks/RESULTS.md)."""


PAGE_CACHE_KIB = 65536
"""Each connection's page cache, in KiB, by default: a bound, not a reservation — a
connection's cache grows with the pages it reads, writes and sorts until it holds this much.
The cache indexes are keyed by random digests, and the writer merges staged rows into them
in key order: at 200,000 cases, 8 MiB took a fifth more of SQLite's CPU and twice the time to
close the store (`store_writes`). An import bounds its own store's caches (`Store.bound_page_cache`,
docs/imports.md#how-an-import-is-stored)."""


def connect(path: Path, cache_kib: int = PAGE_CACHE_KIB) -> sqlite3.Connection:
    """A connection to the store: autocommit (transactions are explicit), WAL, busy timeout,
    a page cache of at most `cache_kib` KiB."""
    conn = sqlite3.connect(path, timeout=BUSY_SECONDS, isolation_level=None,
                           check_same_thread=False)
    # (Only a new, empty database takes it: an existing store keeps its page size.)
    conn.execute(f"PRAGMA page_size={PAGE_BYTES}")
    _use_wal(conn)
    conn.execute("PRAGMA synchronous=NORMAL")
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
    conn.execute(f"PRAGMA cache_size=-{int(cache_kib)}")
    return conn


def _use_wal(conn: sqlite3.Connection) -> None:
    """Put the store in WAL mode, waiting for other processes' locks up to BUSY_SECONDS.

    Switching a new database to WAL takes its exclusive lock from inside a read transaction,
    and SQLite answers SQLITE_BUSY at once there instead of calling its busy handler (waiting
    could deadlock two processes that both read). Two runs that open a new store together
    both switch: one of them was refused in a millisecond ("locked for over a minute", issue
    30). The other finishes its switch in a moment, so this one waits and asks again; a
    database already in WAL mode needs no lock for it.
    """
    deadline = time.monotonic() + BUSY_SECONDS
    pause = 0.001
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL").fetchall()
            return
        except sqlite3.OperationalError as exc:
            if (getattr(exc, "sqlite_errorcode", 0) & 0xFF != sqlite3.SQLITE_BUSY
                    or time.monotonic() >= deadline):
                raise
        time.sleep(pause)
        pause = min(pause * 2, 0.05)


def connect_read_only(path: Path) -> sqlite3.Connection:
    """A connection that never writes: `mode=ro`, or `immutable=1` where SQLite cannot make its
    shared-memory file beside the store (a read-only directory).

    A WAL store is read through its `-shm` file, which a read-only open must find or create;
    in a directory nobody may write, `immutable=1` reads the database file alone (the last
    writer to close checkpointed its WAL into it).
    """
    uri = "file:" + quote(str(path.resolve()))
    try:
        conn = sqlite3.connect(uri + "?mode=ro", uri=True, timeout=BUSY_SECONDS,
                               isolation_level=None, check_same_thread=False)
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as exc:
        # SQLITE_READONLY_DIRECTORY (or CANTOPEN, in older SQLite): no `-shm` file can be made.
        if getattr(exc, "sqlite_errorcode", 0) & 0xFF not in (sqlite3.SQLITE_CANTOPEN,
                                                              sqlite3.SQLITE_READONLY):
            raise
        conn = sqlite3.connect(uri + "?immutable=1", uri=True, isolation_level=None,
                               check_same_thread=False)
    conn.execute(f"PRAGMA busy_timeout={int(BUSY_SECONDS * 1000)}")
    return conn


#: The ways to put the store elsewhere, as the store's errors name them.
ELSEWHERE = ("--store PATH, $OLOPROOF_STORE or `store:` in oloproof.yaml")


def damaged_store_error(path: Path, detail: str) -> StoreError:
    """The error for a store file SQLite cannot read as a database, with the way out."""
    return StoreError(
        f"the store is damaged or is not an Oloproof store ({detail}). Move it aside "
        f"(`mv {path} {path}.damaged`) and the next `oloproof run` starts a new store, "
        "executing every case again (the runs and cache stay in the moved file; "
        "`sqlite3 FILE .recover` may save them)",
        file=path)


def damaged_row_error(path: Path, where: str, exc: BaseException) -> StoreError:
    """The error for a stored row whose JSON cannot be read (`where`: which table, row and
    column): the store is damaged — Oloproof writes every such column as JSON — said as such,
    with what to do."""
    why = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
    return StoreError(
        f"the store is damaged: {where} does not hold valid JSON ({why}); "
        "Oloproof never writes such a row, so the file was changed or broken outside it. "
        f"Move it aside (`mv {path} {path}.damaged`) and the next `oloproof run` starts a new "
        "store, executing every case again (`sqlite3 FILE .recover` may save the rest)",
        file=path)


#: What `json.loads` raises on text that is not JSON (or nests past Python's limit).
JSON_ERRORS = (ValueError, RecursionError)


def store_error(exc: sqlite3.Error, path: Path, doing: str = "write to",
                waited: float | None = None) -> StoreError:
    """A `StoreError` naming the store, what went wrong in words, and what to do about it.

    `waited`: how long the failed step took, where the caller measured it -- a lock is said
    to have been held for a minute only when SQLite really waited that long.
    """
    code = getattr(exc, "sqlite_errorcode", None)
    primary = code & 0xFF if isinstance(code, int) else None  # the primary result code
    text = str(exc)
    if primary == sqlite3.SQLITE_FULL or "disk is full" in text:
        return StoreError(
            f"cannot {doing} the store: the disk that holds it is full ({text}). Free space "
            f"on that disk, or put the store on another one ({ELSEWHERE}), and run again; "
            "cases stored before the disk filled are kept and reused from the cache",
            file=path)
    if primary in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_PERM):
        return StoreError(
            f"cannot {doing} the store: it is read-only ({text}). Reading commands (runs, "
            "inspect, cases, gate, compare, report) still work on it; to run, make the file "
            f"and its directory writable, or point the store elsewhere ({ELSEWHERE})",
            file=path)
    if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
        if waited is None:
            held = "another process holds it locked"
        elif waited >= BUSY_SECONDS:
            held = "another process has held it locked for over a minute"
        else:
            held = (f"another process held it locked, and SQLite gave up after {waited:.1f} s "
                    "without waiting for it")
        return StoreError(
            f"cannot {doing} the store: {held} ({text}); wait for that process (another "
            "`oloproof run`?) and run again", file=path)
    if primary in (sqlite3.SQLITE_CORRUPT, sqlite3.SQLITE_NOTADB):
        return damaged_store_error(path, text)
    if "malformed JSON" in text:  # SQLite's json_extract on a row that is not JSON
        return damaged_row_error(path, "a row SQLite read as JSON", exc)
    if primary == sqlite3.SQLITE_CANTOPEN and path.exists() and doing != "read" and not (
            os.access(path, os.W_OK) and os.access(path.parent, os.W_OK)):
        # SQLite opens a file it may not write read-only, then cannot open its WAL beside it.
        return StoreError(
            f"cannot {doing} the store for writing: it is read-only (the file or its "
            "directory may not be written). Reading commands (runs, inspect, cases, gate, "
            "compare, report) still work on it; to run, make the file and its directory "
            f"writable, or point the store elsewhere ({ELSEWHERE})", file=path)
    if primary == sqlite3.SQLITE_CANTOPEN:
        return StoreError(
            f"cannot open the store ({text}): check that its directory exists and may be "
            f"read, or point the store elsewhere ({ELSEWHERE})", file=path)
    if primary == sqlite3.SQLITE_IOERR:
        return StoreError(
            f"cannot {doing} the store: the disk reported an error ({text}); check the disk "
            f"(is it full, removed, or a network drive that dropped?), or point the store "
            f"elsewhere ({ELSEWHERE}), and run again", file=path)
    return StoreError(f"cannot {doing} the store: {text}", file=path)


def dumps(value: Any) -> str:
    """Compact JSON text for a column (pydantic-core's serialiser: several times faster than
    json's)."""
    return to_json(value).decode("utf-8")


def stored_json(value: Any, root: tuple[str | int, ...]) -> str:
    """`dumps(value)`, or `Unstorable` saying what cannot be stored and where (`root` is where
    `value` is: `("output",)`): nesting deeper than the store keeps, a lone surrogate, a type
    JSON has no form for. The words are looked for only when the serialiser refused."""
    try:
        return dumps(value)
    except ValueError as exc:  # (pydantic-core's PydanticSerializationError is one)
        problem = storable_problem(value, root)
        raise Unstorable(problem if problem is not None else
                         f"{'.'.join(map(str, root)) or 'a value'} cannot be stored: {exc}"
                         ) from None


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
    began = time.monotonic()
    try:
        yield
    except sqlite3.DatabaseError as exc:
        raise store_error(exc, path, waited=time.monotonic() - began) from None


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
