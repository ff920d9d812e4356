"""Cases: one JSON object per line of the dataset
(docs/configuration.md#the-dataset-one-case-per-line).

`scan_dataset` validates every line, so a broken line anywhere stops the run before any
system call; `iter_cases` then gives the cases for execution, with their digests. A dataset of
up to `KEEP_BYTES` is parsed once: the scan keeps its cases and `iter_cases` hands them out
(once). A larger one, or one with `$ref` states, is read again instead, streamed, so a suite of
200,000 cases is never held in memory whole.
"""

from __future__ import annotations

import json
import re
import stat
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic_core import from_json, to_json

from oloproof.digest import ObjectText, canonical_json, digest, sha256_text
from oloproof.errors import ConfigError
from oloproof.storable import MAX_DEPTH, storable_problem

CASE_FIELDS = ("id", "input", "expected", "initial_state", "metadata", "cluster")
_LIST_FIELDS = {"tools": "no_declared_tools", "route": "no_declared_route"}
#: The largest dataset file whose scanned cases are kept for the run instead of read again.
KEEP_BYTES = 8 * 1024 * 1024


class Case:
    """One case of the suite, source or derived (a metamorphic copy)."""

    __slots__ = (
        "cluster",
        "digest",
        "exec_digest",
        "expected",
        "id",
        "initial_state",
        "input",
        "line",
        "metadata",
        "pair_digest",
        "raw",
        "source_id",
        "state_ref",
        "transform",
    )

    def __init__(
        self,
        id: str,
        line: int,
        input: dict[str, Any],
        expected: dict[str, Any],
        initial_state: dict[str, Any] | None,
        state_ref: str | None,
        metadata: dict[str, Any],
        cluster: str | None,
        digest: str,
        exec_digest: str,
        source_id: str | None = None,
        transform: str | None = None,
        pair_digest: str | None = None,
    ) -> None:
        self.id = id
        self.line = line
        self.input = input
        self.expected = expected
        self.initial_state = initial_state
        self.state_ref = state_ref  # digest of the referenced state file's content, if $ref
        self.metadata = metadata
        self.cluster = cluster
        self.digest = digest
        self.exec_digest = exec_digest
        self.source_id = source_id
        self.transform = transform
        self.pair_digest = pair_digest
        self.raw: str | None = None  # the dataset line, stored as is when it can be

    @property
    def is_derived(self) -> bool:
        return self.source_id is not None

    def stored_text(self) -> str | None:
        """The dataset line itself, when it is exactly what the store should keep."""
        if self.raw is not None and self.state_ref is None and self.source_id is None:
            return self.raw.strip()
        return None

    def stored_form(self) -> dict[str, Any]:
        """What the store keeps of the case (a referenced state is kept by its digest)."""
        form: dict[str, Any] = {"id": self.id, "input": self.input}
        if self.expected:
            form["expected"] = self.expected
        if self.state_ref is not None:
            form["initial_state"] = {"$state": self.state_ref}
        elif self.initial_state is not None:
            form["initial_state"] = self.initial_state
        if self.metadata:
            form["metadata"] = self.metadata
        if self.cluster is not None:
            form["cluster"] = self.cluster
        if self.source_id is not None:
            form["source"] = self.source_id
            form["transform"] = self.transform
            form["pair_digest"] = self.pair_digest
        return form


def file_problem(path: Path) -> str | None:
    """Why `path` cannot be read as an input file, in words that follow its name (`does not
    exist`, `is a directory`, `is a character device, not a regular file`); None for a regular
    file or a link to one. Asked before opening: reading a device (`/dev/zero`) or a FIFO
    would never end."""
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        return "does not exist"
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


