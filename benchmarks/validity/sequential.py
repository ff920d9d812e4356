"""The sequential rule of a marked pytest test (issue 41, `oloproof.stats.sequential`): its exact
type I error at the minimum, the trials it takes to decide and how often it decides, beside a
fixed-n exact test of the same cap, over a grid of minimums, caps and true pass rates; and the
candidate rules it was chosen from.

Sections, each a function (`run` runs them all; `--only NAME` one of them):

- `grid`: for minimum 0.5, 0.7, 0.8, 0.9, 0.95, caps 20, 50, 100, 200 and true pass rates
  (the minimum, halfway and three quarters of the way to 1, 1, and three quarters of the
  minimum) the rule's exact chance of PASS and FAIL and its expected trials — by summing over
  every path of counts with the public decision (`SequentialRate.state`), so the curtailed
  decisions are included — beside the fixed-n exact (Clopper–Pearson) test of the cap, which
  always runs the cap. At the marker's example (min 0.8, trials 50) also with a tenth of the
  trials erroring.
- `all_pass`: the trials after which a test that passes every trial decides, at min 0.8, for
  caps 20 to 10,000 (the issue's requirement: within 30).
- `candidates`: the rules considered, at min 0.8 and a cap of 50 (the figures of the choice):
  the fixed-n exact test; Clopper–Pearson after every trial (no correction); mixture
  likelihood ratios valid at every look by Ville's inequality (the uniform mixture over [0, 1],
  the uniform one over [min, 1], three fixed alternatives); five pre-set looks with α split
  evenly (exact boundaries by recursion); a betting e-process with a predictable plug-in bet
  (path-dependent: 20,000 simulated runs); and this rule. Exact by dynamic programming
  wherever the rule depends on the counts only.
- `projection`: for undecided runs at min 0.8, trials 50, the exact chance the rule reports for
  a run of the projected total ("about N more trials"), over every undecided end state, weighted
  by how often a true rate of 0.85 or 0.9 reaches it.

Figures: the largest exact type I error on each side over the grid (target ≤ 0.025), the mean
gap between the fixed-n test's chance of deciding and the rule's where the fixed-n test's is
above 5% (positive: the rule decides less often), the mean expected trials as a share of the
cap at true rates above the minimum, the marker example's row, the slowest all-pass decision
at min 0.8 (target ≤ 30) and the projection's chances. The tables are in the JSON's details.

Arguments: [--only grid|all_pass|candidates|projection]
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt

from oloproof.stats import SequentialRate, sequential_design

TARGETS = {
    "max_type1_pass": ("<=", 0.025),
    "max_type1_fail": ("<=", 0.025),
    "all_pass_slowest_min_08": ("<=", 30),
    "example_errored.type1_pass": ("<=", 0.025),
    "example_errored.type1_fail": ("<=", 0.025),
}
QUICK: list[str] = []  # the whole scenario: about ten CPU seconds

HALF = 0.025  # α/2 at the default level 0.95
MINIMUMS = (0.5, 0.7, 0.8, 0.9, 0.95)
CAPS = (20, 50, 100, 200)
FloatArray = npt.NDArray[np.float64]


def _rates(minimum: float) -> list[float]:
    return [minimum, minimum + (1 - minimum) / 2, minimum + 3 * (1 - minimum) / 4, 1.0,
            0.75 * minimum]


def rule_outcomes(minimum: float, cap: int, rates: list[float],
                  errored: float = 0.0) -> list[dict[str, float]]:
    """Exact P(PASS), P(FAIL), E[trials] of the rule at each true rate (among trials that do
    not error; ``errored`` the chance a trial errors), summing over every path of counts."""
    out = []
    for rate in rates:
        pass_p, fail_p, error_p = rate * (1 - errored), (1 - rate) * (1 - errored), errored
        alive = {(0, 0): 1.0}
        got = {"PASS": 0.0, "FAIL": 0.0, "INSUFFICIENT_EVIDENCE": 0.0}
        trials = 0.0
        for n in range(cap + 1):
            following: dict[tuple[int, int], float] = {}
            for (k, e), weight in alive.items():
                state = SequentialRate(minimum, cap, passed=k, failed=n - k - e,
                                       errored=e).state
                if state != "CONTINUE":
                    got[state] += weight
                    trials += n * weight
                    continue
                for key, chance in (((k + 1, e), pass_p), ((k, e), fail_p),
                                    ((k, e + 1), error_p)):
                    if chance > 0:
                        following[key] = following.get(key, 0.0) + weight * chance
            alive = following
        out.append({"rate": rate, "pass": got["PASS"], "fail": got["FAIL"],
                    "expected_trials": trials})
    return out


def fixed_n_boundaries(minimum: float, cap: int) -> tuple[int, int]:
    """The fewest passes of ``cap`` whose exact lower bound reaches the minimum, and the most
    whose exact upper bound is below it (P_t(B ≥ k) ≤ α/2; P_t(B ≤ k) < α/2)."""
    from scipy import special
    ks = np.arange(cap + 1)
    passing = np.nonzero(special.bdtrc(ks - 1, cap, minimum) <= HALF)[0]
    failing = np.nonzero(special.bdtr(ks, cap, minimum) < HALF)[0]
    return (int(passing[0]) if passing.size else cap + 1,
            int(failing[-1]) if failing.size else -1)


def fixed_n_outcomes(minimum: float, cap: int, rate: float) -> tuple[float, float]:
    from scipy import special
    pass_at, fail_at = fixed_n_boundaries(minimum, cap)
    passing = float(special.bdtrc(pass_at - 1, cap, rate)) if pass_at <= cap else 0.0
    failing = float(special.bdtr(fail_at, cap, rate)) if fail_at >= 0 else 0.0
    return passing, failing


def grid() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = []
    for minimum in MINIMUMS:
        for cap in CAPS:
            for one in rule_outcomes(minimum, cap, _rates(minimum)):
                fixed_pass, fixed_fail = fixed_n_outcomes(minimum, cap, one["rate"])
                rows.append({"minimum": minimum, "cap": cap, "rate": round(one["rate"], 4),
                             "rule_pass": round(one["pass"], 5),
                             "rule_fail": round(one["fail"], 5),
                             "rule_expected_trials": round(one["expected_trials"], 2),
                             "fixed_pass": round(fixed_pass, 5),
                             "fixed_fail": round(fixed_fail, 5), "fixed_trials": cap})
            print(f"  grid: min {minimum}, cap {cap} done", flush=True)
    at_min = [r for r in rows if r["rate"] == round(r["minimum"], 4)]
    gaps, shares = [], []
    for r in rows:
        if r["rate"] == round(r["minimum"], 4):
            continue
        above = r["rate"] > r["minimum"]
        fixed, rule = ((r["fixed_pass"], r["rule_pass"]) if above
                       else (r["fixed_fail"], r["rule_fail"]))
        if fixed > 0.05:
            gaps.append(fixed - rule)
        if above:
            shares.append(r["rule_expected_trials"] / r["cap"])
    example = {r["rate"]: r for r in rows if (r["minimum"], r["cap"]) == (0.8, 50)}
    figures = {
        "max_type1_pass": max(r["rule_pass"] for r in at_min),
        "max_type1_fail": max(r["rule_fail"] for r in at_min),
        "max_type1_pass_fixed_n": max(r["fixed_pass"] for r in at_min),
        "mean_decision_gap_vs_fixed_n": round(statistics.mean(gaps), 4),
        "largest_decision_gap_vs_fixed_n": round(max(gaps), 4),
        "mean_trials_share_of_cap_above_min": round(statistics.mean(shares), 4),
        "example": {
            "type1_pass": example[0.8]["rule_pass"],
            "pass_at_0.9": example[0.9]["rule_pass"],
            "fixed_n_pass_at_0.9": example[0.9]["fixed_pass"],
            "trials_at_0.9": example[0.9]["rule_expected_trials"],
            "pass_at_0.95": example[0.95]["rule_pass"],
            "fixed_n_pass_at_0.95": example[0.95]["fixed_pass"],
            "trials_at_0.95": example[0.95]["rule_expected_trials"],
            "trials_at_1": example[1.0]["rule_expected_trials"],
            "fail_at_0.6": example[0.6]["rule_fail"],
            "trials_at_0.6": example[0.6]["rule_expected_trials"],
        },
    }
    errored = rule_outcomes(0.8, 50, [0.8], errored=0.1)[0]
    mirrored = rule_outcomes(0.2, 50, [0.2], errored=0.1)[0]  # FAIL at 0.8 = PASS at 0.2
    figures["example_errored"] = {"type1_pass": round(errored["pass"], 5),
                                  "type1_fail": round(mirrored["pass"], 5)}
    return figures, rows


def all_pass() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    rows = []
    for cap in (20, 30, 50, 100, 200, 1000, 10_000):
        rows.append({"cap": cap, "first_pass": sequential_design(0.8, cap).first_pass})
        print(f"  all_pass: cap {cap}: {rows[-1]['first_pass']}", flush=True)
    slowest = max(r["first_pass"] for r in rows if r["cap"] >= 30)
    return {"all_pass_slowest_min_08": slowest,
            "all_pass_at_cap_50": next(r["first_pass"] for r in rows if r["cap"] == 50),
            "all_pass_fixed_n_min_08": math.ceil(math.log(HALF) / math.log(0.8))}, rows


# ---- the candidates (min 0.8, cap 50) -------------------------------------------------------

def _boundary_outcomes(pass_at: list[int], fail_at: list[int], rate: float) -> dict[str, float]:
    """Exact P(PASS), P(FAIL), E[trials] of a rule that decides at the first look whose count
    reaches ``pass_at[n − 1]`` (PASS) or falls to ``fail_at[n − 1]`` (FAIL)."""
    cap = len(pass_at)
    alive = np.zeros(cap + 2)
    alive[0] = 1.0
    got = {"pass": 0.0, "fail": 0.0, "expected_trials": 0.0}
    for n in range(1, cap + 1):
        following = alive * (1 - rate)
        following[1:] += alive[:-1] * rate
        alive = following
        passing = failing = 0.0
        if pass_at[n - 1] <= n:
            passing = float(alive[pass_at[n - 1]:].sum())
            alive[pass_at[n - 1]:] = 0.0
        if fail_at[n - 1] >= 0:
            failing = float(alive[: fail_at[n - 1] + 1].sum())
            alive[: fail_at[n - 1] + 1] = 0.0
        got["pass"] += passing
        got["fail"] += failing
        got["expected_trials"] += n * (passing + failing)
    got["expected_trials"] += cap * float(alive.sum())
    return got


def _from_e_value(log_e: Callable[[int, FloatArray, float], FloatArray], cap: int,
                  minimum: float) -> tuple[list[int], list[int]]:
    """Boundaries of a rule that decides when an e-value reaches 2/α (Ville's inequality);
    the FAIL side is the PASS side of 1 − minimum on the failures."""
    def side(m: float) -> list[int]:
        out = []
        for n in range(1, cap + 1):
            k = np.arange(n + 1, dtype=np.float64)
            hits = np.nonzero((log_e(n, k, m) >= math.log(1 / HALF) - 1e-12) & (k > m * n))[0]
            out.append(int(hits[0]) if hits.size else n + 1)
        return out
    mirrored = side(1 - minimum)
    return side(minimum), [n - c for n, c in enumerate(mirrored, 1)]


def _log_lr(n: int, k: FloatArray, q: float, m: float) -> FloatArray:
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.where(k > 0, k * math.log(q / m), 0.0)
        down = (np.where(n - k > 0, (n - k) * math.log((1 - q) / (1 - m)), 0.0) if q < 1
                else np.where(n - k > 0, -np.inf, 0.0))
    result: FloatArray = up + down
    return result


def _uniform_mixture(n: int, k: FloatArray, m: float) -> FloatArray:
    from scipy import special
    result: FloatArray = (special.betaln(k + 1, n - k + 1) - k * math.log(m)
                          - (n - k) * math.log(1 - m))
    return result


def _uniform_above(n: int, k: FloatArray, m: float) -> FloatArray:
    from scipy import special
    result: FloatArray = (special.betaln(k + 1, n - k + 1)
                          + np.log(special.betainc(n - k + 1, k + 1, 1 - m))
                          - math.log(1 - m) - k * math.log(m) - (n - k) * math.log(1 - m))
    return result


def _fixed_alternatives(n: int, k: FloatArray, m: float) -> FloatArray:
    from scipy import special
    gaps = (0.5, 0.75, 1.0)  # q = m + gap·(1 − m), equal weights
    terms = np.array([_log_lr(n, k, m + g * (1 - m), m) for g in gaps]) - math.log(len(gaps))
    result: FloatArray = special.logsumexp(terms, axis=0)
    return result


def _looks(cap: int, minimum: float, looks: tuple[int, ...]) -> tuple[list[int], list[int]]:
    """Pre-set looks, α/2 split evenly between them, exact boundaries by recursion."""
    def side(m: float) -> list[int]:
        alive = np.zeros(cap + 2)
        alive[0] = 1.0
        spent, out = 0.0, []
        for n in range(1, cap + 1):
            following = alive * (1 - m)
            following[1:] += alive[:-1] * m
            alive = following
            c = n + 1
            if n in looks:
                allowance = HALF * (looks.index(n) + 1) / len(looks) - spent
                tail = np.cumsum(alive[: n + 1][::-1])[::-1]
                fits = np.nonzero(tail <= allowance)[0]
                if fits.size:
                    c = int(fits[0])
                    spent += float(tail[c])
                    alive[c:] = 0.0
            out.append(c)
        return out
    mirrored = side(1 - minimum)
    return side(minimum), [n - c for n, c in enumerate(mirrored, 1)]


def _betting(rate: float, minimum: float, cap: int, runs: int,
             rng: np.random.Generator) -> dict[str, float]:
    """A betting e-process per side with the predictable plug-in bet (the running share with
    half a pass added, kept on its side of the minimum): wealth ∏ (1 + λ_t (x_t − m)),
    λ_t = (q̂_{t−1} − m)/(m(1 − m)); PASS or FAIL when a side's wealth reaches 2/α."""
    x = (rng.random((runs, cap)) < rate).astype(np.float64)
    passes_before = np.concatenate([np.zeros((runs, 1)), np.cumsum(x, axis=1)[:, :-1]], axis=1)
    looks = np.arange(cap, dtype=np.float64)
    share = (passes_before + 0.5) / (looks + 1.0)
    up = np.clip(share, minimum, 1.0)
    down = np.clip(share, 0.0, minimum)
    factor_up = np.where(x == 1, up / minimum, (1 - up) / (1 - minimum))
    factor_down = np.where(x == 1, down / minimum, (1 - down) / (1 - minimum))
    threshold = math.log(1 / HALF)
    with np.errstate(divide="ignore"):
        wealth_up = np.cumsum(np.log(factor_up), axis=1)
        wealth_down = np.cumsum(np.log(factor_down), axis=1)
    hit_up = wealth_up >= threshold
    hit_down = wealth_down >= threshold
    first_up = np.where(hit_up.any(axis=1), hit_up.argmax(axis=1), cap)
    first_down = np.where(hit_down.any(axis=1), hit_down.argmax(axis=1), cap)
    passed = first_up < first_down
    failed = first_down < first_up
    trials = np.minimum(np.minimum(first_up, first_down) + 1, cap)
    return {"pass": float(passed.mean()), "fail": float(failed.mean()),
            "expected_trials": float(trials.mean())}


def candidates() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    minimum, cap = 0.8, 50
    rates = (0.8, 0.9, 0.95, 1.0, 0.6)
    fixed_pass, fixed_fail = fixed_n_boundaries(minimum, cap)
    no_look = [n + 1 for n in range(1, cap)]
    uncorrected = ([fixed_n_boundaries(minimum, n)[0] for n in range(1, cap + 1)],
                   [fixed_n_boundaries(minimum, n)[1] for n in range(1, cap + 1)])
    rules: dict[str, tuple[list[int], list[int]]] = {
        "fixed-n exact test of the cap": (no_look + [fixed_pass], [-1] * (cap - 1) + [fixed_fail]),
        "Clopper-Pearson after every trial, uncorrected": uncorrected,
        "uniform mixture over [0, 1], Ville": _from_e_value(_uniform_mixture, cap, minimum),
        "uniform mixture over [min, 1], Ville": _from_e_value(_uniform_above, cap, minimum),
        "three fixed alternatives above min, Ville": _from_e_value(_fixed_alternatives, cap,
                                                                  minimum),
        "looks at 10, 20, 30, 40, 50, α split evenly": _looks(cap, minimum, (10, 20, 30, 40, 50)),
    }
    rows = []
    for name, (pass_at, fail_at) in rules.items():
        rows.append(_candidate_row(name, "exact",
                                   {r: _boundary_outcomes(pass_at, fail_at, r) for r in rates},
                                   next((n for n, c in enumerate(pass_at, 1) if c <= n), None)))
        print(f"  candidates: {name}", flush=True)
    rng = np.random.default_rng(41)
    betting = {r: _betting(r, minimum, cap, 20_000, rng) for r in rates}
    rows.append(_candidate_row("betting e-process, predictable plug-in bet",
                               "simulated, 20,000 runs", betting,
                               int(betting[1.0]["expected_trials"])))
    this = {one["rate"]: one for one in rule_outcomes(minimum, cap, list(rates))}
    rows.append(_candidate_row("this rule: exact error spending, a look after every trial",
                               "exact", this, sequential_design(minimum, cap).first_pass))
    chosen = rows[-1]
    return {"chosen": {k: chosen[k] for k in ("type1_pass", "all_pass_trials", "trials_at_0.95",
                                              "pass_at_0.9", "pass_at_0.95")}}, rows


def _candidate_row(name: str, how: str, outcomes: dict[float, dict[str, float]],
                   all_pass_trials: int | None) -> dict[str, Any]:
    return {
        "candidate": name, "how": how,
        "type1_pass": round(outcomes[0.8]["pass"], 5),
        "type1_fail": round(outcomes[0.8]["fail"], 5),
        "all_pass_trials": all_pass_trials,
        "trials_at_0.9": round(outcomes[0.9]["expected_trials"], 1),
        "trials_at_0.95": round(outcomes[0.95]["expected_trials"], 1),
        "trials_at_0.6": round(outcomes[0.6]["expected_trials"], 1),
        "pass_at_0.9": round(outcomes[0.9]["pass"], 3),
        "pass_at_0.95": round(outcomes[0.95]["pass"], 3),
        "fail_at_0.6": round(outcomes[0.6]["fail"], 3),
    }


def projection() -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The chance reported with "about N more trials", over the undecided end states at min
    0.8, trials 50, weighted by how often true rates 0.85 and 0.9 end there."""
    minimum, cap = 0.8, 50
    rows = []
    for rate in (0.85, 0.9):
        alive = {0: 1.0}
        ends: dict[tuple[int, int], float] = {}
        for n in range(cap + 1):
            following: dict[int, float] = {}
            for k, weight in alive.items():
                rule = SequentialRate(minimum, cap, passed=k, failed=n - k)
                if rule.state == "INSUFFICIENT_EVIDENCE":
                    ends[n, k] = ends.get((n, k), 0.0) + weight
                elif rule.state == "CONTINUE":
                    following[k + 1] = following.get(k + 1, 0.0) + weight * rate
                    following[k] = following.get(k, 0.0) + weight * (1 - rate)
            alive = following
        for (n, k), weight in sorted(ends.items()):
            decision = SequentialRate(minimum, cap, passed=k, failed=n - k).decision()
            rows.append({"true_rate": rate, "trials_run": n, "passed": k,
                         "weight": round(weight, 5), "projected_trials": decision.projected_trials,
                         "more_trials": decision.more_trials,
                         "chance": (None if decision.more_trials_chance is None
                                    else round(decision.more_trials_chance, 3)),
                         "reason": decision.projection_reason})
    chances = [(r["chance"], r["weight"]) for r in rows if r["chance"] is not None]
    total = sum(w for _, w in chances)
    return {"projection": {
        "weighted_mean_chance": round(sum(c * w for c, w in chances) / total, 3),
        "lowest_chance": min(c for c, _ in chances),
        "highest_chance": max(c for c, _ in chances),
    }}, rows


SECTIONS = {"grid": grid, "all_pass": all_pass, "candidates": candidates,
            "projection": projection}


def run(argv: list[str]) -> dict[str, Any]:
    import argparse
    parser = argparse.ArgumentParser(prog="python -m benchmarks sequential")
    parser.add_argument("--only", choices=sorted(SECTIONS))
    args = parser.parse_args(argv)
    figures: dict[str, Any] = {}
    details: dict[str, Any] = {}
    for name, section in SECTIONS.items():
        if args.only not in (None, name):
            continue
        found, table = section()
        figures.update(found)
        details[name] = table
    return {"figures": figures, "params": {"only": args.only, "level": 0.95},
            "details": details}


if __name__ == "__main__":
    import json
    import sys
    print(json.dumps(run(sys.argv[1:]), indent=1)[:20_000])
