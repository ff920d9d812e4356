"""Validity labels of metamorphic transforms (SPEC §9).

A transform is *checked* when people's labels show it keeps each request's meaning: the exact
lower bound of the kept share, over every pair of the transform, reaches `minimum_validity`.
A label counts only if its digest is the pair's current one; an unlabelled pair counts as not
kept; several labels of one pair count as kept only if all say so.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from oloproof.errors import ConfigError
from oloproof.stats import rate_interval
from oloproof.suite.config import TransformConfig


def read_labels(path: Path) -> dict[tuple[str, str], list[bool | None]]:
    """(case id, digest) -> every `kept` value given for it."""
    labels: dict[tuple[str, str], list[bool | None]] = {}
    if not path.is_file():
        return labels
    with path.open(encoding="utf-8") as handle:
        for number, raw in enumerate(handle, 1):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw)
            except ValueError as exc:
                raise ConfigError(f"labels line is not JSON: {exc}", file=path,
                                  line=number) from None
            if not isinstance(row, dict) or not isinstance(row.get("case"), str) \
                    or not isinstance(row.get("digest"), str):
                raise ConfigError(
                    'each label is {"case": ..., "digest": ..., "kept": true|false}',
                    file=path, line=number,
                )
            kept = row.get("kept")
            if kept is not None and not isinstance(kept, bool):
                raise ConfigError("kept must be true, false or null", file=path, line=number)
            labels.setdefault((row["case"], row["digest"]), []).append(kept)
    return labels


def validity_bound(
    kept: int, pairs: int, minimum: float, level: float
) -> tuple[float | None, bool]:
    """(exact lower bound of the kept share, whether it reaches `minimum`) at `level`."""
    lower = rate_interval(kept, pairs, 0, level).lower if pairs else None
    return lower, lower is not None and lower >= minimum


def transform_validity(
    transforms: list[tuple[TransformConfig, str]], pairs: dict[str, dict[str, str]],
    base_dir: Path, level: float,
) -> list[dict[str, Any]]:
    """For each transform: pairs, kept, the exact lower bound, and whether it is checked."""
    results = []
    for transform, t_digest in transforms:
        current = pairs.get(transform.name, {})
        path = (base_dir / transform.validity_labels) if transform.validity_labels else None
        labels = read_labels(path) if path is not None else {}
        kept = 0
        stale = 0
        current_keys = set(current.items())
        for case_id, pair_digest in current.items():
            given = labels.get((case_id, pair_digest))
            if given and all(v is True for v in given):
                kept += 1
        for key in labels:
            if key not in current_keys:
                stale += 1
        n = len(current)
        lower, checked = validity_bound(kept, n, transform.minimum_validity, level)
        results.append({
            "transform": transform.name,
            "digest": t_digest,
            "pairs": n,
            "kept": kept,
            "lower": lower,
            "minimum_validity": transform.minimum_validity,
            "checked": checked,
            "labels": str(path) if path is not None else None,
            "stale_labels": stale,
        })
    return results