class StateFiles:
    """Referenced initial states: each file read and digested once per run.

    `base` is the folder paths are relative to (the dataset's); `root`, when given, the folder
    every referenced file must be inside once links are followed (the project's), so a case
    can never read, store and show a file from elsewhere (`../../etc/passwd`, `/etc/hosts`)."""

    def __init__(self, base: Path, root: Path | None = None) -> None:
        self.base = base
        self.root = root.resolve() if root is not None else None
        self._by_path: dict[Path, tuple[str, dict[str, Any]]] = {}
        self.by_digest: dict[str, dict[str, Any]] = {}

    def resolve(self, ref: str, *, file: Path, line: int, case: str) -> tuple[str, dict[str, Any]]:
        path = (self.base / ref).resolve()
        found = self._by_path.get(path)
        if found is None:
            if self.root is not None and not path.is_relative_to(self.root):
                raise ConfigError(
                    f"initial_state refers to {ref!r}, which is {path}, outside the project "
                    f"folder {self.root}; a state file must be inside the project (paths are "
                    "relative to the dataset file)",
                    file=file, line=line, case=case,
                )
            problem = file_problem(path)
            if problem is not None:
                raise ConfigError(
                    f"initial_state refers to {ref!r}, which {problem} (paths are relative "
                    "to the dataset file)",
                    file=file, line=line, case=case,
                )
            try:
                state = read_json_line(path.read_text(encoding="utf-8"))
            except LineRefused as exc:
                raise ConfigError(f"initial_state file {ref!r} {exc}", file=file, line=line,
                                  case=case) from None
            except FileNotFoundError:
                raise ConfigError(
                    f"initial_state refers to {ref!r}, which does not exist (paths are relative "
                    "to the dataset file)",
                    file=file, line=line, case=case,
                ) from None
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    f"initial_state file {ref!r} is not readable JSON: {exc}",
                    file=file, line=line, case=case,
                ) from None
            if not isinstance(state, dict):
                raise ConfigError(
                    f"initial_state file {ref!r} must hold a JSON object",
                    file=file, line=line, case=case,
                )
            found = (digest(state), state)
            self._by_path[path] = found
            self.by_digest[found[0]] = state
        return found


@dataclass
class DatasetIndex:
    """What the validating pass keeps: enough to plan (and a small dataset's cases)."""

    path: Path
    ids: list[str]
    size: int
    mtime_ns: int
    clustered: bool = False  # some case names a `cluster`
    # Of the case paths the scan was asked to look for (`input.message`, …), those some case
    # has.
    found_paths: frozenset[str] = frozenset()
    # How many cases hold each key of `expected` (an evaluator that excludes most cases for a
    # key they lack is pointed at a key of a similar name they have).
    expected_keys: dict[str, int] = field(default_factory=dict)
    # The scanned cases (without digests) of a small dataset, for `iter_cases` to hand out
    # once instead of reading the file again; None once handed out or when not kept.
    kept: list[Case] | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.ids)


def _tool_entry_problem(entry: Any) -> str | None:
    """Why an `expected.tools` object entry is not `{"name": str, "arguments": {...}}`."""
    if not isinstance(entry, dict):
        return "not a name or an object"
    unknown = sorted(set(entry) - {"name", "arguments"})
    if unknown:
        return f"unknown key {unknown[0]!r} (an entry has name and arguments)"
    if not isinstance(entry.get("name"), str) or not entry["name"]:
        return "the entry has no name (a non-empty string)"
    if "arguments" in entry and not isinstance(entry["arguments"], dict):
        return "arguments must be an object"
    return None


def _first_wrong_entry(key: str, entries: list[Any]) -> Any:
    """The first entry of `expected.<key>` that is not a string (for `tools`, nor a name and
    arguments object), or None."""
    for entry in entries:
        if not isinstance(entry, str) and (key != "tools" or
                                           _tool_entry_problem(entry) is not None):
            return entry
    return None


def _problem(message: str, path: Path, line: int, case: str | None = None) -> ConfigError:
    return ConfigError(message, file=path, line=line, case=case)


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


