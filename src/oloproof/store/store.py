"""The local store: SQLite under `.oloproof/` (SPEC §4.2).

Every query lives here. Writes are buffered and committed in batches (`flush`), never one
transaction per case; the runner flushes at least once a second, so a killed run loses at most
about a second of finished work. WAL mode lets readers run beside a writer, and a busy timeout
lets two runs share one store.
"""

from __future__ import annotations

import json
import os
import queue
import socket
import sqlite3
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from pydantic_core import to_json

from oloproof.digest import canonical_json
from oloproof.errors import StoreError, UsageError
from oloproof.state import diff as state_diff
from oloproof.store.schema import migrate

_CHUNK = 500


def _dumps(value: Any) -> str:
    """Compact JSON text (pydantic-core's serialiser: several times faster than json's)."""
    return to_json(value).decode("utf-8")


# A judgment key is a case key (this many characters) followed by the evaluator's key.
JUDGMENT_CASE_KEY = 40


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), _CHUNK):
        yield items[start : start + _CHUNK]


# Python's sqlite3 releases the GIL only while SQLite works on a statement: `executemany`
# steps once per row, so the writer thread had to take the GIL back for every row, and beside
# a busy event loop it waited for it far longer than SQLite worked (measured: 30 µs of wall
# time per row for 6 µs of work). One statement of many rows is bound in one go and stepped
# once, GIL-free. Statements hold 256, 128, ..., 1 rows: a cached statement keeps a copy of
# its last bound values, so few sizes and small ones keep that memory small.
_MAX_ROWS_PER_INSERT = 256


def _insert_rows(conn: sqlite3.Connection, insert: str, width: int,
                 rows: Sequence[tuple[Any, ...]]) -> None:
    """`insert` (a statement up to VALUES) for every row, several rows per statement."""
    group = "(" + ",".join("?" * width) + ")"
    limit = conn.getlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER) // width
    size = min(_MAX_ROWS_PER_INSERT, 1 << (max(limit, 1).bit_length() - 1))
    start = 0
    while start < len(rows):
        while size > len(rows) - start:
            size //= 2
        part = rows[start : start + size]
        conn.execute(f"{insert} {','.join([group] * size)}", list(chain.from_iterable(part)))
        start += size


