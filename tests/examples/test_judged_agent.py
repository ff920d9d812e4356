"""The judged_agent example (docs/judges.md): its figures come out of the real engine, are the
ones its README prints, and are worked out here from the desk's plan and the labels file."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _run_example import EXAMPLES, example_fixtures, run_cli

from oloproof.stats import agreement, rate_interval
from oloproof.stats.verdict_strata import judged_rate_interval
from oloproof.suite.judge_labels import draw_sample, read_labels_file, suite_digest

project, terminal, document, every_slice = example_fixtures("judged_agent", exit_code=3)

HERE = EXAMPLES / "judged_agent"
README = (HERE / "README.md").read_text(encoding="utf-8")


def _app() -> Any:
    spec = importlib.util.spec_from_file_location("judged_agent_app", HERE / "app.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _truthful(plan: str) -> bool:
    """What a person says of the reply to an order with this refund plan (app.py): a failed
    refund reported as issued, or a promise no tool kept, is a fail."""
    return plan == "ok" or plan.startswith("declined:")


def _judge_passes(plan: str) -> bool:
    """What the lenient judge (judges.py) says: it catches only a refused card."""
    return plan != "failed:card_expired"


def test_the_readme_prints_what_the_run_prints(terminal: str) -> None:
    printed = next(b for b in re.findall(r"```\n(.*?)```", README, flags=re.S)
                   if b.startswith("Decisions"))
    assert printed in terminal, "the README pastes the real output"


def test_the_labels_are_a_seeded_sample_labelled_as_the_desk_behaved(project: Path) -> None:
    labels = read_labels_file(HERE / "labels" / "reply_truthful.jsonl")
    cases = [json.loads(line) for line in (HERE / "data" / "cases.jsonl").read_text(
        encoding="utf-8").splitlines()]
    ids = [c["id"] for c in cases]
    assert labels.sample["seed"] == 20 and labels.sample["n"] == 30
    assert labels.sample["suite"] == suite_digest(ids)
    assert [r.case for r in labels.rows] == draw_sample(ids, 20, 30)
    plans = {c["id"]: _app().ORDERS[c["input"]["order_id"]]["refund"] for c in cases}
    for row in labels.rows:
        assert row.label == ("pass" if _truthful(plans[row.case]) else "fail"), row.case
        # what the person read: the reply and the refund call's result
        refund = row.shown["trajectory.tool_results"][-1]["result"]
        answer = row.shown["output.answer"]
        claims = "has been issued" in answer
        promises = "waived" in answer or "voucher" in answer
        reads_true = (refund["status"] == "ok" and claims and not promises) or \
            (refund["status"] == "declined" and not claims)
        assert (row.label == "pass") == reads_true, row.case


def test_the_figures_follow_from_the_plan_and_the_labels(document: dict[str, Any]) -> None:
    plans = [order["refund"] for order in _app().ORDERS.values()]
    assert len(plans) == 40
    assert sum(_truthful(p) for p in plans) == 26  # 65% as people would judge every reply
    judge_passes = sum(_judge_passes(p) for p in plans)
    assert judge_passes == 36
    row = next(m for m in document["metrics"] if m["id"] == "reply_truthful")
    judge = row["judge"]
    raw = rate_interval(36, 40, 0, 0.95)
    assert (judge["raw_estimate"], judge["raw_lower"], judge["raw_upper"]) == \
        (raw.estimate, raw.lower, raw.upper)
    # the sampled cases: judge verdict against the person's label
    labels = read_labels_file(HERE / "labels" / "reply_truthful.jsonl")
    cases = {json.loads(line)["id"]: json.loads(line) for line in
             (HERE / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()}
    orders = _app().ORDERS
    pairs = [(_judge_passes(orders[cases[r.case]["input"]["order_id"]]["refund"]),
              r.label == "pass") for r in labels.rows]
    counts = agreement(pairs, 0, 0.95)
    assert (judge["both_pass"], judge["judge_only"], judge["person_only"],
            judge["both_fail"]) == (counts.both_pass, counts.judge_only, counts.person_only,
                                    counts.both_fail) == (20, 7, 0, 3)
    assert judge["agreement_lower"] == pytest.approx(counts.rate.lower)
    assert judge["kappa"] == pytest.approx(counts.kappa)
    assert judge["status"] == "checked" and counts.rate.lower >= 0.5
    # the corrected rate: the people's rate among the sampled replies the judge passed (20 of
    # 27) and failed (0 of 3), weighted by how often it passes over all 40 (36)
    judge_values = np.array([1.0] * 36 + [0.0] * 4)
    sampled = [float(j) for j, _ in pairs]
    person = [float(p) for _, p in pairs]
    expected = judged_rate_interval(judge_values, sampled, person, person, 0.95)
    assert row["estimate"] == pytest.approx(0.9 * 20 / 27 + 0.1 * 0 / 3)
    assert (row["lower"], row["upper"]) == (pytest.approx(expected.lower),
                                            pytest.approx(expected.upper))
    assert row["method"] == "stratified_by_verdict" and judge["correction"] == "judge"
    # beside it the labels alone, 20 of 30; the lenient judge, with only 10 replies beyond the
    # labelled 30, costs width here — never more than 1.05× the labels' own
    people = rate_interval(20, 30, 0, 0.95)
    assert (judge["people_lower"], judge["people_upper"]) == (people.lower, people.upper)
    assert people.lower is not None and people.upper is not None
    width = row["upper"] - row["lower"]
    assert people.upper - people.lower < width <= 1.05 * (people.upper - people.lower)
    assert judge["width_saved"] == pytest.approx(people.upper - people.lower - width)
    # the raw rate sits above the corrected one, and the gate decides on the corrected one
    assert judge["raw_estimate"] > row["estimate"]
    assert judge["raw_lower"] >= 0.60 > row["lower"] and row["upper"] > 0.60
    decisions = {d["rule"]: (d["state"], d["reasons"]) for d in document["decisions"]}
    assert decisions["truthful-floor"] == ("INSUFFICIENT_EVIDENCE",
                                           ["interval_overlaps_threshold"])
    assert document["gate"] == {"action": "BLOCK", "exit_code": 3}


def test_without_labels_the_judge_decides_nothing(project: Path, terminal: str,
                                                  tmp_path: Path) -> None:
    labels = project / "labels" / "reply_truthful.jsonl"
    kept = labels.read_text(encoding="utf-8")
    labels.unlink()
    try:
        done = run_cli(project, "run", "--json")
        assert done.returncode == 3, done.stderr
        found = json.loads(done.stdout)
    finally:
        labels.write_text(kept, encoding="utf-8")
    row = next(m for m in found["metrics"] if m["id"] == "reply_truthful")
    assert row["judge"]["status"] == "uncalibrated" and row["estimate"] == 0.9
    decision = next(d for d in found["decisions"] if d["rule"] == "truthful-floor")
    assert decision["reasons"] == ["judge_not_checked"]
    assert found["cache"]["judge"] == {"hit": 0, "miss": 0}  # nothing judged again
    # The plan says what settles it: labels, not cases.
    done = run_cli(project, "plan", found["run_id"], "--json")
    planned = next(r for r in json.loads(done.stdout)["rules"] if r["rule"] == "truthful-floor")
    assert planned["reason"] == "judge_not_checked" and planned["unit"] == "labelled cases"
    assert "total" not in planned
    assert "until at least 10 of its sampled cases are labelled" in planned["note"]
    assert "oloproof labels sample --criterion reply_truthful" in planned["note"]


def test_the_case_panel_shows_the_judges_verdict(project: Path, terminal: str) -> None:
    done = run_cli(project, "inspect", "latest", "--case", "req-023")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    assert "reply_truthful: passed by judge grader (judges:lenient) — the reply matches the " \
        "refund it describes" in text
    assert '"error": "processor_timeout"' in text  # what it was shown


def test_labels_review_has_nothing_left(project: Path) -> None:
    done = run_cli(project, "labels", "review", "labels/reply_truthful.jsonl")
    assert done.returncode == 0, done.stderr
    assert "30 labelled, 0 to label" in done.stdout


def test_the_sample_is_unchanged(project: Path, terminal: str) -> None:
    done = run_cli(project, "labels", "sample", "--criterion", "reply_truthful", "-o",
                   "labels/reply_truthful.jsonl")
    assert done.returncode == 0, done.stderr
    assert "No sampled case" in done.stdout
    assert (project / "labels" / "reply_truthful.jsonl").read_text(encoding="utf-8") == \
        (Path(EXAMPLES) / "judged_agent" / "labels" / "reply_truthful.jsonl").read_text(
            encoding="utf-8")


def test_plan_counts_the_labels_a_judged_rule_needs(project: Path, terminal: str) -> None:
    # (issue 42 point 4; docs/compare.md#a-judged-criterion)
    import oloproof
    from oloproof.stats import (
        continued_chance,
        corrected_bounds_at,
        corrected_projection,
        rate_projection,
    )

    assert run_cli(project, "run").returncode == 3  # (latest: a run with its labels)
    plan = oloproof.plan("latest", config=project / "oloproof.yaml")
    row = next(r for r in plan.rules if r.metric == "reply_truthful")
    result = oloproof.load_run("latest", project / "oloproof.yaml")
    judged = result.metric("reply_truthful")
    judge = judged.judge
    assert judge is not None and row.unit == "labelled cases"
    people = judge.both_pass + judge.person_only
    assert (row.observed, row.passed, row.cases) == (judge.labelled, people, 40)
    expected = rate_projection(people, judge.labelled, 0.95, minimum=0.6)
    assert (row.total, row.state) == (expected.total, "PASS")
    assert row.total is not None and row.total > judge.labelled
    assert row.cases_total == -(-40 * row.total // judge.labelled)  # the labelled share kept
    assert row.chance == continued_chance(row.total, 0.95, passed=people,
                                          observed=judge.labelled, minimum=0.6)[0]
    assert row.chance_assumption is not None and "labels" in row.chance_assumption
    # The corrected interval, at the same rates, decides at corrected_total and not before.
    counts = (judge.both_pass, judge.judge_only, judge.person_only, judge.both_fail)
    judged_counts = {"judge_passed": judged.passed, "judge_observed": judged.observed,
                     "judge_missing": judged.missing, "level": 0.95}
    assert row.corrected_total == corrected_projection(*counts, **judged_counts,
                                                       minimum=0.6).labelled
    assert row.corrected_total is not None
    lower, _, cases = corrected_bounds_at(row.corrected_total, *counts, **judged_counts)
    assert lower >= 0.6 and cases == row.corrected_cases
    assert corrected_bounds_at(row.corrected_total - 1, *counts, **judged_counts)[0] < 0.6
    # Today's corrected interval needs more labels than the labels alone.
    assert row.corrected_total > row.total

    done = run_cli(project, "plan", "latest")
    said = " ".join(done.stdout.split())
    assert done.returncode == 0, done.stderr
    assert (f"now people passed {people} of {judge.labelled} labelled cases = 66.7% (the run "
            "has 40 cases)") in said
    assert (f"projected: {row.total} labelled cases ({row.total - judge.labelled} more; "
            f"{row.cases_total} cases at this run's share) would reach PASS on the labels "
            "alone") in said
    assert (f"on the corrected interval the rule decides on, at the same rates: "
            f"{row.corrected_total} labelled cases ({row.corrected_cases} cases)") in said
    assert "oloproof labels sample --criterion reply_truthful --n N -o FILE" in said


def test_the_markdown_says_what_the_terminal_says_of_the_judge(project: Path,
                                                               terminal: str) -> None:
    # (issue 42 point 3) The judge tags and the judge-agreement block, as the terminal has them.
    done = run_cli(project, "gate", "latest", "--markdown", "ci/summary.md")
    assert done.returncode == 3, done.stderr
    markdown = (project / "ci" / "summary.md").read_text(encoding="utf-8")
    row = next(line for line in markdown.splitlines() if line.startswith("| reply\\_truthful"))
    assert "corrected" in row and "[46.4%, 83.2%] corrected" in row
    assert "[46.4%, 83.2%] corrected" in terminal
    assert "### Judges, checked against people's labels" in markdown
    said = next(line for line in markdown.splitlines()
                if line.startswith("- reply\\_truthful (judge grader): "))
    in_terminal = " ".join(terminal.split("Judges, checked against people's labels")[1]
                           .split("Failing cases")[0].split())
    assert " ".join(said.split(": ", 1)[1].split()) in in_terminal
