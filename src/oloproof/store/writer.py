"""Writing to the store: rows buffered in memory, committed in batches (docs/architecture.md,
"Writes").

Writes are never one transaction per case: the runner flushes at least once a second, so a
killed run loses at most about a second of finished work. With `start_writer` each batch is
committed by a thread of its own on a connection of its own, so the event loop never waits on
the disk; the hand-over queue is bounded, so a slow disk slows the run instead of filling
memory. Rows are made into their stored text as they are added (a case's judgments too, while
they are fresh in memory), so the writer thread only binds and commits. Cache rows (cases,
executions, judgments) are appended to `stage_*` tables and merged into the digest-keyed tables
in key order by the writer thread as the run goes (whenever it has nothing else to write and
has staged an eighth as much as it merged), the rest when the writer stops, or when the store
is next opened after a kill (`merge_staged`).
"""

from __future__ import annotations

import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from pydantic_core import from_json

from oloproof.digest import canonical_json
from oloproof.errors import ErrorKind, StoreError
from oloproof.storable import escaped
from oloproof.store.sql import (
    PAGE_CACHE_KIB,
    connect,
    dumps,
    insert_rows,
    stored_json,
    transaction,
    writing,
)

WAL_CHECKPOINT_BYTES = 64 << 20
"""How much the WAL grows before the writer thread checkpoints it into the database."""


