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


def sha256_text(text: str) -> str:
    """`sha256:<hex>` of a text's UTF-8 bytes."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()


def digest(value: Any) -> str:
    """`sha256:<hex>` of the canonical JSON of `value`."""
    return sha256_text(canonical_json(value))


def combine(*parts: str) -> str:
    """A digest of several digests or names, in order (used for cache keys)."""
    return sha256_text("\x1f".join(parts))
