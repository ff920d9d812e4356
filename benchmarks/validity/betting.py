"""The betting and Bentkus intervals for means in [0, 1] side by side: coverage, the gap to
Clopper–Pearson on 0/1 values (issue 26: within 0.02), speed, and what a run with trials pays.

The betting interval (Waudby-Smith & Ramdas 2023) is still the paired difference's; the
Bentkus interval replaced it for rates over fractions and clusters (issue 26).

Sections, each a function (`run` runs them all; `--only NAME` one of them):

- `rate_shapes`: both intervals on the shapes of issue 26 — every case's trials agreeing (0/1
  values, against Clopper–Pearson), skewed shares, two-point values — at n = 5 … 400: mean
  lower bound, width and coverage over simulated suites, and the largest gap to
  Clopper–Pearson on 0/1 values at each n.
- `speed`: each interval's time per call on 2,000–200,000 values (one metric over every case),
  alternating the two in one run, and how many evaluations each root search needed.
- `analysis_cost`: what a run with trials pays for its intervals — `Analysis.finish` on a
  synthetic 20,000-case × 4-trial run with slices — this checkout against another revision
  (`--against`, default main), alternating in child processes.

The figures: each interval's lowest coverage over the shapes and the largest gap to
Clopper–Pearson (`rate_shapes`), the median time per call at 20,000 values (`speed`), and the
median this / REV ratio of `Analysis.finish` (`analysis_cost`); the tables are in the saved
JSON's details.

Arguments: [--only rate_shapes|speed|analysis_cost] [--against REV] (default main)
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

import oloproof.stats.betting as betting
from oloproof.stats import bounded_mean_interval

FloatArray = npt.NDArray[np.float64]
TARGETS = {"rate_shapes.bentkus_min_coverage": (">=", 0.95),
           "rate_shapes.betting_min_coverage": (">=", 0.95),
           "rate_shapes.bentkus_max_gap_to_clopper_pearson": ("<=", 0.02)}


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


def _count_calls(module: object, name: str, call: Callable[[], object]) -> int:
    """How many times `call()` calls `module.name` (each is one vectorised evaluation)."""
    original = getattr(module, name)
    calls = 0

    def counted(*args: object) -> object:
        nonlocal calls
        calls += 1
        return original(*args)

    setattr(module, name, counted)
    try:
        call()
    finally:
        setattr(module, name, original)
    return calls


def _evaluations(values: FloatArray) -> int:
    """Capital evaluations of one betting interval."""
    return _count_calls(betting, "_log_capital_excess",
                        lambda: bounded_mean_interval(values, values, 0.95))


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


def _bentkus_evaluations(values: FloatArray) -> int:
    """Evaluations of the Bentkus bound one interval needed (each one vectorised pass over the
    binomial's bulk, for both ends at once)."""
    import oloproof.stats.bentkus as bentkus
    from oloproof.stats import bentkus_interval

    return _count_calls(bentkus, "log_beta", lambda: bentkus_interval(values, values, 0.95))


def speed() -> dict[str, Any]:
    """Time per call of each interval on one metric's values, alternating the two."""
    from oloproof.stats import bentkus_interval

    rng = np.random.default_rng(2023)
    kinds = ["uniform", "Beta(0.5, 5)", "0/1 at 0.9", "shares of 3"]
    bentkus_interval([0.5], [0.5], 0.95)  # imports scipy.special before timing anything
    print("### Time per call, both intervals alternating (medians)\n")
    print("| values | n | betting ms | bentkus ms | bentkus / betting | betting evaluations | "
          "bentkus evaluations |")
    print("|---|---|---|---|---|---|---|")
    rows = []
    for n in (2_000, 20_000, 200_000):
        for kind in kinds:
            values = _values(kind, n, rng)
            repeats = 21 if n <= 20_000 else 7
            bet, ben = [], []
            for _ in range(repeats):
                bet.append(_timed(lambda v=values: bounded_mean_interval(v, v, 0.95), 1))
                ben.append(_timed(lambda v=values: bentkus_interval(v, v, 0.95), 1))
            b1, b2 = statistics.median(bet), statistics.median(ben)
            calls = _bentkus_evaluations(values)
            evaluations = _evaluations(values)
            print(f"| {kind} | {n:,} | {b1 * 1e3:.2f} | {b2 * 1e3:.2f} | {b2 / b1:.2f} | "
                  f"{evaluations} | {calls} |")
            rows.append({"values": kind, "n": n, "betting_ms": round(b1 * 1e3, 3),
                         "bentkus_ms": round(b2 * 1e3, 3), "betting_evaluations": evaluations,
                         "bentkus_evaluations": calls})
    print()
    at = [r for r in rows if r["n"] == 20_000]
    return {"bentkus_ms_20000": statistics.median(r["bentkus_ms"] for r in at),
            "betting_ms_20000": statistics.median(r["betting_ms"] for r in at),
            "rows": rows}


def _coverage(lower: FloatArray, upper: FloatArray, truth: float) -> float:
    return float(np.mean((lower <= truth + 1e-12) & (truth - 1e-12 <= upper)))


def rate_shapes(repetitions: int = 2_000) -> dict[str, Any]:
    """Both intervals on the shapes of issue 26, over simulated suites (95%)."""
    from oloproof.stats import bentkus_lower_bounds, betting_lower_bounds, clopper_pearson

    rng = np.random.default_rng(26)
    print(f"### Both intervals on the same suites ({repetitions:,} per row, 95%)\n")
    print("| shape | n | true mean | betting: mean lower, width, coverage | "
          "bentkus: mean lower, width, coverage | clopper-pearson: mean lower, width |")
    print("|---|---|---|---|---|---|")
    shapes: list[tuple[str, Callable[[tuple[int, int]], FloatArray], float, bool]] = [
        ("every trial passes (all 1)", lambda s: np.ones(s), 1.0, True),
        ("every trial fails (all 0)", lambda s: np.zeros(s), 0.0, True),
        ("unanimous 0/1 at 0.9", lambda s: (rng.uniform(size=s) < 0.9) * 1.0, 0.9, True),
        ("unanimous 0/1 at 0.5", lambda s: (rng.uniform(size=s) < 0.5) * 1.0, 0.5, True),
        ("skewed: shares of 3, chance Beta(4, 0.5)",
         lambda s: rng.binomial(3, rng.beta(4.0, 0.5, size=s)) / 3.0, 4.0 / 4.5, False),
        ("skewed: Beta(0.5, 5)", lambda s: rng.beta(0.5, 5.0, size=s), 0.5 / 5.5, False),
        ("two-point 0.2 / 0.7", lambda s: np.where(rng.uniform(size=s) < 0.5, 0.7, 0.2),
         0.45, False),
    ]
    shape_rows: list[dict[str, Any]] = []
    for name, draw, truth, binary in shapes:
        for n in (5, 18, 40, 100, 400):
            values = draw((repetitions, n))
            sums = values.sum(axis=1)
            bet_low = np.minimum(betting_lower_bounds(values, 0.95), values.mean(axis=1))
            bet_up = np.maximum(1.0 - betting_lower_bounds(1.0 - values, 0.95),
                                values.mean(axis=1))
            ben_low = bentkus_lower_bounds(sums, n, 0.95)
            ben_up = 1.0 - bentkus_lower_bounds(np.clip(n - sums, 0.0, n), n, 0.95)
            cells = [f"{bet_low.mean():.4f}, {np.mean(bet_up - bet_low):.4f}, "
                     f"{_coverage(bet_low, bet_up, truth):.4f}",
                     f"{ben_low.mean():.4f}, {np.mean(ben_up - ben_low):.4f}, "
                     f"{_coverage(ben_low, ben_up, truth):.4f}"]
            if binary:
                table = np.asarray([clopper_pearson(i, n, 0.95) for i in range(n + 1)])
                exact = table[np.rint(sums).astype(np.int64)]
                cells.append(f"{exact[:, 0].mean():.4f}, "
                             f"{np.mean(exact[:, 1] - exact[:, 0]):.4f}")
            else:
                cells.append("—")
            print(f"| {name} | {n} | {truth:.3f} | " + " | ".join(cells) + " |")
            shape_rows.append({"shape": name, "n": n, "truth": truth,
                         "betting_coverage": _coverage(bet_low, bet_up, truth),
                         "bentkus_coverage": _coverage(ben_low, ben_up, truth),
                         "betting_width": float(np.mean(bet_up - bet_low)),
                         "bentkus_width": float(np.mean(ben_up - ben_low))})
    print()
    gaps: list[dict[str, Any]] = []
    print("### 0/1 values: the largest gap to Clopper–Pearson, over every count k of n\n")
    print("| n | bentkus: max (CP lower − lower) | betting: max (CP lower − lower) | "
          "betting: all fail, upper (CP upper) |")
    print("|---|---|---|---|")
    for n in (5, 10, 18, 40, 100, 400):
        k = np.arange(n + 1)
        rows = np.zeros((n + 1, n))
        for i in k:
            rows[i, :i] = 1.0  # k passes, in the order that suits betting best: passes first
        exact = np.asarray([clopper_pearson(int(i), n, 0.95)[0] for i in k])
        ben = bentkus_lower_bounds(k.astype(float), n, 0.95)
        bet = np.minimum(betting_lower_bounds(rows, 0.95), k / n)
        zeros = 1.0 - betting_lower_bounds(np.ones((1, n)), 0.95)[0]
        print(f"| {n} | {np.max(exact - ben):.4f} | {np.max(exact - bet):.4f} | "
              f"{zeros:.4f} ({clopper_pearson(0, n, 0.95)[1]:.4f}) |")
        gaps.append({"n": n, "bentkus": float(np.max(exact - ben)),
                     "betting": float(np.max(exact - bet))})
    print()
    return {"bentkus_min_coverage": min(r["bentkus_coverage"] for r in shape_rows),
            "betting_min_coverage": min(r["betting_coverage"] for r in shape_rows),
            "bentkus_max_gap_to_clopper_pearson": round(max(g["bentkus"] for g in gaps), 4),
            "betting_max_gap_to_clopper_pearson": round(max(g["betting"] for g in gaps), 4),
            "rows": shape_rows, "gaps": gaps}


ANALYSIS_CHILD = """
import json, random, statistics, sys, time
from oloproof.analysis.metrics import Analysis, MetricPlan
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.trials import TrialMetricSpec
cases, trials = int(sys.argv[1]), int(sys.argv[2])
rng = random.Random(7)
skill = [rng.betavariate(6, 1.5) for _ in range(cases)]
outcomes = []
for c in range(cases):
    for t in range(1, trials + 1):
        codes = "".join("P" if rng.random() < skill[c] else "F" for _ in range(3))
        outcomes.append(CaseOutcome(f"c{c}", codes, [None] * 3, None, None, None,
                                    [f"g{c % 10}"], trial=t, digest=f"sha256:{c:08d}"))
seconds = []
for _ in range(5):
    plan = MetricPlan(criteria=["a", "b", "c"], quantiles=[], slices=["group"],
                      min_slice_support=5, trials=trials,
                      trial_metrics=[TrialMetricSpec("a_hat", "pass_hat_k", 0, trials),
                                     TrialMetricSpec("a_hat2", "pass_hat_k", 0, 2)])
    analysis = Analysis(plan)
    for outcome in outcomes:
        analysis.add(outcome)
    start = time.perf_counter()
    metrics, slices = analysis.finish(0.95)
    seconds.append(time.perf_counter() - start)
print(json.dumps({"finish_s": min(seconds), "rows": len(metrics) + len(slices)}))
"""


def analysis_cost(against: str, cases: int = 20_000, trials: int = 4, rounds: int = 7
                  ) -> dict[str, Any]:
    """`Analysis.finish` of a run with trials, this checkout against `against`, alternating."""
    import json
    import subprocess
    import sys

    from benchmarks._versions import revision, versions

    print(f"### Analysis.finish with trials: {cases:,} cases × {trials} trials, 3 criteria, "
          "2 pass^k metrics, one slice of 10 groups (30 slice rows)\n")
    print(f"this = {revision()} (with uncommitted changes, if any), against = {against} "
          f"({revision(against)}); the fastest of 5 finishes per child (the machine is "
          "shared: the fastest is the least disturbed), children alternating\n")
    print("| round | this | against | this / against |")
    print("|---|---|---|---|")
    found = versions([against])
    ratios = []
    rows = []
    for round_ in range(1, rounds + 1):
        times = {}
        for label, env in found:
            done = subprocess.run([sys.executable, "-c", ANALYSIS_CHILD, str(cases), str(trials)],
                                  env=env, capture_output=True, text=True, check=True)
            times[label] = json.loads(done.stdout)["finish_s"]
        ratio = times["this"] / times[against]
        ratios.append(ratio)
        rows.append({k: round(v, 4) for k, v in times.items()})
        print(f"| {round_} | {times['this'] * 1e3:.0f} ms | {times[against] * 1e3:.0f} ms | "
              f"{ratio:.2f} |")
    print(f"\nmedian this / {against}: {statistics.median(ratios):.2f}\n")
    return {"this_over_against": round(statistics.median(ratios), 3),
            "this_finish_ms": round(1e3 * statistics.median(r["this"] for r in rows), 1),
            "rows": rows}


def run(argv: list[str]) -> dict:
    import argparse

    from benchmarks._versions import finished

    parser = argparse.ArgumentParser(prog="python -m benchmarks betting")
    parser.add_argument("--only", choices=["rate_shapes", "speed", "analysis_cost"])
    parser.add_argument("--against", default="main")
    args = parser.parse_args(argv)
    sections: dict[str, dict[str, Any]] = {}
    if args.only in (None, "rate_shapes"):
        sections["rate_shapes"] = rate_shapes()
    if args.only in (None, "speed"):
        sections["speed"] = speed()
    if args.only in (None, "analysis_cost"):
        sections["analysis_cost"] = analysis_cost(args.against)
    print(finished())
    tables = ("rows", "gaps", "this_finish_ms")  # (kept in the details)
    order = ("rate_shapes", "analysis_cost", "speed")  # the most telling first
    return {"figures": {name: {k: v for k, v in sections[name].items() if k not in tables}
                        for name in order if name in sections},
            "params": {"only": args.only, "against": args.against, "rate_shapes_suites": 2000},
            "details": {name: {k: v for k, v in got.items() if k in tables}
                        for name, got in sections.items()}}