class Store:
    """One project's store. Not thread-safe: use it from one thread (the run's event loop)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            self.conn = self._connect()
            migrate(self.conn)
        except (sqlite3.DatabaseError, OSError) as exc:
            raise StoreError(f"cannot open the store: {exc}", file=path) from None
        self._writer: queue.Queue[Any] | None = None
        self._writer_error: StoreError | None = None
        self._pending: dict[str, list[tuple[Any, ...]]] = {
            "cases": [], "executions": [], "artifacts": [], "replays": [],
            "run_cases": [], "run_errors": [],
        }
        self._pending_judgments: dict[str, dict[str, list[Any]]] = {}
        self._pending_count = 0
        self._seen_artifacts: set[str] = set()
        self._seen_cases: set[str] = set()
        self.merge_staged()  # rows a killed run staged become cache entries now

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, timeout=60.0, isolation_level=None,
                               check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=NORMAL")
        conn.execute("PRAGMA busy_timeout=60000")
        # Cache keys are random digests: a larger page cache keeps index inserts in memory.
        conn.execute("PRAGMA cache_size=-65536")
        return conn

    def close(self) -> None:
        try:
            self.stop_writer()
        finally:
            self.conn.close()

    # ---- writing -----------------------------------------------------------------------

    @property
    def pending(self) -> int:
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
                                _dumps(case.stored_form())))

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
        output: dict[str, Any],
        artifacts: dict[str, str],
        facts: dict[str, Any] | None,
        latency_ms: float | None,
    ) -> None:
        self._add(
            "executions",
            (key, case_digest, _dumps(output), _dumps(artifacts),
             None if facts is None else _dumps(facts), latency_ms, time.time()),
        )

    def add_judgment(self, key: str, verdict: str, reason: str | None, details: Any) -> None:
        """Keep one judgment. Keys are `<case key><evaluator key>` (see JUDGMENT_CASE_KEY):
        a case's judgments share one row."""
        group, evaluator = key[:JUDGMENT_CASE_KEY], key[JUDGMENT_CASE_KEY:]
        entry = self._pending_judgments.get(group)
        if entry is None:
            entry = self._pending_judgments[group] = {}
            self._pending_count += 1
        entry[evaluator] = [verdict, reason, details]

    def add_replay(self, key: str, body: dict[str, Any]) -> None:
        self._add("replays", (key, _dumps(body)))

    def add_run_case(
        self, run_id: str, seq: int, case_id: str, case_digest: str, exec_key: str | None,
        outcome: dict[str, Any],
    ) -> None:
        self._add("run_cases", (run_id, seq, case_id, case_digest, exec_key, _dumps(outcome)))

    def add_error(
        self, run_id: str, case_id: str, kind: str, message: str, traceback: str | None
    ) -> None:
        self._add("run_errors", (run_id, case_id, kind, message, traceback))

    # Each pending table: (statement up to VALUES, columns per row).
    _INSERTS = {
        "judgments": ("INSERT INTO stage_judgments VALUES", 2),
        "cases": ("INSERT INTO stage_cases VALUES", 2),
        # Artifacts are large and written once: copying them through staging costs more than
        # their (small) key index saves.
        "artifacts": ("INSERT OR IGNORE INTO artifacts VALUES", 4),
        "executions": ("INSERT INTO stage_executions VALUES", 7),
        "replays": ("INSERT OR REPLACE INTO replays VALUES", 2),
        "run_cases": ("INSERT OR REPLACE INTO run_cases VALUES", 6),
        "run_errors": ("INSERT INTO run_errors VALUES", 5),
    }

    # Merging staged rows into the keyed tables, in key order (one transaction).
    _MERGES = (
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

    def merge_staged(self) -> None:
        """Move staged cache rows into the keyed tables (what a killed run left included)."""
        conn = self.conn
        if conn.execute(
            "SELECT EXISTS (SELECT 1 FROM stage_executions) OR EXISTS (SELECT 1 FROM "
            "stage_judgments) OR EXISTS (SELECT 1 FROM stage_cases) OR EXISTS "
            "(SELECT 1 FROM stage_artifacts)"
        ).fetchone()[0] == 0:
            return
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                for sql in self._MERGES:
                    conn.execute(sql)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot write to the store: {exc}", file=self.path) from None

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
        """Write batches from a thread of its own, on a connection of its own."""
        if self._writer is not None:
            return
        # Bounded: when SQLite falls behind, the run waits instead of piling batches in memory.
        self._writer = queue.Queue(maxsize=4)
        thread = threading.Thread(target=self._write_forever, name="oloproof-store", daemon=True)
        thread.start()

    def _write_forever(self) -> None:
        assert self._writer is not None
        conn = self._connect()
        # Checkpoint the WAL into the database every ~64 MB rather than every 4 MB: the cache
        # indexes are keyed by digests, so every batch dirties pages all over them, and each
        # checkpoint copies (and syncs) each dirtied page once however often it was rewritten.
        # (Every ~256 MB was measured slower: reads through a large WAL cost more.)
        conn.execute("PRAGMA wal_autocheckpoint=16384")
        while True:
            batch = self._writer.get()
            try:
                if batch is None:
                    conn.close()
                    return
                self._write_batch(conn, batch)
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
        try:
            conn.execute("BEGIN IMMEDIATE")
            try:
                if batch.get("judgments"):
                    batch["judgments"] = [(k, _dumps(v)) for k, v in batch["judgments"].items()]
                # Referenced rows first (the dict's order), so a reader never sees a dangling
                # reference.
                for table, (insert, width) in self._INSERTS.items():
                    rows = batch.get(table)
                    if rows:
                        _insert_rows(conn, insert, width, rows)
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot write to the store: {exc}", file=self.path) from None

    # ---- runs ---------------------------------------------------------------------------

    def begin_run(
        self, run_id: str, project: str, system_name: str, system_version: str,
        suite: dict[str, Any], policy: dict[str, Any],
    ) -> None:
        self._write(
            "INSERT INTO runs (run_id, project, started_at, status, pid, host, system_name, "
            "system_version, suite, policy) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (run_id, project, time.time(), "running", os.getpid(), socket.gethostname(),
             system_name, system_version, _dumps(suite), _dumps(policy)),
        )

    def finish_run(
        self, run_id: str, status: str, n_cases: int, summary: dict[str, Any] | None
    ) -> None:
        self.flush(wait=True)
        self._write(
            "UPDATE runs SET status=?, finished_at=?, n_cases=?, summary=? WHERE run_id=?",
            (status, time.time(), n_cases, None if summary is None else _dumps(summary), run_id),
        )

    def _write(self, sql: str, params: tuple[Any, ...]) -> None:
        try:
            self.conn.execute(sql, params)
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"cannot write to the store: {exc}", file=self.path) from None

    def list_runs(self, limit: int | None = None) -> list[dict[str, Any]]:
        sql = (
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, summary FROM runs ORDER BY started_at DESC, run_id DESC"
        )
        if limit is not None:
            sql += f" LIMIT {int(limit)}"
        rows = self.conn.execute(sql).fetchall()
        keys = ("run_id", "project", "started_at", "finished_at", "status", "pid", "host",
                "system_name", "system_version", "n_cases", "summary")
        out = []
        for row in rows:
            record = dict(zip(keys, row, strict=True))
            record["summary"] = json.loads(record["summary"]) if record["summary"] else None
            record["status"] = self._live_status(record)
            out.append(record)
        return out

    @staticmethod
    def _live_status(record: dict[str, Any]) -> str:
        """A `running` run whose process is gone on this host did not complete."""
        if record["status"] != "running":
            return str(record["status"])
        if record["host"] == socket.gethostname() and record["pid"]:
            try:
                os.kill(int(record["pid"]), 0)
            except ProcessLookupError:
                return "incomplete"
            except PermissionError:
                pass
        return "running"

    def resolve_run(self, ref: str) -> str:
        """`latest`, `latest~N`, or a unique prefix or suffix of a run id."""
        ids: list[str] = [r[0] for r in self.conn.execute(
            "SELECT run_id FROM runs ORDER BY started_at DESC, run_id DESC")]
        if not ids:
            raise StoreError("no runs are stored yet; run `oloproof run` first", file=self.path)
        if ref == "latest" or ref.startswith("latest~"):
            back = 0
            if ref != "latest":
                try:
                    back = int(ref.split("~", 1)[1])
                except ValueError:
                    raise UsageError(f"{ref!r}: write latest~N with a number N") from None
            if back < 0 or back >= len(ids):
                raise UsageError(f"{ref!r}: only {len(ids)} run(s) are stored")
            return ids[back]
        if ref in ids:
            return ref
        matches = [i for i in ids if i.startswith(ref) or i.endswith(ref)
                   or i.removeprefix("run_").startswith(ref)]
        if len(matches) == 1:
            return matches[0]
        if not matches:
            raise UsageError(f"no run matches {ref!r}; `oloproof runs` lists them")
        raise UsageError(
            f"{ref!r} matches {len(matches)} runs ({', '.join(matches[:4])}...); "
            "give more of the id"
        )

    def run_record(self, run_id: str) -> dict[str, Any]:
        row = self.conn.execute(
            "SELECT run_id, project, started_at, finished_at, status, pid, host, system_name, "
            "system_version, n_cases, suite, policy, summary FROM runs WHERE run_id=?",
            (run_id,),
        ).fetchone()
        if row is None:
            raise StoreError(f"run {run_id} is not in the store")
        keys = ("run_id", "project", "started_at", "finished_at", "status", "pid", "host",
                "system_name", "system_version", "n_cases", "suite", "policy", "summary")
        record = dict(zip(keys, row, strict=True))
        for key in ("suite", "policy", "summary"):
            record[key] = json.loads(record[key]) if record[key] else None
        record["status"] = self._live_status(record)
        return record

    def iter_run_cases(self, run_id: str) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
        """(case id, case digest, execution key, outcome) for each case of a run, in order."""
        cursor = self.conn.execute(
            "SELECT case_id, case_digest, exec_key, outcome FROM run_cases WHERE run_id=? "
            "ORDER BY seq", (run_id,),
        )
        for case_id, case_digest, exec_key, outcome in cursor:
            yield case_id, case_digest, exec_key, json.loads(outcome)

    def run_case(self, run_id: str, case_id: str) -> tuple[str, str | None, dict[str, Any]] | None:
        row = self.conn.execute(
            "SELECT case_digest, exec_key, outcome FROM run_cases WHERE run_id=? AND case_id=?",
            (run_id, case_id),
        ).fetchone()
        if row is None:
            return None
        return row[0], row[1], json.loads(row[2])

    def run_errors(self, run_id: str) -> list[dict[str, Any]]:
        rows = self.conn.execute(
            "SELECT case_id, kind, message, traceback FROM run_errors WHERE run_id=? "
            "ORDER BY rowid", (run_id,),
        ).fetchall()
        return [dict(zip(("case", "kind", "message", "traceback"), r, strict=True)) for r in rows]

    # ---- caches ---------------------------------------------------------------------------

    def lookup_executions(self, keys: Sequence[str]) -> dict[str, tuple[Any, float | None]]:
        """For cached executions: key -> (facts, latency_ms). Reads no outputs."""
        found: dict[str, tuple[Any, float | None]] = {}
        for part in _chunks(list(keys)):
            marks = ",".join("?" * len(part))
            for key, facts, latency in self.conn.execute(
                f"SELECT key, facts, latency_ms FROM executions WHERE key IN ({marks})", part
            ):
                found[key] = (json.loads(facts) if facts else None, latency)
        return found

    def load_executions(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Whole executions: key -> {output, artifacts (payloads), facts, latency_ms}."""
        rows: dict[str, dict[str, Any]] = {}
        hashes: set[str] = set()
        for part in _chunks(list(keys)):
            marks = ",".join("?" * len(part))
            for key, output, artifacts, facts, latency in self.conn.execute(
                "SELECT key, output, artifacts, facts, latency_ms FROM executions "
                f"WHERE key IN ({marks})", part,
            ):
                refs = json.loads(artifacts)
                hashes.update(refs.values())
                rows[key] = {"output": json.loads(output), "artifact_refs": refs,
                             "facts": json.loads(facts) if facts else None, "latency_ms": latency}
        payloads = self.load_artifacts(sorted(hashes))
        for row in rows.values():
            row["artifacts"] = {k: payloads[h] for k, h in row["artifact_refs"].items()
                                if h in payloads}
        return rows

    def load_artifacts(self, hashes: Sequence[str]) -> dict[str, Any]:
        """Artifact payloads by hash, rebuilding diffs against their bases."""
        raw: dict[str, tuple[str | None, str]] = {}
        todo = list(hashes)
        while todo:
            wanted = [h for h in todo if h not in raw]
            todo = []
            for part in _chunks(wanted):
                marks = ",".join("?" * len(part))
                for h, base, body in self.conn.execute(
                    f"SELECT hash, base, body FROM artifacts WHERE hash IN ({marks})", part
                ):
                    raw[h] = (base, body)
                    if base is not None and base not in raw:
                        todo.append(base)
        built: dict[str, Any] = {}

        def build(h: str) -> Any:
            if h not in built:
                base, body = raw[h]
                value = json.loads(body)
                built[h] = value if base is None else state_diff.apply(build(base), value)
            return built[h]

        return {h: build(h) for h in hashes if h in raw}

    def _judgment_rows(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        groups = sorted({k[:JUDGMENT_CASE_KEY] for k in keys if k})
        rows: dict[str, dict[str, Any]] = {}
        for part in _chunks(groups):
            marks = ",".join("?" * len(part))
            for key, body in self.conn.execute(
                f"SELECT key, body FROM judgments WHERE key IN ({marks})", part
            ):
                rows[key] = json.loads(body)
        return rows

    def lookup_judgments(self, keys: Sequence[str]) -> dict[str, tuple[str, str | None]]:
        """key -> (verdict, reason) for cached judgments."""
        rows = self._judgment_rows(keys)
        found: dict[str, tuple[str, str | None]] = {}
        for key in keys:
            entry = rows.get(key[:JUDGMENT_CASE_KEY], {}).get(key[JUDGMENT_CASE_KEY:])
            if entry is not None:
                found[key] = (entry[0], entry[1])
        return found

    def load_judgments(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        """key -> {verdict, reason, details} for cached judgments."""
        wanted = [k for k in keys if k]
        rows = self._judgment_rows(wanted)
        found: dict[str, dict[str, Any]] = {}
        for key in wanted:
            entry = rows.get(key[:JUDGMENT_CASE_KEY], {}).get(key[JUDGMENT_CASE_KEY:])
            if entry is not None:
                found[key] = {"verdict": entry[0], "reason": entry[1], "details": entry[2]}
        return found

    def load_case(self, case_digest: str) -> dict[str, Any] | None:
        row = self.conn.execute("SELECT body FROM cases WHERE digest=?", (case_digest,)).fetchone()
        return json.loads(row[0]) if row else None

    def lookup_replays(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        found: dict[str, dict[str, Any]] = {}
        for part in _chunks(list(keys)):
            marks = ",".join("?" * len(part))
            for key, body in self.conn.execute(
                f"SELECT key, body FROM replays WHERE key IN ({marks})", part
            ):
                found[key] = json.loads(body)
        return found
