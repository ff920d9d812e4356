"""`oloproof compare` on a suite whose fixed and broken cases are known by construction
(docs/compare.md, issue 14 acceptance 1 and 2): changed, dropped and added cases included."""

from __future__ import annotations

import json
from typing import Any

import pytest
import scipy.stats
from compare_desk import Desk
from rich.cells import cell_len

import oloproof
from oloproof.document import Comparison, Verdict
from oloproof.stats import (
    binary_difference_interval,
    difference_bounds,
    paired_difference_interval,
)

# Baseline v1: c1–c7 wrong, c8 raises. Candidate v2: c1–c5 still wrong (both failed), c6, c7
# fixed, c10–c12 broken, c8 still raises (missing on both sides), c9 raises now (missing on
# one side); c40's input changed (changed, not paired); c39 dropped; c41 added.
BASELINE_WRONG = [f"c{i}" for i in range(1, 8)]
CANDIDATE_WRONG = ["c1", "c2", "c3", "c4", "c5", "c10", "c11", "c12"]


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> tuple[Desk, str, str]:
    desk = Desk(tmp_path_factory.mktemp("desk"))
    desk.wrong(*BASELINE_WRONG)
    desk.raising("c8")
    code, out, err = cli("run", "--json", cwd=desk.root)
    assert code in (0, 1, 3), err
    baseline = json.loads(out)["run_id"]
    desk.cases = [c for c in desk.cases if c["id"] != "c39"]
    desk.cases[-1] = Desk.case("c40", q=400)
    desk.cases.append(Desk.case("c41"))
    desk.version("v2")
    desk.wrong(*CANDIDATE_WRONG)
    desk.raising("c8", "c9")
    code, out, err = cli("run", "--json", cwd=desk.root)
    assert code in (0, 1, 3), err
    return desk, baseline, json.loads(out)["run_id"]


@pytest.fixture(scope="module")
def printed(runs: tuple[Desk, str, str], cli: Any) -> dict[str, Any]:
    desk, _, _ = runs
    code, out, err = cli("compare", "latest~1", "latest", "--json", cwd=desk.root)
    assert code == 0, err
    return dict(json.loads(out))


def test_counts_are_those_built_in(runs: tuple[Desk, str, str],
                                   printed: dict[str, Any]) -> None:
    _, baseline, candidate = runs
    assert printed["baseline"] == baseline and printed["candidate"] == candidate
    answer = next(r for r in printed["criteria"] if r["criterion"] == "answer_correct")
    # 40 − c39 (dropped) − c40 (changed) = 38 pairs; c8 and c9 have a side missing.
    assert {k: answer[k] for k in ("paired", "both_passed", "fixed", "broken", "both_failed",
                                   "missing", "excluded")} == {
        "paired": 38, "both_passed": 26, "fixed": 2, "broken": 3, "both_failed": 5,
        "missing": 2, "excluded": 0}
    assert printed["changed"] == ["c40"]
    assert printed["baseline_only"] == ["c39"]
    assert printed["candidate_only"] == ["c41"]
    assert printed["broken_cases"]["answer_correct"] == ["c10", "c11", "c12"]
    assert printed["fixed_cases"]["answer_correct"] == ["c6", "c7"]
    tools = next(r for r in printed["criteria"] if r["criterion"] == "agent_tool_lookup_called")
    assert (tools["both_passed"], tools["broken"], tools["missing"]) == (36, 0, 2)


def test_the_document_has_the_keys_of_spec_17(printed: dict[str, Any]) -> None:
    assert {"baseline", "candidate", "criteria", "changed", "baseline_only",
            "candidate_only", "broken_cases"} <= set(printed)
    row = printed["criteria"][0]
    assert {"criterion", "paired", "both_passed", "fixed", "broken", "both_failed", "missing",
            "difference", "lower", "upper", "method", "mcnemar_p"} <= set(row)
    # One trial: 0/1 values on both sides, the interval compatible with exact McNemar.
    assert row["method"] == "melded_mcnemar"
    # c39 is in the baseline only and c40 changed: each a pair whose candidate side is missing
    # (not in `paired`).
    assert row["dropped"] == 2
    assert [r["criterion"] for r in printed["ignoring_dropped"]] == [
        r["criterion"] for r in printed["criteria"]]
    assert all("dropped" not in r for r in printed["ignoring_dropped"])


