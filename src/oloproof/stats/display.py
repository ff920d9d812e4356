"""Display rounding of rates as percentages with one decimal (SPEC §5.1).

Interval bounds round *outward* — a lower bound down, an upper bound up — so the printed
interval always contains the computed one; estimates round to nearest (halves up).

Why a tolerance: a rate is scaled to tenths of a percent (``x * 1000``) in binary floating
point, so a value meant to be exactly 0.672 can arrive as 671.9999999999999 tenths and would
floor to "67.1%" — narrowing by a whole display step because of noise in the 16th digit. Values
within ``SCALED_TOLERANCE`` (1e-9 tenths of a percent, i.e. 1e-12 as a fraction) of a display
step are therefore treated as lying on it. The printed bound can thus exceed the computed one by
at most 1e-12, which is far below the accuracy of the computed bound itself.
"""

from __future__ import annotations

import math

__all__ = ["SCALED_TOLERANCE", "percent", "percent_lower", "percent_upper"]

SCALED_TOLERANCE = 1e-9
_STEPS_PER_UNIT = 1000  # one decimal of a percent = 1/1000 of the unit


def _scaled(x: float) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"a finite number is required, got {x!r}")
    return float(x) * _STEPS_PER_UNIT


def _format(steps: int) -> str:
    sign = "-" if steps < 0 else ""
    whole, tenth = divmod(abs(steps), 10)
    return f"{sign}{whole}.{tenth}%"


def percent_lower(x: float) -> str:
    """Format a lower bound as a percentage rounded *down* to one decimal ("67.2%").

    Method: outward rounding (floor to 0.1 percentage point) with a 1e-9-step float tolerance.
    """
    return _format(math.floor(_scaled(x) + SCALED_TOLERANCE))


def percent_upper(x: float) -> str:
    """Format an upper bound as a percentage rounded *up* to one decimal ("92.7%").

    Method: outward rounding (ceiling to 0.1 percentage point) with a 1e-9-step float tolerance.
    """
    return _format(math.ceil(_scaled(x) - SCALED_TOLERANCE))


def percent(x: float) -> str:
    """Format an estimate as a percentage rounded to the nearest 0.1 point, halves up ("82.5%").

    Method: round-half-up to 0.1 percentage point with a 1e-9-step float tolerance on the half.
    """
    return _format(math.floor(_scaled(x) + 0.5 + SCALED_TOLERANCE))
