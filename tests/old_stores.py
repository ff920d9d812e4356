"""A store as an older Oloproof left it: what each migration above a schema version added,
taken away again (src/oloproof/store/schema.py), so a test can open it and watch it migrate."""

from __future__ import annotations

import sqlite3

#: Per schema version, the statements that undo its migration (newest first when applied).
_UNDO: dict[int, list[str]] = {
    3: ["DROP TABLE IF EXISTS tags"],
    4: ["ALTER TABLE run_errors DROP COLUMN attempt",
        "ALTER TABLE run_errors DROP COLUMN retried"],
    5: ["DROP TABLE IF EXISTS judge_verdicts"],
    6: ["DROP TABLE IF EXISTS label_samples", "DROP INDEX IF EXISTS runs_version",
        "ALTER TABLE runs DROP COLUMN suite_digest", "ALTER TABLE runs DROP COLUMN variant",
        "ALTER TABLE runs DROP COLUMN kind", "ALTER TABLE runs DROP COLUMN no_cache"],
}


def as_of_schema(conn: sqlite3.Connection, version: int) -> None:
    """Take the store on `conn` back to schema `version` (2 or more)."""
    current = conn.execute("PRAGMA user_version").fetchone()[0]
    for undone in range(current, version, -1):
        for statement in _UNDO[undone]:
            conn.execute(statement)
    conn.execute(f"PRAGMA user_version = {version}")
