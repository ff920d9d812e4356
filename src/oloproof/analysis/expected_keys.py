"""Exclusions that look like a misspelt key in the dataset.

An evaluator excludes a case whose `expected` lacks the key it reads (`agent_tool_sequence`
without `expected.tools`): the criterion does not apply, and the case leaves its denominator.
That is right when the key was left out on purpose, and silently wrong when the cases say
`tool`. The run knows both halves — each criterion's (reason, key), from its evaluator, and
how many cases hold each `expected` key, from the dataset — so where a criterion excluded
cases for a key and the cases hold a key of a similar name, the report says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from oloproof.suite.validation import closest

if TYPE_CHECKING:
    from oloproof.document import ExpectedKeyHint, MetricRow


def expected_key_hints(metrics: Sequence[MetricRow],
                       absent_expected: Mapping[str, Sequence[str]],
                       expected_keys: Mapping[str, int]) -> list[ExpectedKeyHint]:
    """One hint per criterion that excluded cases for lacking `expected.<key>` while some
    cases hold a key of a similar name (`absent_expected`: criterion → [reason, key], as the
    run stores it; `expected_keys`: how many cases hold each key)."""
    from oloproof.document import ExpectedKeyHint, RateRow

    hints: list[ExpectedKeyHint] = []
    for row in metrics:
        if not isinstance(row, RateRow) or row.metric_type is not None:
            continue
        pair = absent_expected.get(row.id)
        if not pair:
            continue
        reason, key = pair
        excluded = row.excluded_by_reason.get(reason, 0)
        similar = closest(key, list(expected_keys)) if excluded else None
        if similar is None:
            continue
        if row.trials and row.trials > 1:  # a case's trials are all excluded alike
            excluded //= row.trials
        hints.append(ExpectedKeyHint(criterion=row.id, key=key, excluded=excluded,
                                     similar=similar, similar_cases=expected_keys[similar]))
    return hints
