"""Checks of per-case value bounds shared by the intervals for means (private)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["check_case_bounds"]


def check_case_bounds(low: npt.NDArray[np.float64], high: npt.NDArray[np.float64]) -> None:
    """Each case's lowest and highest possible value: one of each per case, lowest ≤ highest;
    a ValueError naming the first case that breaks it."""
    if low.size != high.size:
        raise ValueError(
            f"lower_values and upper_values need one entry per case each "
            f"({low.size} and {high.size} given)"
        )
    if np.any(low > high):
        first = int(np.flatnonzero(low > high)[0])
        raise ValueError(
            f"lower_values[{first}] ({low[first]!r}) exceeds upper_values[{first}] "
            f"({high[first]!r})"
        )
