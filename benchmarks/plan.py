"""Speed of the plan projection (SPEC §18; issue 14, acceptance 5).

`rate_projection` finds the smallest total of cases at the current rate that decides a rule by
doubling and bisecting; a linear scan (one exact interval per total, as the tests' brute force
does) is the alternative. Reports both for a few rules, in one run. Usage:
python benchmarks/plan.py
"""

from __future__ import annotations

import time

from oloproof.stats import exact_interval_at_rate, rate_projection

CASES = [  # (passed, observed, min threshold)
    (33, 40, 0.80),
    (37, 40, 0.85),
    (95, 100, 0.94),
    (4, 5, 0.799),
]


def _scan(passed: int, observed: int, threshold: float) -> int:
    rate, total = passed / observed, 1
    while exact_interval_at_rate(rate, total, 0.95)[0] < threshold:
        total += 1
    return total


def main() -> None:
    exact_interval_at_rate(0.5, 10, 0.95)  # import scipy.special before timing anything
    print("| observed | rule | projected total | projection ms | linear scan ms | ratio |")
    print("|---|---|---|---|---|---|")
    for passed, observed, threshold in CASES:
        start = time.perf_counter()
        result = rate_projection(passed, observed, 0.95, minimum=threshold)
        projection = time.perf_counter() - start
        start = time.perf_counter()
        scanned = _scan(passed, observed, threshold)
        scan = time.perf_counter() - start
        assert scanned == result.total, (scanned, result)
        print(f"| {passed}/{observed} | min {threshold} | {result.total:,} | "
              f"{projection * 1e3:.2f} | {scan * 1e3:,.0f} | {scan / projection:,.0f}× |")


if __name__ == "__main__":
    main()
