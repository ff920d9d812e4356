"""The dataset: one JSON object per line, each a case
(docs/configuration.md#the-dataset-one-case-per-line).

`scan_dataset` validates every line, so a broken line anywhere stops the run before any
system call; `iter_cases` then gives the cases for execution, with their digests. A dataset of
up to `KEEP_BYTES` is parsed once: the scan keeps its cases and `iter_cases` hands them out
(once). A larger one, or one with `$ref` states, is read again instead, streamed, so a suite of
200,000 cases is never held in memory whole. A line is read by `suite/json_lines.py`, a
referenced state by `suite/state_files.py`, into a `Case` (`suite/case.py`).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oloproof.digest import ObjectText, canonical_json, sha256_text
from oloproof.errors import ConfigError
from oloproof.suite.case import Case, has_path
from oloproof.suite.json_lines import LineRefused, file_problem, not_utf8, read_json_line
from oloproof.suite.state_files import StateFiles
from oloproof.suite.subset import Selection

CASE_FIELDS = ("id", "input", "expected", "initial_state", "metadata", "cluster")
_LIST_FIELDS = {"tools": "no_declared_tools", "route": "no_declared_route"}
#: The largest dataset file whose scanned cases are kept for the run instead of read again.
KEEP_BYTES = 8 * 1024 * 1024


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
    # A subset run's cases (docs/cli.md#running-part-of-the-suite): the ids the selection kept,
    # in dataset order, and what was asked; None for the whole suite. `ids` stays every id
    # (a labels sample is drawn from them).
    chosen: list[str] | None = None
    selection: Selection | None = None

    def __len__(self) -> int:
        return len(self.ids)

    @property
    def run_ids(self) -> list[str]:
        """The ids of the cases the run holds: the subset's, or every id."""
        return self.ids if self.chosen is None else self.chosen

    def subset(self) -> dict[str, Any] | None:
        """What a subset run stores of its selection (`cases` of `of` source cases, and the
        options given); None for the whole suite."""
        if self.chosen is None or self.selection is None:
            return None
        return {"cases": len(self.chosen), "of": len(self.ids),
                "selection": self.selection.to_json(), "words": self.selection.words()}


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
    paths: Sequence[str] = (), selection: Selection | None = None,
) -> DatasetIndex:
    """Validate every line of the dataset; keep ids (and the cases of a dataset of up to
    `KEEP_BYTES` without `$ref` states). Raises ConfigError on any problem.

    `text_fields` are (transform name, input field) pairs: every case must have that field as
    text, so a transform cannot fail half-way through a run. `paths` are dotted case paths
    (`input.message`, `expected.answer`, `metadata.surface`); those some case has are
    `found_paths` of the index. `selection` (a subset run's) keeps the cases it chooses:
    `chosen` of the index, or None when it keeps them all.
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
    matched: list[str] = []
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
                    if has_path(case, parts):
                        found.add(wanted)
                        del looking[wanted]
            ids.append(case.id)
            if selection is not None and selection.matches(case):
                matched.append(case.id)
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
    chosen = None if selection is None else selection.choose(matched, ids, str(path))
    if chosen is not None and len(chosen) == len(ids):
        chosen = None  # every case: the whole suite, not a subset
    stat = path.stat()
    return DatasetIndex(path=path, ids=ids, size=stat.st_size, mtime_ns=stat.st_mtime_ns,
                        clustered=clustered, expected_keys=dict(sorted(expected_keys.items())),
                        kept=kept, found_paths=frozenset(found), chosen=chosen,
                        selection=selection if chosen is not None else None)


def iter_cases(index: DatasetIndex, states: StateFiles) -> Iterator[Case]:
    """Stream the validated cases again, in file order (a subset run's only)."""
    stat = index.path.stat()
    if (stat.st_size, stat.st_mtime_ns) != (index.size, index.mtime_ns):
        raise ConfigError(
            "the dataset changed while the run was starting; run again", file=index.path
        )
    only = frozenset(index.chosen) if index.chosen is not None else None
    kept, index.kept = index.kept, None
    if kept is not None:
        kept.reverse()  # handed out from the end, so each is let go of once yielded
        while kept:
            case = kept.pop()
            if only is not None and case.id not in only:
                continue
            _add_digests(case, index.path)
            yield case
        return
    for number, raw in _lines(index.path):
        if only is not None:
            case = parse_case(raw, number, index.path, states, digests=False)
            if case.id not in only:
                continue
            _add_digests(case, index.path)
        else:
            case = parse_case(raw, number, index.path, states)
        case.raw = raw
        yield case
