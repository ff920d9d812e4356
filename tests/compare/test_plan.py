"""`oloproof plan` (issue 14 acceptance 5, issues 26 and 40): the projected total is the smallest
N whose interval at the same rate clears the threshold, checked by scanning N; each chance is the
chance the run continued to a total decides, the rate drawn from the run's confidence
distribution (issue 40), checked by summing scipy's beta-binomial over every count; the total
for an 80% chance is one where that chance holds and one case fewer falls short, or none when
the run leaves too much on the other side of the threshold; fractional values (trials) are
projected in cases by the Bentkus interval; labelled a projection; nothing is run."""

from __future__ import annotations

import json
from typing import Any

import pytest
import scipy.stats
from compare_desk import Desk


def _scan(passed: int, observed: int, threshold: float, level: float = 0.95) -> int:
    """Brute force: the smallest N whose Clopper–Pearson lower bound, at k = rate·N successes
    (fractional), reaches the threshold (scipy.stats.beta, not the code under test)."""
    rate = passed / observed
    alpha = 1 - level
    n = 1
    while scipy.stats.beta.ppf(alpha / 2, rate * n, (1 - rate) * n + 1) < threshold:
        n += 1
    return n


def _need(total: int, threshold: float, level: float = 0.95) -> int:
    """Brute force: the fewest passes of `total` whose Clopper–Pearson lower bound reaches the
    threshold (scipy.stats.beta, not the code under test)."""
    alpha = 1 - level
    return next(k for k in range(1, total + 1)
                if scipy.stats.beta.ppf(alpha / 2, k, total - k + 1) >= threshold)


def _chance(total: int, passed: int, observed: int, threshold: float) -> float:
    """Brute force: the chance that `passed` of `observed`, continued to `total` cases, reaches
    a lower bound at or above `threshold`, the rate drawn from the even mixture of
    Beta(k, n − k + 1) and Beta(k + 1, n − k) (scipy's beta-binomial, summed over counts)."""
    need = _need(total, threshold) - passed
    more = total - observed
    return 0.5 * sum(float(scipy.stats.betabinom.sf(need - 1, more, a, b))
                     for a, b in ((passed, observed - passed + 1),
                                  (passed + 1, observed - passed)))


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """40 cases, 33 answered right (min 0.8 is undecided); trials metrics aside."""
    desk = Desk(tmp_path_factory.mktemp("plan"), n=40)
    desk.wrong(*[f"c{i}" for i in range(1, 8)])
    desk.policy = {"version": 1, "rules": [
        {"id": "answers", "metric": "answer_correct", "min": 0.8},
        {"id": "looks-up", "metric": "agent_tool_lookup_called", "min": 0.8},
        {"id": "strict", "metric": "answer_correct", "min": 0.825},
    ]}
    desk.write()
    code, _out, err = cli("run", "--json", cwd=desk.root)
    assert code == 3, err
    return desk


def test_the_projected_total_is_the_brute_force_scan(desk: Desk, cli: Any) -> None:
    calls = desk.calls()
    code, out, err = cli("plan", "latest", "--json", cwd=desk.root)
    assert code == 0, err
    assert desk.calls() == calls  # nothing ran
    plan = json.loads(out)
    assert plan["projection"] is True and "not a promise" in plan["note"]
    rows = {r["rule"]: r for r in plan["rules"]}
    assert set(rows) == {"answers", "strict"}  # looks-up is PASS: decided, nothing to plan
    assert plan["decided"] == 1
    answers = rows["answers"]
    assert (answers["passed"], answers["observed"], answers["threshold"]) == (33, 40, 0.8)
    expected = _scan(33, 40, 0.8)
    assert answers["total"] == expected and answers["more"] == expected - 40
    assert answers["state"] == "PASS"
    # Continued to the first total, the run decides about half the time (summed exactly).
    assert answers["chance"] == pytest.approx(_chance(expected, 33, 40, 0.8), abs=1e-9)
    assert 0.4 < answers["chance"] < 0.6
    assert answers["chance_method"] == "exact: beta-binomial over the run's confidence " \
        "distribution"
    assert "confidence distribution" in answers["chance_assumption"]
    # No number of cases gives 80%: the run leaves 36% that the rate is 80% or less, where no
    # number of cases reaches PASS (the share of the distribution above 0.8, by scipy).
    assert answers.get("likely_total") is None
    above = 0.5 * sum(float(scipy.stats.beta.sf(0.8, a, b)) for a, b in ((33, 8), (34, 7)))
    assert answers["reachable"] == pytest.approx(above, abs=1e-12)
    assert 0.6 < above < 0.7
    # The estimate equals the threshold: no number of cases at that rate settles it.
    strict = rows["strict"]
    assert strict.get("total") is None and strict["reason"] == "estimate_equals_threshold"


