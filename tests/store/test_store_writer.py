"""The background writer: a failure surfaces as a StoreError and never blocks the run."""

from __future__ import annotations

from pathlib import Path

import pytest

from oloproof.errors import StoreError
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
