"""The error budget, `{id: infra, kind: max_errored, max_share: 0.02}` (or `max_count`): an
observed count of the run's errored executions against a limit, FAIL
(`errored_share_exceeds_limit`) above it, so a run too broken to trust blocks as such, in
words (docs/failures.md#the-error-budget). A policy that cannot mean what it says is refused
before any call, naming the line and what to write."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case


def _policy(project: FailingProject, *rules: str, name: str = "release.yaml") -> Path:
    """A policy of these rules (flow mappings), one a line from line 3."""
    path = project.path / name
    path.write_text("version: 1\nrules:\n" + "".join(f"  - {r}\n" for r in rules),
                    encoding="utf-8")
    return path


def _outage(root: Path) -> FailingProject:
    """Ten cases, two of which raise while the order service is down."""
    project = FailingProject(root)
    project.write([case(f"c{i:03d}", "while_down" if i in (3, 7) else "ok")
                   for i in range(1, 11)])
    (project.path / "down").write_text("", encoding="utf-8")
    return project


def _flat(out: str) -> str:
    """The terminal report with its wrapped lines joined (whitespace as one space)."""
    return " ".join(out.split())


def _decision(document: dict[str, Any], rule: str) -> dict[str, Any]:
    found: dict[str, Any] = next(d for d in document["decisions"] if d["rule"] == rule)
    return found


def test_a_run_over_its_error_budget_fails_as_such_in_every_report(tmp_path: Path,
                                                                    cli: Any) -> None:
    project = _outage(tmp_path / "p")
    _policy(project, "{id: answers, metric: answer_correct, min: 0.5}",
            "{id: infra, kind: max_errored, max_share: 0.1}")

    code, out, err = cli("run", "--markdown", "summary.md", "--junit", "junit.xml",
                         cwd=project.path)

    assert code == 1, (out, err)  # a blocking FAIL
    assert "Gate: BLOCK (exit 1)" in out
    said = "FAIL · 2 of 10 executions errored (20.0%) > max 10.0%"
    assert said in _flat(out) and "errored_share_exceeds_limit" in out
    assert "Executions: 10 cases · 10 ran · 2 errored (system_error 2)" in _flat(out)
    markdown = (project.path / "summary.md").read_text(encoding="utf-8")
    assert f"| infra | executions | ❌ **FAIL** | {said.removeprefix('FAIL · ')} | " \
           "errored_share_exceeds_limit |" in markdown
    rules = ET.parse(project.path / "junit.xml").getroot().find("testsuite[@name='oloproof.rules']")
    assert rules is not None
    failure = rules.find("testcase[@name='infra']/failure")
    assert failure is not None and failure.get("message") == (
        f"{said} · reasons: errored_share_exceeds_limit")
    assert failure.text == f"rule infra on executions: {failure.get('message')}"

    code, out, _ = cli("gate", "--json", cwd=project.path)
    assert code == 1
    document = json.loads(out)
    assert _decision(document, "infra") == {
        "rule": "infra", "metric": "executions", "state": "FAIL",
        "reasons": ["errored_share_exceeds_limit"], "kind": "max_errored", "errored": 2,
        "executions": 10, "max_share": 0.1}
    assert document["executions"]["errored"] == {"system_error": 2}


@pytest.mark.parametrize(("rule", "state", "said"), [
    ("max_share: 0.2", "PASS", "PASS · 2 of 10 executions errored (20.0%) ≤ max 20.0%"),
    ("max_share: 0.19", "FAIL", "FAIL · 2 of 10 executions errored (20.0%) > max 19.0%"),
    ("max_share: 0.3", "PASS", "PASS · 2 of 10 executions errored (20.0%) ≤ max 30.0%"),
    ("max_count: 2", "PASS", "PASS · 2 of 10 executions errored ≤ max 2"),
    ("max_count: 1", "FAIL", "FAIL · 2 of 10 executions errored > max 1"),
    ("max_count: 0", "FAIL", "FAIL · 2 of 10 executions errored > max 0"),
])
def test_a_stored_run_is_decided_again_on_its_stored_executions(
        tmp_path: Path, cli: Any, rule: str, state: str, said: str) -> None:
    """`gate RUN --policy` counts the run's stored executions: nothing runs again."""
    project = _outage(tmp_path / "p")
    (project.path / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    code, _, err = cli("run", cwd=project.path)
    assert code == 0, err
    calls = len(project.calls())
    other = _policy(project, f"{{id: infra, kind: max_errored, {rule}}}", name="budget.yaml")

    code, out, err = cli("gate", "latest", "--policy", str(other), cwd=project.path)

    assert code == (0 if state == "PASS" else 1), (out, err)
    assert said in _flat(out)
    assert len(project.calls()) == calls, "deciding again calls nothing"


def test_what_errored_runs_again_and_the_budget_counts_the_run_that_holds_it(
        tmp_path: Path, cli: Any) -> None:
    """The outage ends: the next run re-runs only the two errored cases (the cache line says
    so, naming the run they errored in), and the run it makes holds no error. A run whose
    every execution is cached has none either: an errored execution is never cached."""
    project = _outage(tmp_path / "p")
    _policy(project, "{id: infra, kind: max_errored, max_share: 0.1}")
    code, out, _ = cli("run", "--json", cwd=project.path)
    assert code == 1
    first = json.loads(out)["run_id"]
    (project.path / "down").unlink()
    project.forget_calls()

    code, out, err = cli("run", cwd=project.path)

    assert code == 0, (out, err)
    assert f"Cache: execution 8 hit/2 miss (2 re-run: errored in {first});" in _flat(out)
    assert "Executions: 10 cases · 2 ran · 8 cached · 0 errored" in _flat(out)
    assert "PASS · 0 of 10 executions errored (0.0%) ≤ max 10.0%" in _flat(out)
    assert sorted(c for c, _, _ in project.starts()) == ["c003", "c007"]

    code, out, err = cli("run", "--json", cwd=project.path)

    assert code == 0, err
    document = json.loads(out)
    assert document["executions"] == {"cases": 10, "ran": 0, "cached": 10, "errored": {},
                                      "retried": 0, "attempts": 0}
    assert "rerun" not in document["cache"], "nothing errored in the run before"
    assert (_decision(document, "infra")["state"], _decision(document, "infra")["errored"]) \
        == ("PASS", 0)


@pytest.mark.parametrize(("rule", "key", "says"), [
    ("{id: infra, kind: max_errored, max_share: 2}", "max_share",
     "rule 'infra': max_share: 2 is outside [0, 1]: it is the most errored executions as a "
     "fraction of the run's executions; write max_share: 0.02"),
    ("{id: infra, kind: max_errored, max_share: -0.1}", "max_share",
     "max_share: -0.1 is outside [0, 1]"),
    ("{id: infra, kind: max_errored, max_share: 0.02, max_count: 3}", "max_count",
     "rule 'infra': a max_errored rule takes exactly one of max_share"),
    ("{id: infra, kind: max_errored}", "kind",
     "rule 'infra': a max_errored rule takes exactly one of max_share (the most errored "
     "executions as a fraction of the run's executions, e.g. max_share: 0.02) and max_count "
     "(as a number of executions, e.g. max_count: 5)"),
    ("{id: infra, kind: max_errored, metric: answer_correct, max_share: 0.02}", "metric",
     "rule 'infra': a max_errored rule counts the run's errored executions, whatever they "
     "were to be judged on: it names no metric; remove `metric:`"),
    ("{id: infra, kind: max_errored, min: 0.9}", "min",
     "rule 'infra': a max_errored rule takes max_share or max_count, not min; write "
     "max_share: 0.02"),
    ("{id: infra, kind: max_errored, max_failures: 0}", "max_failures", "not max_failures"),
    ("{id: infra, kind: max_errored, max_count: -1}", "max_count",
     "rules[0].max_count: must be at least 0"),
    ("{id: infra, kind: max_errored, max_count: 1.5}", "max_count",
     "rules[0].max_count: must be a whole number (got 1.5)"),
    ("{id: infra, kind: max_errored, max_count: true}", "max_count",
     "rules[0].max_count: must be a whole number, not true or false"),
    ("{id: infra, kind: max_errored, max_share: \"0.02\"}", "max_share",
     "rules[0].max_share: must be a number, unquoted: write max_share: 0.02"),
    ("{id: infra, kind: max_errored, max_share: .nan}", "max_share",
     "rules[0].max_share: must be a finite number (got .nan)"),
    ("{id: infra, kind: max_errored, max_shares: 0.02}", "max_shares",
     "unknown key 'max_shares' in rules[0] (did you mean 'max_share'?)"),
    ("{id: answers, metric: answer_correct, min: 0.5, max_share: 0.02}", "id",
     "max_share and max_count need kind: max_errored"),
    ("{id: answers, min: 0.5}", "id",
     "rules[0]: an interval rule takes metric: the criterion or metric it decides on"),
], ids=["share 2", "share negative", "both", "neither", "metric", "min", "max_failures",
        "count negative", "count 1.5", "count true", "share quoted", "share nan", "misspelt",
        "share on an interval rule", "an interval rule without metric"])
def test_a_budget_that_cannot_mean_what_it_says_is_refused_before_any_call(
        tmp_path: Path, cli: Any, rule: str, key: str, says: str) -> None:
    project = FailingProject(tmp_path / "p").write([case("c001")])
    path = project.path / "release.yaml"
    # The rule's keys one a line (block style), so the line named is the key's own.
    keys = re.findall(r"(\w+): ((?:\"[^\"]*\")|[^,}]+)", rule)
    path.write_text("version: 1\nrules:\n" + "".join(
        f"  {'- ' if i == 0 else '  '}{k}: {v}\n" for i, (k, v) in enumerate(keys)),
        encoding="utf-8")
    line = 3 + [k for k, _ in keys].index(key)

    code, out, err = cli("run", cwd=project.path)

    assert code == 2, (out, err)
    assert f"release.yaml:{line}: " in err and says in err, err
    assert project.calls() == [], "nothing ran"
