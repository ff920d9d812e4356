"""Validity labels of metamorphic transforms
(docs/stateful-agents.md#the-same-request-changed-metamorphic-pairs).

A transform is *checked* when people's labels show it keeps each request's meaning: the exact
lower bound of the kept share, over every pair of the transform, reaches `minimum_validity`.
A label counts only if its digest is the pair's current one; an unlabelled pair counts as not
kept; several labels of one pair count as kept only if all say so.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, TextIO

from oloproof.errors import ConfigError
from oloproof.suite.config import TransformConfig
from oloproof.suite.json_lines import file_problem, not_utf8
from oloproof.suite.yaml_source import YamlDocument


def check_labels_files(
    transforms: Sequence[TransformConfig], base_dir: Path, doc: YamlDocument
) -> None:
    """Every `validity_labels` file exists and reads, before any call
    (docs/configuration.md#how-oloproof-fails-closed).

    A file that is not there is not "nobody has labelled yet": a mistyped path would quietly
    leave a transform unchecked, so it is a configuration error naming the suite's line.
    """
    for i, transform in enumerate(transforms):
        if transform.validity_labels is None:
            continue
        path = base_dir / transform.validity_labels
        problem = file_problem(path)
        if problem is not None:
            raise ConfigError(
                f"transform {transform.name!r}: validity_labels file "
                f"{transform.validity_labels!r} {problem} (looked for {path}; the path is "
                "relative to oloproof.yaml). Write it with `oloproof labels export --transform "
                f"{transform.name} -o {transform.validity_labels}` and label the pairs, or "
                "remove validity_labels (the transform then stays unchecked)",
                file=doc.path,
                line=doc.line_of(("metamorphic", "transforms", i, "validity_labels")),
            )
        read_labels(path)


def read_labels(path: Path) -> dict[tuple[str, str], list[bool | None]]:
    """(case id, digest) -> every `kept` value given for it; ConfigError if it cannot be read."""
    labels: dict[tuple[str, str], list[bool | None]] = {}
    problem = file_problem(path)  # (never opened otherwise: a FIFO or a device never ends)
    if problem is not None:
        raise ConfigError(f"the labels file {problem}; {_LABEL}", file=path)
    try:
        handle = path.open(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read the labels file: {exc.strerror}", file=path) from None
    with handle:
        for number, raw in _numbered_lines(handle, path):
            if not raw.strip():
                continue
            try:
                row = json.loads(raw.rstrip("\r\n"))
            except json.JSONDecodeError as exc:
                raise ConfigError(f"not valid JSON at column {exc.colno}: {exc.msg}; {_LABEL}",
                                  file=path, line=number) from None
            if not isinstance(row, dict):
                raise ConfigError(f"a label is a JSON object, not {_json_kind(row)}; {_LABEL}",
                                  file=path, line=number)
            for key in ("case", "digest"):
                if not isinstance(row.get(key), str):
                    got = "is missing" if key not in row else \
                        f"is {_json_kind(row[key])}, not a string"
                    raise ConfigError(f"the label's {key!r} {got}; {_LABEL}", file=path,
                                      line=number)
            kept = row.get("kept")
            if kept is not None and not isinstance(kept, bool):
                raise ConfigError(f"kept must be true, false or null (got {json.dumps(kept)}); "
                                  "write true if the copy keeps the request's meaning, false "
                                  "if not", file=path, line=number, case=row["case"])
            labels.setdefault((row["case"], row["digest"]), []).append(kept)
    return labels


_LABEL = ('each line is one label, {"case": ..., "digest": ..., "kept": true|false}, as '
          "`oloproof labels export` writes them")


def _json_kind(value: Any) -> str:
    """What a JSON value is, in words (`a list`, `the number 2`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"{json.dumps(value)}"
    if isinstance(value, int | float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return f"the string {value!r}"
    return "a list" if isinstance(value, list) else "an object"


def _numbered_lines(handle: TextIO, path: Path) -> Iterator[tuple[int, str]]:
    try:
        yield from enumerate(handle, 1)
    except UnicodeDecodeError:
        raise not_utf8(path, "the labels file") from None


def validity_bound(
    kept: int, pairs: int, minimum: float, level: float
) -> tuple[float | None, bool]:
    """(exact lower bound of the kept share, whether it reaches `minimum`) at `level`."""
    from oloproof.stats import rate_interval
    lower = rate_interval(kept, pairs, 0, level).lower if pairs else None
    return lower, lower is not None and lower >= minimum


def transform_validity(
    transforms: list[tuple[TransformConfig, str]], pairs: dict[str, dict[str, str]],
    base_dir: Path, level: float,
) -> list[dict[str, Any]]:
    """For each transform: pairs, kept, the exact lower bound, and whether it is checked."""
    results = []
    for transform, t_digest in transforms:
        current = pairs.get(transform.name, {})
        path = (base_dir / transform.validity_labels) if transform.validity_labels else None
        labels = read_labels(path) if path is not None else {}
        kept = 0
        stale = 0
        current_keys = set(current.items())
        for case_id, pair_digest in current.items():
            given = labels.get((case_id, pair_digest))
            if given and all(v is True for v in given):
                kept += 1
        for key in labels:
            if key not in current_keys:
                stale += 1
        n = len(current)
        lower, checked = validity_bound(kept, n, transform.minimum_validity, level)
        results.append({
            "transform": transform.name,
            "digest": t_digest,
            "pairs": n,
            "kept": kept,
            "lower": lower,
            "minimum_validity": transform.minimum_validity,
            "checked": checked,
            "labels": str(path) if path is not None else None,
            "stale_labels": stale,
        })
    return results
