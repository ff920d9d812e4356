"""docs/configuration.md's evaluator tables name every field each evaluator type takes: a row
per `type`, and in its `fields` column each key its Config accepts (beside `type` and
`criterion`, which every evaluator takes) — so a field added to an evaluator is documented."""

from __future__ import annotations

import re
from pathlib import Path

from oloproof.evaluators.registry import REGISTRY
from oloproof.suite.validation import accepted_fields

PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"


def _rows() -> dict[str, str]:
    """Each evaluator table row of the page: its `type` → its last (fields) column."""
    rows: dict[str, str] = {}
    for line in PAGE.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found = re.fullmatch(r"`([a-z_]+)`", cells[0]) if len(cells) >= 4 else None
        if found and REGISTRY.evaluator_type(found.group(1)) is not None:
            rows[found.group(1)] = cells[-1]
    return rows


def test_every_evaluator_field_is_in_its_row() -> None:
    rows = _rows()
    types = REGISTRY.names("type")
    assert sorted(rows) == sorted(types), "a row per evaluator type"
    for name in types:
        cls = REGISTRY.evaluator_type(name)
        assert cls is not None
        fields = [f for f in accepted_fields(cls.Config) if f not in ("type", "criterion")]
        missing = [f for f in fields if f"`{f}`" not in rows[name]]
        assert not missing, f"docs/configuration.md: {name}'s row does not name {missing}"
