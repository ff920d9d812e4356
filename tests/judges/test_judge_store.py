"""The judge verdict cache in the store (docs/judges.md#where-a-judge-sits): a store written
before judges existed gets its table, and a cached verdict is found again after it."""

from __future__ import annotations

import sqlite3

from judged_project import (  # noqa: F401 - the fixture `judged`
    JudgedProject,
    desk_cases,
    judged_fixture,
)
from old_stores import as_of_schema

import oloproof
from oloproof.store.schema import SCHEMA_VERSION


def test_a_store_from_before_judges_gets_the_verdicts_table(judged: JudgedProject) -> None:
    judged.write_cases(desk_cases(3, lies={2}))
    first = oloproof.run(judged.config)
    with sqlite3.connect(judged.store) as conn:  # as an Oloproof before judges left it
        as_of_schema(conn, 4)
    judged.suite["evaluators"][0]["rubric"] += " Read the tool results."
    judged.write()
    second = oloproof.run(judged.config)  # re-judged from the cached executions
    assert second.to_json()["cache"]["execution"] == {"hit": 3, "miss": 0}
    assert second.to_json()["cache"]["judge"] == {"hit": 0, "miss": 3}
    assert second.metric("reply_truthful").passed == first.metric("reply_truthful").passed
    with sqlite3.connect(judged.store) as conn:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("SELECT COUNT(*) FROM judge_verdicts").fetchone()[0] == 3