def test_the_difference_is_in_its_interval_with_missing_sides_resolved_the_worst_way(
        printed: dict[str, Any]) -> None:
    answer = next(r for r in printed["criteria"] if r["criterion"] == "answer_correct")
    # Both sides observed on 36 pairs: (2 fixed − 3 broken) / 36.
    assert answer["difference"] == pytest.approx(-1 / 36, abs=1e-15)
    assert answer["lower"] <= answer["difference"] <= answer["upper"]
    # By hand, in case-digest order: the pairs' values, c8 (missing in both) and c9 (missing
    # in the candidate) resolved the worst way for each bound.
    assert answer["lower"] < -1 / 36 < answer["upper"]


def test_the_interval_is_the_melded_interval_over_the_pairs_and_the_dropped_cases(
        runs: tuple[Desk, str, str]) -> None:
    desk, baseline, candidate = runs
    sides = {}
    for run_id in (baseline, candidate):
        trials = oloproof.load_case_trials(run_id, desk.config)
        sides[run_id] = {c.case_id: c for c in trials}
    base, cand = sides[baseline], sides[candidate]
    paired = sorted((cand[i].digest or "", i) for i in cand
                    if i in base and base[i].digest == cand[i].digest)

    def bounds(case: Any) -> tuple[float, float]:
        counts = case.counts[0]  # answer_correct
        return (1.0, 1.0) if counts.passed else (0.0, 0.0) if counts.failed else (0.0, 1.0)

    b = [bounds(base[i]) for _, i in paired]
    c = [bounds(cand[i]) for _, i in paired]
    # c39, dropped, and c40, changed: the baseline's verdict against a candidate side that
    # could be anything.
    dropped_b, dropped_c = [bounds(base["c39"]), bounds(base["c40"])], [(0.0, 1.0)] * 2

    def interval(b: list[tuple[float, float]], c: list[tuple[float, float]]) -> Any:
        low, high = difference_bounds([x[0] for x in b], [x[1] for x in b],
                                      [x[0] for x in c], [x[1] for x in c])
        return binary_difference_interval(low, high, 0.95)

    comparison = oloproof.compare(baseline, candidate, desk.config)
    row = comparison.criterion("answer_correct")
    expected = interval(b + dropped_b, c + dropped_c)
    assert (row.difference, row.lower, row.upper) == (expected.estimate, expected.lower,
                                                      expected.upper)
    assert comparison.ignoring_dropped is not None
    ignoring = next(r for r in comparison.ignoring_dropped if r.criterion == "answer_correct")
    without = interval(b, c)
    assert (ignoring.difference, ignoring.lower, ignoring.upper) == (
        without.estimate, without.lower, without.upper)
    assert ignoring.lower is not None and row.lower is not None
    assert row.lower < ignoring.lower  # the dropped case counts against the candidate


def test_mcnemar_p_is_the_exact_binomial_test_on_the_discordant_pairs(
        printed: dict[str, Any]) -> None:
    answer = next(r for r in printed["criteria"] if r["criterion"] == "answer_correct")
    assert answer["mcnemar_p"] == pytest.approx(scipy.stats.binomtest(3, 5, 0.5).pvalue,
                                                rel=1e-12)


def test_what_changed_in_each_broken_case(printed: dict[str, Any]) -> None:
    changes = {c["case"]: c for c in printed["changes"]}
    assert list(changes)[:3] == ["c10", "c11", "c12"]  # broken first, then fixed
    assert set(changes) == {"c10", "c11", "c12", "c6", "c7"}
    c10 = changes["c10"]
    assert c10["criteria"] == [{"criterion": "answer_correct", "baseline": "passed",
                                "candidate": "failed"}]
    # The lookup's result is where the two runs part (step 2); the calls are the same.
    assert c10["parting"]["step"] == 2
    assert c10["parting"]["action"] is None
    assert c10["parting"]["baseline"] == 'tool_result lookup → {"ok": true}'
    assert c10["parting"]["candidate"] == 'tool_result lookup → {"ok": false}'


