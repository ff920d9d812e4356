"""Clustered metrics: the interval over clusters (issue 12, acceptance 7; the Bentkus interval since
issue 26; the rate of the cases, over clusters of unequal size, since issue 40).

An audit of the old cluster bootstrap found (a) identical runs gating differently, because
clusters were resampled in the order cases finished, and (b) coverage below nominal when a
cluster's cases agree. Both are tested here: any completion order gives the same row, and the
interval covers at least its level in the audit's settings.
"""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oloproof.analysis.metrics import Analysis, MetricPlan
from oloproof.analysis.outcome import CaseOutcome
from oloproof.stats import (
    bentkus_interval,
    cluster_ratio_interval,
    cluster_ratio_lower_bounds,
    rate_interval,
)

CRITERIA = ["answer_correct", "polite"]


def _outcome(case_id: str, codes: str, cluster: str | None) -> CaseOutcome:
    return CaseOutcome(case_id=case_id, codes=codes, reasons=[None] * len(codes), case_key=None,
                       facts=None, latency_ms=None, groups=[], cluster=cluster)


def _suite(seed: int = 0) -> list[CaseOutcome]:
    """118 cases in 40 clusters of 2–4 (as in the audit), with failures and missing cases,
    and two cases outside any named cluster."""
    rng = random.Random(seed)
    outcomes = []
    for c, size in enumerate([2, 3, 4] * 12 + [2] * 4):
        cluster_passes = rng.random() < 0.8
        for k in range(size):
            first = rng.choice("PPPPPPFM") if cluster_passes else rng.choice("FFFFP")
            outcomes.append(_outcome(f"case-{c:02d}-{k}", first + rng.choice("PPPF"),
                                     f"customer-{c:02d}"))
    outcomes.append(_outcome("loner-a", "PP", None))
    outcomes.append(_outcome("loner-b", "MF", None))
    return outcomes


def _rows(outcomes: list[CaseOutcome], level: float = 0.95) -> list[dict[str, Any]]:
    analysis = Analysis(MetricPlan(criteria=CRITERIA, quantiles=[], slices=[],
                                   min_slice_support=5, case_clusters=True))
    for outcome in outcomes:
        analysis.add(outcome)
    metrics, _ = analysis.finish(level)
    return [m.to_json() for m in metrics]


def test_the_suite_has_the_audits_shape() -> None:
    outcomes = _suite()
    assert len(outcomes) == 118
    assert len({o.cluster for o in outcomes if o.cluster}) == 40


@settings(max_examples=25, deadline=None)
@given(st.randoms(use_true_random=False))
def test_identical_rows_under_any_completion_order(rng: random.Random) -> None:
    outcomes = _suite()
    reference = _rows(outcomes)
    shuffled = list(outcomes)
    rng.shuffle(shuffled)
    assert _rows(shuffled) == reference


def test_the_row_is_the_rate_of_its_cases_with_an_interval_over_clusters() -> None:
    outcomes = _suite()
    row = _rows(outcomes)[0]
    assert row["id"] == "answer_correct"
    assert row["method"] == "bentkus_ratio"  # clusters of 1 to 4 cases
    assert row["approximate"] is True
    assert row["clusters"] == 42  # 40 named clusters and two clusters of one
    # Worked by hand: per cluster (named or not), passed / observed / missing of criterion 0.
    cells: dict[str, list[int]] = {}
    for o in outcomes:
        cell = cells.setdefault(o.cluster or o.case_id, [0, 0, 0])
        cell[0] += o.codes[0] == "P"
        cell[1] += o.codes[0] in "PF"
        cell[2] += o.codes[0] == "M"
    passed = sum(c[0] for c in cells.values())
    observed = sum(c[1] for c in cells.values())
    expected = cluster_ratio_interval([c[0] for c in cells.values()],
                                      [c[0] + c[2] for c in cells.values()],
                                      [c[1] + c[2] for c in cells.values()], 0.95,
                                      observed_sum=passed, observed_cases=observed)
    assert (row["estimate"], row["lower"], row["upper"]) == (
        passed / observed, expected.lower, expected.upper)
    # The counts stay case counts (the N column), and the estimate is their ratio.
    assert row["passed"] == sum(o.codes[0] == "P" for o in outcomes) == passed
    assert row["missing"] == sum(o.codes[0] == "M" for o in outcomes) > 0
    # Missing cases bound each side the worst way: counting them all as failed, then all as
    # passed, gives a narrower interval on each side.
    as_failed = [_outcome(o.case_id, o.codes.replace("M", "F"), o.cluster) for o in outcomes]
    as_passed = [_outcome(o.case_id, o.codes.replace("M", "P"), o.cluster) for o in outcomes]
    assert row["lower"] <= _rows(as_failed)[0]["lower"]
    assert row["upper"] >= _rows(as_passed)[0]["upper"]


