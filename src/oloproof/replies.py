"""The JSON object a model's reply holds: what a judge's verdict (docs/judges.md) and a
simulated user's turn (docs/conversations.md#what-a-simulator-answers) are read from."""

from __future__ import annotations

import json
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


__all__ = ["json_object_in"]
