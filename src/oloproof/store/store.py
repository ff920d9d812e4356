"""The local store: SQLite under `.oloproof/` (docs/cli.md#command-line-reference).

`Store` is one handle on it, made of six parts, each in a module of its own:

- `writer.Writer`: buffered writes, committed in batches by a background thread;
- `runs.RunsRegistry`: runs begun, finished, listed, and how far each got;
- `references.RunReferences`: a run found by reference (`latest~N`, `tag:NAME`, `version:V`),
  and tags;
- `run_reads.RunReads`: a stored run read back: its record, cases, trials and errors;
- `caches.CacheReads`: executions, artifacts, judgments, replays and cases read by key;
- `reruns.Reruns`: the record: complete runs counted per suite, version and variant, and the
  labels samples drawn.

`schema` holds the one schema and its migrations, `sql` the SQLite plumbing they share (one
transaction helper, chunked `IN (…)` reads, multi-row inserts). WAL mode lets readers run beside
a writer, and a busy timeout lets two runs share one store.

The reading commands open the store read-only (`Store(path, read_only=True)`), so a store
nobody may write (a CI artifact, a colleague's copy) can still be listed, inspected, gated and
reported on.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from pathlib import Path

from oloproof.errors import StoreError, broken_link
from oloproof.store.caches import CacheReads
from oloproof.store.references import RunReferences
from oloproof.store.reruns import Reruns
from oloproof.store.run_reads import RunReads
from oloproof.store.runs import RunsRegistry
from oloproof.store.schema import JUDGMENT_CASE_KEY, SCHEMA_VERSION, migrate
from oloproof.store.sql import (
    ELSEWHERE,
    connect,
    connect_read_only,
    damaged_store_error,
    store_error,
)
from oloproof.store.writer import Writer, merge_staged_rows

__all__ = ["JUDGMENT_CASE_KEY", "Store"]


class Store(Writer, RunsRegistry, RunReferences, RunReads, CacheReads, Reruns):
    """One project's store. Not thread-safe: use it from one thread (the run's event loop)."""

    def __init__(self, path: Path, *, read_only: bool = False) -> None:
        self.path = path
        self.read_only = read_only
        if read_only:
            self.conn = self._open_for_reading(path)
            Writer.__init__(self)
            return
        try:
            _make_owners_only(path)
        except OSError as exc:
            raise _no_directory(path, exc) from None
        began = time.monotonic()
        try:
            self.conn = connect(path)
            check_is_a_store(self.conn, path, empty_ok=True)
            migrate(self.conn)
        except sqlite3.DatabaseError as exc:
            raise store_error(exc, path, "open", time.monotonic() - began) from None
        Writer.__init__(self)
        began = time.monotonic()
        try:
            self.merge_staged()  # rows a killed run staged become cache entries now
        except sqlite3.DatabaseError as exc:
            self.conn.close()
            raise store_error(exc, path, "open", time.monotonic() - began) from None

    @classmethod
    def on_connection(cls, path: Path, conn: sqlite3.Connection) -> Store:
        """A read-only handle on a connection opened elsewhere (`viewing.read_store`): no
        check, migration or merge is made here, and closing it closes the connection. Its
        reads of a case find the rows a running run has staged (`CacheReads.reads_staged`)."""
        store = cls.__new__(cls)
        store.path, store.read_only, store.conn = path, True, conn
        store.reads_staged = True
        Writer.__init__(store)
        return store

    @staticmethod
    def _open_for_reading(path: Path) -> sqlite3.Connection:
        """A read-only connection to an existing store at the current schema.

        A store that needs upkeep first (a migration, or staged rows a killed run left) gets it
        from a writing handle when the store can be written; otherwise it is read as it is.
        """
        if not path.is_file():
            raise StoreError("no store here yet: run `oloproof run` in the project directory "
                             "first", file=path)
        try:
            conn = connect_read_only(path)
            version = check_is_a_store(conn, path, empty_ok=False)
            if version < SCHEMA_VERSION:
                try:
                    Store(path).close()  # migrate and merge, then read
                except StoreError:
                    raise StoreError(
                        f"the store was written by an older Oloproof (schema {version}, "
                        f"this one reads {SCHEMA_VERSION}) and cannot be upgraded here "
                        "because it is read-only; run any command once where it can be "
                        "written", file=path) from None
            elif not (_has_staged_rows(conn) and _merge_staged_unless_busy(path)):
                return conn  # staged rows stay staged: their cache entries show later
            conn.close()
            return connect_read_only(path)
        except sqlite3.DatabaseError as exc:
            raise store_error(exc, path, "read") from None

    def __enter__(self) -> Store:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: object) -> None:
        """Close; an SQLite error met while reading (a page damaged after the header, say)
        becomes a `StoreError` that names the store and what to do."""
        self.close()
        if isinstance(error, sqlite3.DatabaseError):
            raise store_error(error, self.path, "read") from None

    def close(self) -> None:
        """Commit what is pending, stop the writer thread, close the connection."""
        try:
            if not self.read_only:
                self.stop_writer()
        finally:
            self.conn.close()


def _make_owners_only(path: Path) -> None:
    """Make the store's folder (0700) and its file (0600), readable by their owner only, where
    they are not there yet: the store holds every input, output and error message of the
    project (docs/configuration.md#how-oloproof-fails-closed). What is already there keeps its
    mode; the folders above the store's own are made as the umask says. SQLite gives the
    `-wal` and `-shm` files the mode of the store file."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not os.path.lexists(path):
        # (one already there, or one that cannot be made: SQLite says why when it opens it)
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))


