"""`oloproof plan` (SPEC §18, issue 14 acceptance 5): the projected total is the smallest N whose
exact interval at the same rate clears the threshold, checked by scanning N; labelled a
projection; no projection for fractional values; nothing is run."""

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


def test_under_another_policy(desk: Desk, cli: Any) -> None:
    policy = desk.write_policy("other.yaml", {"version": 1, "rules": [
        {"id": "lenient", "metric": "answer_correct", "min": 0.7}]})
    code, out, err = cli("plan", "latest", "--policy", policy.name, "--json", cwd=desk.root)
    assert code == 0, err
    rows = json.loads(out)["rules"]
    assert rows[0]["total"] == _scan(33, 40, 0.7)


def test_no_projection_for_fractional_values(tmp_path_factory: pytest.TempPathFactory,
                                             cli: Any) -> None:
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
    assert row["reason"] == "fractional_values" and "total" not in row
    assert "betting interval depends on every value" in row["note"]
