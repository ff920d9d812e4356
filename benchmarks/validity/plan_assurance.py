"""`plan`'s chance against what happens: printed and realised, 40-case runs near a 0.70 threshold.

Issue 40. The audit drew 40-case runs near a 0.70 threshold; the total `plan` gave for "an 80%
chance" (the chance as if the true rate were the estimate) reached its decision 48% of the
time at a true rate of 0.65 and 19% at 0.68. `plan` now averages the chance over the run's own
confidence distribution (`oloproof.stats.assurance`).

Definitions (as in tests/compare/test_plan_assurance.py and docs/compare.md):

- a *run* is 40 cases at a true rate ``p``, judged 0/1 with the exact interval at 95%, under a
  `min: 0.70` rule; only the runs that leave it INSUFFICIENT_EVIDENCE get a plan (22 to 33
  passes of 40);
- the *printed* chance is the one `plan` prints for that run: at the total for an 80% chance
  (when it gives one), and at the first total (the smallest whose interval at the same rate
  would decide);
- the *realised* chance at ``p`` is the chance that the run, continued to that total — its 40
  cases kept, the rest drawn at ``p`` — reaches the decision the plan names;
- both are averaged over the runs that get a total, each weighted by its probability at ``p``
  (exactly: every count of passes is summed, nothing is simulated), per true rate and pooled
  over true rates spread evenly over a range.

`before` is the chance as the plan computed it until issue 40: a fresh suite of the total's
size at the estimate; `now` the continued run, the rate drawn from the run's confidence
distribution.

Usage: python -m benchmarks plan_assurance
"""

from __future__ import annotations

import argparse
from collections.abc import Callable

import numpy as np
from scipy.stats import binom

from oloproof.stats import rate_projection
from oloproof.stats.assurance import assured_projection, continued_chance

TARGETS = {
    # Over true rates spread as widely as a 40-case run's own uncertainty (±0.2 around the
    # threshold) the chance printed for the 80% total is what continued runs realise.
    "now_pooled_0.5_0.9_gap": ("<=", 0.05),
    "now_pooled_0_1_gap": ("<=", 0.02),
}

QUICK: list[str] = []  # the whole scenario: a few CPU seconds

LEVEL = 0.95
N = 40
THRESHOLD = 0.70
HALF_ALPHA = 0.025
RATES = (0.55, 0.60, 0.65, 0.68, 0.70, 0.72, 0.75, 0.80)


def _undecided(k: int) -> bool:
    """Whether k of 40 leaves `min: 0.70` undecided: the exact interval holds 0.70."""
    passes = float(binom.sf(k - 1, N, THRESHOLD)) > HALF_ALPHA  # lower bound below 0.70
    fails = float(binom.cdf(k, N, THRESHOLD)) >= HALF_ALPHA  # upper bound at or above 0.70
    return passes and fails


def _need(total: int) -> int:
    """The fewest passes of `total` whose exact lower bound reaches 0.70 (a PASS)."""
    k = np.arange(total + 2)
    ok = binom.sf(k - 1, total, THRESHOLD) <= HALF_ALPHA
    return int(np.argmax(ok))


def _most(total: int) -> int:
    """The most passes of `total` whose exact upper bound stays below 0.70 (a FAIL); −1."""
    k = np.arange(total + 1)
    ok = binom.cdf(k, total, THRESHOLD) < HALF_ALPHA
    return int(np.flatnonzero(ok)[-1]) if ok.any() else -1


def _realised(k: int, total: int, state: str, p: float) -> float:
    """The chance that k of 40, continued to `total` at the true rate p, reaches `state`."""
    more = total - N
    if state == "PASS":
        return float(binom.sf(_need(total) - k - 1, more, p))
    return float(binom.cdf(_most(total) - k, more, p))


def _fresh(rate: float, total: int, state: str) -> float:
    """The chance before issue 40: a fresh suite of `total` cases at the estimate."""
    if state == "PASS":
        return float(binom.sf(_need(total) - 1, total, rate))
    return float(binom.cdf(_most(total), total, rate))