def test_the_library_returns_the_same_typed_comparison(runs: tuple[Desk, str, str],
                                                       printed: dict[str, Any]) -> None:
    desk, _, _ = runs
    comparison = oloproof.compare("latest~1", "latest", desk.config)
    assert isinstance(comparison, Comparison)
    assert comparison.to_json() == printed
    assert comparison.changes[0].criteria[0].candidate is Verdict.FAILED


def test_the_terminal_lists_broken_cases_with_what_changed(runs: tuple[Desk, str, str],
                                                           cli: Any) -> None:
    desk, baseline, candidate = runs
    code, out, err = cli("compare", baseline[-8:], candidate[-8:], cwd=desk.root,
                         env={"COLUMNS": "120"})
    assert code == 0, err
    assert "Broken cases (passed → failed): 3" in out
    assert "answer_correct: c10, c11, c12" in out
    assert "c10: answer_correct passed → failed" in out
    assert "trajectories part at step 2" in out
    assert "Changed cases (their input or expected changed; not paired): c40" in out
    assert "In the baseline only (dropped): c39" in out and "In the candidate only: c41" in out
    broken_at, fixed_at = out.index("Broken cases"), out.index("Fixed cases")
    assert broken_at < fixed_at


def test_at_80_columns_every_line_fits_and_commands_copy_whole(runs: tuple[Desk, str, str],
                                                               cli: Any) -> None:
    desk, baseline, candidate = runs
    code, out, err = cli("compare", "latest~1", "latest", cwd=desk.root, env={"COLUMNS": "80"})
    assert code == 0, err
    lines = out.splitlines()
    assert max(cell_len(line) for line in lines) <= 80
    # The report command is longer than a line: it is broken before an option with a
    # shell continuation, so the copied lines run as the one command.
    at = next(i for i, line in enumerate(lines) if line.strip().startswith("oloproof report"))
    command = []
    for line in lines[at:]:
        command.append(line.strip().removesuffix("\\").strip())
        if not line.endswith(" \\"):
            break
    assert len(command) > 1
    assert " ".join(command) == (f"oloproof report {candidate} --baseline {baseline} "
                                 "--html comparison.html")
    assert f"    oloproof inspect {baseline} --case c10" in lines


def test_with_trials_per_case_values_are_paired(tmp_path_factory: pytest.TempPathFactory,
                                                cli: Any) -> None:
    """Three trials per case: a case's value is its share of passing trials
    (docs/reliability.md#what-passk-means)."""
    desk = Desk(tmp_path_factory.mktemp("trials"), n=12)
    desk.suite["trials"] = 3
    desk.suite["metrics"] = [{"id": "answer_pass_hat_3", "type": "pass_hat_k",
                              "criterion": "answer_correct", "k": 3}]
    desk.write()
    desk.wrong_trials("c1#1", "c2#1", "c2#2", "c3#3")
    assert cli("run", cwd=desk.root)[0] in (0, 1, 3)
    desk.version("v2")
    # c1 0.67 → 1 (fixed); c2 0.33 → 0.33 (unchanged); c3 0.67 → 0 (broken); c4 1 → 0.67
    # (broken); the rest pass every trial in both.
    desk.wrong_trials("c2#1", "c2#3", "c3#1", "c3#2", "c3#3", "c4#2")
    assert cli("run", cwd=desk.root)[0] in (0, 1, 3)
    code, out, err = cli("compare", "latest~1", "latest", "--json", cwd=desk.root)
    assert code == 0, err
    rows = {r["criterion"]: r for r in json.loads(out)["criteria"]}
    answer = rows["answer_correct"]
    assert {k: answer[k] for k in ("paired", "both_passed", "fixed", "broken", "both_failed",
                                   "missing", "unchanged")} == {
        "paired": 12, "both_passed": 8, "fixed": 1, "broken": 2, "both_failed": 0,
        "missing": 0, "unchanged": 1}
    shares = {"c1": (2 / 3, 1), "c2": (1 / 3, 1 / 3), "c3": (2 / 3, 0), "c4": (1, 2 / 3)}
    differences = [after - before for before, after in shares.values()]
    assert answer["difference"] == pytest.approx(sum(differences) / 12)
    assert answer["lower"] <= answer["difference"] <= answer["upper"]
    # pass^3 (k = trials) is 0/1 per case: c1 fixed (0 → 1), c4 broken (1 → 0).
    hat = rows["answer_pass_hat_3"]
    assert (hat["fixed"], hat["broken"], hat["both_failed"], hat["both_passed"]) == (1, 1, 2, 8)
    assert "unchanged" not in hat and hat["metric_type"] == "pass_hat_k" and hat["k"] == 3
    broken = json.loads(out)["changes"]
    c3 = next(c for c in broken if c["case"] == "c3")
    share = next(v for v in c3["criteria"] if v["criterion"] == "answer_correct")
    assert share["baseline_value"] == pytest.approx(2 / 3) and share["candidate_value"] == 0


