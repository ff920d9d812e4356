"""Case-derived text made safe to display.

A case id, a system's output or a slice value is untrusted text. Characters that change how
the text around them *looks* without being seen — bidirectional controls (`trip-\u202egnp.exe`
shows as `trip-exe.png`), zero-width characters, line and paragraph separators (U+2028 and
U+2029 break a line where none is seen in the data), other control characters (a terminal
escape could recolour or erase the screen) — are shown as `\\uXXXX` in the terminal, so what
is printed is what is stored. The HTML report marks the same characters (see `report.js`).
"""

from __future__ import annotations

import re

#: Bidirectional controls: embeddings, overrides, isolates and the directional marks.
BIDI = "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"
#: Zero-width and invisible formatting characters.
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad"

#: Line and paragraph separators: a terminal or an editor breaks the line there, so one id
#: would show as two lines (and a forged second line could read as another row).
SEPARATORS = "\u2028\u2029"
#: Other invisible format characters: the Mongolian vowel separator, the deprecated format
#: controls (U+206A-U+206F) and the interlinear annotation marks.
OTHER_FORMAT = "\u180e\u206a-\u206f\ufff9-\ufffb"

#: Everything shown escaped: the above, and C0/C1 control characters other than tab and
#: newline (which the layouts handle; C1 holds U+0085, the next-line character). Only
#: characters of the Basic Multilingual Plane: the HTML report's script uses the same
#: pattern, where a character class holds UTF-16 units.
UNSAFE = re.compile("[" + BIDI + ZERO_WIDTH + SEPARATORS + OTHER_FORMAT
                    + "\x00-\x08\x0b-\x1f\x7f-\x9f" + "]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe(text: object) -> str:
    """`text` with every invisible or direction-changing character written as `\\uXXXX`."""
    value = text if isinstance(text, str) else str(text)
    return UNSAFE.sub(_escape, value) if UNSAFE.search(value) else value


def safe_line(text: object) -> str:
    """`safe(text)` on one line: newlines and tabs written as `\\n` and `\\t` too."""
    return safe(text).replace("\n", "\\n").replace("\t", "\\t")


_SHOWN = re.compile(r"\\u([0-9a-fA-F]{4})|\\n|\\t")


def unescape_shown(text: str) -> str:
    """The text `safe_line` would show as `text`: each `\\uXXXX`, `\\n` and `\\t` back to
    its character. So an id copied from the terminal finds its case (`inspect --case
    'a\\u2028b'`); a caller tries the text as given first, as an id may hold a backslash."""
    return _SHOWN.sub(lambda m: chr(int(m.group(1), 16)) if m.group(1)
                      else "\n" if m.group() == "\\n" else "\t", text)
