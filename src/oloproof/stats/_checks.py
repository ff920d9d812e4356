"""Argument checks shared by the statistics modules (private)."""

from __future__ import annotations

import math
import operator

__all__ = ["check_level", "count"]


def check_level(level: float) -> float:
    """Return ``level`` as a float after checking it lies strictly between 0 and 1."""
    if isinstance(level, bool) or not isinstance(level, (int, float)):
        raise TypeError(f"confidence level must be a float, got {type(level).__name__}")
    if not (math.isfinite(level) and 0.0 < level < 1.0):
        raise ValueError(f"confidence level must be strictly between 0 and 1, got {level!r}")
    return float(level)


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
