"""The background writer: a failure surfaces as a StoreError and never blocks the run."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from oloproof.errors import StoreError
from oloproof.store.sql import dumps
from oloproof.store.store import Store


def test_a_failing_writer_raises_a_store_error_instead_of_hanging(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_path / "store.sqlite")
    store.start_writer()

    def broken(self: Store, conn: object, batch: object) -> None:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(Store, "_write_batch", broken)
    with pytest.raises(StoreError, match="disk on fire"):
        for i in range(50):  # more batches than the writer's queue holds
            store.add_error("run", f"case-{i}", "kind", "message", None)
            store.flush()
    with pytest.raises(StoreError):
        store.close()


def test_batches_written_in_the_background_are_readable(tmp_path: Path) -> None:
    store = Store(tmp_path / "store.sqlite")
    store.start_writer()
    for i in range(20):
        store.add_error("run", f"case-{i}", "timeout", "too slow", None)
        store.flush()
    store.flush(wait=True)
    assert [e["case"] for e in store.run_errors("run")] == [f"case-{i}" for i in range(20)]
    store.close()


@pytest.mark.parametrize("variable_limit", [None, 10])
def test_a_batch_of_any_size_is_written_whole_and_in_order(
    tmp_path: Path, variable_limit: int | None
) -> None:
    """Rows go in several per statement (256, 128, ..., 1), within SQLite's variable limit."""
    store = Store(tmp_path / "store.sqlite")
    if variable_limit is not None:  # five columns a row: one row per statement
        store.conn.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, variable_limit)
    for i in range(1003):
        store.add_error("run", f"case-{i}", "timeout", f"message {i}", None)
    store.add_run_case("run", 0, "case-0", "sha256:a", None, {"c": "P"})
    store.add_run_case("run", 0, "case-0", "sha256:b", None, {"c": "F"})  # replaces the first
    store.flush()

    errors = store.run_errors("run")
    assert [e["case"] for e in errors] == [f"case-{i}" for i in range(1003)]
    assert errors[1002]["message"] == "message 1002"
    assert list(store.iter_run_cases("run")) == [("case-0", "sha256:b", None, {"c": "F"})]
    store.close()


def test_the_writer_merges_staged_rows_as_the_run_goes_by_evaluator(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A batch's cache rows reach the keyed tables before the store is closed, and a case's
    judgments from two batches are merged by evaluator, the later batch's winning."""
    monkeypatch.setattr(Store, "MERGE_MIN", 1)
    path = tmp_path / "store.sqlite"
    store = Store(path)
    store.start_writer()
    case_key = "c" * 40
    store.add_judgments(case_key, {"e1": ["P", None, None], "e2": ["F", "old", None]})
    store.flush(wait=True)
    store.add_judgments(case_key, {"e2": ["P", None, {"n": 1}], "e3": ["X", "broke", None]})
    store.flush(wait=True)

    reader = Store(path, read_only=True)
    staged = reader.conn.execute("SELECT count(*) FROM stage_judgments").fetchone()[0]
    found = reader.load_judgments([case_key + "e1", case_key + "e2", case_key + "e3"])
    reader.close()
    store.close()
    assert staged == 0
    assert found == {
        case_key + "e1": {"verdict": "P", "reason": None, "details": None},
        case_key + "e2": {"verdict": "P", "reason": None, "details": {"n": 1}},
        case_key + "e3": {"verdict": "X", "reason": "broke", "details": None},
    }


def test_a_case_judged_twice_in_one_batch_is_one_row_merged_by_evaluator(
    tmp_path: Path,
) -> None:
    """The second judgments of a case in the same batch update the first by evaluator (the
    first's order kept, the later verdict winning), and the row's text is what the merged
    judgments write — floats and non-ASCII text included."""
    path = tmp_path / "store.sqlite"
    store = Store(path)
    store.start_writer()
    case_key = "c" * 40
    first = {"e1": ("P", None, {"score": 0.1, "note": "déjà 😀"}), "e2": ("F", "old", None)}
    second = {"e2": ("P", None, {"n": 1e-7, "big": 2**70}), "e3": ("X", "broke\n", None)}
    store.add_judgments(case_key, dict(first))
    store.add_judgments(case_key, dict(second))
    assert store.pending == 1
    store.close()

    reader = Store(path, read_only=True)
    rows = reader.conn.execute("SELECT key, body FROM judgments").fetchall()
    reader.close()
    assert rows == [(case_key, dumps(first | second))]


def test_a_bounded_page_cache_bounds_the_writers_connection_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # (an import bounds its store's page caches: docs/imports.md#how-an-import-is-stored)
    caches: list[int] = []
    write_batch = Store._write_batch

    def seen(self: Store, conn: sqlite3.Connection, batch: dict[str, object]) -> None:
        caches.append(conn.execute("PRAGMA cache_size").fetchone()[0])
        write_batch(self, conn, batch)

    monkeypatch.setattr(Store, "_write_batch", seen)
    default = Store(tmp_path / "default.sqlite")
    bounded = Store(tmp_path / "bounded.sqlite")
    bounded.bound_page_cache(2048)
    for store in (default, bounded):
        store.start_writer()
        store.add_error("run", "case-1", "timeout", "too slow", None)
        store.flush(wait=True)
    assert bounded.conn.execute("PRAGMA cache_size").fetchone()[0] == -2048
    assert caches == [default.conn.execute("PRAGMA cache_size").fetchone()[0], -2048]
    assert caches[0] < -2048  # (the default is larger: a native run's merges use it)
    default.close()
    bounded.close()
