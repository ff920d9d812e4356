"""Coverage of the prediction-powered interval for a judge corrected by people's labels, by
simulation: at least 95% for lenient, harsh and case-dependent judges (the judged rate until
issue 39; `judge_interval` measures the stratified interval that replaced it).

The heavy sweep behind tests/stats/test_stats_judges.py (which runs 200 suites per setting).

Each setting draws 5,000 suites of N cases whose person labels pass at 70%, judged by a biased
judge — lenient (passes 35% of what people fail), harsh (fails 30% of what people pass) or
case-dependent (lenient on hard cases, harsh on easy ones, more so the further from the
middle) — with n of them labelled by people, a share left unlabelled (missing, the worst way),
and reports how often the interval holds the people's rate, how often each bound misses, and
the mean width beside the judge's raw exact interval (which misses the people's rate almost
always when the judge is biased). The figures: the lowest coverage (target ≥ 0.95), the
widest mean width, and the most often the judge's raw interval held the people's rate; the
table is in the saved JSON's details. No arguments.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from benchmarks._versions import ROOT
from oloproof.stats import rate_interval

REPETITIONS = 5_000
TARGETS = {"min_coverage": (">=", 0.95)}


def run(argv: list[str]) -> dict:
    if argv:
        raise SystemExit(f"judges_coverage takes no arguments, not {argv}")
    sys.path.insert(0, str(ROOT / "tests" / "stats"))
    from test_stats_judges import simulate_intervals

    rng = np.random.default_rng(2023)
    rows: list[dict[str, Any]] = []
    print("| judge | n labelled | N | unlabelled | coverage | lower above | upper below | "
          "mean width | raw interval holds the people's rate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for bias in ("lenient", "harsh", "case_dependent"):
        for n, big_n in ((10, 40), (30, 40), (40, 400), (100, 400), (200, 2000)):
            for unlabelled in (0.0, 0.2):
                lower, upper, truth = simulate_intervals(rng, bias, n, big_n, REPETITIONS,
                                                         unlabelled)
                covered = np.mean((lower <= truth) & (truth <= upper))
                # the judge's own exact interval, over the first 200 suites, for contrast
                raw = _raw_covers(np.random.default_rng(n * big_n), bias, n, big_n, truth)
                print(f"| {bias} | {n} | {big_n} | {unlabelled:.0%} | {covered:.4f} | "
                      f"{np.mean(lower > truth):.4f} | {np.mean(upper < truth):.4f} | "
                      f"{np.mean(upper - lower):.3f} | {raw:.3f} |")
                rows.append({"judge": bias, "n": n, "N": big_n, "unlabelled": unlabelled,
                             "coverage": float(covered),
                             "lower_above": float(np.mean(lower > truth)),
                             "upper_below": float(np.mean(upper < truth)),
                             "mean_width": float(np.mean(upper - lower)), "raw_holds": raw})
    return {"figures": {
        "min_coverage": round(min(r["coverage"] for r in rows), 4),
        "max_mean_width": round(max(r["mean_width"] for r in rows), 3),
        "raw_interval_holds_max_biased": round(max(
            r["raw_holds"] for r in rows if r["judge"] != "case_dependent" and r["N"] >= 400),
            3),
    }, "params": {"suites": REPETITIONS, "seed": 2023, "settings": len(rows)},
        "details": {"rows": rows}}


def _raw_covers(rng: np.random.Generator, bias: str, n: int, big_n: int, truth: float) -> float:
    """How often the judge's raw exact interval over N holds the people's rate."""
    person = rng.random((200, big_n)) < truth
    noise = rng.random((200, big_n))
    if bias == "lenient":
        judge = person | (noise < 0.35)
    elif bias == "harsh":
        judge = person & (noise >= 0.30)
    else:
        hardness = rng.random((200, big_n))
        flip = noise < 0.6 * np.abs(hardness - 0.5)
        judge = np.where(hardness > 0.5, person | flip, person & ~flip)
    held = 0
    for row in judge:
        interval = rate_interval(int(row.sum()), big_n, 0, 0.95)
        assert interval.lower is not None and interval.upper is not None
        held += interval.lower <= truth <= interval.upper
    return held / 200

