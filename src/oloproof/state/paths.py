"""Places in a state: dotted config paths, display paths, and looking a path up.

**Display paths** name a place in a state as the case panel shows it: `orders["a.b"].status`,
`items[3]` (see `display_path`). **Config paths** — the `paths` of mode `paths` and of
`state_unchanged` — are dotted: `orders.ord-001.status` (see `parse_dotted`). A path that does
not exist has the value `ABSENT`.
"""

from __future__ import annotations

import enum
import json
import re
from collections.abc import Sequence
from typing import Any

ROOT_PATH = "<root>"
"""The display path of the whole state."""

PathKey = tuple[str | int, ...]
"""A path in a state: object keys and list positions."""

_SAFE_SEGMENT = re.compile(r'[^.\[\]"\\<>\s]+')
_INDEX = re.compile(r"0|[1-9][0-9]*")


class Absent(enum.Enum):
    """The type of `ABSENT`: the value of a path that does not exist."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "<absent>"

    def __str__(self) -> str:
        return "<absent>"


ABSENT = Absent.ABSENT
"""Stands for "this path does not exist" in a `PathCheck` (serialised as `{"$absent": true}`)."""


def parse_dotted(path: str) -> tuple[str, ...]:
    """The keys named by a dotted config path: `orders.ord-001.status` → 3 keys.

    A key containing a dot (or starting with a double quote) is written in double quotes:
    `orders."a.b".status`; inside quotes, `\\"` is a quote and `\\\\` a backslash. Without
    quotes a key containing a dot cannot be addressed. A key made of digits also indexes a list
    (`items.0`). Raises `ValueError` for an empty path, an empty key or an unclosed quote.
    """
    if not isinstance(path, str) or not path:
        raise ValueError(f"a state path is a non-empty dotted string, not {path!r}")
    keys: list[str] = []
    position = 0
    while True:
        if path[position] == '"':
            key, position = _read_quoted(path, position)
        else:
            end = path.find(".", position)
            end = len(path) if end < 0 else end
            key = path[position:end]
            if not key:
                raise ValueError(f"state path {path!r} has an empty key at character {end}")
            if '"' in key:
                raise ValueError(f'state path {path!r}: quote a whole key, as in a."b.c"')
            position = end
        keys.append(key)
        if position == len(path):
            return tuple(keys)
        if path[position] != ".":
            raise ValueError(f"state path {path!r}: expected '.' after a quoted key")
        position += 1
        if position == len(path):
            raise ValueError(f"state path {path!r} ends with a dot")


def _read_quoted(path: str, start: int) -> tuple[str, int]:
    """The key quoted at `path[start]` and the position after its closing quote."""
    chars: list[str] = []
    position = start + 1
    while position < len(path):
        char = path[position]
        if char == "\\" and position + 1 < len(path):
            chars.append(path[position + 1])
            position += 2
        elif char == '"':
            return "".join(chars), position + 1
        else:
            chars.append(char)
            position += 1
    raise ValueError(f"state path {path!r} has an unclosed quote at character {start}")


def display_path(path: Sequence[str | int]) -> str:
    """A path as the case panel shows it: `orders["a.b"].status`, `items[3]`, `<root>`.

    Keys are joined by dots; a key with a dot, bracket, quote, angle bracket or whitespace, or an
    empty key, is shown as `["..."]` (JSON-quoted); list positions are shown as `[3]`.
    """
    parts: list[str] = []
    for key in path:
        if isinstance(key, int):
            parts.append(f"[{key}]")
        elif _SAFE_SEGMENT.fullmatch(key):
            parts.append(f".{key}" if parts else key)
        else:
            parts.append(f"[{json.dumps(key, ensure_ascii=False)}]")
    return "".join(parts) if parts else ROOT_PATH


def resolve(state: Any, keys: Sequence[str]) -> tuple[Any, PathKey]:
    """The value at `keys` in `state` (or `ABSENT`) and the path with list positions as ints."""
    node = state
    path: list[str | int] = []
    for key in keys:
        if type(node) is dict:
            node = node.get(key, ABSENT)
            path.append(key)
        elif type(node) is list and _INDEX.fullmatch(key):
            index = int(key)
            node = node[index] if index < len(node) else ABSENT
            path.append(index)
        else:
            node = ABSENT
            path.append(key)
    return node, tuple(path)


def lookup(state: Any, path: PathKey) -> Any:
    """The value at an object path in `state`, or `ABSENT` (lists are not indexed)."""
    node = state
    for key in path:
        if type(node) is not dict:
            return ABSENT
        node = node.get(key, ABSENT)
        if node is ABSENT:
            return ABSENT
    return node


def parse_config_paths(paths: Sequence[str]) -> list[tuple[str, ...]]:
    """The config paths parsed, duplicates dropped; at least one is required."""
    if isinstance(paths, str) or not paths:
        raise ValueError("give `paths` as a non-empty list of dotted paths")
    return [parse_dotted(path) for path in dict.fromkeys(paths)]