def parse_case(
    raw: str, line: int, path: Path, states: StateFiles, *, digests: bool = True
) -> Case:
    """Validate one dataset line and build its Case (with its digests unless `digests=False`:
    the validating pass needs none, the streaming pass computes them)."""
    try:
        obj = read_json_line(raw)
    except LineRefused as exc:
        raise _problem(f"the line {exc}", path, line) from None
    except json.JSONDecodeError as exc:
        where = f"column {exc.colno}" if exc.lineno == 1 else "the end of the line"
        raise _problem(
            f"not valid JSON at {where}: {exc.msg}; each line must be one complete JSON object",
            path, line,
        ) from None
    except ValueError as exc:
        raise _problem(f"not valid JSON: {exc}", path, line) from None
    if not isinstance(obj, dict):
        raise _problem("each line must be a JSON object with at least id and input", path, line)
    case_id = obj.get("id")
    if "id" not in obj:
        raise _problem('the case has no "id" (a non-empty string is required)', path, line)
    if not isinstance(case_id, str):
        hint = f' (write "id": "{case_id}")' if isinstance(case_id, int | float) and \
            not isinstance(case_id, bool) else ""
        raise _problem(f"the case id must be a string, not {json.dumps(case_id)}{hint}",
                       path, line)
    if not case_id:
        raise _problem("the case id is empty; give each case a non-empty string id", path, line)
    if "~" in case_id:
        raise _problem("case ids may not contain '~' (it marks metamorphic copies)", path, line,
                       case_id)
    unknown = [k for k in obj if k not in CASE_FIELDS]
    if unknown:
        raise _problem(
            f"unknown case field {unknown[0]!r}; accepted fields: {', '.join(CASE_FIELDS)} "
            "(put free-form data under metadata)",
            path, line, case_id,
        )
    case_input = obj.get("input")
    if not isinstance(case_input, dict):
        what = "has no input" if case_input is None else "has an input that is not an object"
        raise _problem(f"the case {what}; input must be a JSON object", path, line, case_id)
    expected = obj.get("expected")
    if expected is None:
        expected = {}
    elif not isinstance(expected, dict):
        raise _problem("expected must be a JSON object", path, line, case_id)
    for key in _LIST_FIELDS:
        if key in expected:
            value = expected[key]
            wrong = _first_wrong_entry(key, value) if isinstance(value, list) else value
            if not isinstance(value, list) or wrong is not None:
                detail = _tool_entry_problem(wrong) if key == "tools" and isinstance(
                    wrong, dict) else None
                form = ('strings (tool names) or {"name": ..., "arguments": {...}} objects'
                        if key == "tools" else "strings")
                raise _problem(
                    f"expected.{key} must be a list of {form} (got {json.dumps(wrong)}"
                    + (f": {detail}" if detail else "") + "); use [] for 'none at all' and "
                    "leave it out when it does not apply",
                    path, line, case_id,
                )
    metadata = obj.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        raise _problem("metadata must be a JSON object", path, line, case_id)
    cluster = obj.get("cluster")
    if cluster is not None and not isinstance(cluster, str):
        raise _problem("cluster must be a string", path, line, case_id)
    raw_state = obj.get("initial_state")
    state_ref: str | None = None
    state: dict[str, Any] | None
    if raw_state is None:
        state = None
    elif isinstance(raw_state, dict) and "$ref" in raw_state:
        ref = raw_state["$ref"]
        if set(raw_state) != {"$ref"} or not isinstance(ref, str):
            raise _problem('a state reference is {"$ref": "path/to/state.json"}', path, line,
                           case_id)
        state_ref, state = states.resolve(ref, file=path, line=line, case=case_id)
    elif isinstance(raw_state, dict):
        state = raw_state
    else:
        raise _problem("initial_state must be an object or {\"$ref\": ...}", path, line, case_id)
    case = Case(case_id, line, case_input, expected, state, state_ref, metadata, cluster,
                "", "")
    if digests:
        _add_digests(case, path)
    return case


# The object a case digest is of (docs/concepts.md#digests-and-keys), its keys in canonical order.
_CASE_TEXT = ObjectText("expected", "initial_state", "input", "metadata")


def _add_digests(case: Case, path: Path) -> None:
    """Fill in a parsed case's digests (docs/concepts.md#digests-and-keys).

    The case digest is of the canonical JSON of {expected, initial_state, input, metadata} (a
    referenced state as {"$state": digest}), made in one go; the execution digest is of the
    input's and the state's canonical texts."""
    state: Any = case.initial_state if case.state_ref is None else {"$state": case.state_ref}
    try:
        # (the input's and the state's texts are written once, for both digests)
        input_text = canonical_json(case.input)
        state_text = canonical_json(state)
        whole = _CASE_TEXT(canonical_json(case.expected), state_text, input_text,
                           canonical_json(case.metadata))
    except ValueError as exc:
        raise _problem(f"not representable as JSON: {exc}", path, case.line, case.id) from None
    case.digest = sha256_text(whole)
    case.exec_digest = sha256_text(input_text + "\x1f" + state_text)


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    with path.open("r", encoding="utf-8") as handle:
        for number, raw in enumerate(handle, 1):
            if raw.strip():
                yield number, raw