def test_the_terminal_says_it_is_a_projection(desk: Desk, cli: Any) -> None:
    code, out, err = cli("plan", cwd=desk.root, env={"COLUMNS": "120"})
    assert code == 0, err
    assert "PROJECTION, not a promise" in out
    assert f"projected: {_scan(33, 40, 0.8)} observed cases" in out
    assert "now 33 / 40 observed = 82.5%; threshold 80.0%" in out
    assert "no number of cases would settle it" in out
    flat = " ".join(out.split())
    assert "for an 80% chance: no number of cases — this run leaves a 36.2% chance that the " \
        "rate is at or below 80.0%, where no number of cases reaches PASS" in flat
    assert "(chances: the rate drawn from this run's confidence distribution, the run " \
        "continued with its observed cases kept)" in flat


def test_under_another_policy(desk: Desk, cli: Any) -> None:
    policy = desk.write_policy("other.yaml", {"version": 1, "rules": [
        {"id": "lenient", "metric": "answer_correct", "min": 0.7}]})
    code, out, err = cli("plan", "latest", "--policy", policy.name, "--json", cwd=desk.root)
    assert code == 0, err
    row = json.loads(out)["rules"][0]
    assert row["total"] == _scan(33, 40, 0.7)
    # 33 of 40 under min 0.7: 96% of the distribution is above 0.7, so a total gives 80%, and
    # one case fewer does not (summed exactly).
    likely = row["likely_total"]
    assert row["likely_more"] == likely - 40 and row["reachable"] > 0.95
    assert _chance(likely, 33, 40, 0.7) >= 0.8 > _chance(likely - 1, 33, 40, 0.7)
    assert row["likely_chance"] == pytest.approx(_chance(likely, 33, 40, 0.7), abs=1e-9)


def test_fractional_values_are_projected_by_the_bentkus_interval_in_cases(
        tmp_path_factory: pytest.TempPathFactory, cli: Any) -> None:
    # Before: "no projection for this metric: its per-case values are fractions".
    from oloproof.stats import SIMULATED_ASSURANCE_METHOD, mean_projection
    desk = Desk(tmp_path_factory.mktemp("plan-trials"), n=10)
    desk.suite["trials"] = 2
    desk.policy = {"version": 1, "rules": [
        {"id": "answers", "metric": "answer_correct", "min": 0.8}]}
    desk.write()
    desk.wrong_trials("c1#1")
    assert cli("run", cwd=desk.root)[0] == 3
    code, out, err = cli("plan", "--json", cwd=desk.root)
    assert code == 0, err
    row = json.loads(out)["rules"][0]
    # Counted in cases (10), not trials (20); c1's share is 1/2, the others' 1: a mean of 0.95.
    assert (row["observed"], row["estimate"], row["passed"]) == (10, 0.95, None)
    assert row["values"] == "each case's share of its 2 trials that passed"
    assert row["total"] == mean_projection(0.95, 0.95, minimum=0.8).total
    assert row["method"] == "bentkus at the same rate" and row["state"] == "PASS"
    assert row["likely_method"] == SIMULATED_ASSURANCE_METHOD
    assert row["likely_total"] >= row["total"] and row["likely_chance"] >= 0.8
    assert 0.3 < row["chance"] < 0.8
    code, out, err = cli("plan", cwd=desk.root, env={"COLUMNS": "200"})
    assert "now 95.0%: the mean over 10 observed cases of each case's share of its 2 trials " \
        "that passed; threshold 80.0%" in out
    assert "observed = " not in out, "no count of trials beside a mean of shares"


def test_trials_that_all_agree_get_an_exact_number(tmp_path_factory: pytest.TempPathFactory,
                                                  cli: Any) -> None:
    # 18 cases × 3 trials, all passing, under min 0.9: 81.4% now; the same totals as with one
    # trial (every value is 0 or 1, so the chance is exact).
    desk = Desk(tmp_path_factory.mktemp("plan-agree"), n=18)
    desk.suite["trials"] = 3
    desk.suite["metrics"] = [{"id": "answer_pass_hat_3", "type": "pass_hat_k",
                              "criterion": "answer_correct", "k": 3}]
    desk.policy = {"version": 1, "rules": [
        {"id": "answers", "metric": "answer_correct", "min": 0.9},
        {"id": "every-time", "metric": "answer_pass_hat_3", "min": 0.9}]}
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 3
    code, out, err = cli("plan", "--json", cwd=desk.root)
    assert code == 0, err
    rows = {r["rule"]: r for r in json.loads(out)["rules"]}
    for rule in ("answers", "every-time"):
        assert rows[rule]["total"] == 36, rule
        assert rows[rule]["likely_method"].startswith("exact"), rule
    # Rates below 100% are plausible too, and there the Bentkus interval of the shares is a
    # little wider than the exact one of pass^3: it needs more cases.
    assert rows["answers"]["likely_total"] >= rows["every-time"]["likely_total"] > 36
    assert rows["every-time"]["method"] == "clopper-pearson at the same rate"
    assert (rows["every-time"]["passed"], rows["every-time"]["observed"]) == (18, 18)
    assert rows["answers"]["method"] == "bentkus at the same rate"
