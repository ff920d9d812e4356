"""Canonical JSON and content digests (docs/concepts.md#digests-and-keys).

A digest is `sha256:<hex>` of the canonical JSON of a value: UTF-8, keys sorted, no
insignificant whitespace, no NaN or infinity.
"""

from __future__ import annotations

import hashlib
import json
import json.encoder
from collections.abc import Callable
from typing import Any


def _not_json(value: Any) -> Any:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


class JsonWriter:
    """A compact, NaN-refusing JSON writer that keeps non-ASCII text as it is.

    The C encoder is made once, not once per call as `JSONEncoder.encode` does (half the cost
    of a small value, and this runs several times per case). It keeps no state between calls
    (no `markers`), so threads can share it; a circular structure, which the markers would
    have caught, exhausts the recursion limit instead and is reported as the same ValueError.
    """

    def __init__(self, *, sort_keys: bool) -> None:
        make = getattr(json.encoder, "c_make_encoder", None)
        self._quote = json.encoder.encode_basestring
        self._chunks: Callable[[Any, int], Any] | None = None
        self._fallback = json.JSONEncoder(sort_keys=sort_keys, separators=(",", ":"),
                                          ensure_ascii=False, allow_nan=False)
        if make is not None:  # (an interpreter without the C accelerator uses the fallback)
            self._chunks = make(None, _not_json, self._quote, None, ":", ",", sort_keys, False,
                                False)

    def encode(self, value: Any) -> str:
        """`value` as JSON text; TypeError or ValueError when it is not JSON."""
        if self._chunks is None:
            return self._fallback.encode(value)
        if isinstance(value, str):
            return self._quote(value)
        try:
            return "".join(self._chunks(value, 0))
        except RecursionError:
            raise ValueError("Circular reference detected") from None


# Every canonical text is made by this one writer (tests count its uses).
_encoder = JsonWriter(sort_keys=True)
_compact = JsonWriter(sort_keys=False)


def canonical_json(value: Any) -> str:
    """The canonical JSON text of `value`."""
    return _encoder.encode(value)


class ObjectText:
    """The canonical text of objects with these keys, from their members' canonical texts (what
    `canonical_json` writes for the object itself, without writing its members again); the
    keys' texts are written once. Keys are given in canonical (sorted) order, and the members'
    texts in the same order."""

    def __init__(self, *keys: str) -> None:
        if list(keys) != sorted(set(keys)):
            raise ValueError(f"keys must be distinct and in sorted order: {keys!r}")
        self.keys = keys
        self._template = "{" + ",".join(_encoder.encode(key).replace("%", "%%") + ":%s"
                                        for key in keys) + "}"

    def __call__(self, *texts: str) -> str:
        if len(texts) != len(self.keys):
            raise ValueError(f"{len(self.keys)} members' texts expected, got {len(texts)}")
        return self._template % texts


def compact_json(value: Any) -> str:
    """`value` as compact JSON (keys in their order); raises TypeError or ValueError when it is
    not JSON (a type JSON has no form for, NaN or infinity, a circular structure)."""
    return _compact.encode(value)


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
