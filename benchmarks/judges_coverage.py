"""Coverage of the prediction-powered interval by simulation (docs/judges.md): the heavy sweep
behind tests/stats/test_stats_judges.py (which runs 200 suites per setting).

Each setting draws 5,000 suites of N cases whose person labels pass at 70%, judged by a biased
judge — lenient (passes 35% of what people fail), harsh (fails 30% of what people pass) or
case-dependent (lenient on hard cases, harsh on easy ones, more so the further from the
middle) — with n of them labelled by people, a share left unlabelled (missing, the worst way),
and reports how often the interval holds the people's rate, how often each bound misses, and
the mean width beside the judge's raw exact interval (which misses the people's rate almost
always when the judge is biased). Usage: python benchmarks/judges_coverage.py
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "stats"))
from test_stats_judges import _simulate

from oloproof.stats import rate_interval

REPETITIONS = 5_000


def main() -> None:
    rng = np.random.default_rng(2023)
    print("| judge | n labelled | N | unlabelled | coverage | lower above | upper below | "
          "mean width | raw interval holds the people's rate |")
    print("|---|---|---|---|---|---|---|---|---|")
    for bias in ("lenient", "harsh", "case_dependent"):
        for n, big_n in ((10, 40), (30, 40), (40, 400), (100, 400), (200, 2000)):
            for unlabelled in (0.0, 0.2):
                lower, upper, truth = _simulate(rng, bias, n, big_n, REPETITIONS, unlabelled)
                covered = np.mean((lower <= truth) & (truth <= upper))
                # the judge's own exact interval, over the first 200 suites, for contrast
                raw = _raw_covers(np.random.default_rng(n * big_n), bias, n, big_n, truth)
                print(f"| {bias} | {n} | {big_n} | {unlabelled:.0%} | {covered:.4f} | "
                      f"{np.mean(lower > truth):.4f} | {np.mean(upper < truth):.4f} | "
                      f"{np.mean(upper - lower):.3f} | {raw:.3f} |")


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


if __name__ == "__main__":
    main()
