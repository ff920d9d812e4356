"""The local store: SQLite under `.oloproof/` (SPEC §4.2).

`Store` is one handle on it, made of three parts, each in a module of its own:

- `writer.Writer`: buffered writes, committed in batches by a background thread;
- `runs.RunsRegistry`: runs begun, finished, listed and found by reference;
- `caches.CacheReads`: executions, artifacts, judgments, replays and cases read by key.

`schema` holds the one schema and its migrations, `sql` the SQLite plumbing they share (one
transaction helper, chunked `IN (…)` reads, multi-row inserts). WAL mode lets readers run beside
a writer, and a busy timeout lets two runs share one store.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from oloproof.errors import StoreError
from oloproof.store.caches import CacheReads
from oloproof.store.runs import RunsRegistry
from oloproof.store.schema import JUDGMENT_CASE_KEY, migrate
from oloproof.store.sql import connect
from oloproof.store.writer import Writer

__all__ = ["JUDGMENT_CASE_KEY", "Store"]


class Store(Writer, RunsRegistry, CacheReads):
    """One project's store. Not thread-safe: use it from one thread (the run's event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = connect(path)
            migrate(self.conn)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreError(f"cannot open the store: {exc}", file=path) from None
        Writer.__init__(self)
        self.merge_staged()  # rows a killed run staged become cache entries now

    def close(self) -> None:
        """Commit what is pending, stop the writer thread, close the connection."""
        try:
            self.stop_writer()
        finally:
            self.conn.close()