def _smallest(reaches: Callable[[int], bool]) -> int:
    low, high = N, N + 1
    while not reaches(high):
        low, high = high, 2 * high
    while high - low > 1:
        middle = (low + high) // 2
        if reaches(middle):
            high = middle
        else:
            low = middle
    return high


def _plans() -> dict[int, dict[str, tuple[int, float, str] | None]]:
    """Per undecided count of passes, what each plan prints: (total, chance, state)."""
    plans: dict[int, dict[str, tuple[int, float, str] | None]] = {}
    for k in range(N + 1):
        if not _undecided(k) or k / N == THRESHOLD:
            continue
        state = "PASS" if k / N > THRESHOLD else "FAIL"
        first = rate_projection(k, N, LEVEL, minimum=THRESHOLD).total
        assert first is not None
        now_first, _ = continued_chance(first, LEVEL, passed=k, observed=N, minimum=THRESHOLD)
        assured = assured_projection(LEVEL, passed=k, observed=N, minimum=THRESHOLD)
        before_total = _smallest(lambda t, k=k, s=state: _fresh(k / N, t, s) >= 0.8)
        plans[k] = {
            "now_first": (first, now_first, state),
            "before_first": (first, _fresh(k / N, first, state), state),
            "now_80": None if assured.total is None else
            (assured.total, float(assured.chance or 0.0), state),
            "before_80": (before_total, _fresh(k / N, before_total, state), state),
        }
    return plans


def _average(plans: dict[int, dict[str, tuple[int, float, str] | None]], which: str,
             rates: np.ndarray) -> tuple[float, float, float]:
    """(share of runs given a total, mean printed, mean realised) over runs at the true rates
    (each rate weighing the same)."""
    given = printed = realised = 0.0
    for p in rates:
        weights = binom.pmf(np.arange(N + 1), N, p)
        for k, row in plans.items():
            entry = row[which]
            if entry is None:
                continue
            total, chance, state = entry
            given += weights[k]
            printed += weights[k] * chance
            realised += weights[k] * _realised(k, total, state, float(p))
    return given / len(rates), printed / given, realised / given


def run(argv: list[str]) -> dict[str, object]:
    parser = argparse.ArgumentParser(prog="plan_assurance")
    parser.add_argument("--grid", type=int, default=101, help="true rates per pooled range")
    args = parser.parse_args(argv)
    plans = _plans()
    figures: dict[str, object] = {}
    for which in ("before_80", "now_80", "before_first", "now_first"):
        for p in RATES:
            given, printed, realised = _average(plans, which, np.asarray([p]))
            figures[f"{which}_at_{p:.2f}"] = {"given": given, "printed": printed,
                                              "realised": realised}
            print(f"{which:12} p={p:.2f}: given {given:.3f} printed {printed:.3f} "
                  f"realised {realised:.3f}", flush=True)
    for which in ("before_80", "now_80", "now_first"):
        for low, high in ((0.55, 0.80), (0.5, 0.9), (0.0, 1.0)):
            rates = np.linspace(low, high, args.grid)[1:-1]
            given, printed, realised = _average(plans, which, rates)
            key = f"{which.split('_')[0]}_pooled_{low:g}_{high:g}"
            if which == "now_first":
                key = f"now_first_pooled_{low:g}_{high:g}"
            figures[f"{key}_printed"] = printed
            figures[f"{key}_realised"] = realised
            figures[f"{key}_gap"] = abs(printed - realised)
            print(f"{which:12} U[{low}, {high}]: given {given:.3f} printed {printed:.3f} "
                  f"realised {realised:.3f}", flush=True)
    return {"figures": figures,
            "params": {"cases": N, "threshold": THRESHOLD, "level": LEVEL,
                       "rates": list(RATES), "grid": args.grid}}


if __name__ == "__main__":
    import json
    import sys
    result = run(sys.argv[1:])
    print(json.dumps({k: v for k, v in result["figures"].items()  # type: ignore[attr-defined]
                      if "pooled" in k}, indent=1))
