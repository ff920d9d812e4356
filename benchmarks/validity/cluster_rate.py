"""Clustered rates: coverage and width by shape: before (clusters' mean share), now (cases' rate).

Issue 40: a clustered rate is the rate of its cases, with an interval over clusters.

A suite's clusters have the sizes of a shape (fixed, as a suite's are); each cluster ``c`` has
an expected share ``μ_c`` of passing cases, and its cases are drawn with a within-cluster
correlation: independent cases, a cluster rate drawn from a Beta of concentration 20 (weak) or
0.5 (strong), or every case of a cluster agreeing (all-or-nothing). What is estimated is the
cases' rate ``R = Σ N_c μ_c / Σ N_c`` — what "k / n observed" beside the row says. For each
shape, rate pattern (every cluster at 0.5, 0.8 or 0.95; or small clusters at 0.95 and large
ones at 0.5, as in the audit's example) and correlation, it draws suites and counts how often
each interval holds ``R`` (two-sided and each side), and their mean width:

- `before`: the Bentkus interval over the clusters' shares (what a clustered rate was until
  issue 40), which estimates the mean share, not ``R``;
- `proposed`: the Bentkus test of ``(Y_c − p N_c)/M`` shifted to [0, 1] (the mapping the audit
  suggested), inverted;
- `now`: `oloproof.stats.cluster_ratio` (the smallest of the Bentkus bounds at both ends of the
  shifts and Hoeffding's with each cluster's range, with the clusters also cut at a few of the
  sizes' quantiles), inverted.

A second table does the same for the paired difference of a comparison over clusters: a
cluster breaks (each of its pairs with chance 0.8), is fixed, or stays; what is estimated is the
pairs' mean difference. `before` is the betting interval of the clusters' mean differences (what
compare took until issue 40), `now` `oloproof.stats.cluster_difference_interval` (the betting
interval of the ratio over clusters). Patterns: every cluster breaking or being fixed with
chance 0.1 or 0.02, or the clusters above the median size breaking with chance 0.2 and the
others being fixed with chance 0.2.

Usage: python -m benchmarks cluster_rate [--repetitions 2000] [--seed 2026] [--quick]
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

from oloproof.stats import bentkus_lower_bounds, betting_lower_bounds, ratio_lower_bounds
from oloproof.stats._roots import increasing_root
from oloproof.stats.bentkus import LOG_FLOOR, log_beta
from oloproof.stats.cluster_ratio import cluster_ratio_lower_bounds

TARGETS = {
    # Each side misses at most α/2 = 2.5% (the Monte-Carlo error of 2,000 suites at 2.5% is
    # about 0.35 points: allow one point).
    "now_worst_side_miss": ("<=", 0.035),
    "now_worst_coverage": (">=", 0.94),
    # On equal sizes the interval is the one before: no width moves.
    "equal_sizes_width_ratio": ("==", 1.0),
    "paired_now_worst_coverage": (">=", 0.94),
    "paired_equal_sizes_width_ratio": ("==", 1.0),
}

QUICK = ["--quick"]  # three shapes and two paired ones, 400 suites each: about ten CPU seconds

LEVEL = 0.95
FloatArray = npt.NDArray[np.float64]


def _shapes(rng: np.random.Generator) -> dict[str, FloatArray]:
    return {
        "audit: 20 x 1 + 1 x 80": np.array([1.0] * 20 + [80.0]),
        "100 x 1 + 1 x 80": np.array([1.0] * 100 + [80.0]),
        "21 sizes 1-80": rng.integers(1, 81, 21).astype(float),
        "40 sizes 1-80": rng.integers(1, 81, 40).astype(float),
        "100 sizes 1-80": rng.integers(1, 81, 100).astype(float),
        "30 geometric (mean 3)": rng.geometric(1 / 3, 30).astype(float),
        "100 geometric (mean 3)": rng.geometric(1 / 3, 100).astype(float),
        "39 x 3 + 1 x 4": np.array([3.0] * 39 + [4.0]),
        "40 x 3 (equal)": np.array([3.0] * 40),
    }


def _means(sizes: FloatArray, pattern: str) -> FloatArray:
    if pattern == "small 0.95, large 0.5":
        return np.where(sizes <= np.median(sizes), 0.95, 0.5)
    return np.full(sizes.shape, float(pattern))


def _draw(sizes: FloatArray, means: FloatArray, correlation: str, repetitions: int,
          rng: np.random.Generator) -> FloatArray:
    """Per suite (rows) and cluster (columns), the number of passing cases."""
    n = sizes.astype(np.int64)
    shape = (repetitions, sizes.size)
    if correlation == "independent":
        return rng.binomial(n, means, size=shape).astype(float)
    if correlation == "all-or-nothing":
        return (rng.random(shape) < means) * sizes
    kappa = 20.0 if correlation == "weak" else 0.5
    a, b = means * kappa, (1.0 - means) * kappa
    rates = rng.beta(np.maximum(a, 1e-9), np.maximum(b, 1e-9), size=shape)
    return rng.binomial(n, rates).astype(float)


def _before(passes: FloatArray, sizes: FloatArray) -> tuple[FloatArray, FloatArray]:
    shares = np.sort(passes / sizes, axis=1).sum(axis=1)
    k = sizes.size
    lows = bentkus_lower_bounds(np.concatenate([shares, k - shares]), k, LEVEL)
    r = passes.shape[0]
    return lows[:r], 1.0 - lows[r:]


def _proposed_lower(totals: FloatArray, sizes: FloatArray) -> FloatArray:
    """The lower bound of the mapping first proposed: the Bentkus test of the values
    ``(Y_c + p(M − N_c)) / M`` (mean ``p``) at their sum, inverted over ``p``."""
    k, n_total, top = sizes.size, float(sizes.sum()), float(sizes.max())
    log_half = math.log(0.025)
    out = np.zeros(totals.shape)
    work = totals > 0
    sw = totals[work]

    def g(p: FloatArray, rows: npt.NDArray[np.bool_]) -> FloatArray:
        s = np.minimum((sw[rows] + p * (k * top - n_total)) / top, float(k))
        return np.maximum(log_beta(s, k, p), LOG_FLOOR) - log_half

    a, _ = increasing_root(g, np.zeros(sw.shape), sw / n_total,
                           np.full(sw.shape, LOG_FLOOR - log_half),
                           np.full(sw.shape, -log_half), 2.0**-30)
    out[work] = a
    return out


def _two_sided(lower: Callable[[FloatArray, FloatArray], FloatArray], totals: FloatArray,
               sizes: FloatArray) -> tuple[FloatArray, FloatArray]:
    n_total = float(sizes.sum())
    both = lower(np.concatenate([totals, n_total - totals]), sizes)
    r = totals.size
    return both[:r], 1.0 - both[r:]


def _now_lower(totals: FloatArray, sizes: FloatArray) -> FloatArray:
    return cluster_ratio_lower_bounds(totals, sizes, LEVEL)


def _cell(sizes: FloatArray, pattern: str, correlation: str, repetitions: int,
          rng: np.random.Generator) -> dict[str, dict[str, float]]:
    means = _means(sizes, pattern)
    truth = float((sizes * means).sum() / sizes.sum())
    passes = _draw(sizes, means, correlation, repetitions, rng)
    totals = np.sort(passes, axis=1).sum(axis=1)
    out = {}
    intervals = {
        "before": _before(passes, sizes),
        "proposed": _two_sided(_proposed_lower, totals, sizes),
        "now": _two_sided(_now_lower, totals, sizes),
    }
    for name, (low, high) in intervals.items():
        out[name] = {
            "low_miss": float((low > truth).mean()),
            "high_miss": float((high < truth).mean()),
            "coverage": float(((low <= truth) & (truth <= high)).mean()),
            "width": float((high - low).mean()),
        }
    return out


def _audit_example() -> dict[str, float]:
    from oloproof.stats import bentkus_interval
    from oloproof.stats.cluster_ratio import cluster_ratio_interval
    sizes = [1] * 20 + [80]
    passes = [1] * 20 + [40]
    now = cluster_ratio_interval(passes, passes, sizes, LEVEL, observed_sum=60,
                                 observed_cases=100)
    shares = [p / s for p, s in zip(passes, sizes, strict=True)]
    before = bentkus_interval(shares, shares, LEVEL)
    return {"audit_before_estimate": float(before.estimate or 0.0),
            "audit_before_lower": float(before.lower or 0.0),
            "audit_before_upper": float(before.upper or 0.0),
            "audit_now_estimate": float(now.estimate or 0.0),
            "audit_now_lower": float(now.lower or 0.0),
            "audit_now_upper": float(now.upper or 0.0)}


def _paired_shapes(rng: np.random.Generator) -> dict[str, FloatArray]:
    return {
        "60 sizes 1-10": rng.integers(1, 11, 60).astype(float),
        "40 sizes 1-40": rng.integers(1, 41, 40).astype(float),
        "39 x 5 + 1 x 6": np.array([5.0] * 39 + [6.0]),
        "40 x 5 (equal)": np.array([5.0] * 40),
    }


def _paired_cell(sizes: FloatArray, pattern: str, repetitions: int,
                 rng: np.random.Generator) -> dict[str, dict[str, float]]:
    if pattern == "size-dependent":
        big = sizes > np.median(sizes)
        broken, fixed = np.where(big, 0.2, 0.0), np.where(big, 0.0, 0.2)
    else:
        broken = fixed = np.full(sizes.shape, float(pattern))
    truth = float(0.8 * ((fixed - broken) * sizes).sum() / sizes.sum())
    kind = rng.random((repetitions, sizes.size))
    sign = np.where(kind < broken, -1.0, np.where(kind > 1.0 - fixed, 1.0, 0.0))
    sums = sign * rng.binomial(sizes.astype(np.int64), 0.8, (repetitions, sizes.size))
    means = (sums / sizes + 1.0) / 2.0
    lows = betting_lower_bounds(np.vstack([means, 1.0 - means]), LEVEL)
    mean = means.mean(axis=1)
    before = (2.0 * np.minimum(lows[:repetitions], mean) - 1.0,
              1.0 - 2.0 * np.minimum(lows[repetitions:], 1.0 - mean))
    top = float(sizes.max())
    scales = np.broadcast_to(sizes / top, sums.shape)
    values = np.vstack([(sums + sizes) / (2.0 * top), (sizes - sums) / (2.0 * top)])
    lows = ratio_lower_bounds(values, np.vstack([scales, scales]), LEVEL)
    ratio = sums.sum(axis=1) / sizes.sum()
    now = (np.minimum(2.0 * lows[:repetitions] - 1.0, ratio),
           np.maximum(1.0 - 2.0 * lows[repetitions:], ratio))
    out = {}
    for name, (low, high) in (("before", before), ("now", now)):
        out[name] = {"coverage": float(((low <= truth) & (truth <= high)).mean()),
                     "width": float((high - low).mean())}
    return out


def _paired(repetitions: int, rng: np.random.Generator, quick: bool) -> dict[str, object]:
    shapes = _paired_shapes(rng)
    if quick:
        shapes = {k: v for k, v in shapes.items() if k.startswith(("60", "40 x"))}
    table: dict[str, object] = {}
    worst = 1.0
    equal_ratio = None
    for shape, sizes in shapes.items():
        cells = {pattern: _paired_cell(sizes, pattern, repetitions, rng)
                 for pattern in ("0.1", "0.02", "size-dependent")}
        summary = {f"{name}_{what}": (min if what == "worst_coverage" else np.mean)(
            [c[name]["coverage" if what == "worst_coverage" else "width"]
             for c in cells.values()]) for name in ("before", "now")
            for what in ("worst_coverage", "mean_width")}
        table[shape] = {**{k: float(v) for k, v in summary.items()}, "cells": cells}
        worst = min(worst, float(summary["now_worst_coverage"]))
        if shape.endswith("(equal)"):
            equal_ratio = round(float(summary["now_mean_width"])
                                / float(summary["before_mean_width"]), 9)
        print(f"paired {shape:18} " + " ".join(
            f"{n}: cov {summary[n + '_worst_coverage']:.3f} w {summary[n + '_mean_width']:.3f} |"
            for n in ("before", "now")), flush=True)
    return {"paired_now_worst_coverage": worst, "paired_equal_sizes_width_ratio": equal_ratio,
            "paired_shapes": table}


def run(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="cluster_rate")
    parser.add_argument("--repetitions", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=2026)
    parser.add_argument("--quick", action="store_true", help="three shapes, 400 suites")
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    shapes = _shapes(rng)
    repetitions = args.repetitions
    if args.quick:
        shapes = {k: v for k, v in shapes.items() if k.startswith(("audit", "40 sizes", "40 x"))}
        repetitions = 400
    patterns = ["0.5", "0.8", "0.95", "small 0.95, large 0.5"]
    correlations = ["independent", "weak", "strong", "all-or-nothing"]
    table: dict[str, dict[str, object]] = {}
    worst_side = 0.0
    worst_coverage = 1.0
    equal_ratio = None
    for shape, sizes in shapes.items():
        rows = {}
        for pattern in patterns:
            for correlation in correlations:
                rows[f"{pattern} / {correlation}"] = _cell(sizes, pattern, correlation,
                                                           repetitions, rng)
        summary: dict[str, object] = {"sizes": f"{int(sizes.min())}-{int(sizes.max())}, "
                                               f"{sizes.size} clusters, {int(sizes.sum())} cases"}
        for name in ("before", "proposed", "now"):
            cells = [r[name] for r in rows.values()]
            summary[f"{name}_worst_coverage"] = min(c["coverage"] for c in cells)
            summary[f"{name}_worst_side_miss"] = max(max(c["low_miss"], c["high_miss"])
                                                     for c in cells)
            summary[f"{name}_mean_width"] = float(np.mean([c["width"] for c in cells]))
        summary["cells"] = rows
        table[shape] = summary
        worst_side = max(worst_side, float(summary["now_worst_side_miss"]))  # type: ignore[arg-type]
        worst_coverage = min(worst_coverage, float(summary["now_worst_coverage"]))  # type: ignore[arg-type]
        if shape.endswith("(equal)"):
            equal_ratio = round(float(summary["now_mean_width"])  # type: ignore[arg-type]
                                / float(summary["before_mean_width"]), 9)  # type: ignore[arg-type]
        print(f"{shape:26} " + " ".join(
            f"{n}: cov {summary[n + '_worst_coverage']:.3f} "
            f"side {summary[n + '_worst_side_miss']:.3f} w {summary[n + '_mean_width']:.3f} |"
            for n in ("before", "proposed", "now")), flush=True)
    figures: dict[str, object] = {"now_worst_side_miss": worst_side,
                                  "now_worst_coverage": worst_coverage,
                                  **_audit_example(), "shapes": table,
                                  **_paired(repetitions, rng, args.quick)}
    if equal_ratio is not None:
        figures["equal_sizes_width_ratio"] = equal_ratio
    return {"figures": figures,
            "params": {"repetitions": repetitions, "seed": args.seed, "level": LEVEL,
                       "patterns": patterns, "correlations": correlations}}


if __name__ == "__main__":
    import json
    import sys
    result = run(sys.argv[1:])
    figures = dict(result["figures"])  # type: ignore[call-overload]
    figures.pop("shapes")
    figures.pop("paired_shapes")
    print(json.dumps(figures, indent=1))
