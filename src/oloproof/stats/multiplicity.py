"""Descriptive multiplicity mark for slice rows (SPEC §10.2).

Each slice row is compared with the rest of the suite by a two-sided Fisher exact test, and the
p-values of all rows of a run are adjusted together by Benjamini–Yekutieli. The mark is
descriptive and never gates.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from oloproof.stats._checks import count
from oloproof.stats._lazy import scipy_stats as _scipy_stats

__all__ = ["benjamini_yekutieli", "fisher_two_sided"]


def fisher_two_sided(group_pass: int, group_fail: int, rest_pass: int, rest_fail: int) -> float:
    """Two-sided p-value of Fisher's exact test on the 2×2 table group/rest × pass/fail.

    Method: Fisher's exact test (scipy.stats.fisher_exact, ``alternative="two-sided"``: the sum
    of probabilities of tables no more likely than the observed one, margins fixed). A table
    with an empty row or column gives 1.0.
    """
    table = [
        [count("group_pass", group_pass), count("group_fail", group_fail)],
        [count("rest_pass", rest_pass), count("rest_fail", rest_fail)],
    ]
    rows = [sum(r) for r in table]
    cols = [table[0][0] + table[1][0], table[0][1] + table[1][1]]
    if 0 in rows or 0 in cols:
        return 1.0
    result = _scipy_stats().fisher_exact(table, alternative="two-sided")
    return min(1.0, float(result.pvalue))


def benjamini_yekutieli(pvalues: Sequence[float]) -> list[float]:
    """Benjamini–Yekutieli adjusted p-values, in the input order.

    Method: Benjamini & Yekutieli (2001), the step-up FDR procedure valid under arbitrary
    dependence. With ``m`` p-values sorted ascending ``p(1) ≤ … ≤ p(m)`` and
    ``c(m) = Σ_{i=1..m} 1/i``, the adjusted value of ``p(i)`` is
    ``min(1, min_{j ≥ i} m·c(m)·p(j)/j)``; a row is marked when its adjusted value ≤ 0.05.
    Same result as ``scipy.stats.false_discovery_control(ps, method="by")``. An empty input
    gives an empty list.
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