def _no_directory(path: Path, exc: OSError) -> StoreError:
    """Why the store's directory cannot be made, in words: a symbolic link to nothing, a file
    where the directory goes, or what the system said."""
    for folder in (path.parent, *path.parent.parents):
        link = broken_link(folder)
        if link is not None:
            return StoreError(
                f"{folder} is {link}, "
                "so the store cannot be made there; create what it points to, remove the link "
                f"(`rm {folder}`) and the store is made in its place, or point the store elsewhere "
                f"({ELSEWHERE})",
                file=path)
        if folder.exists() and not folder.is_dir():
            return StoreError(
                f"{folder} is a file, where the store's directory goes; move it aside, or "
                f"point the store elsewhere ({ELSEWHERE})", file=path)
    return StoreError(f"cannot make the store's directory {path.parent}: {exc.strerror}; "
                      f"point the store elsewhere ({ELSEWHERE})", file=path)


def check_is_a_store(conn: sqlite3.Connection, path: Path, *, empty_ok: bool) -> int:
    """The store's schema version, after checking the file is a database with our tables."""
    # Both read from one snapshot: a process creating the store between two reads would show
    # its tables beside the version from before them (a "damaged" store that is not).
    conn.execute("BEGIN")
    try:
        version = int(conn.execute("PRAGMA user_version").fetchone()[0])
        tables = {row[0] for row in conn.execute("SELECT name FROM sqlite_master WHERE "
                                                 "type = 'table'")}
    finally:
        conn.execute("COMMIT")
    if version == 0 and not tables and empty_ok:
        return 0  # a new store
    if version == 0 or "runs" not in tables or version > SCHEMA_VERSION:
        if version > SCHEMA_VERSION:
            raise StoreError(f"the store was written by a newer Oloproof (schema {version}, "
                             f"this one reads up to {SCHEMA_VERSION}); upgrade Oloproof, or "
                             "point the store elsewhere", file=path)
        raise damaged_store_error(path, "it has no Oloproof tables" if not tables
                                  else "its tables are not an Oloproof store's")
    return version


def _merge_staged_unless_busy(path: Path) -> bool:
    """Merge the staged rows a killed run left, if the store can be written right now.

    A reading command never waits for the write lock: a run that holds it (a live run, whose
    staged rows are its own and merged when it ends) could keep a `runs` or `inspect` waiting
    up to the busy timeout (60 s). Busy, or not writable: the store is read as it is.
    """
    try:
        conn = connect(path)
    except sqlite3.DatabaseError:
        return False
    try:
        conn.execute("PRAGMA busy_timeout=0")
        merge_staged_rows(conn)  # BEGIN IMMEDIATE: SQLITE_BUSY at once when a writer has it
        return True
    except sqlite3.DatabaseError:
        return False
    finally:
        conn.close()


def _has_staged_rows(conn: sqlite3.Connection) -> bool:
    return bool(conn.execute(
        "SELECT EXISTS (SELECT 1 FROM stage_executions) OR EXISTS (SELECT 1 FROM "
        "stage_judgments) OR EXISTS (SELECT 1 FROM stage_cases) OR EXISTS "
        "(SELECT 1 FROM stage_artifacts)").fetchone()[0])
