"""`filled`: a text with its placeholders replaced in one pass, so no replacement's own text is
searched for the next placeholder (a value holding a placeholder's name stays as it is). What
the HTML report's page and a simulated user's instructions are made with."""

from __future__ import annotations

from collections.abc import Mapping


def filled(text: str, values: Mapping[str, str]) -> str:
    """`text` with each occurrence of each key of `values` replaced by its value, left to
    right in one pass.

    >>> filled("{a} and {b}", {"{a}": "{b}", "{b}": "B"})
    '{b} and B'
    """
    out: list[str] = []
    rest = text
    while rest:
        found = [(at, name) for name in values if (at := rest.find(name)) >= 0]
        if not found:
            out.append(rest)
            break
        at, name = min(found)
        out.append(rest[:at])
        out.append(values[name])
        rest = rest[at + len(name):]
    return "".join(out)
