"""Coverage of the intervals for means of values in [0, 1] — Bentkus (exact and simulated) and
betting (bounded means, clusters, paired differences) — against their level (issues 12, 14
and 26).

Not a speed benchmark: the share of simulated suites whose reported interval contains the true
mean, for the settings the tests check (there with fewer repetitions), at 10,000 repetitions
each. The betting intervals are the ones `bounded_mean_interval` / `paired_difference_interval`
report (the paper's set widened to the sample mean where it leaves it out), computed in batches
with `betting_lower_bounds`; the Bentkus interval (rates over fractions and clusters since
issue 26) with `bentkus_lower_bounds`, and on lattice shapes (0/1 and two-point values, shares
of trials) its coverage is computed exactly, over every sum, on a grid of true means and every
n from 5 to 400 — the heavy sweep behind the property tests of
`tests/stats/test_stats_bentkus.py`.

The figures are, per table, the lowest coverage less its level (`…_min_excess`: each at least
0, the targets); the tables are in the saved JSON's details.

Arguments: [--only bentkus]
"""

from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt

from oloproof.stats import bentkus_lower_bounds, betting_lower_bounds

FloatArray = npt.NDArray[np.float64]
REPETITIONS = 10_000
TARGETS = {"bentkus_exact_min_excess": (">=", 0.0), "bentkus_simulated_min_excess": (">=", 0.0),
           "betting_bounded_means_min_excess": (">=", 0.0),
           "betting_clusters_min_excess": (">=", 0.0),
           "betting_paired_min_excess": (">=", 0.0)}
Rows = list[dict[str, Any]]


