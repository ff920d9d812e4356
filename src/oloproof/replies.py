"""The JSON object a model's reply holds: what a judge's verdict (docs/judges.md) and a
simulated user's turn (docs/conversations.md#what-a-simulator-answers) are read from, and the
token counts it gives, kept only when they are counts."""

from __future__ import annotations

import json
import math
from typing import Any


def json_object_in(text: str | None) -> Any:
    """The one JSON object `text` holds — the whole reply, or in prose around it, or in a
    fenced block (```json … ```) — or None when it holds none (or two, or an unparseable one).
    The value is returned as parsed (a dict, when it is an object)."""
    if not isinstance(text, str):
        return None
    body = text.strip()
    if body.startswith("```"):
        body = body.strip("`")
        body = body[body.find("{"):] if "{" in body else body
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        return json.loads(body[start:end + 1])
    except json.JSONDecodeError:
        return None


#: The largest token count kept (SQLite's largest integer).
_MOST_TOKENS = 2**63 - 1


def token_count(value: object) -> int | None:
    """A token count as a reply gave it, if it is one: a whole number from 0 (a float that is
    one, such as `12.0`, included), else None — negative, infinite, NaN, text, true or false
    are no counts, and are dropped rather than stored, a judge's and a simulated user's alike
    (docs/judges.md#what-a-reply-may-hold)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return None
        value = int(value)
    if isinstance(value, int) and 0 <= value <= _MOST_TOKENS:
        return value
    return None


__all__ = ["json_object_in", "token_count"]
