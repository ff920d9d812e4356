"""Simultaneous intervals over a family of candidates and the cost–success front
(docs/board.md#why-the-intervals-are-simultaneous): the board's statistics core.

The coverage simulations here are small (a few hundred boards); the validity scenario
`benchmarks/validity/board_coverage.py` runs the large ones.
"""

from __future__ import annotations

import math
from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oloproof.stats import (
    MeanInterval,
    bentkus_interval,
    binary_difference_interval,
    difference_bounds,
    rate_interval,
)
from oloproof.stats.simultaneous import (
    SIMULTANEOUS_METHOD,
    BoardCandidate,
    board_family_size,
    cost_interval,
    dominated_by,
    each_level,
    simultaneous_board,
)

# Costs: a skewed distribution on [0, CAP] with a known mean — most cases cheap, a few near the
# cap (Beta(0.3, 4) scaled: mean 0.3/4.3 of the cap, skewness about 2.9).
CAP = 2.0
COST_A, COST_B = 0.3, 4.0
COST_MEAN = CAP * COST_A / (COST_A + COST_B)


def _draw_board(rng: np.random.Generator, rates: list[float], n: int,
                cost_scale: list[float] | None = None) -> list[BoardCandidate]:
    """Candidates `c0` (the baseline) … with true rates `rates`, their verdicts drawn
    independently per case, and skewed costs of mean `COST_MEAN * scale`."""
    scales = cost_scale or [1.0] * len(rates)
    return [BoardCandidate(f"c{i}", {"ok": (rng.random(n) < p).astype(float)},
                           CAP * s * rng.beta(COST_A, COST_B, n))
            for i, (p, s) in enumerate(zip(rates, scales, strict=True))]


def _covers(interval: MeanInterval, truth: float) -> bool:
    assert interval.lower is not None and interval.upper is not None
    return interval.lower <= truth <= interval.upper


# ---- the level of each interval ----------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([0.8, 0.9, 0.95, 0.975, 0.99, 0.999]), st.integers(1, 5000))
def test_each_level_spends_at_most_alpha_over_the_family(level: float, size: int) -> None:
    each = each_level(level, size)
    alpha = Decimal(1) - Decimal(repr(level))
    # What each interval spends, read as the intervals read it (from the level's text).
    spent = (Decimal(1) - Decimal(repr(each))) * size
    assert spent <= alpha
    assert spent > alpha * Decimal("0.999999")  # rounded up by a hair at most, not widened
    assert level <= each < 1.0


def test_each_level_refuses_an_empty_family() -> None:
    with pytest.raises(ValueError, match="at least one"):
        each_level(0.95, 0)


def test_the_family_counts_every_interval_that_decides() -> None:
    # 6 candidates, 2 criteria: 6 × (2 rates + 1 cost) + 5 × 2 differences.
    assert board_family_size(6, 2) == 28
    rng = np.random.default_rng(7)
    board = simultaneous_board(_draw_board(rng, [0.7] * 6, 50), "c0", "ok", CAP, 0.95)
    assert board.family_size == board_family_size(6, 1) == 17
    assert board.each_level == each_level(0.95, 17)
    assert board.method == SIMULTANEOUS_METHOD == "bonferroni"


def test_each_interval_is_the_projects_own_at_the_level_of_each() -> None:
    rng = np.random.default_rng(3)
    cands = _draw_board(rng, [0.6, 0.75, 0.5], 80)
    board = simultaneous_board(cands, "c0", "ok", CAP, 0.9)
    each = board.each_level
    by_name = {c.name: c for c in board.candidates}
    for c in cands:
        x = np.asarray(c.values["ok"])
        rate = rate_interval(int(x.sum()), x.size, 0, each)
        got = by_name[c.name].metrics["ok"]
        assert (got.estimate, got.lower, got.upper) == (rate.estimate, rate.lower, rate.upper)
        assert by_name[c.name].cost_per_case == cost_interval(c.costs, CAP, each)
    base = np.asarray(cands[0].values["ok"])
    moves = np.asarray(cands[1].values["ok"]) - base
    assert by_name["c1"].difference["ok"] == binary_difference_interval(moves, moves, each)
    assert by_name["c0"].difference == {}