def _interval(values: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    means = values.mean(axis=1)
    lower = np.minimum(betting_lower_bounds(values, level), means)
    upper = np.maximum(1.0 - betting_lower_bounds(1.0 - values, level), means)
    return lower, upper


def _line(rows: Rows, level: float, label: str, lower: FloatArray, upper: FloatArray,
          truth: float) -> str:
    """The table's line for one setting; its figures are added to `rows`."""
    covered = np.mean((lower <= truth + 1e-12) & (truth - 1e-12 <= upper))
    rows.append({"setting": label, "level": level, "coverage": float(covered),
                 "lower_above": float(np.mean(lower > truth + 1e-12)),
                 "upper_below": float(np.mean(upper < truth - 1e-12)),
                 "mean_width": float(np.mean(upper - lower))})
    return (f"| {label} | {covered:.4f} | {np.mean(lower > truth + 1e-12):.4f} | "
            f"{np.mean(upper < truth - 1e-12):.4f} | {np.mean(upper - lower):.3f} |")


def bounded_means(rng: np.random.Generator) -> Rows:
    print("### Bounded means (values in [0, 1])\n")
    print("| setting | coverage | lower above truth | upper below truth | mean width |")
    print("|---|---|---|---|---|")
    rows: Rows = []
    for level in (0.9, 0.95):
        for n in (20, 50, 200):
            shape = (REPETITIONS, n)
            draws: list[tuple[str, FloatArray, float]] = [
                ("two-point 0/1 at 0.9", (rng.uniform(size=shape) < 0.9).astype(float), 0.9),
                ("two-point 0.2/0.7", np.where(rng.uniform(size=shape) < 0.5, 0.7, 0.2), 0.45),
                ("Beta(0.5, 5)", rng.beta(0.5, 5.0, size=shape), 0.5 / 5.5),
                ("uniform", rng.uniform(size=shape), 0.5),
            ]
            for name, values, truth in draws:
                lower, upper = _interval(values, level)
                print(_line(rows, level, f"{name}, n = {n}, {level:.0%}", lower, upper,
                            truth))
    print()
    return rows


# The audit's clustered settings: (rate, intra-cluster correlation).
CLUSTERED = ((0.75, 0.5), (0.97, 0.8), (0.75, 1.0), (0.97, 1.0))


def _cluster_shares(rng: np.random.Generator, rate: float, correlation: float) -> FloatArray:
    """Each of 40 clusters' share of passing cases, for `REPETITIONS` suites: clusters of 2–4
    cases whose chance of passing is Beta-distributed around `rate` with the given
    intra-cluster correlation (1: a cluster's cases always agree)."""
    sizes = rng.integers(2, 5, size=(REPETITIONS, 40))
    if correlation >= 1.0:
        return (rng.uniform(size=(REPETITIONS, 40)) < rate).astype(float)
    total = 1.0 / correlation - 1.0
    chance = rng.beta(rate * total, (1.0 - rate) * total, size=(REPETITIONS, 40))
    shares: FloatArray = rng.binomial(sizes, chance) / sizes
    return shares


def clusters(rng: np.random.Generator) -> Rows:
    print("### Clusters: 40 clusters of 2–4 cases, 95% (the audit's settings)\n")
    print("| setting | coverage | lower above truth | upper below truth | mean width |")
    print("|---|---|---|---|---|")
    rows: Rows = []
    for rate, correlation in CLUSTERED:
        shares = _cluster_shares(rng, rate, correlation)
        lower, upper = _interval(shares, 0.95)
        print(_line(rows, 0.95, f"rate {rate}, intra-cluster correlation {correlation}", lower,
                    upper, rate))
    print()
    return rows


def paired(rng: np.random.Generator) -> Rows:
    print("### Paired differences in {−1, 0, 1}, 95%\n")
    print("| setting (P(broken), P(same), P(fixed)) | coverage | lower above truth | "
          "upper below truth | mean width |")
    print("|---|---|---|---|---|")
    rows: Rows = []
    shapes = [(0.05, 0.90, 0.05), (0.02, 0.88, 0.10), (0.30, 0.40, 0.30), (0.0, 0.95, 0.05),
              (0.15, 0.80, 0.05)]
    for n in (30, 100, 400):
        for shape in shapes:
            d = rng.choice([-1.0, 0.0, 1.0], p=shape, size=(REPETITIONS, n))
            lower, upper = _interval((d + 1.0) / 2.0, 0.95)
            print(_line(rows, 0.95, f"{shape}, n = {n}", 2 * lower - 1, 2 * upper - 1,
                        shape[2] - shape[0]))
    print()
    return rows


def _bentkus(sums: FloatArray, n: int, level: float) -> tuple[FloatArray, FloatArray]:
    lower = bentkus_lower_bounds(sums, n, level)
    upper = 1.0 - bentkus_lower_bounds(np.clip(n - sums, 0.0, n), n, level)
    return lower, upper


def bentkus_exact(level: float = 0.95) -> Rows:
    """The Bentkus interval's coverage computed exactly (no simulation) on lattice shapes: the
    lowest over a grid of true means, at each n."""
    from scipy.special import bdtr  # the binomial's pmf from its distribution function

    def pmf(k: FloatArray, n: int, p: float) -> FloatArray:
        below = np.where(k > 0, bdtr(k - 1, n, p), 0.0)
        return np.asarray(bdtr(k, n, p) - below, dtype=np.float64)

    print(f"### Bentkus interval, exact coverage on lattice shapes ({level:.0%})\n")
    print("Lowest coverage over the grid of true means (0.01, 0.02, …, 0.99 for 0/1; weights "
          "0.02 … 0.98 for two-point values), computed over every possible sum.\n")
    print("| n | 0/1 values (every trial agrees) | two-point 0 / 0.5 | two-point 0.2 / 0.7 | "
          "two-point 0.5 / 1 |")
    print("|---|---|---|---|---|")
    rows: Rows = []
    for n in (5, 10, 18, 20, 40, 60, 100, 200, 400):
        k = np.arange(n + 1, dtype=np.float64)
        cells = []
        for a, b in ((0.0, 1.0), (0.0, 0.5), (0.2, 0.7), (0.5, 1.0)):
            sums = np.clip(n * a + (b - a) * k, 0.0, n)
            lower, upper = _bentkus(sums, n, level)
            worst = 1.0
            for w in np.linspace(0.01, 0.99, 99) if (a, b) == (0.0, 1.0) else \
                    np.linspace(0.02, 0.98, 49):
                truth = a + (b - a) * w
                covered = (lower <= truth + 1e-12) & (truth - 1e-12 <= upper)
                worst = min(worst, float(pmf(k, n, float(w))[covered].sum()))
            cells.append(f"{worst:.4f}")
            rows.append({"setting": f"values {a} / {b}, n = {n}", "level": level,
                         "coverage": worst})
        print(f"| {n} | " + " | ".join(cells) + " |")
    print()
    return rows


def bentkus_simulated(rng: np.random.Generator) -> Rows:
    """The Bentkus interval on continuous and clustered shapes, 10,000 suites each."""
    print("### Bentkus interval, simulated (10,000 suites each)\n")
    print("| setting | coverage | lower above truth | upper below truth | mean width |")
    print("|---|---|---|---|---|")
    rows: Rows = []
    for level in (0.9, 0.95):
        for n in (5, 20, 50, 200, 400):
            shape = (REPETITIONS, n)
            draws: list[tuple[str, FloatArray, float]] = [
                ("Beta(0.5, 5)", rng.beta(0.5, 5.0, size=shape), 0.5 / 5.5),
                ("Beta(5, 0.5)", rng.beta(5.0, 0.5, size=shape), 5.0 / 5.5),
                ("uniform", rng.uniform(size=shape), 0.5),
                ("shares of 4, chance Beta(3, 0.7)",
                 rng.binomial(4, rng.beta(3.0, 0.7, size=shape)) / 4.0, 3.0 / 3.7),
            ]
            for name, values, truth in draws:
                lower, upper = _bentkus(values.sum(axis=1), n, level)
                print(_line(rows, level, f"{name}, n = {n}, {level:.0%}", lower, upper,
                            truth))
    for rate, correlation in CLUSTERED:
        shares = _cluster_shares(rng, rate, correlation)
        lower, upper = _bentkus(shares.sum(axis=1), 40, 0.95)
        print(_line(rows, 0.95, f"40 clusters of 2–4, rate {rate}, intra-cluster correlation "
                    f"{correlation}, 95%", lower, upper, rate))
    print()
    return rows


def run(argv: list[str]) -> dict:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m benchmarks coverage")
    parser.add_argument("--only", choices=["bentkus"])
    args = parser.parse_args(argv)
    rng = np.random.default_rng(2023)
    tables = {"bentkus_exact": bentkus_exact(), "bentkus_simulated": bentkus_simulated(rng)}
    if args.only != "bentkus":
        tables["betting_bounded_means"] = bounded_means(rng)
        tables["betting_clusters"] = clusters(rng)
        tables["betting_paired"] = paired(rng)
    return {"figures": {f"{name}_min_excess": round(min(r["coverage"] - r["level"]
                                                        for r in rows), 4)
                        for name, rows in tables.items()},
            "params": {"only": args.only, "suites": REPETITIONS, "seed": 2023},
            "details": tables}
