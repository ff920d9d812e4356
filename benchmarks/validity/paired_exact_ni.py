"""Paired 0/1 non-inferiority: an exact unconditional score test beside the melded interval.

Issue 40, point 4 (optional): would an exact unconditional test of non-inferiority for matched
0/1 pairs pass more often than the melded interval `compare` uses (Fay & Lumbard 2021), at the
same size? Measured here; not adopted (see the figures' `verdict` and docs/compare.md).

The test: for ``H0: p_fixed − p_broken ≤ −margin``, the score statistic of Tango (1998)
(the difference of the discordant shares less ``−margin``, over its standard error at the
restricted maximum-likelihood estimate under ``H0``); its p-value is the largest tail
probability of the statistic over the nuisance parameter on the boundary (the discordant share;
a grid of `--grid` points), every table of broken and fixed pairs summed — the exact
unconditional test of Suissa & Shuster (1985). A rule PASSes when the p-value is at most
``α/2``. Its *size* is the largest chance of a PASS at the boundary, checked on a grid three
times as fine as the one the p-values were taken over. The melded interval's PASS is its lower
bound at or above ``−margin``. Both powers are exact sums over every table above 1e-12.

Usage: python -m benchmarks paired_exact_ni [--quick]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np
import numpy.typing as npt
from scipy.special import gammaln

from oloproof.stats import melded_lower_bound

TARGETS: dict[str, tuple[str, float]] = {}
QUICK = ["--quick"]  # n = 100 only: a few CPU seconds

HALF_ALPHA = 0.025
FloatArray = npt.NDArray[np.float64]


def _cells(n: int) -> tuple[FloatArray, FloatArray]:
    """Every table: broken pairs b and fixed pairs c with b + c ≤ n."""
    b, c = np.meshgrid(np.arange(n + 1), np.arange(n + 1), indexing="ij")
    keep = b + c <= n
    return b[keep].astype(float), c[keep].astype(float)


def _score(b: FloatArray, c: FloatArray, n: int, d0: float) -> FloatArray:
    """Tango's score statistic for ``p_c − p_b = d0`` (large: the difference is above d0);
    the restricted estimate of ``p_b`` by bisection on the score equation."""
    low = np.full(b.shape, max(0.0, -d0) + 1e-12)
    high = np.full(b.shape, (1.0 - d0) / 2.0 - 1e-12)
    for _ in range(60):
        mid = (low + high) / 2.0
        slope = b / mid + c / (mid + d0) - 2.0 * (n - b - c) / (1.0 - 2.0 * mid - d0)
        low, high = np.where(slope > 0, mid, low), np.where(slope > 0, high, mid)
    pb = (low + high) / 2.0
    variance = (2.0 * pb + d0 - d0**2) / n
    z: FloatArray = ((c - b) / n - d0) / np.sqrt(np.maximum(variance, 1e-300))
    return z


def _log_pmf(b: FloatArray, c: FloatArray, n: int, pb: float, pc: float) -> FloatArray:
    rest = n - b - c
    with np.errstate(divide="ignore", invalid="ignore"):
        out: FloatArray = (gammaln(n + 1) - gammaln(b + 1) - gammaln(c + 1) - gammaln(rest + 1)
                           + np.where(b > 0, b * np.log(pb), 0.0)
                           + np.where(c > 0, c * np.log(pc), 0.0)
                           + np.where(rest > 0, rest * np.log1p(-pb - pc), 0.0))
    return out


def _boundary(margin: float, points: int) -> FloatArray:
    """The nuisance on the boundary: p_b from max(0, margin) to (1 + margin)/2, interior."""
    grid: FloatArray = np.linspace(margin, (1.0 + margin) / 2.0, points)[1:-1]
    return grid


def _rejects(n: int, margin: float, grid: int) -> tuple[FloatArray, FloatArray,
                                                        npt.NDArray[np.bool_]]:
    b, c = _cells(n)
    z = _score(b, c, n, -margin)
    order = np.argsort(-z, kind="stable")
    ranked = -z[order]
    last = np.searchsorted(ranked, ranked, side="right") - 1  # ties share their tail
    p_value = np.zeros(b.size)
    for pb in _boundary(margin, grid):
        tail = np.cumsum(np.exp(_log_pmf(b[order], c[order], n, pb, pb - margin)))
        p_value[order] = np.maximum(p_value[order], tail[last])
    return b, c, p_value <= HALF_ALPHA


def _chance(b: FloatArray, c: FloatArray, n: int, passes: npt.NDArray[np.bool_], pb: float,
            pc: float) -> float:
    return float(np.exp(_log_pmf(b, c, n, pb, pc))[passes].sum())


def _melded_power(b: FloatArray, c: FloatArray, n: int, margin: float, pb: float,
                  pc: float) -> float:
    p = np.exp(_log_pmf(b, c, n, pb, pc))
    keep = np.flatnonzero(p > 1e-12)
    return float(sum(p[i] for i in keep
                     if melded_lower_bound(n, int(b[i] + c[i]), int(c[i]), 0.95) >= -margin))


def run(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="paired_exact_ni")
    parser.add_argument("--quick", action="store_true", help="n = 100 only")
    parser.add_argument("--grid", type=int, default=200, help="nuisance points per p-value")
    args = parser.parse_args(argv)
    sizes = (100,) if args.quick else (100, 200, 400)
    rows: dict[str, dict[str, float]] = {}
    gains, worst_size, seconds = [], 0.0, {}
    for n in sizes:
        for margin in (0.02, 0.05):
            start = time.process_time()
            b, c, passes = _rejects(n, margin, args.grid)
            seconds[f"n={n} margin={margin}"] = time.process_time() - start
            size = max(_chance(b, c, n, passes, pb, pb - margin)
                       for pb in _boundary(margin, 3 * args.grid))
            worst_size = max(worst_size, size)
            for discordant in (0.04, 0.10):
                half = discordant / 2.0
                exact = _chance(b, c, n, passes, half, half)
                melded = _melded_power(b, c, n, margin, half, half)
                key = f"n={n} margin={margin} discordant={discordant}"
                rows[key] = {"exact_unconditional": exact, "melded": melded,
                             "gain": exact - melded, "size": size}
                gains.append(exact - melded)
                print(f"{key}: exact unconditional {exact:.3f}, melded {melded:.3f} "
                      f"(size {size:.4f})", flush=True)
    figures: dict[str, Any] = {
        "gain_min": min(gains), "gain_max": max(gains), "size_max": worst_size,
        "seconds_per_rejection_region": seconds, "rows": rows,
        "verdict": ("not adopted: more power (the gain figures), but its size is only checked "
                    "on a grid of the nuisance (no bound between points), it gives a p-value, "
                    "not an interval a comparison can show, and it sums every table (n² / 2 of "
                    "them: seconds at n = 400, out of reach at n = 20,000)"),
    }
    return {"figures": figures, "params": {"sizes": list(sizes), "grid": args.grid,
                                           "level": 0.95}}


if __name__ == "__main__":
    import json
    import sys
    result = run(sys.argv[1:])
    print(json.dumps({k: v for k, v in result["figures"].items() if k != "rows"}, indent=1))
