"""Dropped cases count (issue 25 point 8): a candidate whose dataset drops its regressed cases
must not pass a `non_inferiority` rule its full dataset does not pass. A case of the baseline
that is not in the candidate is a pair whose candidate side is missing, resolved the worst way
for the lower bound; `dropped: ignore` on the rule leaves such cases out, and the report lists
them."""

from __future__ import annotations

import json
from typing import Any

import pytest
from compare_desk import Desk

import oloproof

REGRESSED = [f"c{i}" for i in range(1, 8)]  # the seven cases the candidate breaks


def _rule(**extra: Any) -> dict[str, Any]:
    return {"id": "no-regression", "metric": "answer_correct", "kind": "non_inferiority",
            "margin": 0.1, **extra}


@pytest.fixture(scope="module")
def desk(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """120 cases answered right by v1; v2 breaks seven of them. Three runs: v1, v2 on the whole
    dataset, and v2 on the dataset without the seven it breaks."""
    desk = Desk(tmp_path_factory.mktemp("dropped"), n=120)
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong(*REGRESSED)
    assert cli("run", cwd=desk.root)[0] == 0
    desk.cases = [c for c in desk.cases if c["id"] not in REGRESSED]
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    desk.write_policy("ni.yaml", {"version": 1, "rules": [_rule()]})
    desk.write_policy("ignore.yaml", {"version": 1, "rules": [_rule(dropped="ignore")]})
    return desk


def _gate(desk: Desk, cli: Any, candidate: str, policy: str) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("gate", candidate, "--policy", policy, "--baseline", "latest~2",
                         "--json", cwd=desk.root)
    assert code != 2, err
    return code, json.loads(out)


def test_dropping_the_regressed_cases_does_not_improve_the_gate(desk: Desk, cli: Any) -> None:
    code, full = _gate(desk, cli, "latest~1", "ni.yaml")
    assert code == 3 and full["decisions"][0]["state"] == "INSUFFICIENT_EVIDENCE"
    # Before: the candidate without its seven broken cases read ALLOW (exit 0).
    code, dropped = _gate(desk, cli, "latest", "ni.yaml")
    assert code == 3, dropped["decisions"]
    decision = dropped["decisions"][0]
    assert decision["state"] == "INSUFFICIENT_EVIDENCE"
    assert (decision["paired"], decision["dropped"], decision["dropped_ignored"]) == (
        113, 7, False)
    row = dropped["baseline"]["criteria"][0]
    assert (row["paired"], row["dropped"], row["broken"]) == (113, 7, 0)
    # Each dropped case counted as a failing candidate side: the lower bound is the one of
    # the whole dataset, where those seven cases broke.
    assert decision["bound"] == pytest.approx(full["decisions"][0]["bound"], abs=1e-12)
    assert dropped["baseline"]["dropped_cases"] == sorted(REGRESSED)


def test_a_rule_that_allows_removals_says_dropped_ignore(desk: Desk, cli: Any) -> None:
    code, printed = _gate(desk, cli, "latest", "ignore.yaml")
    assert code == 0, printed["decisions"]
    decision = printed["decisions"][0]
    assert decision["state"] == "PASS"
    assert (decision["dropped"], decision["dropped_ignored"]) == (7, True)
    ignoring = printed["baseline"]["ignoring_dropped"][0]
    assert decision["bound"] == ignoring["lower"] > -0.1
    assert "dropped" not in ignoring and ignoring["paired"] == 113
    # The report lists the cases the rule left out.
    code, out, err = cli("gate", "latest", "--policy", "ignore.yaml", "--baseline", "latest~2",
                         cwd=desk.root, env={"COLUMNS": "100"})
    assert code == 0, err
    assert "Dropped (in the baseline, not in this run; a rule with `dropped: ignore` leaves " \
        "them out): c1, c2, c3, c4, c5, c6, c7" in " ".join(out.split())


def test_compare_counts_them_and_says_so(desk: Desk, cli: Any) -> None:
    comparison = oloproof.compare("latest~2", "latest", desk.config)
    row = comparison.criterion("answer_correct")
    assert (row.paired, row.dropped, row.missing) == (113, 7, 0)
    assert comparison.baseline_only == sorted(REGRESSED)
    assert comparison.ignoring_dropped is not None
    code, out, err = cli("compare", "latest~2", "latest", cwd=desk.root, env={"COLUMNS": "100"})
    assert code == 0, err
    text = " ".join(out.split())
    assert "7 in the baseline only (dropped: each counted as a missing candidate side)" in text
    assert "113 · 0 · 0 + 7 dropped · p 1" in text
    assert "In the baseline only (dropped): c1, c2, c3, c4, c5, c6, c7" in text
    code, _, err = cli("compare", "latest~2", "latest", "--markdown", "c.md", cwd=desk.root)
    assert code == 0, err
    markdown = (desk.root / "c.md").read_text(encoding="utf-8")
    assert "| 113 | 113 | 0 | 0 | 0 | 0 + 7 dropped |" in markdown
    assert "- In the baseline only (dropped: each counted as a missing candidate side): c1, " \
        "c2, c3, c4, c5, c6, c7" in markdown


def test_dropped_is_a_non_inferiority_setting(desk: Desk, cli: Any) -> None:
    policy = desk.write_policy("bad.yaml", {"version": 1, "rules": [
        {"id": "floor", "metric": "answer_correct", "min": 0.5, "dropped": "ignore"}]})
    code, _, err = cli("gate", "latest", "--policy", policy.name, cwd=desk.root)
    assert code == 2
    assert "bad.yaml" in err and "dropped needs kind: non_inferiority" in err
    policy = desk.write_policy("bad.yaml", {"version": 1, "rules": [_rule(dropped="skip")]})
    code, _, err = cli("gate", "latest", "--policy", policy.name, "--baseline", "latest~2",
                       cwd=desk.root)
    assert code == 2 and "bad.yaml" in err and "'count' or 'ignore'" in err, err
