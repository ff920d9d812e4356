"""People's labels of a judge criterion (docs/judges.md#labelling): the sample and the file.

A labels file is JSON Lines. Its first line is the **sample line**, which says how the cases
were drawn: `{"sample": {"criterion": ..., "seed": ..., "n": ..., "suite": <digest of the
suite's case ids>, "cases": N}}`. Every other line is one case as the judge was shown it:
`{"case": ..., "digest": <digest of what was shown>, "label": "pass" | "fail" | null,
"shown": {...}}` (and `"trial"` with repeated trials). A label applies to a run exactly where
that run showed the same text (same case, same digest).

The sample is a uniform draw of `n` of the suite's case ids, fixed by the seed: the `n` ids
whose `sha256(seed, id)` is smallest — as random as a shuffle, the same on every machine and
Python version, and unchanged for a case that stays in the suite. Hand-picked labels would
bias the correction, so a label for a case the sample did not draw, a file without its sample
line, or a label other than pass or fail is a configuration error naming the line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from oloproof.digest import digest, sha256_text
from oloproof.errors import ConfigError
from oloproof.suite.json_lines import file_problem, not_utf8

LABELS = ("pass", "fail")


def suite_digest(case_ids: Iterable[str]) -> str:
    """The digest of the set of case ids a sample is drawn from."""
    return digest(sorted(case_ids))


def draw_sample(case_ids: Iterable[str], seed: int | str, n: int) -> list[str]:
    """The `n` case ids (all, if fewer) a seed draws, in the order drawn."""
    ranked = sorted(case_ids, key=lambda case_id: (sha256_text(f"{seed}\n{case_id}"), case_id))
    return ranked[:n]


@dataclass
class LabelRow:
    """One line of a labels file after the sample line."""

    line: int
    case: str
    digest: str
    label: str | None
    trial: int | None = None
    shown: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"case": self.case}
        if self.trial is not None:
            body["trial"] = self.trial
        body.update({"digest": self.digest, "label": self.label, "shown": self.shown})
        body.update(self.extra)
        return body


@dataclass
class LabelsFile:
    """A labels file read whole: its sample line and its rows."""

    path: Path
    sample: dict[str, Any]
    rows: list[LabelRow]

    @property
    def seed(self) -> int | str:
        seed: int | str = self.sample["seed"]
        return seed

    @property
    def n(self) -> int:
        return int(self.sample["n"])

    def labels(self) -> dict[tuple[str, str], bool]:
        """(case id, shown digest) -> passed, for the rows that carry a label."""
        return {(row.case, row.digest): row.label == "pass" for row in self.rows
                if row.label is not None}

    def text(self) -> str:
        """The file's text: the sample line, then each row."""
        lines = [json.dumps({"sample": self.sample}, ensure_ascii=False)]
        lines += [json.dumps(row.to_json(), ensure_ascii=False) for row in self.rows]
        return "\n".join(lines) + "\n"


_HOW = ("a labels file is written by `oloproof labels sample --criterion NAME -o FILE`: a "
        "sample line first, then one case per line with \"label\": \"pass\", \"fail\" or null")


def read_labels_file(path: Path) -> LabelsFile:
    """Read and check a labels file's shape (every problem a ConfigError naming the line). A
    path that is not a regular file is never opened: a FIFO would wait for a writer, a device
    (`/dev/zero`) never end."""
    problem = file_problem(path)
    if problem is not None:
        raise ConfigError(f"the labels file {problem}; {_HOW}", file=path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise not_utf8(path, "the labels file") from None
    except OSError as exc:
        raise ConfigError(f"cannot read the labels file: {exc.strerror}", file=path) from None
    sample: dict[str, Any] | None = None
    rows: list[LabelRow] = []
    seen: dict[tuple[str, str], LabelRow] = {}
    for number, raw in enumerate(text.splitlines(), 1):
        if not raw.strip():
            continue
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"not valid JSON at column {exc.colno}: {exc.msg}; {_HOW}",
                              file=path, line=number) from None
        if not isinstance(value, dict):
            raise ConfigError(f"each line is a JSON object; {_HOW}", file=path, line=number)
        if sample is None:
            sample = _sample_line(value, path, number)
            continue
        if "sample" in value:
            raise ConfigError("a second sample line: a labels file holds one sample (draw "
                              "another sample into another file)", file=path, line=number)
        row = _row(value, path, number)
        earlier = seen.get((row.case, row.digest))
        if earlier is not None and earlier.label is not None and row.label is not None \
                and earlier.label != row.label:
            raise ConfigError(
                f"case {row.case!r} is labelled {earlier.label!r} on line {earlier.line} and "
                f"{row.label!r} here for the same shown text; keep the label people agree on",
                file=path, line=number, case=row.case)
        if earlier is None or row.label is not None:
            seen[(row.case, row.digest)] = row
        rows.append(row)
    if sample is None:
        raise ConfigError(f"the labels file is empty: it has no sample line; {_HOW}",
                          file=path, line=1)
    return LabelsFile(path, sample, rows)


