"""Reading the store without writing anything, not even beside it (`oloproof view`).

The reading commands open the store read-only, but that still leaves traces: SQLite creates
the `-wal` and `-shm` files of a WAL database for a `mode=ro` reader when they are missing, and
`Store(path, read_only=True)` merges the rows a killed run staged when it can take the write
lock. A server that stays up for hours beside runs must do neither, so `read_store` reads:

- through the WAL (`mode=ro`) when a `-wal` file is there, which is whenever a run writes (its
  connection made it) or a run was killed: the reader then sees every committed row, and what
  it opens already exists;
- otherwise straight from the database file, with `immutable=1`: SQLite takes no lock and
  makes no file. The read is then checked: if the file's size, time or inode changed while it
  was read, or a `-wal` appeared (a run started writing), it is read again through the WAL.

It never migrates a store, merges staged rows or checkpoints (a read-only connection cannot).
Rows a running run staged (cases, executions, judgments) become visible when that run merges
them, as it does while it goes and when it ends.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar
from urllib.parse import quote

from oloproof.errors import StoreError
from oloproof.store.schema import SCHEMA_VERSION
from oloproof.store.sql import store_error
from oloproof.store.store import Store, check_is_a_store

T = TypeVar("T")

#: Reads of a store file that kept changing under an immutable read, before giving up.
ATTEMPTS = 4


def _file_state(path: Path) -> tuple[int, int, int, int] | None:
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _wal(path: Path) -> Path:
    return path.with_name(path.name + "-wal")


def _connect(path: Path, through_wal: bool) -> sqlite3.Connection:
    uri = "file:" + quote(str(path.resolve())) + ("?mode=ro" if through_wal else "?immutable=1")
    conn = sqlite3.connect(uri, uri=True, timeout=10.0, isolation_level=None,
                           check_same_thread=False)
    if through_wal:
        conn.execute("PRAGMA busy_timeout=10000")
    return conn


def read_store(path: Path, work: Callable[[Store], T]) -> T:
    """`work(store)` on a read-only `Store` of the file at `path`, writing nothing anywhere.

    Raises StoreError (naming the file, saying what to do) for a store that is missing,
    damaged, of another schema version, or that cannot be read.
    """
    for _ in range(ATTEMPTS):
        before = _file_state(path)
        if before is None or not path.is_file():
            raise StoreError("no store here yet: run `oloproof run` in the project directory "
                             "first", file=path)
        through_wal = _wal(path).exists()
        try:
            conn = _connect(path, through_wal)
        except sqlite3.DatabaseError as exc:
            raise store_error(exc, path, "read") from None
        try:
            store = Store.on_connection(path, conn)
            version = check_is_a_store(conn, path, empty_ok=False)
            if version < SCHEMA_VERSION:
                raise StoreError(
                    f"the store was written by an older Oloproof (schema {version}, this one "
                    f"reads {SCHEMA_VERSION}); `oloproof view` never changes a store: run "
                    "`oloproof runs` once in the project to upgrade it, then view it",
                    file=path)
            result = work(store)
        except sqlite3.DatabaseError as exc:
            if not through_wal and (_wal(path).exists() or _file_state(path) != before):
                continue  # the file changed under an immutable read: read it again
            raise store_error(exc, path, "read") from None
        finally:
            conn.close()
        if through_wal or (not _wal(path).exists() and _file_state(path) == before):
            return result
    raise StoreError("the store kept changing while it was read; reload the page", file=path)

