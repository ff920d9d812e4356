"""The `non_inferiority` rule (docs/compare.md#gating-on-it-kind-non_inferiority): decisions for
margins that clearly pass, clearly fail and straddle, the gate's exit code, `baseline:` in the
policy and `--baseline` on run and gate; and the bad input that must stop with exit 2 (issue 14
acceptance 2 and 3)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from compare_desk import Desk

import oloproof
from oloproof.store.store import Store


def _rule(margin: float, rule_id: str = "no-regression") -> dict[str, Any]:
    return {"id": rule_id, "metric": "answer_correct", "kind": "non_inferiority",
            "margin": margin}


def _decision(printed: dict[str, Any], rule: str = "no-regression") -> dict[str, Any]:
    return next(d for d in printed["decisions"] if d["rule"] == rule)


@pytest.fixture(scope="module")
def regressed(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """120 cases: the baseline answers all right; the candidate breaks 60 of them."""
    desk = Desk(tmp_path_factory.mktemp("regressed"), n=120)
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong(*[f"c{i}" for i in range(1, 61)])
    assert cli("run", cwd=desk.root)[0] == 0
    return desk


@pytest.fixture(scope="module")
def unchanged(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> Desk:
    """120 cases, answered alike by both versions (8 wrong in both)."""
    desk = Desk(tmp_path_factory.mktemp("unchanged"), n=120)
    desk.wrong(*[f"c{i}" for i in range(1, 9)])
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    assert cli("run", cwd=desk.root)[0] == 0
    return desk


def test_a_clear_regression_fails_and_blocks_with_exit_1(regressed: Desk, cli: Any) -> None:
    policy = regressed.write_policy("ni.yaml", {"version": 1, "baseline": "latest~1",
                                                "rules": [_rule(0.02)]})
    code, out, err = cli("gate", "latest", "--policy", policy.name, "--json",
                         cwd=regressed.root)
    assert code == 1, err
    printed = json.loads(out)
    decision = _decision(printed)
    assert decision["state"] == "FAIL"
    assert decision["reasons"] == ["difference_upper_bound_below_margin"]
    assert decision["kind"] == "non_inferiority" and decision["bound_side"] == "upper"
    assert decision["threshold"] == -0.02 and decision["threshold_side"] == "min"
    assert decision["paired"] == 120
    row = printed["baseline"]["criteria"][0]
    assert decision["bound"] == row["upper"] < -0.02
    assert row["difference"] == -0.5 and row["broken"] == 60
    assert decision["baseline"] == printed["baseline"]["baseline"]


def test_no_change_passes_a_wide_margin_and_straddles_a_narrow_one(unchanged: Desk,
                                                                   cli: Any) -> None:
    policy = unchanged.write_policy("ni.yaml", {"version": 1, "baseline": "latest~1", "rules": [
        _rule(0.3, "wide"), _rule(0.02, "narrow")]})
    code, out, err = cli("gate", "latest", "--policy", policy.name, "--json",
                         cwd=unchanged.root)
    assert code == 3, err  # blocked on INSUFFICIENT_EVIDENCE only
    printed = json.loads(out)
    row = printed["baseline"]["criteria"][0]
    assert row["difference"] == 0.0 and row["both_failed"] == 8 and row["broken"] == 0
    wide, narrow = _decision(printed, "wide"), _decision(printed, "narrow")
    assert wide["state"] == "PASS" and wide["reasons"] == [
        "difference_lower_bound_within_margin"]
    assert wide["bound"] == row["lower"] >= -0.3
    assert narrow["state"] == "INSUFFICIENT_EVIDENCE"
    assert narrow["reasons"] == ["difference_interval_overlaps_margin"]
    assert row["lower"] < -0.02 <= row["upper"]
    code, out, err = cli("gate", "latest", "--policy", policy.name, cwd=unchanged.root,
                         env={"COLUMNS": "200"})
    assert "PASS · difference lower" in out and "≥ -30.0%" in out
    assert "INSUFFICIENT_EVIDENCE · difference lower" in out and "< -2.0% ≤ upper" in out
    # The upper bound above zero carries its sign, as in the comparison table beside it.
    upper = next(line for line in out.splitlines() if "< -2.0% ≤ upper" in line)
    assert row["upper"] > 0 and "≤ upper +" in upper


def test_no_paired_case_is_insufficient_evidence(tmp_path_factory: pytest.TempPathFactory,
                                                 cli: Any) -> None:
    """Every shared case changed its input: nothing pairs, so nothing shows non-inferiority."""
    desk = Desk(tmp_path_factory.mktemp("nopairs"), n=10)
    assert cli("run", cwd=desk.root)[0] == 0
    desk.cases = [Desk.case(c["id"], q=1000 + i) for i, c in enumerate(desk.cases)]
    desk.policy = {"version": 1, "baseline": "latest~1", "rules": [_rule(0.05)]}
    desk.write()
    code, out, err = cli("run", "--json", cwd=desk.root)
    assert code == 3, err
    printed = json.loads(out)
    decision = _decision(printed)
    assert decision["state"] == "INSUFFICIENT_EVIDENCE"
    assert decision["reasons"] == ["no_paired_cases"] and decision["paired"] == 0
    assert printed["baseline"]["changed"] == 10


def test_baseline_in_the_policy_under_run_names_the_run_before(tmp_path_factory: Any,
                                                               cli: Any) -> None:
    """During `oloproof run`, the run being made is `latest`: `latest~1` is the one before it,
    `latest` (which cannot be the run itself) too; the stored policy keeps the id, so `gate`
    later decides against the same baseline whatever ran since."""
    desk = Desk(tmp_path_factory.mktemp("policy"), n=20)
    code, out, _ = cli("run", "--json", cwd=desk.root)
    first = json.loads(out)["run_id"]
    desk.policy = {"version": 1, "baseline": "latest~1", "rules": [_rule(0.5)]}
    desk.version("v2")
    code, out, err = cli("run", "--json", cwd=desk.root)
    assert code == 0, err
    second = json.loads(out)
    assert _decision(second)["baseline"] == first and _decision(second)["state"] == "PASS"
    code, out, err = cli("run", "--json", "--baseline", "latest", cwd=desk.root)
    assert code == 0, err
    third = json.loads(out)
    assert _decision(third)["baseline"] == second["run_id"]
    # Re-deciding the second run under its own policy uses the baseline it was decided on.
    code, out, err = cli("gate", second["run_id"], "--json", cwd=desk.root)
    assert code == 0, err
    assert _decision(json.loads(out))["baseline"] == first
    # --baseline on gate: `latest` for `gate latest` is the newest run before it.
    code, out, err = cli("gate", "latest", "--baseline", "latest", "--json", cwd=desk.root)
    assert _decision(json.loads(out))["baseline"] == second["run_id"]
    # The library says the same.
    result = oloproof.redecide("latest", config=desk.config, baseline=first)
    assert result.decisions[0].baseline == first


# ---- bad input: exit 2, a clear message, nothing run ---------------------------------------------


@pytest.fixture
def desk_with_runs(tmp_path: Path, cli: Any) -> Desk:
    desk = Desk(tmp_path / "desk", n=6)
    assert cli("run", cwd=desk.root)[0] == 0
    desk.policy = {"version": 1, "rules": [_rule(0.05)]}
    desk.write()
    return desk


def _calls_made(desk: Desk, cli: Any, *args: str) -> tuple[int, str]:
    """`oloproof run --no-cache ARGS`: its exit code and stderr, checking that the system was
    not called and no run was registered."""
    calls = desk.calls()
    runs = len(Store(desk.root / ".oloproof" / "store.sqlite").list_runs())
    code, _, err = cli("run", "--no-cache", *args, cwd=desk.root)
    assert desk.calls() == calls
    assert len(Store(desk.root / ".oloproof" / "store.sqlite").list_runs()) == runs
    return code, err


def _line_of(desk: Desk, text: str) -> int:
    lines = (desk.root / "release.yaml").read_text().splitlines()
    return next(n for n, line in enumerate(lines, 1) if text in line)


def test_a_baseline_that_does_not_exist(desk_with_runs: Desk, cli: Any) -> None:
    code, err = _calls_made(desk_with_runs, cli, "--baseline", "run_nope")
    assert code == 2 and "no run matches baseline 'run_nope'" in err
    code, err = _calls_made(desk_with_runs, cli, "--baseline", "latest~5")
    assert code == 2 and "baseline 'latest~5' names the run 5 before the newest" in err
    assert "use latest to latest~1" in err
    code, _, err = cli("gate", "latest", "--baseline", "nope", cwd=desk_with_runs.root)
    assert code == 2 and "no run matches baseline 'nope'" in err
    code, _, err = cli("compare", "nope", "latest", cwd=desk_with_runs.root)
    assert code == 2 and "no run matches 'nope'" in err


def test_a_rule_with_no_baseline_given(desk_with_runs: Desk, cli: Any) -> None:
    code, err = _calls_made(desk_with_runs, cli)
    assert code == 2
    assert f"release.yaml:{_line_of(desk_with_runs, 'kind:')}:" in err
    assert "rule 'no-regression' is a non_inferiority rule" in err
    assert "no baseline is given" in err and "--baseline REF" in err
    code, out, err = cli("gate", "latest", "--policy", "release.yaml", "--json",
                         cwd=desk_with_runs.root)
    assert code == 2 and json.loads(out)["error"]["kind"] == "configuration"


@pytest.mark.parametrize("margin", [1.0, -0.01, 2])
def test_a_margin_outside_0_1(desk_with_runs: Desk, cli: Any, margin: float) -> None:
    desk_with_runs.policy = {"version": 1, "baseline": "latest", "rules": [_rule(margin)]}
    desk_with_runs.write()
    code, err = _calls_made(desk_with_runs, cli)
    assert code == 2
    assert f"margin {margin!r} is outside [0, 1)" in err
    assert f"release.yaml:{_line_of(desk_with_runs, 'margin:')}:" in err


def test_a_baseline_of_another_project_or_with_no_shared_case(tmp_path: Path, cli: Any) -> None:
    store = tmp_path / "shared.sqlite"
    env = {"OLOPROOF_STORE": str(store)}
    desk = Desk(tmp_path / "one", n=6)
    assert cli("run", cwd=desk.root, env=env)[0] == 0
    other = Desk(tmp_path / "two", n=6, project="other")
    other.policy = {"version": 1, "baseline": "latest", "rules": [_rule(0.05)]}
    other.write()
    code, _, err = cli("run", cwd=other.root, env=env)
    assert code == 2 and "is of project 'desk', and this suite is project 'other'" in err
    assert other.calls() == 0
    fresh = Desk(tmp_path / "three", n=0)
    fresh.cases = [Desk.case(f"x{i}") for i in range(5)]
    fresh.policy = other.policy
    fresh.write()
    code, _, err = cli("run", cwd=fresh.root, env=env)
    assert code == 2 and "shares no case id with this suite" in err
    # compare says the same of two stored runs.
    fresh.policy = {"version": 1, "rules": []}
    fresh.write()
    assert cli("run", cwd=fresh.root, env=env)[0] == 0
    code, _, err = cli("compare", "latest~1", "latest", cwd=fresh.root, env=env)
    assert code == 2 and "shares no case id with the candidate" in err
    code, _, err = cli("compare", "latest", "latest", cwd=fresh.root, env=env)
    assert code == 2 and "the same run" in err


@pytest.mark.parametrize(("margin", "says"), [
    ("2%", "rules[0].margin: must be a number (got '2%')"),
    (False, "rules[0].margin: must be a number, not true or false"),
    (True, "rules[0].margin: must be a number, not true or false"),
    (None, "a non_inferiority rule takes margin (e.g. margin: 0.02"),
])
def test_a_margin_that_is_not_a_fraction(desk_with_runs: Desk, cli: Any, margin: Any,
                                         says: str) -> None:
    rule = _rule(0.02)
    if margin is None:
        del rule["margin"]
    else:
        rule["margin"] = margin
    desk_with_runs.policy = {"version": 1, "baseline": "latest~1", "rules": [rule]}
    desk_with_runs.write()
    code, err = _calls_made(desk_with_runs, cli)
    assert code == 2 and says in err
    # The line is the margin's, or the rule's when it has none.
    line = _line_of(desk_with_runs, "margin:" if margin is not None else "id: no-regression")
    assert f"release.yaml:{line}:" in err
    # gate stops the same way, before reading any run.
    code, out, _ = cli("gate", "latest", "--policy", "release.yaml", "--json",
                       cwd=desk_with_runs.root)
    assert code == 2 and says in json.loads(out)["error"]["message"]


def test_a_rule_on_a_quantile_or_on_nothing(desk_with_runs: Desk, cli: Any) -> None:
    desk_with_runs.suite["metrics"] = [{"id": "steps_p50", "type": "quantile",
                                        "source": "agent_steps", "quantile": 0.5}]
    for metric, says in (("steps_p50", "'steps_p50' is a quantile"),
                         ("answers_right", "names metric 'answers_right', which nothing "
                                           "produces")):
        rule = {**_rule(0.02), "metric": metric}
        desk_with_runs.policy = {"version": 1, "baseline": "latest~1", "rules": [rule]}
        desk_with_runs.write()
        code, err = _calls_made(desk_with_runs, cli)
        assert code == 2 and says in err, err


def test_a_baseline_of_another_project_named_to_gate_and_compare(tmp_path: Path,
                                                                  cli: Any) -> None:
    """The same through `gate --baseline` and `compare`: the message names both runs and
    both projects, and nothing is decided."""
    env = {"OLOPROOF_STORE": str(tmp_path / "shared.sqlite")}
    one = Desk(tmp_path / "one", n=6)
    assert cli("run", cwd=one.root, env=env)[0] == 0
    other = Desk(tmp_path / "two", n=6, project="other")
    assert cli("run", cwd=other.root, env=env)[0] == 0
    runs = [r["run_id"] for r in Store(tmp_path / "shared.sqlite").list_runs()]
    desk_run, other_run = runs[1], runs[0]
    other.write_policy("ni.yaml", {"version": 1, "rules": [_rule(0.05)]})
    code, out, err = cli("gate", "latest", "--policy", "ni.yaml", "--baseline", "latest~1",
                         cwd=other.root, env=env)
    assert code == 2 and out == ""
    assert f"the baseline run {desk_run} is of project 'desk'" in err
    assert "a baseline must be a run of the same project" in err
    code, out, err = cli("compare", desk_run, other_run, cwd=other.root, env=env)
    assert code == 2 and out == ""
    assert (f"the baseline run {desk_run} is of project 'desk' and the candidate {other_run} "
            "of project 'other'") in err
    code, out, _ = cli("compare", desk_run, other_run, "--json", cwd=other.root, env=env)
    assert code == 2 and "is of project 'desk'" in json.loads(out)["error"]["message"]


def test_a_baseline_sharing_no_case_named_to_gate(tmp_path: Path, cli: Any) -> None:
    env = {"OLOPROOF_STORE": str(tmp_path / "shared.sqlite")}
    old = Desk(tmp_path / "old", n=6)
    assert cli("run", cwd=old.root, env=env)[0] == 0
    new = Desk(tmp_path / "new", n=0)
    new.cases = [Desk.case(f"x{i}") for i in range(5)]
    new.write()
    assert cli("run", cwd=new.root, env=env)[0] in (0, 3)
    new.write_policy("ni.yaml", {"version": 1, "rules": [_rule(0.05)]})
    code, _, err = cli("gate", "latest", "--policy", "ni.yaml", "--baseline", "latest~1",
                       cwd=new.root, env=env)
    assert code == 2 and "shares no case id" in err and "nothing can be paired" in err


def test_the_first_run_with_a_baseline_rule(tmp_path: Path, cli: Any) -> None:
    """An empty store has no run to compare with: exit 2 saying to run the baseline first,
    before the system is called."""
    desk = Desk(tmp_path / "desk", n=4)
    desk.policy = {"version": 1, "baseline": "latest~1", "rules": [_rule(0.05)]}
    desk.write()
    code, _, err = cli("run", cwd=desk.root)
    assert code == 2 and desk.calls() == 0
    assert "no run is stored yet to compare this one with; run the baseline first" in err