def _sample_line(value: dict[str, Any], path: Path, number: int) -> dict[str, Any]:
    sample = value.get("sample")
    if not isinstance(sample, dict):
        raise ConfigError(
            "the first line is not the sample line ({\"sample\": {\"seed\": …, \"n\": …, "
            "\"suite\": …}}), so nothing says how these cases were drawn — and hand-picked "
            f"labels would bias the correction; {_HOW}", file=path, line=number)
    seed, n, suite = sample.get("seed"), sample.get("n"), sample.get("suite")
    if isinstance(seed, bool) or not isinstance(seed, int | str):
        raise ConfigError("the sample line's seed must be a whole number or a string",
                          file=path, line=number)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ConfigError("the sample line's n must be a whole number of at least 1",
                          file=path, line=number)
    if not isinstance(suite, str):
        raise ConfigError("the sample line's suite must be the digest of the suite's case ids",
                          file=path, line=number)
    return sample


def _row(value: dict[str, Any], path: Path, number: int) -> LabelRow:
    case, shown_digest = value.get("case"), value.get("digest")
    if not isinstance(case, str):
        raise ConfigError(f"the row has no case id (\"case\": a string); {_HOW}", file=path,
                          line=number)
    if not isinstance(shown_digest, str):
        raise ConfigError(f"the row has no \"digest\" (of what the judge was shown); {_HOW}",
                          file=path, line=number, case=case)
    label = value.get("label")
    if label == "":
        label = None
    if label is not None and label not in LABELS:
        raise ConfigError(
            f"label {json.dumps(label)} is not a label; write \"pass\" if the case meets the "
            "rubric, \"fail\" if it does not, or null to leave it unlabelled",
            file=path, line=number, case=case)
    trial = value.get("trial")
    if trial is not None and (isinstance(trial, bool) or not isinstance(trial, int)
                              or trial < 1):
        raise ConfigError("the row's trial must be a whole number of at least 1", file=path,
                          line=number, case=case)
    extra = {k: v for k, v in value.items()
             if k not in ("case", "digest", "label", "trial", "shown")}
    return LabelRow(number, case, shown_digest, label, trial, value.get("shown"), extra)


@dataclass
class JudgeLabels:
    """What a run takes from a criterion's labels file: the sampled cases and the labels.

    `stale` says why the file does not apply to this suite (its cases were drawn from another
    set of cases), in which case nothing is used; `missing` that the file does not exist yet.
    """

    path: str
    sampled: list[str] = field(default_factory=list)
    labels: dict[tuple[str, str], bool] = field(default_factory=dict)
    seed: int | str | None = None
    stale: str | None = None
    missing: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "seed": self.seed, "sampled": self.sampled,
                "labels": [[case, shown, passed] for (case, shown), passed
                           in sorted(self.labels.items())],
                "stale": self.stale, "missing": self.missing}

    @classmethod
    def from_json(cls, body: dict[str, Any]) -> JudgeLabels:
        return cls(path=str(body.get("path", "")), sampled=list(body.get("sampled") or []),
                   labels={(str(c), str(d)): bool(p) for c, d, p in body.get("labels") or []},
                   seed=body.get("seed"), stale=body.get("stale"),
                   missing=bool(body.get("missing")))


def load_judge_labels(path: Path, shown_as: str, criterion: str,
                      case_ids: Sequence[str]) -> JudgeLabels:
    """The labels a run of a suite with these case ids uses for `criterion` (see
    `JudgeLabels`); a ConfigError for a file that is wrong (`read_labels_file`), names another
    criterion, or labels a case its sample did not draw."""
    if not path.exists():
        return JudgeLabels(shown_as, missing=True)
    labels_file = read_labels_file(path)
    named = labels_file.sample.get("criterion")
    if named is not None and named != criterion:
        raise ConfigError(f"this labels file is a sample of criterion {named!r}, and it is "
                          f"given as the labels of {criterion!r}", file=path, line=1)
    ids = list(case_ids)
    current = suite_digest(ids)
    if labels_file.sample["suite"] != current:
        return JudgeLabels(shown_as, seed=labels_file.seed, stale=(
            f"{shown_as} was sampled from another set of cases (the suite's cases changed "
            "since), so its sample is no longer a uniform draw of this suite; draw a new one "
            f"with `oloproof labels sample --criterion {criterion} --seed {labels_file.seed} "
            "-o FILE`"))
    sampled = draw_sample(ids, labels_file.seed, labels_file.n)
    drawn = set(sampled)
    for row in labels_file.rows:
        if row.case not in drawn:
            raise ConfigError(
                f"case {row.case!r} is not one the sample drew (seed {labels_file.seed!r}, "
                f"n {labels_file.n}): labels count only for the drawn cases, or the correction "
                "would be biased by which cases were picked; remove this line, or draw the "
                "sample again with `oloproof labels sample`", file=path, line=row.line,
                case=row.case)
    return JudgeLabels(shown_as, sampled, labels_file.labels(), labels_file.seed)
