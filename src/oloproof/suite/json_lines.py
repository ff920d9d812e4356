"""Input files read strictly: a JSON value read as it is written, or refused with the reason.

A dataset line (docs/configuration.md#the-dataset-one-case-per-line) or a referenced state file
is read as `json.loads` reads it, except what it would read otherwise than written: a key given
twice in one object, or a value the store cannot keep as it is (`LineRefused`). Before a file is
opened, `file_problem` says whether it is a regular file at all; `not_utf8` names the first line
of a file that is not UTF-8 text. The YAML files, the labels and the judges' samples use the
last two as well.
"""

from __future__ import annotations

import json
import re
import stat
from pathlib import Path
from typing import Any

from pydantic_core import from_json, to_json

from oloproof.errors import ConfigError
from oloproof.storable import MAX_DEPTH, storable_problem


class LineRefused(ValueError):
    """A dataset line (or state file) `json.loads` reads, but not as the file says it: a key
    given twice in one object (JSON readers keep the last silently), or a value the store
    cannot keep as it is (see `oloproof.storable`). Its text follows the subject: `the line
    gives the key "id" twice …`, `initial_state file 'a.json' cannot be stored as written: …`."""


def _places(raw: str, key: str) -> str:
    """Where `key` is written as a key in `raw`: ` (at columns 2 and 26)` for a line, ` (on
    lines 3 and 9)` for a file; empty when it cannot tell."""
    spellings = {json.dumps(key), json.dumps(key, ensure_ascii=False)}
    pattern = "|".join(re.escape(s) for s in spellings)
    starts = [m.start() for m in re.finditer(f"(?:{pattern})\\s*:", raw)]
    if len(starts) < 2:
        return ""
    if "\n" in raw.rstrip("\n"):
        noun, places = "on lines", [raw.count("\n", 0, at) + 1 for at in starts]
    else:
        noun, places = "at columns", [at + 1 for at in starts]
    return f" ({noun} " + ", ".join(map(str, places[:-1])) + f" and {places[-1]})"


def _strict_loads(raw: str) -> Any:
    """`json.loads`, refusing a key given twice in one object and nesting past the recursion
    limit (LineRefused); its other errors as they are."""

    def no_key_twice(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        obj = dict(pairs)
        if len(obj) != len(pairs):
            keys = [k for k, _ in pairs]
            key = next(k for i, k in enumerate(keys) if k in keys[:i])
            raise LineRefused(f"gives the key {json.dumps(key, ensure_ascii=False)} twice in one "
                              f"object{_places(raw, key)}; JSON readers would keep only the last "
                              "one, so the other would be lost without a word: remove one")
        return obj

    try:
        return json.loads(raw, object_pairs_hook=no_key_twice)
    except RecursionError:
        raise LineRefused(f"cannot be stored as written: it nests deeper than the {MAX_DEPTH} "
                          "levels of arrays and objects the store keeps; flatten it") from None


def read_json_line(raw: str) -> Any:
    """A dataset line's JSON value, as `json.loads` reads it, or LineRefused for a line it would
    read otherwise than written: a key given twice in one object, or a value the store cannot
    keep (nesting deeper than it keeps, a lone surrogate escape, a number too large for a
    float, which reads as infinity).

    pydantic-core's parser reads a line in about two thirds of the time and gives the same
    value (key order included) for every line it accepts; any line it refuses (a lone
    surrogate escape, a nesting deeper than its limit, NaN, and every line that is not JSON) is
    read by `json.loads` instead, so what is accepted and each syntax error are json's.

    What the fast parser accepts is storable (its depth limit is below the store's), but like
    json it keeps the last of two equal keys. Every key is written with one colon, and every
    colon in a string stays one when written again: so a line whose value, written back, has
    as many colons as the line (and that spells no colon as an escape, `\\u003a`) has lost no
    key. Any other line is read again, strictly."""
    try:
        value = from_json(raw, allow_inf_nan=False)
    except ValueError:
        value = _strict_loads(raw)
        problem = storable_problem(value)
        if problem is not None:
            raise LineRefused(f"cannot be stored as written: {problem}") from None
        return value
    written = to_json(value, inf_nan_mode="constants")
    if written.count(b":") == raw.count(":") and b"Infinity" not in written \
            and "\\u003" not in raw:
        return value
    value = _strict_loads(raw)  # a key given twice raises here
    problem = storable_problem(value)  # a number that overflowed to infinity
    if problem is not None:
        raise LineRefused(f"cannot be stored as written: {problem}")
    return value


#: What `file_problem` says of a path where nothing is.
NO_FILE = "does not exist"


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as an input file, in words that follow its name (`does not
    exist`, `is a directory`, `is a character device, not a regular file`); None for a regular
    file or a link to one. Asked before opening: reading a device (`/dev/zero`) or a FIFO
    would never end."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return NO_FILE
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    if stat.S_ISREG(mode):
        return None
    if stat.S_ISDIR(mode):
        return "is a directory"
    kind = ("a character device" if stat.S_ISCHR(mode) else "a block device"
            if stat.S_ISBLK(mode) else "a named pipe (FIFO)" if stat.S_ISFIFO(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a file")
    return f"is {kind}, not a regular file"


def not_utf8(path: Path, subject: str) -> ConfigError:
    """The error for a file that is not UTF-8 text, at its first line that does not decode:
    the line, the byte and why (`subject` names the file in words: `the dataset`)."""
    try:
        with path.open("rb") as handle:
            for number, raw in enumerate(handle, 1):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    return ConfigError(
                        f"{subject} is not UTF-8 text: byte {exc.start + 1} of this line "
                        f"(0x{raw[exc.start]:02x}) is not part of a UTF-8 character "
                        f"({exc.reason}); save {subject} as UTF-8",
                        file=path, line=number)
    except OSError as exc:
        return ConfigError(f"cannot read {subject}: {exc.strerror or exc}", file=path)
    return ConfigError(f"{subject} is not UTF-8 text; save it as UTF-8", file=path)
