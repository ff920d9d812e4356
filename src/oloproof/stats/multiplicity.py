"""Descriptive multiplicity mark for slice rows
(docs/concepts.md#slices-are-exploratory-and-never-gate).

Each slice row is compared with the rest of the suite by a two-sided Fisher exact test, and the
p-values of all rows of a run are adjusted together by Benjamini–Yekutieli. The mark is
descriptive and never gates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from oloproof.stats._checks import count
from oloproof.stats._lazy import scipy_special as _scipy_special

__all__ = ["benjamini_yekutieli", "fisher_two_sided"]


def fisher_two_sided(group_pass: int, group_fail: int, rest_pass: int, rest_fail: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2×2 table group/rest × pass/fail.

    Method: Fisher's exact test, two-sided as in ``scipy.stats.fisher_exact``: the sum of the
    hypergeometric probabilities (margins fixed) of the tables no more likely than the observed
    one, with the same relative tolerance of 1e-7. The probabilities come from
    scipy.special's log-gamma, so the run need not import scipy.stats. A table with an empty
    row or column gives 1.0.

    Example: a slice of 10 cases passing 2, against 30 others that all passed.

    >>> from oloproof.stats import fisher_two_sided
    >>> f"{fisher_two_sided(2, 8, 30, 0):.2e}"
    '5.85e-07'
    """
    table = [
        [count("group_pass", group_pass), count("group_fail", group_fail)],
        [count("rest_pass", rest_pass), count("rest_fail", rest_fail)],
    ]
    rows = [sum(r) for r in table]
    cols = [table[0][0] + table[1][0], table[0][1] + table[1][1]]
    if 0 in rows or 0 in cols:
        return 1.0
    gammaln = _scipy_special().gammaln
    total, passes, group = sum(rows), cols[0], rows[0]
    low, high = max(0, group - (total - passes)), min(group, passes)
    x = np.arange(low, high + 1, dtype=np.float64)

    def log_choose(n: Any, k: Any) -> Any:
        return gammaln(n + 1) - gammaln(k + 1) - gammaln(n - k + 1)

    log_pmf = (log_choose(passes, x) + log_choose(total - passes, group - x)
               - log_choose(total, group))
    observed = log_pmf[table[0][0] - low]
    p_value = float(np.exp(log_pmf[log_pmf <= observed + math.log1p(1e-7)]).sum())
    return min(1.0, p_value)


def benjamini_yekutieli(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Yekutieli adjusted p-values, in the input order.

    Method: Benjamini & Yekutieli (2001), the step-up FDR procedure valid under arbitrary
    dependence. With ``m`` p-values sorted ascending ``p(1) ≤ … ≤ p(m)`` and
    ``c(m) = Σ_{i=1..m} 1/i``, the adjusted value of ``p(i)`` is
    ``min(1, min_{j ≥ i} m·c(m)·p(j)/j)``; a row is marked when its adjusted value ≤ 0.05.
    Same result as ``scipy.stats.false_discovery_control(ps, method="by")``. An empty input
    gives an empty list.

    >>> from oloproof.stats import benjamini_yekutieli
    >>> [round(p, 4) for p in benjamini_yekutieli([0.01, 0.04, 0.03, 0.5])]
    [0.0833, 0.1111, 0.1111, 1.0]
    """
    ps = np.asarray([float(p) for p in pvalues], dtype=np.float64)
    if ps.size == 0:
        return []
    if not np.all(np.isfinite(ps)) or np.any(ps < 0.0) or np.any(ps > 1.0):
        raise ValueError("p-values must be numbers in [0, 1]")
    m = int(ps.size)
    harmonic = math.fsum(1.0 / i for i in range(1, m + 1))
    order = np.argsort(ps, kind="stable")
    ranks = np.arange(1, m + 1, dtype=np.float64)
    scaled = ps[order] * (m * harmonic) / ranks
    stepped = np.minimum.accumulate(scaled[::-1])[::-1]
    adjusted = np.empty(m, dtype=np.float64)
    adjusted[order] = np.minimum(stepped, 1.0)
    return [float(a) for a in adjusted]