class Writer:
    """The buffered writes of a `Store` (which provides `conn` and `path`)."""

    conn: sqlite3.Connection
    path: Path

    def __init__(self) -> None:
        self._writer: queue.Queue[Any] | None = None
        self._writer_error: StoreError | None = None
        self._pending: dict[str, list[tuple[Any, ...]]] = {
            "cases": [], "executions": [], "artifacts": [], "replays": [],
            "run_cases": [], "run_errors": [], "judge_verdicts": [], "simulator_turns": [],
        }
        self._pending_judgments: dict[str, str] = {}  # case key -> its judgments' JSON text
        self._pending_count = 0
        self._seen_artifacts: set[str] = set()
        self._seen_cases: set[str] = set()
        self._staged = 0  # cache rows the writer thread staged and has not merged yet
        self._merged = 0  # cache rows it merged during the run
        self._finishing = False  # the last results are coming in (`finishing`)
        self._checkpointed = False  # the writer checkpointed the WAL since (once)
        self._page_cache_kib = PAGE_CACHE_KIB  # the writer thread's connection's

    def bound_page_cache(self, kib: int) -> None:
        """Bound the page cache of this handle's connection, and of the writer thread's when
        it starts, to `kib` KiB (`sql.PAGE_CACHE_KIB` otherwise): an import keeps its memory
        from growing with the run this way (docs/imports.md#how-an-import-is-stored)."""
        self._page_cache_kib = kib
        self.conn.execute(f"PRAGMA cache_size=-{int(kib)}")

    @property
    def pending(self) -> int:
        """How many rows wait for the next flush (a case's judgments count as one)."""
        return self._pending_count

    def _add(self, table: str, row: tuple[Any, ...]) -> None:
        self._pending[table].append(row)
        self._pending_count += 1

    def add_case(self, case: Any) -> None:
        """Keep a case as it was run (its dataset line when possible), once per digest."""
        if case.digest not in self._seen_cases:
            self._seen_cases.add(case.digest)
            text = case.stored_text()
            self._add("cases", (case.digest, text if text is not None else
                                dumps(case.stored_form())))

    def add_artifact_text(
        self, content_hash: str, kind: str, base: str | None, body: str | None,
        *, lazy_payload: Any = None,
    ) -> None:
        """Store an artifact under its content hash (once); `base` marks `body` as a diff.

        With `body=None` the text is made from `lazy_payload` only if this hash is new to this
        store handle, so a large shared state is serialised at most once per run.
        """
        if content_hash in self._seen_artifacts:
            return
        self._seen_artifacts.add(content_hash)
        if body is None:
            body = canonical_json(lazy_payload)
        self._add("artifacts", (content_hash, kind, base, body))

    def add_execution(
        self,
        key: str,
        case_digest: str,
        output: str,
        artifacts: dict[str, str],
        facts: dict[str, Any] | None,
        latency_ms: float | None,
    ) -> None:
        """Keep a successful system call under its execution key (artifacts by hash);
        `output` is its stored text (`sql.dumps`, made where the case ran)."""
        self.add_execution_row(case_digest, key, output, dumps(artifacts),
                               None if facts is None else dumps(facts), latency_ms)

    def add_execution_row(self, case_digest: str, key: str, output: str, artifacts: str,
                          facts: str | None, latency_ms: float | None) -> None:
        """`add_execution` with the artifacts and the facts as their stored text already
        (`sql.dumps`: made where the case was judged, `execution/rows.py`)."""
        self._add("executions",
                  (key, case_digest, output, artifacts, facts, latency_ms, time.time()))

    def add_judgments(self, case_key: str, judgments: dict[str, Any]) -> None:
        """Keep a case's judgments: `case_key` (JUDGMENT_CASE_KEY characters) -> evaluator key
        -> (verdict, reason, details). A judgment's key is `<case key><evaluator key>`; a
        case's judgments share one row. `Unstorable` when their details cannot be kept as
        they are (nothing is added).

        Written as text at once, while the judgments are fresh in memory: held a second
        for the next batch, their objects would outlive the young garbage collections."""
        self.add_judgments_text(case_key, stored_json(judgments, ("judgments",)))

    def add_judgments_text(self, case_key: str, text: str) -> None:
        """`add_judgments` with the judgments as their stored text already (`sql.stored_json`
        of the same dict: made where the case was judged, `execution/rows.py`)."""
        entry = self._pending_judgments.get(case_key)
        if entry is None:
            self._pending_judgments[case_key] = text
            self._pending_count += 1
        else:  # (rare) the same case judged again in this batch: one row, merged as a dict
            self._pending_judgments[case_key] = dumps(from_json(entry) | from_json(text))

    def add_replay(self, key: str, body: dict[str, Any]) -> None:
        """Keep a fault replay's record under its replay key."""
        self._add("replays", (key, dumps(body)))

    def add_judge_verdict(self, key: str, body: dict[str, Any]) -> None:
        """Keep a judge's verdict record (`judge_verdict/v1`) under its verdict key."""
        self._add("judge_verdicts", (key, dumps(body)))

    def add_simulator_turn(self, conversation: str, key: str, body: dict[str, Any]) -> None:
        """Keep a simulator's turn under its key, in its conversation
        (docs/conversations.md#seeds-and-caching)."""
        self._add("simulator_turns", (key, conversation, dumps(body)))

    def add_run_case(
        self, run_id: str, seq: int, case_id: str, case_digest: str, exec_key: str | None,
        outcome: dict[str, Any],
    ) -> None:
        """Keep one case's compact outcome in a run (a later row for the same seq replaces it)."""
        self.add_run_case_text(run_id, seq, case_id, case_digest, exec_key, dumps(outcome))

    def add_run_case_text(self, run_id: str, seq: int, case_id: str, case_digest: str,
                          exec_key: str | None, outcome: str) -> None:
        """`add_run_case` with the outcome as its stored text already (`sql.dumps`)."""
        self._add("run_cases", (run_id, seq, case_id, case_digest, exec_key, outcome))

    def add_error(
        self, run_id: str, case_id: str, kind: ErrorKind, message: str, traceback: str | None,
        trial: int = 1, attempt: int = 1, retried: bool = False,
    ) -> None:
        """Keep what broke in one case (one trial of it) of a run (a lone surrogate in the
        message or the traceback written out as `\\udXXX`: text the store can keep).
        `attempt` is which attempt failed; `retried`: another attempt followed it, so it is
        not the case's error (docs/failures.md#retries)."""
        self._add("run_errors", (run_id, case_id, kind, escaped(message),
                                 None if traceback is None else escaped(traceback),
                                 None if trial == 1 else trial,
                                 None if attempt == 1 else attempt, 1 if retried else None))

    # Each pending table: (statement up to VALUES, columns per row).
    _INSERTS = {
        "judgments": ("INSERT INTO stage_judgments VALUES", 2),
        "cases": ("INSERT INTO stage_cases VALUES", 2),
        # Artifacts are large and written once: copying them through staging costs more than
        # their (small) key index saves.
        "artifacts": ("INSERT OR IGNORE INTO artifacts VALUES", 4),
        "executions": ("INSERT INTO stage_executions VALUES", 7),
        "replays": ("INSERT OR REPLACE INTO replays VALUES", 2),
        "judge_verdicts": ("INSERT OR REPLACE INTO judge_verdicts VALUES", 2),
        "simulator_turns": ("INSERT OR REPLACE INTO simulator_turns VALUES", 3),
        "run_cases": ("INSERT OR REPLACE INTO run_cases VALUES", 6),
        "run_errors": ("INSERT INTO run_errors VALUES", 8),
    }

    # Merging staged rows into the keyed tables, in key order (one transaction).
    MERGES = (
        "INSERT OR IGNORE INTO cases SELECT digest, body FROM stage_cases ORDER BY digest",
        "INSERT OR IGNORE INTO artifacts SELECT hash, kind, base, body FROM stage_artifacts "
        "ORDER BY hash",
        "INSERT OR REPLACE INTO executions SELECT * FROM stage_executions ORDER BY key, rowid",
        # A case's judgments are one JSON object by evaluator: merge, keeping other evaluators.
        "INSERT INTO judgments (key, body) SELECT key, body FROM stage_judgments WHERE true "
        "ORDER BY key, rowid ON CONFLICT (key) DO UPDATE SET body = json_patch(body, "
        "excluded.body)",
        "DELETE FROM stage_cases",
        "DELETE FROM stage_artifacts",
        "DELETE FROM stage_executions",
        "DELETE FROM stage_judgments",
    )

    # The writer thread merges during the run once it has staged this many cache rows, and at
    # least 1/MERGE_RATIO of what it merged so far: a merge rewrites pages all over the keyed
    # indexes, so merges grow rarer as they grow (a run's merges write O(n log n) pages, not
    # O(n²)), and what is left for the end is at most about 1/MERGE_RATIO of the run.
    MERGE_MIN = 1000
    MERGE_RATIO = 8

    def merge_staged(self) -> None:
        """Move staged cache rows into the keyed tables (what a killed run left included)."""
        with writing(self.path):
            merge_staged_rows(self.conn)

    def finishing(self) -> None:
        """The run's last results are coming in. From now on the writer thread merges what is
        staged whenever no batch waits, however little, and once checkpoints the WAL into the
        database (PASSIVE: it never waits for a reader): both are done while the last cases
        still run, so what is left to merge and to checkpoint when the run ends is what the
        last batches wrote, not the whole run."""
        self._finishing = True

    def _merge_as_we_go(self, conn: sqlite3.Connection) -> None:
        """In the writer thread, when no batch waits: merge what is staged, if enough is (any,
        once `finishing`); once finishing, checkpoint the WAL the first time."""
        assert self._writer is not None
        if not self._writer.empty():
            return
        if self._staged >= (1 if self._finishing else
                            max(self.MERGE_MIN, self._merged // self.MERGE_RATIO)):
            with writing(self.path):
                merge_staged_rows(conn)
            self._merged += self._staged
            self._staged = 0
        if self._finishing and not self._checkpointed:
            self._checkpointed = True
            with writing(self.path):
                conn.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    @property
    def writer_idle(self) -> bool:
        """Whether the background writer has committed every batch handed to it (False
        without one: then `flush` writes in the caller's thread)."""
        return self._writer is not None and self._writer.unfinished_tasks == 0

    def flush(self, wait: bool = False) -> None:
        """Commit everything pending in one transaction.

        With a background writer (`start_writer`), the batch is handed to it and this returns
        at once (the event loop keeps running while SQLite writes); `wait=True` returns only
        when every batch handed over is committed. A write error is raised by the next call.
        """
        if self._pending_count:
            batch: dict[str, Any] = {table: rows for table, rows in self._pending.items() if rows}
            if self._pending_judgments:
                batch["judgments"] = self._pending_judgments
                self._pending_judgments = {}
            self._pending = {table: [] for table in self._pending}
            self._pending_count = 0
            if self._writer is None:
                self._write_batch(self.conn, batch)
            else:
                self._writer.put(batch)
        if self._writer is not None and wait:
            self._writer.join()
        if self._writer_error is not None:
            error, self._writer_error = self._writer_error, None
            raise error

    def start_writer(self) -> None:
        """Write batches from a thread of its own, on a connection of its own, for a run that
        begins (the writer of the store's run before, if still there, goes on for this one,
        merging at its own pace again until this run's last results come in)."""
        if self._writer is not None:
            self.flush(wait=True)  # (the writer is idle: its counts are this thread's to set)
        self._finishing = self._checkpointed = False
        self._merged = 0
        if self._writer is not None:
            return
        # Bounded: when SQLite falls behind, the run waits instead of piling batches in memory.
        self._writer = queue.Queue(maxsize=4)
        thread = threading.Thread(target=self._write_forever, name="oloproof-store", daemon=True)
        thread.start()

    def _write_forever(self) -> None:
        assert self._writer is not None
        conn = connect(self.path, self._page_cache_kib)
        # Checkpoint the WAL into the database every ~64 MB rather than every 1,000 pages: the
        # cache indexes are keyed by digests, so every batch dirties pages all over them, and
        # each checkpoint copies (and syncs) each dirtied page once however often it was
        # rewritten. (Every ~256 MB was measured slower: reads through a large WAL cost more.)
        page = conn.execute("PRAGMA page_size").fetchone()[0]
        conn.execute(f"PRAGMA wal_autocheckpoint={WAL_CHECKPOINT_BYTES // page}")
        while True:
            batch = self._writer.get()
            try:
                if batch is None:
                    conn.close()
                    return
                self._write_batch(conn, batch)
                self._staged += sum(len(batch[table]) for table in _STAGED if table in batch)
                self._merge_as_we_go(conn)
            except StoreError as exc:
                self._writer_error = exc
            except Exception as exc:  # the thread must live on: the run waits on its queue
                self._writer_error = StoreError(
                    f"cannot write to the store: {type(exc).__name__}: {exc}", file=self.path)
            finally:
                self._writer.task_done()

    def stop_writer(self) -> None:
        """Commit what is pending, then end the writer thread."""
        if self._writer is None:
            return
        self.flush(wait=True)
        self._writer.put(None)
        self._writer.join()
        self._writer = None
        self.merge_staged()

    def _write_batch(self, conn: sqlite3.Connection, batch: dict[str, Any]) -> None:
        with writing(self.path), transaction(conn):
            if batch.get("judgments"):
                batch["judgments"] = list(batch["judgments"].items())
            # Referenced rows first (the dict's order), so a reader never sees a dangling
            # reference.
            for table, (insert, width) in self._INSERTS.items():
                rows = batch.get(table)
                if rows:
                    insert_rows(conn, insert, width, rows)


_STAGED = ("cases", "executions", "judgments")
"""The batch's tables whose rows are staged."""


def merge_staged_rows(conn: sqlite3.Connection) -> bool:
    """Move every staged cache row into the keyed tables, in key order (one transaction);
    whether there were any."""
    if conn.execute(
        "SELECT EXISTS (SELECT 1 FROM stage_executions) OR EXISTS (SELECT 1 FROM "
        "stage_judgments) OR EXISTS (SELECT 1 FROM stage_cases) OR EXISTS "
        "(SELECT 1 FROM stage_artifacts)"
    ).fetchone()[0] == 0:
        return False
    with transaction(conn):
        for sql in Writer.MERGES:
            conn.execute(sql)
    return True
