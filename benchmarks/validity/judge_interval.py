"""A judged rate's interval against people's labels alone, per cell of the audit's grid: width and
coverage of the prediction-powered interval (the method until issue 39), the labels' own exact
interval, the verdict strata by a union bound, the difference estimate with λ = 1 and exact
order-free parts added by a union bound, PPI++ (approximate) and the stratified interval with its
safeguard (docs/judges.md#the-corrected-interval-in-a-users-words).

The grid: judges lenient, harsh, case-dependent and excellent (sensitivity = specificity =
0.98; tests/stats/judge_grid.py draws them), people's rate 0.8, N from 40 to 2,000 cases, n from
10 to 400 sampled, and sampled cases left unlabelled three ways: none, a fifth at random, and a
labeller who skips every case where they disagree with the judge (each resolved the worst way).
Per cell, over `--reps` suites (default 200): each method's mean width and how often it holds
the people's rate; the stratified interval's gain over the labels alone (1 − its mean width
over theirs, whatever its sign) and its largest width over theirs on any one suite; and
how often PPI++ may be used there (at least 100 labels and 10 disagreements) and how often it
holds the rate on those suites. The audit's
figures at N = 2,000, n = 400 with the excellent judge: prediction-powered 0.094, labels alone
0.081. The table is printed and kept in `details`.

Usage: python -m benchmarks judge_interval [--reps 200] [--cells judge:N:n:missing,...]
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
LEVEL = 0.95
TARGETS = {
    "key_stratified_width": ("<=", 0.085),
    "key_ppi_plus_width": ("<=", 0.050),
    "cells_below_nominal": ("==", 0),
    "largest_width_over_labels": ("<=", 1.05),
    "cells_not_narrower_than_prediction_powered": ("==", 0),
}


def _union(judge: Any, person_low: Any, person_high: Any, every: Any, level: float
           ) -> tuple[float, float]:
    """The verdict strata combined by a union bound: the exact interval of the pass stratum's
    share over all cases and of the people's rate within each stratum, each at a third of the
    error, and the estimand's least and greatest value over that box."""
    from oloproof.stats import clopper_pearson, rate_interval

    third = 1.0 - (1.0 - level) / 3.0
    pi = clopper_pearson(int((every >= 0.5).sum()), every.size, third)
    bounds = []
    for members in (judge >= 0.5, judge < 0.5):
        low, high = person_low[members], person_high[members]
        observed = low == high
        rate = rate_interval(int(low[observed].sum()), int(observed.sum()),
                             int((~observed).sum()), third)
        bounds.append((0.0, 1.0) if rate.lower is None else (rate.lower, rate.upper))
    values = [p * q1 + (1 - p) * q0 for p in pi for q1 in bounds[0] for q0 in bounds[1]]
    return min(values), max(values)


def _difference(every: Any, judge: Any, person_low: Any, person_high: Any, level: float
                ) -> tuple[float, float]:
    """The difference estimate with λ = 1 fixed, ``mean(Y − J) + mean_N(J)``, each part exact
    and order-free and the two added by a union bound: the judge's pass rate over all cases
    (Clopper–Pearson at α/2) and the mean of person − judge over the sampled cases by the
    melded interval compatible with exact McNemar (Fay & Lumbard 2021) at α/2."""
    from oloproof.stats import binary_difference_interval, clopper_pearson

    half = 1.0 - (1.0 - level) / 2.0
    low_j, high_j = clopper_pearson(int((every >= 0.5).sum()), every.size, half)
    j = (judge >= 0.5).astype(float)
    rectifier = binary_difference_interval(person_low - j, person_high - j, half)
    assert rectifier.lower is not None and rectifier.upper is not None
    return max(0.0, low_j + rectifier.lower), min(1.0, high_j + rectifier.upper)


