"""A clustered rate is the rate of its cases (issue 40, acceptance 1), through the command line.

The audit's example: 20 one-case clusters that pass and one 80-case cluster with 40 passes. The
clusters' mean share read 97.6% [81.2%, 99.9%] beside "60 / 100 observed", and a `min: 0.80`
rule PASSed with 21 clusters and `allow_approximate_methods`. The row now estimates the rate of
its 100 cases, with an interval over clusters that knows one cluster holds 80 of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

APP = '''\
from oloproof import system


@system(name="desk")
def run(case_input):
    return {"answer": case_input["answer"]}
'''


def _project(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    (root / "data").mkdir()
    (root / "app.py").write_text(APP, encoding="utf-8")
    cases = [{"id": f"single-{i:02d}", "input": {"answer": "yes"},
              "expected": {"answer": "yes"}} for i in range(20)]
    cases += [{"id": f"big-{i:02d}", "cluster": "big",
               "input": {"answer": "yes" if i % 2 == 0 else "no"},
               "expected": {"answer": "yes"}} for i in range(80)]
    (root / "data" / "cases.jsonl").write_text(
        "".join(json.dumps(c) + "\n" for c in cases), encoding="utf-8")
    suite = {"version": 1, "project": "clusters", "dataset": "data/cases.jsonl",
             "system": {"name": "desk", "version": "v1", "callable": "app:run"},
             "evaluators": [{"type": "exact_match", "criterion": "answer_correct",
                             "field": "answer", "expected_field": "answer"}]}
    (root / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False),
                                        encoding="utf-8")
    policy = {"version": 1, "allow_approximate_methods": True,
              "rules": [{"id": "floor", "metric": "answer_correct", "min": 0.8}]}
    (root / "release.yaml").write_text(yaml.safe_dump(policy, sort_keys=False),
                                       encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def run_document(tmp_path_factory: pytest.TempPathFactory, cli: Any) -> dict[str, Any]:
    root = _project(tmp_path_factory.mktemp("audit") / "clusters")
    code, out, err = cli("run", "--json", cwd=root)
    assert code == 3, err  # INSUFFICIENT_EVIDENCE: the gate neither passes nor fails
    document: dict[str, Any] = json.loads(out)
    document["root"] = str(root)
    return document


def test_the_row_is_the_rate_of_its_cases(run_document: dict[str, Any]) -> None:
    row = next(m for m in run_document["metrics"] if m["id"] == "answer_correct")

    assert (row["passed"], row["observed"]) == (60, 100)
    assert row["estimate"] == 0.6
    assert (row["method"], row["approximate"], row["clusters"]) == ("bentkus_ratio", True, 21)
    assert row["lower"] < 0.6 < row["upper"]
    # One cluster holds 80 of the 100 cases: the interval over clusters says how little that
    # is (it read [81.2%, 99.9%] around the clusters' mean share of 97.6%).
    assert row["lower"] < 0.05 and row["upper"] > 0.95


def test_a_floor_of_80_percent_is_not_passed(run_document: dict[str, Any]) -> None:
    decision = next(d for d in run_document["decisions"] if d["rule"] == "floor")

    assert (decision["state"], decision["reasons"]) == (
        "INSUFFICIENT_EVIDENCE", ["interval_overlaps_threshold"])


def test_the_terminal_shows_the_rate_beside_its_counts(run_document: dict[str, Any],
                                                       cli: Any) -> None:
    code, out, err = cli("inspect", "latest", cwd=Path(run_document["root"]),
                         env={"COLUMNS": "100"})

    assert code == 0, err  # inspect shows the run; the gate is the run's
    line = next(x for x in out.splitlines() if "answer_correct" in x and "observed" in x)
    assert "60.0%" in line and "≈" in line and "60 / 100 observed" in line
    assert "97.6%" not in out
    assert "INSUFFICIENT_EVIDENCE · lower 1.5% < min 80.0% ≤ upper 99.0%" in out