# ---- coverage over the whole family ------------------------------------------------------------


@pytest.mark.parametrize(("candidates", "boards"), [(6, 150), (20, 60)])
def test_every_interval_holds_together_at_the_level(candidates: int, boards: int) -> None:
    """Every rate, difference, cost per case and cost per success of a board covers its true
    value at once, in at least `level` of the boards (Monte Carlo, with 3 standard errors of
    slack). The differences and costs are paired on shared cases; costs are skewed."""
    level = 0.8
    rng = np.random.default_rng(candidates)
    rates = list(np.linspace(0.55, 0.85, candidates))
    scales = list(np.linspace(0.5, 1.0, candidates))
    held = 0
    for _ in range(boards):
        board = simultaneous_board(_draw_board(rng, rates, 60, scales), "c0", "ok", CAP, level)
        every = True
        for i, figures in enumerate(board.candidates):
            cost = COST_MEAN * scales[i]
            every &= _covers(figures.metrics["ok"], rates[i])
            every &= _covers(figures.cost_per_case, cost)
            if i:
                every &= _covers(figures.difference["ok"], rates[i] - rates[0])
            per_success = figures.cost_per_success
            if per_success.upper is not None and per_success.lower is not None:
                every &= per_success.lower <= cost / rates[i] <= per_success.upper
        held += every
    slack = 3 * math.sqrt(level * (1 - level) / boards)
    assert held / boards >= level - slack


def test_intervals_at_the_level_each_would_not_hold_together() -> None:
    """The simulation above can fail: the same 20 candidates with each interval at the
    familywise level (no correction) cover together far less often than that level."""
    level, boards = 0.8, 60
    rng = np.random.default_rng(20)
    rates = list(np.linspace(0.55, 0.85, 20))
    held = 0
    for _ in range(boards):
        cands = _draw_board(rng, rates, 60)
        every = True
        for i, c in enumerate(cands):
            x = np.asarray(c.values["ok"])
            every &= _covers(rate_interval(int(x.sum()), x.size, 0, level), rates[i])  # type: ignore[arg-type]
            every &= _covers(cost_interval(c.costs, CAP, level), COST_MEAN)
        held += every
    assert held / boards < level - 0.3


def test_no_candidate_is_wrongly_non_inferior_at_exactly_the_margin() -> None:
    """20 candidates each exactly `margin` worse than the baseline: the chance that any one's
    difference lower bound clears −margin (shown non-inferior) is at most α/2, and without the
    correction it would be far above it."""
    level, margin, boards, n = 0.8, 0.1, 80, 120
    alpha_half = (1 - level) / 2
    rng = np.random.default_rng(45)
    rates = [0.8] + [0.8 - margin] * 20
    wrong = naive_wrong = 0
    for _ in range(boards):
        cands = _draw_board(rng, rates, n)
        board = simultaneous_board(cands, "c0", "ok", CAP, level)
        wrong += any(f.difference["ok"].lower is not None and f.difference["ok"].lower > -margin
                     for f in board.candidates[1:])
        base = np.asarray(cands[0].values["ok"])
        naive = [binary_difference_interval(np.asarray(c.values["ok"]) - base,
                                            np.asarray(c.values["ok"]) - base, level)
                 for c in cands[1:]]
        naive_wrong += any(d.lower is not None and d.lower > -margin for d in naive)
    slack = 3 * math.sqrt(alpha_half * (1 - alpha_half) / boards)
    assert wrong / boards <= alpha_half + slack
    assert naive_wrong / boards > alpha_half + slack


# ---- cost per case -----------------------------------------------------------------------------


def test_cost_interval_covers_skewed_costs() -> None:
    rng = np.random.default_rng(11)
    level, draws = 0.9, 300
    held = sum(_covers(cost_interval(CAP * rng.beta(COST_A, COST_B, 50), CAP, level), COST_MEAN)
               for _ in range(draws))
    assert held / draws >= level - 3 * math.sqrt(level * (1 - level) / draws)


