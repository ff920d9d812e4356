"""Simultaneous coverage of the board (6 and 20 candidates) and its false non-inferiority.

Issue 45, point 3 (docs/board.md#why-the-intervals-are-simultaneous). Each simulated board has
a baseline and `K − 1` other candidates measured on the same cases, each case's verdict drawn
independently at the candidate's true rate (spread from 0.55 to 0.85), and each case's own cost
drawn from a skewed distribution on [0, cap] (Beta(0.3, 4) scaled to the cap, times a scale
per candidate: mean 7 % of the cap at most). A board **holds** when every interval of its
family covers its true value at once — every rate, every paired difference against the
baseline, every cost per case — and its cost per success too. `coverage_K` is the share of
boards that hold (target: at least the level, 0.9). `wrongly_non_inferior_20` is the share of
boards of 20 candidates, each exactly `margin` worse than the baseline, on which any
candidate's difference lower bound clears −margin (target: at most α/2 = 0.05);
`uncorrected_*` are the same figures with every interval at the board's level, for contrast.

Usage: python -m benchmarks board_coverage [--quick]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from oloproof.stats import MeanInterval, binary_difference_interval, rate_interval
from oloproof.stats.simultaneous import BoardCandidate, cost_interval, simultaneous_board

LEVEL = 0.9
MARGIN = 0.1
CAP = 2.0
COST_A, COST_B = 0.3, 4.0
# (the level, and α/2 at that level)
TARGETS = {"coverage_6": (">=", 0.9), "coverage_20": (">=", 0.9),
           "wrongly_non_inferior_20": ("<=", 0.05)}
QUICK = ["--quick"]


def _board(rng: np.random.Generator, rates: list[float], scales: list[float], n: int
           ) -> list[BoardCandidate]:
    return [BoardCandidate(f"c{i}", {"ok": (rng.random(n) < p).astype(float)},
                           CAP * s * rng.beta(COST_A, COST_B, n))
            for i, (p, s) in enumerate(zip(rates, scales, strict=True))]


def _covers(interval: MeanInterval, truth: float) -> bool:
    return interval.lower is not None and interval.upper is not None \
        and interval.lower <= truth <= interval.upper


def _coverage(rng: np.random.Generator, k: int, boards: int, n: int) -> tuple[float, float]:
    """The share of boards whose whole family holds, corrected and uncorrected."""
    rates = [float(r) for r in np.linspace(0.55, 0.85, k)]
    scales = [float(s) for s in np.linspace(0.5, 1.0, k)]
    means = [CAP * s * COST_A / (COST_A + COST_B) for s in scales]
    held = naive = 0
    for _ in range(boards):
        cands = _board(rng, rates, scales, n)
        board = simultaneous_board(cands, "c0", "ok", CAP, LEVEL)
        every = True
        for i, f in enumerate(board.candidates):
            every &= _covers(f.metrics["ok"], rates[i]) and _covers(f.cost_per_case, means[i])
            every &= i == 0 or _covers(f.difference["ok"], rates[i] - rates[0])
            ps = f.cost_per_success
            if ps.lower is not None and ps.upper is not None:
                every &= ps.lower <= means[i] / rates[i] <= ps.upper
        held += every
        base = np.asarray(cands[0].values["ok"])
        alone = True
        for i, c in enumerate(cands):
            x = np.asarray(c.values["ok"])
            rate = rate_interval(int(x.sum()), x.size, 0, LEVEL)
            alone &= _covers(MeanInterval(rate.estimate, rate.lower, rate.upper, ""), rates[i])
            alone &= _covers(cost_interval(c.costs, CAP, LEVEL), means[i])
            alone &= i == 0 or _covers(binary_difference_interval(x - base, x - base, LEVEL),
                                       rates[i] - rates[0])
        naive += alone
    return held / boards, naive / boards


def _wrongly_non_inferior(rng: np.random.Generator, boards: int, n: int) -> tuple[float, float]:
    rates = [0.8] + [0.8 - MARGIN] * 19
    wrong = naive = 0
    for _ in range(boards):
        cands = _board(rng, rates, [1.0] * 20, n)
        board = simultaneous_board(cands, "c0", "ok", CAP, LEVEL)
        wrong += any((f.difference["ok"].lower or -1.0) > -MARGIN for f in board.candidates[1:])
        base = np.asarray(cands[0].values["ok"])
        moves = [np.asarray(c.values["ok"]) - base for c in cands[1:]]
        naive += any((binary_difference_interval(m, m, LEVEL).lower or -1.0) > -MARGIN
                     for m in moves)
    return wrong / boards, naive / boards


def run(argv: list[str]) -> dict[str, Any]:
    parser = argparse.ArgumentParser(prog="python -m benchmarks board_coverage")
    parser.add_argument("--quick", action="store_true", help="a tenth of the boards")
    args = parser.parse_args(argv)
    boards = 40 if args.quick else 400
    n = 100
    rng = np.random.default_rng(45)
    started = time.perf_counter()
    six, six_naive = _coverage(rng, 6, boards, n)
    twenty, twenty_naive = _coverage(rng, 20, boards // 2, n)
    wrong, wrong_naive = _wrongly_non_inferior(rng, boards // 2, 2 * n)
    return {"figures": {"coverage_6": round(six, 4), "coverage_20": round(twenty, 4),
                        "wrongly_non_inferior_20": round(wrong, 4),
                        "uncorrected_coverage_6": round(six_naive, 4),
                        "uncorrected_coverage_20": round(twenty_naive, 4),
                        "uncorrected_wrongly_non_inferior_20": round(wrong_naive, 4)},
            "params": {"level": LEVEL, "margin": MARGIN, "boards_6": boards,
                       "boards_20": boards // 2, "cases": n, "cost_cap": CAP,
                       "cost": f"cap × scale × Beta({COST_A}, {COST_B})",
                       "seconds": round(time.perf_counter() - started, 1)}}