def scan_dataset(
    path: Path, states: StateFiles, text_fields: Sequence[tuple[str, str]] = (),
    paths: Sequence[str] = (),
) -> DatasetIndex:
    """Validate every line of the dataset; keep ids (and the cases of a dataset of up to
    `KEEP_BYTES` without `$ref` states). Raises ConfigError on any problem.

    `text_fields` are (transform name, input field) pairs: every case must have that field as
    text, so a transform cannot fail half-way through a run. `paths` are dotted case paths
    (`input.message`, `expected.answer`, `metadata.surface`); those some case has are
    `found_paths` of the index.
    """
    looking = {p: p.split(".") for p in paths}
    found: set[str] = set()
    problem = file_problem(path)
    if problem is not None:
        raise ConfigError(
            f"the dataset {problem}; `dataset:` in oloproof.yaml names a JSON Lines file, "
            "relative to that file",
            file=path,
        )
    first_line: dict[str, int] = {}
    ids: list[str] = []
    clustered = False
    # Cases counted by the keys of their `expected`, in order (one dictionary update a case:
    # a dataset has few such shapes), spread over the keys at the end.
    shapes: dict[tuple[str, ...], int] = {}
    kept: list[Case] | None = [] if path.stat().st_size <= KEEP_BYTES else None
    try:
        for number, raw in _lines(path):
            case = parse_case(raw, number, path, states, digests=False)
            if kept is not None:
                if case.state_ref is None:
                    case.raw = raw
                    kept.append(case)
                else:  # referenced states can be large: not held for the whole run
                    kept = None
            for transform, field in text_fields:
                if not isinstance(case.input.get(field), str):
                    raise _problem(
                        f"transform {transform!r} changes input.{field}, which this case does "
                        "not have as text; give every case that field or change the transform",
                        path, number, case.id,
                    )
            seen = first_line.get(case.id)
            if seen is not None:
                raise _problem(
                    f"duplicate case id {case.id!r}: first on line {seen}, again on line "
                    f"{number}; ids must be unique",
                    path, number, case.id,
                )
            first_line[case.id] = number
            if looking:
                for wanted, parts in list(looking.items()):
                    if _has_path(case, parts):
                        found.add(wanted)
                        del looking[wanted]
            ids.append(case.id)
            clustered = clustered or case.cluster is not None
            shape = tuple(case.expected)
            shapes[shape] = shapes.get(shape, 0) + 1
    except UnicodeDecodeError:
        raise not_utf8(path, "the dataset") from None
    if not ids:
        raise ConfigError("the dataset has no cases", file=path)
    expected_keys: Counter[str] = Counter()
    for shape, count in shapes.items():
        for key in shape:
            expected_keys[key] += count
    stat = path.stat()
    return DatasetIndex(path=path, ids=ids, size=stat.st_size, mtime_ns=stat.st_mtime_ns,
                        clustered=clustered, expected_keys=dict(sorted(expected_keys.items())),
                        kept=kept, found_paths=frozenset(found))


class _Absent:
    """What `value_at` finds where a path leads nowhere."""


ABSENT: Any = _Absent()


def value_at(value: Any, parts: Sequence[str]) -> Any:
    """The value at a path of keys (a number indexes a list) under `value`, or `ABSENT`."""
    for part in parts:
        if isinstance(value, dict) and part in value:
            value = value[part]
        elif isinstance(value, list) and part.isdigit() and int(part) < len(value):
            value = value[int(part)]
        else:
            return ABSENT
    return value


def _has_path(case: Case, parts: list[str]) -> bool:
    """Whether the case has the dotted path (`input`, `expected` or `metadata` first)."""
    root = {"input": case.input, "expected": case.expected, "metadata": case.metadata}
    value = value_at(root.get(parts[0]), parts[1:])
    return value is not ABSENT and value is not None


def iter_cases(index: DatasetIndex, states: StateFiles) -> Iterator[Case]:
    """Stream the validated cases again, in file order."""
    stat = index.path.stat()
    if (stat.st_size, stat.st_mtime_ns) != (index.size, index.mtime_ns):
        raise ConfigError(
            "the dataset changed while the run was starting; run again", file=index.path
        )
    kept, index.kept = index.kept, None
    if kept is not None:
        kept.reverse()  # handed out from the end, so each is let go of once yielded
        while kept:
            case = kept.pop()
            _add_digests(case, index.path)
            yield case
        return
    for number, raw in _lines(index.path):
        case = parse_case(raw, number, index.path, states)
        case.raw = raw
        yield case