def test_cost_interval_is_narrower_than_bentkus_for_skewed_costs() -> None:
    """Why betting: on skewed costs (mean far below the cap, small variance) it adapts to the
    variance, where Bentkus's bound takes the widest spread a mean allows."""
    rng = np.random.default_rng(5)
    costs = CAP * rng.beta(COST_A, COST_B, 400)
    betting = cost_interval(costs, CAP, 0.95)
    bentkus = bentkus_interval(costs / CAP, costs / CAP, 0.95)
    assert betting.lower is not None and betting.upper is not None
    assert bentkus.lower is not None and bentkus.upper is not None
    # (1.74 times narrower with this seed: docs/board.md#cost-per-case)
    assert CAP * (bentkus.upper - bentkus.lower) > 1.5 * (betting.upper - betting.lower)


def test_a_cost_above_the_cap_is_refused() -> None:
    with pytest.raises(ValueError, match=r"outside \[0, cap=1\].*raise the cap"):
        cost_interval([0.2, 1.5], 1.0, 0.95)
    with pytest.raises(ValueError, match="positive"):
        cost_interval([0.2], 0.0, 0.95)
    assert cost_interval([], 1.0, 0.95) == MeanInterval(None, None, None, "betting_capped")


# ---- the front ---------------------------------------------------------------------------------

_bound = st.floats(0.0, 1.0, allow_nan=False)


@st.composite
def _points(draw: st.DrawFn) -> list[tuple[str, MeanInterval, MeanInterval]]:
    out = []
    for i in range(draw(st.integers(1, 12))):
        s = sorted(draw(st.lists(_bound, min_size=2, max_size=2)))
        c = sorted(draw(st.lists(_bound, min_size=2, max_size=2)))
        out.append((f"c{i}", MeanInterval(s[0], s[0], s[1], ""),
                    MeanInterval(c[0], c[0], c[1], "")))
    return out


@settings(max_examples=300, deadline=None)
@given(_points())
def test_the_front_is_what_the_intervals_say(points: list[tuple[str, MeanInterval, MeanInterval]]
                                             ) -> None:
    found = dominated_by(points)
    # Read again from the bounds as plain numbers, as a reader of the JSON would.
    table = {n: (s.lower, s.upper, c.lower, c.upper) for n, s, c in points}
    for a, (_, a_su, a_cl, _) in table.items():
        expected = tuple(b for b, (b_sl, _, _, b_cu) in table.items()
                         if b != a and b_sl > a_su and b_cu < a_cl)  # type: ignore[operator]
        assert found[a] == expected
    # Domination is a strict order, so some candidate is always on the front, and one that
    # dominates another dominates everything that one dominates.
    assert any(not beaten for beaten in found.values())
    for a, beaten in found.items():
        for b in beaten:
            assert set(found[b]) <= set(found[a])


def test_the_board_marks_a_candidate_dominated_only_when_both_intervals_say_so() -> None:
    rng = np.random.default_rng(2)
    # c1 is much better and much cheaper than c0; c2 is as good as c0 and costs half as much.
    cands = _draw_board(rng, [0.5, 0.95, 0.5], 400, [1.0, 0.1, 0.5])
    board = simultaneous_board(cands, "c0", "ok", CAP, 0.95)
    beaten = {f.name: f.dominated_by for f in board.candidates}
    assert beaten == {"c0": ("c1",), "c1": (), "c2": ()}
    # c2 stays on the front although c1's success is surely higher: their costs' intervals
    # overlap, so the board cannot say c1 is also cheaper.
    c1, c2 = board.candidates[1], board.candidates[2]
    assert c1.metrics["ok"].lower > c2.metrics["ok"].upper  # type: ignore[operator]
    assert c1.cost_per_case.upper > c2.cost_per_case.lower  # type: ignore[operator]


# ---- what the board refuses --------------------------------------------------------------------


