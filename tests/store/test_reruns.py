"""What the record counts, on a store made by hand (docs/limits.md#re-runs-and-re-drawn-samples):
complete runs of one project, system, version, variant and suite, of the kind `run`; a run of
another kind (a subset, a rescoring, an import) or variant is counted apart or not at all.

(The same through the CLI and the public API, with real runs: tests/compare/test_rerun_record.py.)
"""

from __future__ import annotations

from pathlib import Path

import pytest

from oloproof.store.store import Store


@pytest.fixture
def db(tmp_path: Path) -> Store:
    return Store(tmp_path / "store.sqlite")


def _made(db: Store, run_id: str, *, cases: int = 3, status: str = "complete",
          no_cache: bool = False, kind: str = "run", variant: str | None = None) -> None:
    db.begin_run(run_id, "desk", "desk", "v1", {"evaluator_keys": ["k1", "k2"]}, {},
                 no_cache=no_cache, kind=kind, variant=variant)
    for seq in range(cases):
        db.add_run_case(run_id, seq, f"c{seq}", f"sha256:{seq:064d}", None, {})
    db.flush(wait=True)
    db.set_suite_digest(run_id, ["k2", "k1"] if run_id.endswith("r") else ["k1", "k2"])
    db.finish_run(run_id, status, cases, None)


def test_runs_of_another_kind_variant_suite_or_status_are_counted_apart(db: Store) -> None:
    _made(db, "run_1")
    _made(db, "run_2r")  # its evaluators listed in another order: the same suite
    _made(db, "run_3", status="stopped")
    _made(db, "run_4", kind="subset")
    _made(db, "run_4b", kind="rescored")
    _made(db, "run_4c", kind="import")
    _made(db, "run_5", variant="prompt-b")
    _made(db, "run_6", cases=4)
    _made(db, "run_7", no_cache=True)
    counted = db.counted_runs("run_7")
    assert counted is not None
    assert counted.runs == ["run_1", "run_2r", "run_7"] and counted.at == 2
    assert counted.no_cache == [False, False, True] and counted.variant is None
    assert db.counted_runs("run_3") is None  # stopped: not counted, no place
    assert db.counted_runs("run_3", as_complete=True) is not None  # while being decided
    # A subset, a rescored run, an import: never counted, and none is given a place.
    assert [db.counted_runs(r) for r in ("run_4", "run_4b", "run_4c")] == [None] * 3
    variant = db.counted_runs("run_5")
    assert variant is not None and variant.runs == ["run_5"] and variant.variant == "prompt-b"
    other = db.counted_runs("run_6")
    assert other is not None and other.runs == ["run_6"] and other.suite != counted.suite
    db.close()
