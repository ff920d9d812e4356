"""Argument checks shared by the statistics modules (private)."""

from __future__ import annotations

import math
import operator
from decimal import Decimal, localcontext
from functools import lru_cache

__all__ = ["check_level", "count", "tail_probabilities"]


def check_level(level: float) -> float:
    """Return ``level`` as a float after checking it lies strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise TypeError(f"confidence level must be a float, got {type(level).__name__}")
    if not (math.isfinite(level) and 0.0 < level < 1.0):
        raise ValueError(f"confidence level must be strictly between 0 and 1, got {level!r}")
    return float(level)


@lru_cache(maxsize=64)
def tail_probabilities(level: float) -> tuple[float, float, float]:
    """``(α, α/2, 1 − α/2)`` for a confidence level, each computed exactly from its decimal text.

    Why: ``1.0 - 0.9`` is 0.09999999999999998 in binary floating point, so the exact lower
    bound of 1 success in 1 trial at 90% came out 0.04999999999999999 instead of 0.05 (and at
    95% α/2 came out 0.025000000000000022, a hair *narrower* than exact). The level is taken as
    the decimal it was written as — ``repr`` gives the shortest text that reads back as the
    same float, "0.9" for 0.9 — and the three numbers are computed in decimal arithmetic,
    then each rounded once to the nearest float.
    """
    exact = Decimal(repr(check_level(level)))
    with localcontext(prec=60):  # enough digits that 1 − level and its half are exact
        alpha = Decimal(1) - exact
        half = alpha / 2
        upper = Decimal(1) - half
    return (float(alpha), float(half), float(upper))


def count(name: str, value: int) -> int:
    """Return ``value`` as a plain non-negative int (accepts NumPy integers, rejects bools)."""
    if isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got bool")
    try:
        result = operator.index(value)
    except TypeError:
        raise TypeError(f"{name} must be an int, got {type(value).__name__}") from None
    if result < 0:
        raise ValueError(f"{name} must be non-negative, got {result}")
    return result