def test_the_board_refuses_unpaired_or_unknown_input() -> None:
    rng = np.random.default_rng(1)
    cands = _draw_board(rng, [0.5, 0.6], 30)
    with pytest.raises(ValueError, match="baseline 'c9'"):
        simultaneous_board(cands, "c9", "ok", CAP, 0.95)
    with pytest.raises(ValueError, match="success criterion 'done'"):
        simultaneous_board(cands, "c0", "done", CAP, 0.95)
    short = BoardCandidate("c2", {"ok": [1.0] * 29}, [0.1] * 29)
    with pytest.raises(ValueError, match=r"another number of cases.*pair the cases first"):
        simultaneous_board([*cands, short], "c0", "ok", CAP, 0.95)
    other = BoardCandidate("c2", {"safe": [1.0] * 30}, [0.1] * 30)
    with pytest.raises(ValueError, match="same ones"):
        simultaneous_board([*cands, other], "c0", "ok", CAP, 0.95)
    with pytest.raises(ValueError, match="share a name"):
        simultaneous_board([*cands, cands[0]], "c0", "ok", CAP, 0.95)


def test_fractions_take_the_order_free_rate_and_the_betting_difference() -> None:
    rng = np.random.default_rng(9)
    shares = [BoardCandidate(f"c{i}", {"ok": rng.integers(0, 4, 60) / 3}, rng.random(60))
              for i in range(3)]
    board = simultaneous_board(shares, "c0", "ok", 1.0, 0.95)
    assert board.candidates[1].metrics["ok"].method == "bentkus"
    assert board.candidates[1].difference["ok"].method == "betting"
    assert board.candidates[1].cost_per_success.method == "betting_capped/bentkus"


# ---- missing cases -----------------------------------------------------------------------------


def test_a_missing_case_is_bounded_the_worst_way_on_each_side() -> None:
    rng = np.random.default_rng(12)
    cands = _draw_board(rng, [0.7, 0.8], 60)
    base_ok = np.asarray(cands[0].values["ok"], dtype=float)
    ok = np.asarray(cands[1].values["ok"], dtype=float)
    costs = np.asarray(cands[1].costs, dtype=float)
    base_ok[3] = np.nan  # the baseline's case 3 errored
    ok[[5, 9]] = np.nan  # the candidate's cases 5 and 9 errored
    costs[9] = np.nan
    board = simultaneous_board(
        [BoardCandidate("c0", {"ok": base_ok}, cands[0].costs),
         BoardCandidate("c1", {"ok": ok}, costs)], "c0", "ok", CAP, 0.95)
    each = board.each_level
    mine = board.candidates[1]
    passed = int(np.nansum(ok))
    rate = rate_interval(passed, 58, 2, each)
    assert (mine.metrics["ok"].lower, mine.metrics["ok"].upper) == (rate.lower, rate.upper)
    assert mine.metrics["ok"].estimate == passed / 58
    low, high = difference_bounds(np.nan_to_num(base_ok, nan=0.0),
                                  np.nan_to_num(base_ok, nan=1.0),
                                  np.nan_to_num(ok, nan=0.0), np.nan_to_num(ok, nan=1.0))
    assert mine.difference["ok"] == binary_difference_interval(low, high, each)
    # The missing cost could be anything from 0 to the cap: the lower bound is the one with it
    # at 0, the upper bound the one with it at the cap; the estimate is the observed costs'.
    cost = mine.cost_per_case
    assert cost.estimate == pytest.approx(float(np.nanmean(costs)))
    assert cost.lower == cost_interval(np.nan_to_num(costs, nan=0.0), CAP, each).lower
    assert cost.upper == cost_interval(np.nan_to_num(costs, nan=CAP), CAP, each).upper


def test_a_candidate_with_every_case_missing_has_no_estimate() -> None:
    nothing = [float("nan")] * 10
    assert cost_interval(nothing, 1.0, 0.95).estimate is None
    board = simultaneous_board([BoardCandidate("c0", {"ok": [1.0] * 10}, [0.1] * 10),
                                BoardCandidate("c1", {"ok": nothing}, nothing)],
                               "c0", "ok", 1.0, 0.95)
    c1 = board.candidates[1]
    assert c1.metrics["ok"].estimate is None and c1.cost_per_success.estimate is None
    assert (c1.metrics["ok"].lower, c1.metrics["ok"].upper) == (0.0, 1.0)
    assert c1.dominated_by == ()
