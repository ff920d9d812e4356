"""Speed of the plan projections: `rate_projection` against a linear scan (the same total, under
a millisecond whatever the total), and the 80%-chance total (issue 14, acceptance 5; issue 26).

`rate_projection` finds the smallest total of cases at the current rate that decides a rule by
doubling and bisecting; a linear scan (one exact interval per total, as the tests' brute force
does) is the alternative. Reports both for a few rules, in one run; then the total for an 80%
chance of deciding (`assured_projection`, issue 40: the run continued, the rate drawn from its
confidence distribution; exact for 0/1 values, simulated for fractions — or none, when the run
leaves more than 20% beyond the threshold) and the Bentkus projection at the same mean
(`mean_projection`), with their times. Each projection is
timed 5 times, the fastest kept (one call takes well under a millisecond, which a busy
machine's scheduler can stretch); the scan once.

Arguments: [--skip-long-scan] (`make bench-check`: the 4/5 rule's scan, 617,368 exact intervals
and 10–30 s, left out; its projection is still timed).
"""

from __future__ import annotations

import time
from typing import Any

from oloproof.stats import (
    assured_projection,
    exact_bounds_at_rate,
    mean_projection,
    rate_projection,
)

TARGETS = {"projection_ms_max": ("<=", 1.0), "matches_linear_scan": ("==", True)}
QUICK = ["--skip-long-scan"]
LONG_SCAN = 100_000  # totals above this are scanned only without --skip-long-scan

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


def _fastest(call: Any, times: int = 5) -> tuple[Any, float]:
    """What `call()` returns, and its fastest of `times` runs (seconds)."""
    best = float("inf")
    for _ in range(times):
        start = time.perf_counter()
        result = call()
        best = min(best, time.perf_counter() - start)
    return result, best


def projections(skip_long_scan: bool = False) -> list[dict[str, Any]]:
    exact_bounds_at_rate(0.5, 10, 0.95)  # import scipy.special before timing anything
    print("| observed | rule | projected total | projection ms | linear scan ms | ratio |")
    print("|---|---|---|---|---|---|")
    rows = []
    for passed, observed, threshold in CASES:
        result, projection = _fastest(
            lambda p=passed, o=observed, t=threshold: rate_projection(p, o, 0.95, minimum=t))
        row = {"observed": f"{passed}/{observed}", "min": threshold, "total": result.total,
               "projection_ms": round(projection * 1e3, 3)}
        if skip_long_scan and result.total > LONG_SCAN:
            print(f"| {passed}/{observed} | min {threshold} | {result.total:,} | "
                  f"{projection * 1e3:.2f} | (not scanned) | |")
            rows.append(row)
            continue
        start = time.perf_counter()
        scanned = _scan(passed, observed, threshold)
        scan = time.perf_counter() - start
        print(f"| {passed}/{observed} | min {threshold} | {result.total:,} | "
              f"{projection * 1e3:.2f} | {scan * 1e3:,.0f} | {scan / projection:,.0f}× |")
        rows.append({**row, "scanned_total": scanned, "scan_ms": round(scan * 1e3, 1)})
    return rows


def assured() -> list[dict[str, Any]]:
    """The second total of the plan, and the Bentkus projection, with their times."""
    print()
    print("| per-case values | rule | at the same rate | ms | for an 80% chance | chance | "
          "method | ms |")
    print("|---|---|---|---|---|---|---|---|")
    flaky = [1.0] * 28 + [0.8] * 24 + [0.6] * 7 + [0.4]  # flaky_agent's answer_correct shares
    rows = []
    for label, values, threshold in (
            ("33 / 40 (0/1)", None, 0.80), ("95 / 100 (0/1)", None, 0.94),
            ("18 / 18 (0/1)", None, 0.90), ("flaky_agent's shares of 5 trials", flaky, 0.80),
            ("flaky_agent's shares of 5 trials", flaky, 0.85)):
        rate = {"33 / 40 (0/1)": 0.825, "95 / 100 (0/1)": 0.95, "18 / 18 (0/1)": 1.0}.get(
            label, sum(flaky) / len(flaky))
        if values is None:
            passed, observed = (int(x) for x in label.split(" (")[0].split(" / "))
            first, first_s = _fastest(lambda p=passed, o=observed, t=threshold: rate_projection(
                p, o, 0.95, minimum=t))
        else:
            first, first_s = _fastest(lambda r=rate, t=threshold: mean_projection(
                r, 0.95, minimum=t))
        if values is None:
            second, second_s = _fastest(lambda p=passed, o=observed, t=threshold:
                                        assured_projection(0.95, passed=p, observed=o,
                                                           minimum=t))
        else:
            second, second_s = _fastest(lambda v=values, t=threshold: assured_projection(
                0.95, values=v, minimum=t))
        first_ms, second_ms = first_s * 1e3, second_s * 1e3
        total = "none" if second.total is None else f"{second.total:,}"
        chance = f"{second.chance:.3f}" if second.chance is not None else \
            f"at most {second.reachable:.3f}"
        print(f"| {label} | min {threshold} | {first.total:,} | {first_ms:.1f} | "
              f"{total} | {chance} | {second.method} | {second_ms:.0f} |")
        rows.append({"values": label, "min": threshold, "total": first.total,
                     "ms": round(first_ms, 2), "assured_total": second.total,
                     "chance": None if second.chance is None else round(second.chance, 3),
                     "method": second.method, "assured_ms": round(second_ms, 1)})
    return rows


def run(argv: list[str]) -> dict:
    if argv not in ([], ["--skip-long-scan"]):
        raise SystemExit(f"plan takes only --skip-long-scan, not {argv}")
    first, second = projections(skip_long_scan=bool(argv)), assured()
    scanned = [r for r in first if "scanned_total" in r]
    return {"figures": {
        "projection_ms_max": max(r["projection_ms"] for r in first),
        "linear_scan_ms_max": max(r["scan_ms"] for r in scanned),
        "matches_linear_scan": all(r["total"] == r["scanned_total"] for r in scanned),
        "assured_ms_max": max(r["assured_ms"] for r in second),
        "mean_projection_ms_max": max(r["ms"] for r in second if "shares" in r["values"]),
    }, "params": {"rules": len(first), "scanned": len(scanned), "assured_rows": len(second)},
        "details": {"projections": first, "assured": second}}

