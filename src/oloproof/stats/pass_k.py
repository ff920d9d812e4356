"""Per-case values of pass^k and pass@k from a case's counts of passed, failed and missing
trials (docs/reliability.md#what-passk-means), as arrays over cases.

For a case with ``c`` passed, ``f`` failed and ``m`` missing trials (``n = c + f + m``;
excluded trials do not count):

- the criterion itself: ``c / n``, its share of passing trials;
- `pass_hat_k` with ``k: j``: ``C(c, j) / C(n, j)``, the unbiased estimate of the chance that
  j fresh trials all pass (τ-bench's pass^j);
- `pass_at_k` with ``k: j``: ``1 − C(n − c, j) / C(n, j)``, that at least one of j passes.

Missing trials are resolved the worst way for the case's lower value (``c``) and the best way
for its upper value (``c + m``); a case is *observed* when the two agree (pass^4 with one trial
failed is 0 whatever the missing trials did) and *missing* otherwise. A case with every trial
excluded is not counted. A case with fewer counted trials than ``j`` has no pass^j estimate:
it is marked `too_few`, never dropped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # NumPy is imported when values are computed, not with the module
    import numpy as np
    import numpy.typing as npt

    FloatArray = npt.NDArray[np.float64]
    IntArray = npt.NDArray[np.int64]

__all__ = ["PASS_AT_K", "PASS_HAT_K", "CaseValues", "case_values"]

PASS_HAT_K = "pass_hat_k"
PASS_AT_K = "pass_at_k"


def _ratio_table(j: int, n: int, complement: bool) -> FloatArray:
    """``C(a, j) / C(n, j)`` (or ``1 −`` it, with `complement`) for a = 0 … n, from exact
    integers divided once, so each value is the correctly rounded float of the fraction."""
    import numpy as np
    whole = math.comb(n, j)
    if complement:
        return np.asarray([(whole - math.comb(a, j)) / whole for a in range(n + 1)],
                          dtype=np.float64)
    return np.asarray([math.comb(a, j) / whole for a in range(n + 1)], dtype=np.float64)


@dataclass
class CaseValues:
    """A metric's per-case values over some cases: each case's lowest and highest possible
    value, and whether it counts (not excluded) and is observed (the two agree)."""

    lower: FloatArray
    upper: FloatArray
    counted: npt.NDArray[np.bool_]
    observed: npt.NDArray[np.bool_]
    too_few: npt.NDArray[np.bool_]


def case_values(c: IntArray, f: IntArray, m: IntArray, metric_type: str | None,
                j: int = 1) -> CaseValues:
    """Per-case values of docs/reliability.md#what-passk-means from per-case counts (arrays over
    cases).

    `metric_type` None is the criterion itself (``c / n``); `pass_hat_k` and `pass_at_k` take
    ``j``. Missing trials give the lower value from ``c`` and the upper from ``c + m``.
    """
    import numpy as np
    n = c + f + m
    counted = n > 0
    lower = np.zeros(n.shape, dtype=np.float64)
    upper = np.ones(n.shape, dtype=np.float64)
    too_few = np.zeros(n.shape, dtype=bool)
    if metric_type is None:
        safe = np.where(counted, n, 1)
        lower = np.where(counted, c / safe, 0.0)
        upper = np.where(counted, (c + m) / safe, 1.0)
        observed = counted & (m == 0)
        return CaseValues(lower, upper, counted, observed, too_few)
    too_few = counted & (n < j)
    able = counted & ~too_few
    for size in np.unique(n[able]):
        table = _ratio_table(j, int(size), complement=metric_type != PASS_HAT_K)
        rows = able & (n == size)
        if metric_type == PASS_HAT_K:
            lower[rows] = table[c[rows]]
            upper[rows] = table[(c + m)[rows]]
        else:  # 1 − C(n − c, j) / C(n, j), and n − c = f + m
            lower[rows] = table[(f + m)[rows]]
            upper[rows] = table[f[rows]]
    # Exactly (not by comparing floats): the two ends agree when nothing is missing, or when
    # both binomials are 0 — fewer than j trials could still pass (pass^j) or fail (pass@j).
    if metric_type == PASS_HAT_K:
        settled = (m == 0) | (c + m < j)
    else:
        settled = (m == 0) | (f + m < j)
    observed = able & settled
    return CaseValues(lower, upper, counted, observed, too_few)