def test_with_trials_a_missing_trial_is_resolved_the_worst_way_for_each_bound(
        tmp_path_factory: pytest.TempPathFactory, cli: Any) -> None:
    """docs/compare.md#the-interval: with trials each case's lowest and highest share are paired; a
    trial that raised leaves a share open, so the pair is missing and its difference bounds
    span what the trial could have been. Built by hand: 10 cases × 3 trials."""
    desk = Desk(tmp_path_factory.mktemp("open_trials"), n=10)
    desk.suite["trials"] = 3
    desk.suite["metrics"] = [{"id": "answer_pass_at_2", "type": "pass_at_k",
                              "criterion": "answer_correct", "k": 2}]
    desk.policy = {"version": 1, "rules": []}
    desk.write()
    desk.wrong_trials("c1#1", "c2#1", "c2#2")
    assert cli("run", cwd=desk.root)[0] == 0
    desk.version("v2")
    desk.wrong_trials("c2#1", "c3#1", "c3#2", "c3#3")
    desk.raising_trials("c1#3", "c4#2")
    assert cli("run", cwd=desk.root)[0] == 0
    # (lowest, highest) share of passing trials per case, baseline then candidate.
    rest = {f"c{i}": ((1.0, 1.0), (1.0, 1.0)) for i in range(5, 11)}
    shares = {"c1": ((2 / 3, 2 / 3), (2 / 3, 1.0)),  # 2 passed, one raised: open
              "c2": ((1 / 3, 1 / 3), (2 / 3, 2 / 3)),  # fixed (rose)
              "c3": ((1.0, 1.0), (0.0, 0.0)),  # broken
              "c4": ((1.0, 1.0), (2 / 3, 1.0)),  # open
              **rest}
    comparison = oloproof.compare("latest~1", "latest", desk.config)
    row = comparison.criterion("answer_correct")
    assert (row.paired, row.both_passed, row.fixed, row.broken, row.both_failed, row.missing,
            row.unchanged) == (10, 6, 1, 1, 0, 2, 0)
    # The estimate is over the eight settled pairs: (+1/3 − 1) / 8.
    assert row.difference == pytest.approx(-1 / 12, abs=1e-15)
    digests = {c.case_id: c.digest or "" for c in oloproof.load_case_trials("latest",
                                                                             desk.config)}
    order = sorted(shares, key=lambda case_id: (digests[case_id], case_id))
    low = [shares[c][1][0] - shares[c][0][1] for c in order]
    high = [shares[c][1][1] - shares[c][0][0] for c in order]
    assert low[order.index("c1")] == 0.0 and high[order.index("c1")] == pytest.approx(1 / 3)
    expected = paired_difference_interval(low, high, 0.95)
    assert (row.lower, row.upper) == pytest.approx((expected.lower, expected.upper),
                                                   abs=1e-12)
    assert row.lower is not None and row.upper is not None
    assert row.lower <= row.difference <= row.upper
    # pass@2 = 1 − C(3 − c, 2) / C(3, 2): 1 with two or three passing trials, so c1 and c4
    # are settled at 1 whatever their missing trial; c2 rises 2/3 → 1, c3 falls 1 → 0.
    at2 = comparison.criterion("answer_pass_at_2")
    assert (at2.both_passed, at2.fixed, at2.broken, at2.missing, at2.unchanged) == (
        8, 1, 1, 0, 0)
    assert at2.difference == pytest.approx((1 / 3 - 1) / 10, abs=1e-15)
    assert comparison.broken_cases["answer_correct"] == ["c3"]
    assert comparison.fixed_cases["answer_correct"] == ["c2"]
