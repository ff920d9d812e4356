"""The paired difference of a candidate against its baseline: power and validity of the melded
interval and of the betting interval over clusters (issue 26, acceptance 3 and 4).

Not a speed benchmark, save the last table. Prints, as Markdown tables:

1. half-widths with every pair concordant: the betting interval the comparison used before
   against the melded interval compatible with exact McNemar (Fay & Lumbard 2021) it uses
   now for 0/1 values;
2. the 4%-discordant scenario (n = 400, true difference 0, 2% broken and 2% fixed, margin
   0.02): the chance a `non_inferiority` rule PASSes, for betting (simulated), the melded
   interval (exact: summed over every table of probability above 1e-12) and the asymptotic
   z-test (Wald; exact sum likewise);
3. independent pairs: coverage and the chance of a PASS with the candidate exactly at −margin,
   melded (exact sums) beside betting (simulated);
4. clustered pairs, the audit's 40 clusters × 5 and 20 × 10, a cluster's cases changing
   together: coverage and P(PASS at exactly −margin) with the pairs taken as independent (the
   comparison before) and over clusters (now: each cluster's mean difference one value);
5. the time of one comparison's interval.

The figures, each table's headline (the targets are issue 26's): the melded half-width with 400
concordant pairs (≤ 0.011); the 4%-discordant pass rates (melded never below the betting
interval's 26%); the melded interval's lowest coverage and highest P(PASS at −margin) on
independent pairs; the same over clusters (coverage ≥ 0.95, P(PASS at −margin) ≤ α/2); the
melded interval's time at 20,000 pairs. The tables are in the saved JSON's details.

Arguments: [--repetitions 10000] [--seed 2026]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.stats import binom

from oloproof.stats import (
    betting_lower_bounds,
    binary_difference_interval,
    melded_bounds,
    melded_lower_bound,
    paired_difference_interval,
)

LEVEL = 0.95
TARGETS = {"half_width_400_melded": ("<=", 0.011), "discordant_pass_melded": (">=", 0.26),
           "independent_min_coverage_melded": (">=", 0.95),
           "independent_max_pass_at_margin_melded": ("<=", 0.025),
           "clusters_min_coverage": (">=", 0.95),
           "clusters_max_pass_at_margin": ("<=", 0.025)}
Z = 1.959963984540054
FloatArray = npt.NDArray[np.float64]


def _betting_lower(values: FloatArray) -> FloatArray:
    """The reported lower bound of the betting interval on differences, per row (widened to
    the sample mean, as `paired_difference_interval` reports it)."""
    shifted = (values + 1.0) / 2.0
    low = np.minimum(betting_lower_bounds(shifted, LEVEL), shifted.mean(axis=1))
    return np.maximum(-1.0, 2.0 * low - 1.0)


def _betting_interval(values: FloatArray) -> tuple[FloatArray, FloatArray]:
    return _betting_lower(values), -_betting_lower(-values)


def _draw(n: int, p_broken: float, p_fixed: float, repetitions: int,
          rng: np.random.Generator) -> FloatArray:
    u = rng.random((repetitions, n))
    return (u >= 1.0 - p_fixed).astype(np.float64) - (u < p_broken).astype(np.float64)


def _tables(n: int, p_broken: float, p_fixed: float, floor: float = 1e-12
            ) -> tuple[list[tuple[int, int, float]], float]:
    """Every (m, x) of probability above `floor`, and the probability left out."""
    psi = p_broken + p_fixed
    theta = p_fixed / psi if psi > 0 else 0.5
    out = []
    kept = 0.0
    p_m = binom.pmf(np.arange(n + 1), n, psi)
    for m in np.flatnonzero(p_m > floor):
        p_x = binom.pmf(np.arange(m + 1), m, theta) * p_m[m]
        for x in np.flatnonzero(p_x > floor):
            out.append((int(m), int(x), float(p_x[x])))
            kept += float(p_x[x])
    return out, 1.0 - kept


def _melded_exact(n: int, p_broken: float, p_fixed: float, margin: float | None
                  ) -> tuple[float, float, float, float]:
    """(coverage, P(lower above truth), P(upper below truth), P(PASS at −margin)), exact up to
    the tables left out (whose probability is returned as well, in place of P(PASS) when no
    margin is asked)."""
    truth = p_fixed - p_broken
    tables, left = _tables(n, p_broken, p_fixed)
    low_miss = high_miss = passes = 0.0
    for m, x, p in tables:
        lower, upper = melded_bounds(n, m - x, x, LEVEL)
        low_miss += p * (lower > truth + 1e-12)
        high_miss += p * (upper < truth - 1e-12)
        if margin is not None:
            passes += p * (lower >= -margin)
    return 1.0 - low_miss - high_miss, low_miss, high_miss, passes if margin is not None \
        else left


def _z_pass_exact(n: int, p_broken: float, p_fixed: float, margin: float) -> float:
    """P(PASS) of the asymptotic (Wald) test: d̂ − z·SE ≥ −margin, SE² = (m/n − d̂²)/n."""
    passes = 0.0
    for m, x, p in _tables(n, p_broken, p_fixed)[0]:
        d = (2 * x - m) / n
        se = np.sqrt(max(m / n - d * d, 0.0) / n)
        passes += p * (d - Z * se >= -margin)
    return passes


def half_widths() -> list[dict[str, Any]]:
    print("### 1. Every pair concordant: half-width of the interval, 95%\n")
    print("| pairs | betting (before) | melded (now) | exact bound on the discordant share |")
    print("|---|---|---|---|")
    rows = []
    for n in (40, 100, 400, 1000, 20000):
        zeros = np.zeros(n)
        before = paired_difference_interval(zeros, zeros, LEVEL)
        now = binary_difference_interval(zeros, zeros, LEVEL)
        assert before.upper is not None and now.upper is not None
        share = 1 - ((1 - LEVEL) / 2) ** (1 / n)
        print(f"| {n:,} | ±{before.upper:.4f} | ±{now.upper:.4f} | {share:.4f} |")
        rows.append({"n": n, "betting": before.upper, "melded": now.upper, "exact": share})
    print()
    return rows


def discordant_scenario(repetitions: int, rng: np.random.Generator) -> dict[str, float]:
    n, p, margin = 400, 0.02, 0.02
    d = _draw(n, p, p, repetitions, rng)
    betting = float((_betting_lower(d) >= -margin).mean())
    melded = _melded_exact(n, p, p, margin)[3]
    z = _z_pass_exact(n, p, p, margin)
    # The melded figure also by simulation, on the same draws (a check of the exact sum).
    counts = np.stack([(d == 1).sum(axis=1), (d == -1).sum(axis=1)], axis=1)
    melded_sim = float(np.mean([melded_lower_bound(n, int(f + b), int(f), LEVEL) >= -margin
                                for f, b in counts]))
    print("### 2. The 4%-discordant scenario: n = 400, true difference 0 (2% broken, 2% "
          "fixed), margin 0.02\n")
    print("| interval | P(non-inferiority PASS) |")
    print("|---|---|")
    print(f"| betting (the comparison before), {repetitions:,} simulated suites | "
          f"{betting:.3f} |")
    print(f"| melded, compatible with exact McNemar (now), exact | {melded:.3f} "
          f"(simulated on the same suites: {melded_sim:.3f}) |")
    print(f"| asymptotic z-test (Wald, not valid at every n), exact | {z:.3f} |")
    print()
    return {"betting": betting, "melded": melded, "melded_simulated": melded_sim, "z": z}


SHAPES = [(0.02, 0.02), (0.05, 0.05), (0.0, 0.05), (0.15, 0.05), (0.3, 0.3)]


def independent_pairs(repetitions: int, rng: np.random.Generator
                      ) -> dict[str, list[dict[str, Any]]]:
    print("### 3. Independent pairs, 95%: coverage, and P(PASS) at exactly −margin\n")
    print("Melded: exact sums over every table; betting: "
          f"{repetitions:,} simulated suites.\n")
    print("| n | (P(broken), P(fixed)) | melded coverage (lower miss / upper miss) | betting "
          "coverage |")
    print("|---|---|---|---|")
    coverage_rows, pass_rows = [], []
    for n in (30, 100, 400):
        for p_broken, p_fixed in SHAPES:
            if n == 400 and p_broken == 0.3:
                continue  # ~10⁴ tables of 400 pairs: minutes; n = 100 shows the shape
            coverage, low, high, _ = _melded_exact(n, p_broken, p_fixed, None)
            d = _draw(n, p_broken, p_fixed, repetitions, rng)
            lower, upper = _betting_interval(d)
            truth = p_fixed - p_broken
            betting = float(((lower <= truth + 1e-12) & (upper >= truth - 1e-12)).mean())
            print(f"| {n} | ({p_broken}, {p_fixed}) | {coverage:.4f} ({low:.4f} / {high:.4f}) "
                  f"| {betting:.4f} |")
            coverage_rows.append({"n": n, "p_broken": p_broken, "p_fixed": p_fixed,
                                  "melded": coverage, "lower_miss": low, "upper_miss": high,
                                  "betting": betting})
    print()
    margin = 0.02
    print(f"P(PASS) of a non_inferiority rule with margin {margin} when the true difference is "
          f"exactly −{margin} (P(broken) = P(fixed) + {margin}); valid is at most 0.025.\n")
    print("| n | P(fixed) | melded (exact) | betting (simulated) |")
    print("|---|---|---|---|")
    for n in (30, 100, 400):
        for p_fixed in (0.0, 0.02, 0.05, 0.1, 0.3):
            if n == 400 and p_fixed == 0.3:
                continue
            at_margin = _melded_exact(n, p_fixed + margin, p_fixed, margin)[3]
            d = _draw(n, p_fixed + margin, p_fixed, repetitions, rng)
            betting_pass = float((_betting_lower(d) >= -margin).mean())
            print(f"| {n} | {p_fixed} | {at_margin:.4f} | {betting_pass:.4f} |")
            pass_rows.append({"n": n, "p_fixed": p_fixed, "melded": at_margin,
                              "betting": betting_pass})
    print()
    return {"coverage": coverage_rows, "pass_at_margin": pass_rows}


def _clustered(clusters: int, size: int, p_broken: float, p_fixed: float, repetitions: int,
               rng: np.random.Generator) -> FloatArray:
    """A cluster breaks (each of its cases with chance 0.8), is fixed (likewise) or stays:
    its cases change together. True difference 0.8 (p_fixed − p_broken)."""
    kind = rng.random((repetitions, clusters, 1))
    sign = np.where(kind < p_broken, -1.0, np.where(kind > 1.0 - p_fixed, 1.0, 0.0))
    return sign * (rng.random((repetitions, clusters, size)) < 0.8)


def clustered_pairs(repetitions: int, rng: np.random.Generator) -> list[dict[str, Any]]:
    print("### 4. Clustered pairs, a cluster's cases changing together, 95%\n")
    print("A cluster breaks with chance P(broken) (each of its cases then breaks with chance "
          "0.8), is fixed with chance P(fixed) (likewise), or stays; true difference 0.8 × "
          "(P(fixed) − P(broken)). P(PASS) at a true difference of exactly −0.05, margin "
          f"0.05. {repetitions:,} simulated suites each.\n")
    print("| clusters × cases | (P(broken), P(fixed)) | coverage as independent pairs "
          "(before) | coverage over clusters (now) | P(PASS at −margin) before | now |")
    print("|---|---|---|---|---|---|")
    margin = 0.05
    rows = []
    for clusters, size in ((40, 5), (20, 10)):
        for p_broken, p_fixed in ((0.1, 0.1), (0.3, 0.05), (0.25, 0.25)):
            d = _clustered(clusters, size, p_broken, p_fixed, repetitions, rng)
            truth = 0.8 * (p_fixed - p_broken)
            flat = d.reshape(repetitions, clusters * size)
            lower, upper = _betting_interval(flat)
            before = float(((lower <= truth + 1e-12) & (upper >= truth - 1e-12)).mean())
            lower, upper = _betting_interval(d.mean(axis=2))
            now = float(((lower <= truth + 1e-12) & (upper >= truth - 1e-12)).mean())
            p_fixed_m = 0.1
            at = _clustered(clusters, size, p_fixed_m + margin / 0.8, p_fixed_m, repetitions,
                            rng)
            pass_before = float((_betting_lower(at.reshape(repetitions, -1)) >= -margin).mean())
            pass_now = float((_betting_lower(at.mean(axis=2)) >= -margin).mean())
            print(f"| {clusters} × {size} | ({p_broken}, {p_fixed}) | {before:.4f} | "
                  f"{now:.4f} | {pass_before:.4f} | {pass_now:.4f} |")
            rows.append({"clusters": clusters, "size": size, "p_broken": p_broken,
                         "p_fixed": p_fixed, "coverage_before": before, "coverage_now": now,
                         "pass_before": pass_before, "pass_now": pass_now})
    print()
    return rows


def timing() -> dict[str, dict[str, float]]:
    print("### 5. Time of one interval (median of 5)\n")
    print("| pairs | melded (0/1) | betting over pairs (trials) |")
    print("|---|---|---|")
    rng = np.random.default_rng(5)
    found = {}
    for n in (400, 20000):
        d = _draw(n, 0.02, 0.03, 1, rng)[0]
        times = {}
        for name, call in (("melded", binary_difference_interval),
                           ("betting", paired_difference_interval)):
            runs = []
            for _ in range(5):
                start = time.perf_counter()
                call(d, d, 0.9 + 0.01 * len(runs))  # another level each time: no cache
                runs.append(time.perf_counter() - start)
            times[name] = sorted(runs)[2]
        print(f"| {n:,} | {times['melded'] * 1e3:.1f} ms | {times['betting'] * 1e3:.1f} ms |")
        found[str(n)] = {name: round(t * 1e3, 2) for name, t in times.items()}
    print()
    return found


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks paired")
    parser.add_argument("--repetitions", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    start = time.perf_counter()
    widths = half_widths()
    discordant = discordant_scenario(args.repetitions, rng)
    independent = independent_pairs(args.repetitions, rng)
    clustered = clustered_pairs(args.repetitions, rng)
    times = timing()
    print(f"(seed {args.seed}; {time.perf_counter() - start:.0f} s)")
    return {"figures": {
        "half_width_400_melded": round(next(r["melded"] for r in widths if r["n"] == 400), 4),
        "discordant_pass_melded": round(discordant["melded"], 3),
        "discordant_pass_betting": round(discordant["betting"], 3),
        "discordant_pass_z_test": round(discordant["z"], 3),
        "independent_min_coverage_melded": round(min(
            r["melded"] for r in independent["coverage"]), 4),
        "independent_max_pass_at_margin_melded": round(max(
            r["melded"] for r in independent["pass_at_margin"]), 4),
        "clusters_min_coverage": round(min(r["coverage_now"] for r in clustered), 4),
        "clusters_max_pass_at_margin": round(max(r["pass_now"] for r in clustered), 4),
        "melded_ms_20000": times["20000"]["melded"],
    }, "params": {"repetitions": args.repetitions, "seed": args.seed},
        "details": {"half_widths": widths, "discordant": discordant, **independent,
                    "clustered": clustered, "time_ms": times}}
