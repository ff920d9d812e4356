"""`kind: sequential` (docs/pytest.md#the-stored-run): one case's trials of a criterion, walked in
trial order through the sequential rule until it decides — the rule a pytest session's run is
decided by, usable in any suite with trials — and the `recorded` evaluator, which reads the
verdict a system recorded in its output. A policy that cannot mean what it says is refused
before any call, naming the line.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from oloproof.stats.sequential import SequentialRate

APP = '''
from oloproof import current_case


def answer(case_input):
    recorded = case_input["verdicts"][current_case().trial - 1]
    return recorded if isinstance(recorded, dict) else {"verdict": recorded}
'''


def _project(root: Path, cases: dict[str, list[Any]], trials: int, *rules: str) -> Path:
    root.mkdir()
    (root / "app.py").write_text(APP, encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": case_id, "input": {"verdicts": verdicts}}) + "\n"
        for case_id, verdicts in cases.items()), encoding="utf-8")
    (root / "oloproof.yaml").write_text(
        "version: 1\nproject: replayed\ndataset: cases.jsonl\n"
        "system: {name: replayed, version: '1', callable: 'app:answer'}\n"
        f"trials: {trials}\nevaluators: [{{type: recorded, criterion: answer}}]\n",
        encoding="utf-8")
    (root / "release.yaml").write_text(
        "version: 1\nrules:\n" + "".join(f"  - {r}\n" for r in rules), encoding="utf-8")
    return root


def _decisions(out: str) -> dict[str, dict[str, Any]]:
    return {d["rule"]: d for d in json.loads(out)["decisions"]}


def test_a_sequential_rule_walks_its_case_trials_in_order_and_stops_at_the_decision(
        tmp_path: Path, cli: Any) -> None:
    # `a` passes 23 trials and fails the last 7: the rule decided PASS at trial 23, and what
    # came after counts for nothing. `b` fails its first 4. `c` passes 4 in 5 of its 30 trials,
    # and its rule may take 1,000: undecided, and not finished.
    # `d` errors (a missing verdict) on 2 of 30 and otherwise passes.
    project = _project(tmp_path / "p", {
        "a": ["passed"] * 23 + ["failed"] * 7,
        "b": ["failed"] * 4 + ["passed"] * 26,
        "c": ["passed", "passed", "passed", "passed", "failed"] * 6,
        "d": ["passed", "missing"] * 2 + ["passed"] * 26,
    }, 30,
        "{id: a, kind: sequential, metric: answer, case: a, min: 0.8, trials: 50}",
        "{id: b, kind: sequential, metric: answer, case: b, min: 0.8, trials: 50}",
        "{id: c, kind: sequential, metric: answer, case: c, min: 0.8, trials: 1000}",
        "{id: d, kind: sequential, metric: answer, case: d, min: 0.5, trials: 30, level: 0.9}")
    code, out, err = cli("run", "--json", "--trials", "30", cwd=project)
    assert code == 1, err  # b fails
    decisions = _decisions(out)
    a, b, c, d = (decisions[k] for k in "abcd")
    expected = SequentialRate(0.8, 50)
    for _ in range(23):
        expected = expected.add("passed")
    made = expected.decision()
    assert (a["state"], a["trials_run"], a["passed"], a["failed"], a["lower"], a["upper"]) == (
        "PASS", 23, 23, 0, made.lower, made.upper)
    assert a["reasons"] == ["lower_bound_meets_minimum"] and a["case"] == "a"
    assert (b["state"], b["trials_run"], b["reasons"]) == (
        "FAIL", 4, ["upper_bound_below_minimum"])
    assert (c["state"], c["trials_run"], c["reasons"]) == (
        "INSUFFICIENT_EVIDENCE", 30, ["trials_not_finished"])
    assert (d["errored"], d["level"], d["state"]) == (2, 0.9, "PASS")
    assert "missing" in json.dumps(json.loads(out)["metrics"])
    # More than 12 trials are shown a line per criterion, in tens.
    code, shown, _ = cli("inspect", "latest", "--case", "a", cwd=project)
    assert "answer  PPPPPPPPPP PPPPPPPPPP PPPFFFFFFF  23 / 30 passed" in shown
    assert "Outputs differ:\n  T1-T23: {\"verdict\": \"passed\"}\n  T24-T30: " in shown
    # `gate` decides the stored run again the same way, and `plan` says what would settle `c`.
    code, again, _ = cli("gate", "--json", cwd=project)
    assert _decisions(again) == decisions
    code, planned, _ = cli("plan", "--json", cwd=project)
    (row,) = json.loads(planned)["rules"]
    assert (row["rule"], row["reason"]) == ("c", "trials_not_finished")


def test_the_recorded_evaluator_reads_the_verdict_as_recorded(tmp_path: Path,
                                                              cli: Any) -> None:
    project = _project(tmp_path / "p", {
        "passed": ["passed"],
        "failed": [{"verdict": "failed", "details": {"message": "assert 1 == 2"}}],
        "excluded": [{"verdict": "excluded", "reason": "decided_early"}],
        "missing": [{"verdict": "missing", "reason": "not_scored"}],
        "unreasoned": [{"verdict": "excluded"}],
        "nonsense": ["maybe"],
        "absent": [{"answer": "refunded"}],
    }, 1)
    (project / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    code, out, err = cli("run", "--json", cwd=project)
    assert code == 0, err
    (row,) = json.loads(out)["metrics"]
    assert (row["passed"], row["observed"], row["missing"], row["excluded"]) == (1, 2, 4, 1)
    assert row["missing_by_reason"] == {"not_scored": 1, "not_a_verdict": 2,
                                        "no_recorded_verdict": 1}
    assert row["excluded_by_reason"] == {"decided_early": 1}
    code, shown, _ = cli("inspect", "latest", "--case", "failed", cwd=project)
    assert '"message": "assert 1 == 2"' in shown


@pytest.mark.parametrize(("rule", "says"), [
    ("{id: s, kind: sequential, metric: answer, min: 0.8, trials: 50}",
     "a sequential rule takes case (the case whose trials it decides), min"),
    ("{id: s, kind: sequential, metric: answer, case: a, min: 0.8, trials: 50, max: 0.9}",
     "a sequential rule takes case, min and trials, not max"),
    ("{id: s, kind: sequential, metric: answer, case: a, min: 1, trials: 50}",
     "a sequential rule's min is a pass rate strictly between 0 and 1, not 1"),
    ("{id: s, metric: answer, min: 0.8, case: a}",
     "case needs kind: sequential"),
    ("{id: s, kind: sequential, metric: answer, case: z, min: 0.8, trials: 50}",
     "rule 's' names case 'z', which the dataset does not hold"),
    ("{id: s, kind: sequential, metric: p95, case: a, min: 0.8, trials: 50}",
     "a sequential rule decides the trials of a pass-rate criterion, and 'p95' is a quantile"),
])
def test_a_sequential_rule_that_cannot_decide_is_refused_before_any_call(
        tmp_path: Path, cli: Any, rule: str, says: str) -> None:
    project = _project(tmp_path / "p", {"a": ["passed"] * 3}, 3, rule)
    suite = project / "oloproof.yaml"
    suite.write_text(suite.read_text(encoding="utf-8") + "metrics: [{id: p95, type: quantile, "
                     "source: latency_ms, quantile: 0.95}]\n", encoding="utf-8")
    code, _, err = cli("run", cwd=project)
    assert code == 2
    assert says in " ".join(err.split()), err
    assert "release.yaml:3" in err
    assert not (project / ".oloproof").exists()
