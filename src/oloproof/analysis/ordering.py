"""Orders that must not depend on outcomes nor on the order cases finished in: case ids as the
reports list them, slice groups, and digest order."""

from __future__ import annotations

import hashlib
import re

__all__ = ["case_digest_order", "case_order", "digest_order", "group_order"]

_DIGITS = re.compile(r"(\d+)")


def case_order(case_id: str) -> tuple[tuple[int, int | str], ...]:
    """Case ids in natural order (`c2` before `c10`), the order reports list cases in."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in _DIGITS.split(case_id) if part)


def group_order(key: tuple[int, str]) -> tuple[int, int, str]:
    """A slice group `(slice position, group)` in the order its rows are listed."""
    s, group = key
    # Buckets in their natural order (le_4 < le_8 < gt_8), other values alphabetically.
    if group.startswith("le_") and group[3:].isdigit():
        return (s, int(group[3:]), group)
    if group.startswith("gt_") and group[3:].isdigit():
        return (s, 1 << 40, group)
    return (s, 0, group)


def case_digest_order(digest: str | None, case_id: str) -> tuple[str, str]:
    """Cases by their content digests, then ids: the order an interval over cases adds its
    values in."""
    return (digest or "", case_id)


def digest_order(ids: list[str]) -> list[str]:
    """``ids`` sorted by their SHA-256 digests (by the first 8 bytes, in NumPy; by the whole
    digest should two share them)."""
    import numpy as np
    digests = [hashlib.sha256(cid.encode()).digest() for cid in ids]
    prefixes = np.frombuffer(b"".join(d[:8] for d in digests), dtype=">u8")
    if np.unique(prefixes).size < len(ids):
        return [cid for _, cid in sorted(zip(digests, ids, strict=True))]
    return [ids[k] for k in np.argsort(prefixes)]
