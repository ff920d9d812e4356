"""Canonical JSON and content digests (SPEC §2.1).

A digest is `sha256:<hex>` of the canonical JSON of a value: UTF-8, keys sorted, no
insignificant whitespace, no NaN or infinity.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

_encoder = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value`."""
    return _encoder.encode(value)


_GIL_FREE_BELOW = 2000


def sha256_text(text: str) -> str:
    """`sha256:<hex>` of a text's UTF-8 bytes.

    Fed in slices under 2 KiB: hashlib releases the GIL for larger buffers, and getting it back
    while worker threads run Python costs far more than the hashing itself.
    """
    data = text.encode("utf-8")
    if len(data) < _GIL_FREE_BELOW:
        return "sha256:" + hashlib.sha256(data).hexdigest()
    hasher = hashlib.sha256()
    view = memoryview(data)
    for start in range(0, len(data), _GIL_FREE_BELOW):
        hasher.update(view[start : start + _GIL_FREE_BELOW])
    return "sha256:" + hasher.hexdigest()


def digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of `value`."""
    return sha256_text(canonical_json(value))


def combine(*parts: str) -> str:
    """A digest of several digests or names, in order (used for cache keys)."""
    return sha256_text("\x1f".join(parts))
