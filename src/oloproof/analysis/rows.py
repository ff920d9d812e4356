"""The rows every figure shows, from its tally: a slice's rate and quantile rows (an interval,
or below its support the counts alone), and the counts by reason and the plain numbers every
row of the document holds."""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING

from oloproof.analysis.tally import QuantileTally, RateTally

if TYPE_CHECKING:  # the document's row models are imported when a row is made
    from oloproof.document import QuantileSliceRow, RateSliceRow


def sorted_counts(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items()))


def plain_number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)


def rate_slice_row(slice_name: str, group: str, metric: str, tally: RateTally,
                level: float | None) -> RateSliceRow:
    """A rate slice row; with `level` None (below support) its counts and no interval."""
    from oloproof.document import RateSliceRow
    from oloproof.stats import rate_interval
    interval = None if level is None else rate_interval(tally.passed, tally.observed,
                                                        tally.missing, level)
    return RateSliceRow(
        slice=slice_name, value=group, metric=metric,
        estimate=interval.estimate if interval else None,
        lower=interval.lower if interval else None, upper=interval.upper if interval else None,
        passed=tally.passed, observed=tally.observed, missing=tally.missing,
        excluded=tally.excluded, excluded_by_reason=sorted_counts(tally.excluded_by_reason),
        missing_by_reason=sorted_counts(tally.missing_by_reason),
        method=interval.method if interval else None, below_support=interval is None,
        support=tally.support,
    )


def quantile_slice_row(slice_name: str, group: str, metric: str, quantile: float, unit: str,
                       tally: QuantileTally, level: float | None) -> QuantileSliceRow:
    """A quantile slice row; with `level` None (below support) its counts and no interval."""
    from oloproof.document import QuantileSliceRow
    from oloproof.stats import quantile_interval
    interval = None if level is None else quantile_interval(tally.values, tally.missing,
                                                            quantile, level)
    return QuantileSliceRow(
        slice=slice_name, value=group, metric=metric, quantile=quantile, unit=unit,
        estimate=plain_number(interval.estimate) if interval else None,
        lower=plain_number(interval.lower) if interval else None,
        upper=plain_number(interval.upper) if interval else None,
        observed=len(tally.values), missing=tally.missing, excluded=tally.excluded,
        excluded_by_reason=sorted_counts(tally.excluded_by_reason),
        missing_by_reason=sorted_counts(tally.missing_by_reason),
        method=interval.method if interval else None, below_support=interval is None,
        support=tally.support,
    )
