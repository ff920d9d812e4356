"""Orders that must not depend on outcomes nor on the order cases finished in."""

from __future__ import annotations

import hashlib

__all__ = ["digest_order"]


def digest_order(ids: list[str]) -> list[str]:
    """``ids`` sorted by their SHA-256 digests (by the first 8 bytes, in NumPy; by the whole
    digest should two share them)."""
    import numpy as np
    digests = [hashlib.sha256(cid.encode()).digest() for cid in ids]
    prefixes = np.frombuffer(b"".join(d[:8] for d in digests), dtype=">u8")
    if np.unique(prefixes).size < len(ids):
        return [cid for _, cid in sorted(zip(digests, ids, strict=True))]
    return [ids[k] for k in np.argsort(prefixes)]
