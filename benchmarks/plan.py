"""Speed of the plan projections (issue 14, acceptance 5; issue 26).

`rate_projection` finds the smallest total of cases at the current rate that decides a rule by
doubling and bisecting; a linear scan (one exact interval per total, as the tests' brute force
does) is the alternative. Reports both for a few rules, in one run; then the total for an 80%
chance of deciding (`assured_projection`, issue 40: the run continued, the rate drawn from its
confidence distribution; exact for 0/1 values, simulated for fractions — or none, when the run
leaves more than 20% beyond the threshold) and the Bentkus projection at the same mean
(`mean_projection`), with their times. Usage:
python benchmarks/plan.py
"""

from __future__ import annotations

import time

from oloproof.stats import (
    assured_projection,
    exact_bounds_at_rate,
    mean_projection,
    rate_projection,
)

CASES = [  # (passed, observed, min threshold)
    (33, 40, 0.80),
    (37, 40, 0.85),
    (95, 100, 0.94),
    (4, 5, 0.799),
]


def _scan(passed: int, observed: int, threshold: float) -> int:
    rate, total = passed / observed, 1
    while exact_bounds_at_rate(rate, total, 0.95)[0] < threshold:
        total += 1
    return total


def main() -> None:
    exact_bounds_at_rate(0.5, 10, 0.95)  # import scipy.special before timing anything
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


def likely() -> None:
    """The second total of the plan, and the Bentkus projection, with their times."""
    print()
    print("| per-case values | rule | at the same rate | ms | for an 80% chance | chance | "
          "method | ms |")
    print("|---|---|---|---|---|---|---|---|")
    flaky = [1.0] * 28 + [0.8] * 24 + [0.6] * 7 + [0.4]  # flaky_agent's answer_correct shares
    for label, values, threshold in (
            ("33 / 40 (0/1)", None, 0.80), ("95 / 100 (0/1)", None, 0.94),
            ("18 / 18 (0/1)", None, 0.90), ("flaky_agent's shares of 5 trials", flaky, 0.80),
            ("flaky_agent's shares of 5 trials", flaky, 0.85)):
        rate = {"33 / 40 (0/1)": 0.825, "95 / 100 (0/1)": 0.95, "18 / 18 (0/1)": 1.0}.get(
            label, sum(flaky) / len(flaky))
        start = time.perf_counter()
        if values is None:
            passed, observed = (int(x) for x in label.split(" (")[0].split(" / "))
            first = rate_projection(passed, observed, 0.95, minimum=threshold)
        else:
            first = mean_projection(rate, 0.95, minimum=threshold)
        first_ms = (time.perf_counter() - start) * 1e3
        start = time.perf_counter()
        if values is None:
            second = assured_projection(0.95, passed=passed, observed=observed,
                                        minimum=threshold)
        else:
            second = assured_projection(0.95, values=values, minimum=threshold)
        second_ms = (time.perf_counter() - start) * 1e3
        total = "none" if second.total is None else f"{second.total:,}"
        chance = f"{second.chance:.3f}" if second.chance is not None else \
            f"at most {second.reachable:.3f}"
        print(f"| {label} | min {threshold} | {first.total:,} | {first_ms:.1f} | "
              f"{total} | {chance} | {second.method} | {second_ms:.0f} |")


if __name__ == "__main__":
    main()
    likely()
