"""Sandbox states: how they are stored (structural diffs) and compared (docs/stateful-agents.md).

- `diff`: an end state as a patch of its initial state, and back (`diff`, `apply`).
- `paths`: dotted config paths, display paths, `ABSENT`.
- `comparison`: `PathCheck`, `StateComparison`, agreement of values, collecting checks.
- `walker`: the one walk over two states that every mode shares.
- `modes`: `compare_whole`, `compare_subset`, `compare_paths`, `compare_unchanged`.
- `changes`: `compare_changes` (mode `changes`: exactly the expected patch was applied).

Words used here
---------------
- A **leaf** is a value that is not a non-empty object or a non-empty list: a scalar, `{}` or `[]`.
  Objects are compared key by key and lists of equal length position by position, down to leaves;
  a list whose length differs is one check holding both lists. A key present on one side only is
  one check with `ABSENT` on the other side.
- **Agreement** of two values: numbers (`int`, `float`, never `bool`) agree when equal, so `1`
  and `1.0` agree, or, with a `tolerance`, when `|a - b| <= tolerance`; `True` never agrees with
  `1`; strings, `None` and booleans agree when equal; objects and lists agree when every member
  does (same keys, same length).
- **Display paths** name a place in a state: `orders["a.b"].status`, `items[3]` (see
  `display_path`). **Config paths** — the `paths` of mode `paths` and of `state_unchanged` — are
  dotted: `orders.ord-001.status` (see `parse_dotted`).

Each comparison returns a `StateComparison`: whether the states agreed, and a `PathCheck` for each
compared path with the expected value, the recorded value and whether they agreed — what the case
panel shows. Every disagreeing check is kept; agreeing ones are kept up to `keep_agreeing` (50 by
default) and the rest are only counted (`agreed_count`, `truncated`).
"""

from oloproof.state.changes import compare_changes
from oloproof.state.comparison import (
    AGREEING_CHECKS_KEPT,
    PathCheck,
    StateComparison,
    from_jsonable,
    jsonable,
    values_agree,
)
from oloproof.state.modes import compare_paths, compare_subset, compare_unchanged, compare_whole
from oloproof.state.paths import ABSENT, display_path, parse_dotted

__all__ = [
    "ABSENT",
    "AGREEING_CHECKS_KEPT",
    "PathCheck",
    "StateComparison",
    "compare_changes",
    "compare_paths",
    "compare_subset",
    "compare_unchanged",
    "compare_whole",
    "display_path",
    "from_jsonable",
    "jsonable",
    "parse_dotted",
    "values_agree",
]
