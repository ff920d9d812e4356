"""Case-derived text made safe to display (issue 10 §1).

A case id, a system's output or a slice value is untrusted text. Characters that change how
the text around them *looks* without being seen — bidirectional controls (`trip-\u202egnp.exe`
shows as `trip-exe.png`), zero-width characters, other control characters (a terminal escape
could recolour or erase the screen) — are shown as `\\uXXXX` in the terminal, so what is printed
is what is stored. The HTML report marks the same characters (see `report.js`).
"""

from __future__ import annotations

import re

#: Bidirectional controls: embeddings, overrides, isolates and the directional marks.
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
#: Zero-width and invisible formatting characters.
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad"

#: Everything shown escaped: the above, and C0/C1 control characters other than tab and
#: newline (which the layouts handle).
UNSAFE = re.compile("[" + BIDI + ZERO_WIDTH + "\x00-\x08\x0b-\x1f\x7f-\x9f" + "]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe(text: object) -> str:
    """`text` with every invisible or direction-changing character written as `\\uXXXX`."""
    value = text if isinstance(text, str) else str(text)
    return UNSAFE.sub(_escape, value) if UNSAFE.search(value) else value


def safe_line(text: object) -> str:
    """`safe(text)` on one line: newlines and tabs written as `\\n` and `\\t` too."""
    return safe(text).replace("\n", "\\n").replace("\t", "\\t")
