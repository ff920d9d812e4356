"""The variants matrix of `system.variants` (docs/board.md): every combination a candidate.

A suite's `system.variants` maps each plain name (`model`, `prompt`) to a non-empty list of
distinct values (text, numbers or true/false, each written without `,` or `=`); the candidates
are every combination, the first key varying slowest, in the file's order. A combination is
written `model=large,prompt=v2` — its keys in the file's order, each value as its text —, the
text the store keeps in `runs.variant`, a run reference names after `variant:` and `--variant`
takes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import AfterValidator, Field

from oloproof.suite.validation import PLAIN_NAME, suggestion

#: The most combinations a suite may ask for (each a whole run of the suite).
MAX_COMBINATIONS = 256

VariantValue = bool | int | float | str


def value_text(value: VariantValue) -> str:
    """A value as the variant's text writes it: `true`/`false`, numbers and text as written.

    >>> from oloproof.suite.variants import value_text
    >>> value_text(True), value_text(2), value_text(0.5), value_text("large")
    ('true', '2', '0.5', 'large')
    """
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _values(values: tuple[Any, ...]) -> tuple[VariantValue, ...]:
    for value in values:
        if not isinstance(value, bool | int | float | str) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise ValueError(f"{value!r} cannot name a variant: a value is a text, a number or "
                             "true/false")
    texts = [value_text(v) for v in values]
    for text in texts:
        if not text.strip() or "," in text or "=" in text:
            raise ValueError(f"{text!r} cannot name a variant: a value is written without "
                             "`,` or `=`, and is not empty")
        if texts.count(text) > 1:
            raise ValueError(f"{text!r} is listed twice; list each value once")
    return values


VariantValues = Annotated[tuple[Any, ...], Field(min_length=1),
                          AfterValidator(_values)]
VariantKey = Annotated[str, Field(pattern=PLAIN_NAME)]
#: `system.variants`, as the suite file's model takes it.
VariantsMatrix = dict[VariantKey, VariantValues]


def check_matrix(matrix: Mapping[str, tuple[VariantValue, ...]]) -> None:
    """Refuse a matrix of more than `MAX_COMBINATIONS` combinations (ValueError)."""
    total = 1
    for values in matrix.values():
        total *= len(values)
    if total > MAX_COMBINATIONS:
        raise ValueError(f"{total} combinations of variants; at most {MAX_COMBINATIONS} "
                         "(each is a whole run of the suite): list fewer values")


def combinations(matrix: Mapping[str, tuple[VariantValue, ...]]
                 ) -> list[dict[str, VariantValue]]:
    """Every combination, the first key varying slowest; `[]` for no matrix.

    >>> from oloproof.suite.variants import combinations, variant_text
    >>> [variant_text(c) for c in combinations({"model": ("small", "large"), "k": (1, 2)})]
    ['model=small,k=1', 'model=small,k=2', 'model=large,k=1', 'model=large,k=2']
    """
    if not matrix:
        return []
    keys = list(matrix)
    return [dict(zip(keys, chosen, strict=True))
            for chosen in itertools.product(*(matrix[k] for k in keys))]


def variant_text(combination: Mapping[str, VariantValue]) -> str:
    """`k=v,…`, the keys in the combination's order."""
    return ",".join(f"{k}={value_text(v)}" for k, v in combination.items())


def find_variant(text: str, matrix: Mapping[str, tuple[VariantValue, ...]]
                 ) -> dict[str, VariantValue]:
    """The combination `text` (`k=v,…`, keys in any order, every key given) names, as
    `combinations` gives it.

    Raises:
        ValueError: the suite has no variants; a part that is not `k=v`; a key given twice,
            missing or unknown; a value the matrix does not list (with the closest one).

    >>> from oloproof.suite.variants import find_variant
    >>> find_variant("prompt=v2,model=large", {"model": ("small", "large"), "prompt": ("v1", "v2")})
    {'model': 'large', 'prompt': 'v2'}
    """
    if not matrix:
        raise ValueError("this suite has no system.variants; a variant names one of them")
    given: dict[str, str] = {}
    for part in text.split(","):
        key, sep, value = part.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ValueError(f"{part!r} is not key=value; write a variant as "
                             f"{variant_text(combinations(matrix)[0])}")
        if key in given:
            raise ValueError(f"{key} is given twice in {text!r}")
        if key not in matrix:
            raise ValueError(f"{key!r} is not a key of system.variants"
                             f"{suggestion(key, list(matrix))} (keys: {', '.join(matrix)})")
        given[key] = value
    missing = [k for k in matrix if k not in given]
    if missing:
        raise ValueError(f"{text!r} does not give {', '.join(missing)}; a variant gives every "
                         f"key of system.variants ({', '.join(matrix)})")
    chosen: dict[str, VariantValue] = {}
    for key, values in matrix.items():
        texts = [value_text(v) for v in values]
        if given[key] not in texts:
            raise ValueError(f"{key}={given[key]} is not a variant{suggestion(given[key], texts)}"
                             f"; {key} is one of {', '.join(texts)}")
        chosen[key] = values[texts.index(given[key])]
    return chosen


__all__ = ["MAX_COMBINATIONS", "VariantValue", "VariantsMatrix", "check_matrix",
           "combinations", "find_variant", "value_text", "variant_text"]