def _cell(judge_kind: str, big_n: int, n: int, missing: str, reps: int,
          seed: int) -> dict[str, Any]:
    from judge_grid import RATE, draw

    from oloproof.stats import prediction_powered_bounds
    from oloproof.stats.ppi_plus import ppi_plus_applies, ppi_plus_interval
    from oloproof.stats.verdict_strata import judged_rate_interval

    rng = np.random.default_rng(seed)
    suites = draw(rng, judge_kind, big_n, n, reps, missing)
    names = ("today", "people", "union", "difference", "ppi", "ours")
    widths: dict[str, list[float]] = {k: [] for k in names}
    held: dict[str, int] = dict.fromkeys(widths, 0)
    ratios: list[float] = []
    applies, applied_held, applied_width = 0, 0, 0.0
    # the prediction-powered interval, all suites at once (the sampled cases in the order
    # drawn: as random as the digest order the criterion takes)
    judge_f = suites.judge.astype(np.float64)
    delta = suites.person[:, :n].astype(np.float64) - judge_f[:, :n]
    low = np.where(suites.unlabelled, -judge_f[:, :n], delta)
    high = np.where(suites.unlabelled, 1.0 - judge_f[:, :n], delta)
    t_low, t_high = prediction_powered_bounds(judge_f.sum(axis=1), np.full(reps, big_n),
                                              np.zeros(reps), low, high, LEVEL)
    for i in range(reps):
        every, judge, person_low, person_high = (np.asarray(v) for v in suites.one(i))
        ours = judged_rate_interval(every, judge, person_low, person_high, LEVEL)
        observed = person_low == person_high
        disagree = int(np.sum(observed & ((judge >= 0.5) != (person_low >= 0.5))))
        tuned = ppi_plus_interval(every, judge, person_low, person_high, LEVEL) if observed.any() \
            else None
        if tuned is not None and ppi_plus_applies(int(observed.sum()), disagree):
            applies += 1
            applied_held += tuned.lower <= RATE <= tuned.upper
            applied_width += tuned.upper - tuned.lower
        union = _union(judge, person_low, person_high, every, LEVEL)
        intervals = {
            "today": (float(t_low[i]), float(t_high[i])),
            "people": (ours.people_lower, ours.people_upper),
            "union": union,
            "difference": _difference(every, judge, person_low, person_high, LEVEL),
            "ppi": (0.0, 1.0) if tuned is None else (tuned.lower, tuned.upper),
            "ours": (ours.lower, ours.upper),
        }
        for name, (lo, hi) in intervals.items():
            widths[name].append(hi - lo)
            held[name] += lo <= RATE <= hi
        people_width = ours.people_upper - ours.people_lower
        ratios.append((ours.upper - ours.lower) / people_width if people_width > 0 else 1.0)
    row: dict[str, Any] = {"judge": judge_kind, "N": big_n, "n": n, "missing": missing,
                           "reps": reps, "ppi_applies": applies / reps,
                           "ppi_applied_coverage": applied_held / applies if applies else None,
                           "ppi_applied_width": applied_width / applies if applies else None,
                           "largest_ratio": max(ratios)}
    for name in widths:
        row[f"{name}_width"] = float(np.mean(widths[name]))
        row[f"{name}_coverage"] = held[name] / reps
    row["gain"] = 1.0 - row["ours_width"] / row["people_width"]
    return row


def _below_nominal(coverage: float, reps: int) -> bool:
    """Whether a cell's coverage is below 95% beyond chance: the exact one-sided 99% upper
    bound of the share held is below 0.95."""
    from oloproof.stats import clopper_pearson

    return clopper_pearson(round(coverage * reps), reps, 0.98)[1] < LEVEL


def run(argv: list[str]) -> dict:
    reps, cells = 200, None
    args = list(argv)
    while args:
        flag = args.pop(0)
        if flag == "--reps":
            reps = int(args.pop(0))
        elif flag == "--cells":
            cells = [tuple(c.split(":")) for c in args.pop(0).split(",")]
        else:
            raise SystemExit(f"judge_interval: unknown argument {flag!r}")
    sys.path.insert(0, str(ROOT / "tests" / "stats"))
    from judge_grid import JUDGES, MISSING, SIZES

    chosen = cells or [(j, str(big_n), str(n), m) for j in JUDGES for big_n, n in SIZES
                       for m in MISSING]
    rows = []
    print("| judge | N | n | unlabelled | prediction-powered | labels alone | strata, union "
          "bound | difference λ=1, union bound | PPI++ (approx.) | stratified | gain | largest "
          "ratio | PPI++ applies (its coverage there) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    started = time.perf_counter()
    for seed, (judge_kind, big_n, n, missing) in enumerate(chosen):
        row = _cell(judge_kind, int(big_n), int(n), missing, reps, 1000 + seed)
        rows.append(row)
        cells_text = " | ".join(f"{row[f'{k}_width']:.3f} ({row[f'{k}_coverage']:.3f})"
                                for k in ("today", "people", "union", "difference", "ppi",
                                          "ours"))
        applied = "" if row["ppi_applied_coverage"] is None \
            else f" ({row['ppi_applied_coverage']:.3f})"
        print(f"| {judge_kind} | {big_n} | {n} | {missing} | {cells_text} | "
              f"{row['gain']:+.1%} | {row['largest_ratio']:.3f} | {row['ppi_applies']:.0%}"
              f"{applied} |", flush=True)
    key = [r for r in rows if (r["judge"], r["N"], r["n"], r["missing"])
           == ("excellent", 2000, 400, "none")]
    figures: dict[str, Any] = {
        "cells": len(rows),
        "min_coverage": min(r["ours_coverage"] for r in rows),
        "cells_below_nominal": sum(_below_nominal(r["ours_coverage"], reps) for r in rows),
        "largest_width_over_labels": round(max(r["largest_ratio"] for r in rows), 4),
        "cells_not_narrower_than_prediction_powered": sum(
            r["ours_width"] >= r["today_width"] for r in rows),
        "best_gain": round(max(r["gain"] for r in rows), 4),
        "worst_gain": round(min(r["gain"] for r in rows), 4),
    }
    applied = [r for r in rows if r["ppi_applied_coverage"] is not None]
    if applied:
        figures["ppi_plus_min_coverage_where_it_applies"] = min(
            r["ppi_applied_coverage"] for r in applied)
    if key:
        figures.update({
            "key_stratified_width": round(key[0]["ours_width"], 4),
            "key_ppi_plus_width": round(key[0]["ppi_width"], 4),
            "key_labels_width": round(key[0]["people_width"], 4),
            "key_prediction_powered_width": round(key[0]["today_width"], 4),
        })
    return {"figures": figures,
            "params": {"reps": reps, "level": LEVEL, "rate": 0.8,
                       "seconds": round(time.perf_counter() - started, 1)},
            "details": {"rows": rows}}


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT / "src"))
    result = run(sys.argv[1:])
    for name, value in result["figures"].items():
        print(f"{name}: {value}")
