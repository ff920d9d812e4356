"""`compare(baseline, candidate)`: two stored runs, named by reference, compared
(docs/compare.md#oloproof-compare-baseline-candidate).

The library call behind `oloproof compare`; it reads the store only, so it imports neither the
engine nor the policy machinery (`oloproof.compare` is this function).
"""

from __future__ import annotations

from pathlib import Path

from oloproof.comparison.runs import check_comparable, compare_sides
from oloproof.comparison.sides import read_side
from oloproof.document import Comparison
from oloproof.store.location import open_existing_store
from oloproof.store.store import Store


def compare(
    baseline: str = "latest~1", candidate: str = "latest", config: str | Path = "oloproof.yaml",
    store: str | Path | None = None,
) -> Comparison:
    """A candidate run against its baseline, case by case
    (docs/compare.md#oloproof-compare-baseline-candidate); runs nothing.

    Both are run references (`latest`, `latest~N`, a unique prefix or suffix of an id,
    `tag:NAME`, `version:V` — for the baseline, the newest complete run of that system version
    other than the candidate), resolved among the stored runs. Returns the `Comparison`: per
    criterion both passed, fixed, broken, both failed and missing pairs, the difference in pass
    rate (candidate − baseline) with its interval and McNemar's exact p; the changed and
    unpaired cases; the broken and fixed cases with what changed in each. Its level is the
    candidate's policy's.

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: a reference names no stored run; or a baseline of another project, the
            candidate itself, or one sharing no case id with the candidate.
    """
    db = open_existing_store(config, store)
    try:
        return compare_in(db, baseline, candidate)
    finally:
        db.close()


def compare_in(db: Store, baseline: str, candidate: str) -> Comparison:
    """`compare` on a store already open (the view reads it so): two run references, the
    baseline resolved beside the candidate (`version:V` is another run than the candidate)."""
    cand = db.resolve_run(candidate)
    candidate_side = read_side(db, cand)
    base = db.resolve_run(baseline, candidate_side.project, cand)
    if base == cand:
        check_comparable(base, "", cand, "")
    level = float((candidate_side.record.get("policy") or {}).get("confidence_level", 0.95))
    return compare_sides(db, read_side(db, base), candidate_side, level,
                         baseline_reference=baseline)
