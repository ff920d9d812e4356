"""A subset of the suite's cases, chosen to iterate on (docs/cli.md#running-part-of-the-suite):
`--case ID` (repeatable), `-k PATTERN`, `--limit N`, `--sample N [--seed S]`.

`Selection` is what was asked for; `matches` is read on every case while the dataset is
scanned, and `choose` then takes the cases the run holds, in dataset order:

- `--case ID` names cases by id (a metamorphic copy's id, `SOURCE~transform`, names its
  source: a copy always runs with its source); an id the dataset does not hold is an error
  naming it;
- `-k PATTERN` keeps the cases whose id, or one of whose metadata *values* (at any depth;
  numbers and booleans as JSON writes them), holds PATTERN, ignoring case; metadata keys are
  not matched;
- given both, a case must be named by `--case` and match `-k`;
- `--limit N` keeps the first N of those, in dataset order; `--sample N` draws N of them,
  uniformly, fixed by `--seed` (default 0: the same N each time) — the draw of
  `oloproof labels sample` (`judge_labels.draw_sample`).

A selection that keeps no case is an error that says what was asked; one that keeps every
case is the whole suite, and the run is not a subset.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from oloproof.errors import UsageError
from oloproof.suite.case import Case
from oloproof.suite.judge_labels import draw_sample

#: The seed of `--sample` when none is given.
DEFAULT_SEED = 0


@dataclass(frozen=True)
class Selection:
    """What part of the suite a run was asked to hold (see the module's text)."""

    cases: tuple[str, ...] = ()
    pattern: str | None = None
    limit: int | None = None
    sample: int | None = None
    seed: int | str | None = None
    # A selection made by Oloproof rather than asked for (a rescored run's: the cases of the
    # run it scores): how it is named, and that an id the dataset lacks is left out, not an
    # error (the rescored run lists it).
    named_as: str | None = None
    missing_ok: bool = False

    @classmethod
    def of(cls, cases: Iterable[str] | None = None, pattern: str | None = None,
           limit: int | None = None, sample: int | None = None,
           seed: int | str | None = None) -> Selection | None:
        """The selection these options ask for, checked; None when they ask for none.

        Raises:
            UsageError: a count that is not a whole number from 1, an empty id or pattern,
                `--limit` with `--sample`, or `--seed` without `--sample`.
        """
        if isinstance(cases, str):
            cases = [cases]
        named = tuple(dict.fromkeys(cases or ()))
        for case_id in named:
            if not isinstance(case_id, str) or not case_id:
                raise UsageError(f"--case {case_id!r}: a case id is a non-empty string")
        if pattern is not None and (not isinstance(pattern, str) or not pattern):
            raise UsageError("-k needs a non-empty pattern (a part of a case id or of a "
                             "metadata value)")
        for name, value in (("--limit", limit), ("--sample", sample)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                      or value < 1):
                raise UsageError(f"{name} {value!r}: give a whole number of cases from 1")
        if limit is not None and sample is not None:
            raise UsageError("--limit and --sample both choose how many cases run: give one "
                             "(--limit N takes the first N, --sample N draws N)")
        if seed is not None and sample is None:
            raise UsageError("--seed fixes the draw of --sample; give --sample N with it")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int | str)):
            raise UsageError(f"--seed {seed!r}: a seed is a whole number or a string")
        if not named and pattern is None and limit is None and sample is None:
            return None
        return cls(named, pattern, limit, sample,
                   (seed if seed is not None else DEFAULT_SEED) if sample is not None else None)

    @cached_property
    def sources(self) -> frozenset[str]:
        """The ids `--case` names, a copy's id read as its source's."""
        return frozenset(case_id.split("~", 1)[0] for case_id in self.cases)

    def matches(self, case: Case) -> bool:
        """Whether `--case` and `-k` keep this (source) case."""
        if self.cases and case.id not in self.sources:
            return False
        if self.pattern is None:
            return True
        wanted = self.pattern.casefold()
        return wanted in case.id.casefold() or any(
            wanted in value.casefold() for value in _values(case.metadata))

    def choose(self, matched: Sequence[str], every: Sequence[str], where: str) -> list[str]:
        """The ids the run holds: `matched` (those `matches` kept, in dataset order) cut by
        `--limit` or `--sample`. `every` is the dataset's ids, `where` its file, for the
        errors.

        Raises:
            UsageError: `--case` names an id the dataset does not hold, or nothing is kept.
        """
        if self.cases and not self.missing_ok:
            known = set(every)
            absent = [case_id for case_id in self.cases if case_id.split("~", 1)[0] not in known]
            if absent:
                raise UsageError(
                    f"--case {absent[0]!r}: the dataset {where} has no case with that id"
                    + (f" (nor {', '.join(repr(a) for a in absent[1:4])})" if absent[1:] else "")
                    + "; `oloproof cases latest` lists the ids")
        if not matched and self.named_as is not None:
            raise UsageError(f"none of {self.named_as} is in the dataset {where} any more: "
                             "there is nothing to score")
        if not matched:
            raise UsageError(f"{self.words()} keeps no case of the dataset {where}: -k matches "
                             "a part of a case id or of a metadata value (not a key), "
                             "ignoring case")
        if self.limit is not None:
            return list(matched[:self.limit])
        if self.sample is not None:
            assert self.seed is not None
            drawn = set(draw_sample(matched, self.seed, self.sample))
            return [case_id for case_id in matched if case_id in drawn]
        return list(matched)

    def words(self) -> str:
        """The options, as they were given on the command line."""
        if self.named_as is not None:
            return self.named_as
        parts = [f"--case {case_id}" for case_id in self.cases]
        if self.pattern is not None:
            parts.append(f"-k {json.dumps(self.pattern, ensure_ascii=False)}")
        if self.limit is not None:
            parts.append(f"--limit {self.limit}")
        if self.sample is not None:
            parts.append(f"--sample {self.sample} --seed {self.seed}")
        return " ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """What a run stores of the selection (only the options given)."""
        out: dict[str, Any] = {}
        if self.named_as is not None:
            return out
        if self.cases:
            out["cases"] = list(self.cases)
        if self.pattern is not None:
            out["pattern"] = self.pattern
        if self.limit is not None:
            out["limit"] = self.limit
        if self.sample is not None:
            out["sample"] = self.sample
            out["seed"] = self.seed
        return out


def _values(value: Any) -> Iterable[str]:
    """Every scalar value inside a metadata object, as text (strings as they are, other
    scalars as JSON writes them); keys are not values."""
    if isinstance(value, dict):
        for item in value.values():
            yield from _values(item)
    elif isinstance(value, list):
        for item in value:
            yield from _values(item)
    elif isinstance(value, str):
        yield value
    elif value is not None:
        yield json.dumps(value)


__all__ = ["DEFAULT_SEED", "Selection"]
