"""Display rounding of rates as percentages with one decimal
(docs/concepts.md#pass-rates-exact-intervals-with-missing-cases).

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


def _scaled(x: float, decimals: int) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"a finite number is required, got {x!r}")
    if not isinstance(decimals, int) or decimals < 0:
        raise ValueError(f"decimals must be a whole number >= 0, got {decimals!r}")
    # One display step of a percent with `decimals` decimals is 1 / (100 * 10**decimals).
    return float(x) * 100.0 * float(10**decimals)


def _format(steps: int, decimals: int) -> str:
    sign = "-" if steps < 0 else ""
    if decimals == 0:
        return f"{sign}{abs(steps)}%"
    whole, part = divmod(abs(steps), 10**decimals)
    return f"{sign}{whole}.{part:0{decimals}d}%"


def percent_lower(x: float, decimals: int = 1) -> str:
    """Format a lower bound as a percentage rounded *down* to one decimal ("67.2%"), or to
    `decimals` decimals.

    Method: outward rounding (floor to the display step) with a 1e-9-step float tolerance.

    >>> from oloproof.stats import percent_lower
    >>> percent_lower(0.6722098666), percent_lower(0.9999999999)
    ('67.2%', '99.9%')
    """
    return _format(math.floor(_scaled(x, decimals) + SCALED_TOLERANCE), decimals)


def percent_upper(x: float, decimals: int = 1) -> str:
    """Format an upper bound as a percentage rounded *up* to one decimal ("92.7%"), or to
    `decimals` decimals.

    Method: outward rounding (ceiling to the display step) with a 1e-9-step float tolerance.

    >>> from oloproof.stats import percent_upper
    >>> percent_upper(0.9266172706), percent_upper(0.0000001)
    ('92.7%', '0.1%')
    """
    return _format(math.ceil(_scaled(x, decimals) - SCALED_TOLERANCE), decimals)


def percent(x: float, decimals: int = 1) -> str:
    """Format an estimate as a percentage rounded to the nearest 0.1 point, halves up ("82.5%"),
    or to `decimals` decimals.

    Method: round-half-up to the display step with a 1e-9-step float tolerance on the half.

    >>> from oloproof.stats import percent
    >>> percent(0.825), percent(0.8255), percent(0.8255, decimals=2)
    ('82.5%', '82.6%', '82.55%')
    """
    return _format(math.floor(_scaled(x, decimals) + 0.5 + SCALED_TOLERANCE), decimals)
