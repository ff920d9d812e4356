"""Speed of the betting interval for bounded means (SPEC §15.2; issue 12, acceptance 1).

It runs once per metric over every case (or cluster): 20,000–200,000 values. Reports the time
of `bounded_mean_interval` per call and per value, how many capital evaluations the root search
needed (each is one vectorised pass over the values), the growth from 20,000 to 200,000 values,
and, for scale, a grid search over 1,000 candidate means (what a direct implementation of the
paper's set would do) on the same values. Usage: python benchmarks/betting.py
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

import numpy as np
import numpy.typing as npt

import oloproof.stats.betting as betting
from oloproof.stats import bounded_mean_interval

FloatArray = npt.NDArray[np.float64]


def _values(kind: str, n: int, rng: np.random.Generator) -> FloatArray:
    if kind == "uniform":
        return rng.uniform(size=n)
    if kind == "Beta(0.5, 5)":
        return rng.beta(0.5, 5.0, size=n)
    if kind == "0/1 at 0.9":
        return (rng.uniform(size=n) < 0.9).astype(np.float64)
    assert kind == "shares of 3"
    return rng.binomial(3, 0.8, size=n) / 3.0


def _timed(call: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _evaluations(values: FloatArray) -> int:
    original = betting._log_capital_excess
    calls = 0

    def counted(*args: object) -> FloatArray:
        nonlocal calls
        calls += 1
        return original(*args)  # type: ignore[arg-type]

    betting._log_capital_excess = counted  # type: ignore[assignment]
    try:
        bounded_mean_interval(values, values, 0.95)
    finally:
        betting._log_capital_excess = original  # type: ignore[assignment]
    return calls


def _grid_bounds(values: FloatArray, level: float, points: int = 1001) -> tuple[float, float]:
    """The paper's set on a grid of candidate means, chunked (the approach not taken)."""
    alpha = 1.0 - level
    log_threshold = np.log(2.0 / alpha)
    x = values[None, :]
    bets = betting._predictable_bets(x, float(log_threshold))[0]
    grid = np.linspace(0.0, 1.0, points)
    keep = np.zeros(points, dtype=bool)
    for start in range(0, points, 16):
        m = grid[start:start + 16, None]
        with np.errstate(divide="ignore"):
            long_bet = np.minimum(bets, 0.5 / m)
            short_bet = np.minimum(bets, 0.5 / (1.0 - m))
        long_side = np.cumsum(np.log1p(long_bet * (values - m)), axis=1).max(axis=1)
        short_side = np.cumsum(np.log1p(-short_bet * (values - m)), axis=1).max(axis=1)
        keep[start:start + 16] = np.maximum(long_side, short_side) < log_threshold
    inside = grid[keep]
    return (float(inside.min()), float(inside.max())) if inside.size else (1.0, 0.0)


def main() -> None:
    rng = np.random.default_rng(2023)
    kinds = ["uniform", "Beta(0.5, 5)", "0/1 at 0.9", "shares of 3"]
    print("| values | n | ms per call | ns per value | capital evaluations |")
    print("|---|---|---|---|---|")
    per_size: dict[int, list[float]] = {}
    for n in (2_000, 20_000, 200_000):
        for kind in kinds:
            values = _values(kind, n, rng)
            repeats = 21 if n <= 20_000 else 7
            seconds = _timed(lambda v=values: bounded_mean_interval(v, v, 0.95), repeats)
            per_size.setdefault(n, []).append(seconds)
            print(f"| {kind} | {n:,} | {seconds * 1e3:.2f} | {seconds / n * 1e9:.0f} | "
                  f"{_evaluations(values)} |")
    growth = [big / small for big, small in zip(per_size[200_000], per_size[20_000])]
    print()
    print("growth 200,000 / 20,000 values: " + ", ".join(f"{g:.1f}×" for g in growth)
          + f" (median {statistics.median(growth):.1f}×)")
    values = _values("uniform", 20_000, rng)
    root = _timed(lambda: bounded_mean_interval(values, values, 0.95), 11)
    grid = _timed(lambda: _grid_bounds(values, 0.95), 3)
    found = bounded_mean_interval(values, values, 0.95)
    print(f"20,000 uniform values: root search {root * 1e3:.1f} ms, grid of 1,001 means "
          f"{grid * 1e3:.0f} ms ({grid / root:.0f}× slower, and only to 1e-3); "
          f"bounds {found.lower:.6f}–{found.upper:.6f} vs grid {_grid_bounds(values, 0.95)}")


if __name__ == "__main__":
    main()