def test_clusters_of_one_size_keep_the_bentkus_interval_of_their_shares() -> None:
    outcomes = [_outcome(f"c{c}-{k}", "PP" if (c + k) % 4 else "FP", f"c{c}")
                for c in range(30) for k in range(3)]
    row = _rows(outcomes)[0]
    shares = [sum((c + k) % 4 != 0 for k in range(3)) / 3 for c in range(30)]
    expected = bentkus_interval(shares, shares, 0.95)
    assert (row["method"], row["lower"], row["upper"]) == (
        "bentkus", expected.lower, expected.upper)
    assert row["estimate"] == row["passed"] / row["observed"]


def test_one_case_per_cluster_keeps_the_exact_interval() -> None:
    # Every cluster counts at most one case of the criterion (the others are excluded, as a
    # metamorphic copy is): the exact interval, unchanged.
    outcomes = []
    for c in range(30):
        outcomes.append(_outcome(f"s{c}", "P" if c % 7 else "F", f"k{c}"))
        outcomes.append(_outcome(f"s{c}-copy", "X", f"k{c}"))
    row = _rows([_outcome(o.case_id, o.codes + "P", o.cluster) for o in outcomes])[0]
    exact = rate_interval(25, 30, 0, 0.95)
    assert (row["estimate"], row["lower"], row["upper"], row["method"]) == (
        exact.estimate, exact.lower, exact.upper, exact.method)
    assert "approximate" not in row


def test_clusters_that_always_agree_are_counted_once() -> None:
    # 120 passing cases in 40 clusters of 3: the old bootstrap showed [96.9%, 100%]; 40
    # independent clusters support no more than the exact 91.2%, and that is what the
    # Bentkus interval gives when every cluster passed whole (the betting interval: 83.8%).
    outcomes = [_outcome(f"c{c}-{k}", "PP", f"c{c}") for c in range(40) for k in range(3)]
    row = _rows(outcomes)[0]
    assert row["estimate"] == 1.0 and row["upper"] == 1.0
    assert row["lower"] == rate_interval(40, 40, 0, 0.95).lower < 0.913
    assert row["clusters"] == 40


# ---- coverage in the audit's settings ---------------------------------------------------------


def _cluster_passes(rate: float, correlation: float, sizes: npt.NDArray[np.int64],
                    rng: np.random.Generator, repetitions: int) -> npt.NDArray[np.float64]:
    """Passing cases of clusters of the given sizes; within a cluster, cases pass with a
    common probability drawn from Beta (beta-binomial: intra-cluster correlation ρ =
    1 / (a + b + 1)); ρ = 1 means a cluster's cases always agree."""
    shape = (repetitions, sizes.size)
    if correlation >= 1.0:
        return (rng.uniform(size=shape) < rate) * sizes.astype(np.float64)
    total = 1.0 / correlation - 1.0
    chance = rng.beta(rate * total, (1.0 - rate) * total, size=shape)
    return rng.binomial(sizes, chance).astype(np.float64)


SETTINGS = [(0.75, 0.5), (0.97, 0.8), (0.75, 1.0), (0.97, 1.0)]


@pytest.mark.parametrize(("rate", "correlation"), SETTINGS)
def test_coverage_at_least_nominal_in_the_audits_settings(rate: float, correlation: float
                                                          ) -> None:
    # 40 clusters of 2–4 cases (the audit's shape), the cases' rate estimated.
    rng = np.random.default_rng(int(rate * 1000) + int(correlation * 10))
    sizes = rng.integers(2, 5, size=40)
    passes = _cluster_passes(rate, correlation, sizes, rng, 2000)
    totals = np.sort(passes, axis=1).sum(axis=1)
    n = float(sizes.sum())
    lower = cluster_ratio_lower_bounds(totals, sizes, 0.95)
    upper = 1.0 - cluster_ratio_lower_bounds(n - totals, sizes, 0.95)
    one = cluster_ratio_interval(passes[0], passes[0], sizes, 0.95,
                                 observed_sum=float(totals[0]), observed_cases=int(n))
    assert (one.lower, one.upper) == pytest.approx((lower[0], upper[0]), abs=1e-15)
    covered = float(np.mean((lower <= rate) & (rate <= upper)))
    lower_missed = float(np.mean(lower > rate))
    assert covered >= 0.95, (rate, correlation, covered)
    assert lower_missed <= 0.025, (rate, correlation, lower_missed)
