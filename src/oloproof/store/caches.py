"""Reading the caches: executions, artifacts, judgments, replays and cases, by key.

Every read asks for many keys at once (`select_in`: one query per 500 keys), so the engine asks
each table once per chunk of cases, and the reports once per batch of cases.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from oloproof.errors import StoreError
from oloproof.state import diff as state_diff
from oloproof.store.schema import JUDGMENT_CASE_KEY
from oloproof.store.sql import JSON_ERRORS, damaged_row_error, select_in


class CacheReads:
    """The cache reads of a `Store` (which provides `conn` and `path`).

    A row whose JSON cannot be read is a `StoreError` saying the store is damaged, naming
    the table and row (`damaged_row_error`), never an internal error.
    """

    conn: sqlite3.Connection
    path: Path
    #: Whether the reads of a run's case (its body, execution, artifacts, judgments) also find
    #: the rows a run staged and has not merged yet, as the merge will take them: a staged
    #: execution or judgment over the keyed one, a staged case or artifact where none is
    #: keyed. `oloproof view` reads so while a run writes; the engine's cache lookups never.
    reads_staged = False

    def _damaged(self, table: str, key: str, exc: BaseException) -> StoreError:
        return damaged_row_error(self.path, f"the {table} row {key}", exc)

    def _staged_rows(self, query: str, keys: Iterable[str]) -> list[Any]:
        """The staged rows of `query … IN (keys)` (none unless `reads_staged`)."""
        return list(select_in(self.conn, query, keys)) if self.reads_staged else []

    def lookup_executions(self, keys: Sequence[str]) -> dict[str, tuple[Any, float | None]]:
        """For cached executions: key -> (facts, latency_ms). Reads no outputs."""
        found: dict[str, tuple[Any, float | None]] = {}
        for key, facts, latency in select_in(
            self.conn, "SELECT key, facts, latency_ms FROM executions WHERE key IN", keys
        ):
            try:
                found[key] = (json.loads(facts) if facts else None, latency)
            except JSON_ERRORS as exc:
                raise self._damaged("executions", key, exc) from None
        return found

    def load_executions(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Whole executions: key -> {output, artifacts (payloads), facts, latency_ms}."""
        rows: dict[str, dict[str, Any]] = {}
        hashes: set[str] = set()
        found = list(select_in(
            self.conn,
            "SELECT key, output, artifacts, facts, latency_ms FROM executions WHERE key IN", keys,
        ))
        found += self._staged_rows("SELECT key, output, artifacts, facts, latency_ms FROM "
                                   "stage_executions WHERE key IN", keys)
        for key, output, artifacts, facts, latency in found:
            try:
                refs = json.loads(artifacts)
                hashes.update(refs.values())
                rows[key] = {"output": json.loads(output), "artifact_refs": refs,
                             "facts": json.loads(facts) if facts else None,
                             "latency_ms": latency}
            except (*JSON_ERRORS, AttributeError) as exc:  # refs not an object: damaged too
                raise self._damaged("executions", key, exc) from None
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
            found = list(select_in(
                self.conn, "SELECT hash, base, body FROM artifacts WHERE hash IN", wanted))
            known = {row[0] for row in found}
            found += self._staged_rows(
                "SELECT hash, base, body FROM stage_artifacts WHERE hash IN",
                [h for h in wanted if h not in known])
            for h, base, body in found:
                raw[h] = (base, body)
                if base is not None and base not in raw:
                    todo.append(base)
        built: dict[str, Any] = {}

        def build(h: str) -> Any:
            if h not in built:
                base, body = raw[h]
                try:
                    value = json.loads(body)
                except JSON_ERRORS as exc:
                    raise self._damaged("artifacts", h, exc) from None
                built[h] = value if base is None else state_diff.apply(build(base), value)
            return built[h]

        return {h: build(h) for h in hashes if h in raw}

    def _judgment_rows(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        groups = sorted({k[:JUDGMENT_CASE_KEY] for k in keys if k})
        rows = self._bodies("judgments", select_in(
            self.conn, "SELECT key, body FROM judgments WHERE key IN", groups))
        for key, body in self._bodies("stage_judgments", self._staged_rows(
                "SELECT key, body FROM stage_judgments WHERE key IN", groups)).items():
            rows[key] = {**rows.get(key, {}), **body}  # as the merge patches it
        return rows

    def _bodies(self, table: str, rows: Iterable[tuple[str, str]]) -> dict[str, Any]:
        """key -> parsed body, for rows of (key, JSON text)."""
        found: dict[str, Any] = {}
        for key, body in rows:
            try:
                found[key] = json.loads(body)
            except JSON_ERRORS as exc:
                raise self._damaged(table, key, exc) from None
        return found

    def lookup_judgments(
        self, keys: Sequence[str], details_for: frozenset[str] = frozenset()
    ) -> dict[str, tuple[Any, ...]]:
        """key -> (verdict, reason) for cached judgments; (verdict, reason, details) for those
        of the evaluators whose keys are in `details_for`."""
        rows = self._judgment_rows(keys)
        found: dict[str, tuple[Any, ...]] = {}
        for key in keys:
            short = key[JUDGMENT_CASE_KEY:]
            entry = rows.get(key[:JUDGMENT_CASE_KEY], {}).get(short)
            if entry is not None:
                found[key] = (entry[0], entry[1], entry[2]) if short in details_for \
                    else (entry[0], entry[1])
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
        """A case as it was run, by its digest, or None."""
        row = self.conn.execute("SELECT body FROM cases WHERE digest=?", (case_digest,)).fetchone()
        if row is None and self.reads_staged:
            row = self.conn.execute("SELECT body FROM stage_cases WHERE digest=?",
                                    (case_digest,)).fetchone()
        return self._bodies("cases", [(case_digest, row[0])])[case_digest] if row else None

    def load_cases(self, digests: Iterable[str]) -> dict[str, dict[str, Any]]:
        """Cases as they were run, by digest (digests not stored are left out)."""
        digests = list(digests)
        found = self._bodies("cases", select_in(
            self.conn, "SELECT digest, body FROM cases WHERE digest IN", digests))
        staged = self._bodies("stage_cases", self._staged_rows(
            "SELECT digest, body FROM stage_cases WHERE digest IN",
            [d for d in digests if d not in found]))
        return {**staged, **found}

    def lookup_judge_verdicts(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored judge verdicts (`judge_verdict/v1` records) by verdict key."""
        return {key: json.loads(body) for key, body in select_in(
            self.conn, "SELECT key, body FROM judge_verdicts WHERE key IN", keys)}

    def lookup_simulator_turns(self, conversations: Sequence[str]
                               ) -> dict[str, dict[str, dict[str, Any]]]:
        """Every stored turn of these conversations: conversation key -> turn key -> the turn
        (docs/conversations.md#seeds-and-caching)."""
        found: dict[str, dict[str, dict[str, Any]]] = {}
        for key, conversation, body in select_in(
                self.conn, "SELECT key, conversation, body FROM simulator_turns WHERE "
                "conversation IN", conversations):
            found.setdefault(conversation, {})[key] = json.loads(body)
        return found

    def lookup_replays(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Stored fault replays by replay key."""
        return self._bodies("replays", select_in(
            self.conn, "SELECT key, body FROM replays WHERE key IN", keys))
