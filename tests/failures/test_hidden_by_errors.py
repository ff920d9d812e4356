"""Errored executions cannot hide a failure without a word
(docs/failures.md#errors-that-hide-an-outcome).

A policy that blocks on FAIL alone, and a system that raises a declared transient error on
exactly the cases it would fail: every such case errors (after its retries), counts as
missing, the rule is INSUFFICIENT_EVIDENCE, which the policy does not block on, and the run
was ALLOWed with no warning — the FAIL the same cases give when they answer was hidden. Now the
policy warns that errored and missing executions can hide failures, and the rule says that
its errored executions alone keep it undecided (`errored_executions_hide_outcome`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from failing_systems import FailingProject, case

ANSWERING = 24
FAILING = 6
RETRIES = {"attempts": 2, "on": ["app:Transient"], "backoff_s": 0.01, "max_backoff_s": 0.02}
FAIL_ONLY = ("version: 1\nblock_on: [FAIL]\n"
             "rules:\n  - {id: answers, metric: answer_correct, min: 0.95}\n")


def _project(root: Path, failing: str) -> FailingProject:
    """24 cases that answer, and 6 that `failing` says what to do with: answer wrongly, or
    raise the declared transient error on every attempt."""
    project = FailingProject(root)
    project.suite["system"]["retries"] = RETRIES
    cases = [case(f"c{i:03d}") for i in range(1, ANSWERING + 1)]
    for i in range(ANSWERING + 1, ANSWERING + FAILING + 1):
        cases.append(case(f"c{i:03d}", answer="no") if failing == "answer" else
                     case(f"c{i:03d}", "flaky", fails=99))
    project.write(cases)
    (project.path / "release.yaml").write_text(FAIL_ONLY, encoding="utf-8")
    return project


def _run(project: FailingProject, cli: Any) -> tuple[int, dict[str, Any]]:
    code, out, err = cli("run", "--json", cwd=project.path, timeout=60)
    assert code in (0, 1, 3), (out, err)
    return code, json.loads(out)


def test_errors_on_exactly_the_failing_cases_do_not_allow_a_release_unsaid(
        tmp_path: Path, cli: Any) -> None:
    answered = _project(tmp_path / "answered", "answer")
    code, document = _run(answered, cli)
    assert code == 1 and document["decisions"][0]["state"] == "FAIL"  # what they hide

    hidden = _project(tmp_path / "hidden", "error")
    code, document = _run(hidden, cli)

    assert document["executions"]["errored"] == {"system_error": FAILING}
    (decision,) = document["decisions"]
    assert decision["state"] == "INSUFFICIENT_EVIDENCE"
    assert decision["reasons"] == ["interval_overlaps_threshold",
                                   "errored_executions_hide_outcome"]
    assert code == 0 and document["gate"]["action"] == "ALLOW"  # as the policy says, but:
    warning = next(w for w in document["warnings"] if "block_on" in w)
    assert "does not block on INSUFFICIENT_EVIDENCE" in warning
    assert "errored and missing executions can hide failures" in warning
    code, out, _ = cli("run", cwd=hidden.path, env={"COLUMNS": "200"})
    assert code == 0
    assert "errored_executions_hide_outcome" in out
    assert "Warning: the policy does not block on INSUFFICIENT_EVIDENCE" in out


def test_errors_that_could_not_change_the_outcome_are_not_blamed(tmp_path: Path,
                                                                 cli: Any) -> None:
    """Undecided with or without its errored executions: the reason stays what it was."""
    project = _project(tmp_path / "p", "error")
    (project.path / "release.yaml").write_text(FAIL_ONLY.replace("0.95", "0.9"),
                                               encoding="utf-8")

    code, document = _run(project, cli)

    assert code == 0
    (decision,) = document["decisions"]
    assert decision["state"] == "INSUFFICIENT_EVIDENCE"
    assert decision["reasons"] == ["interval_overlaps_threshold"]


def test_the_default_block_on_says_nothing_new(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p", "error")
    (project.path / "release.yaml").write_text(FAIL_ONLY.replace("block_on: [FAIL]\n", ""),
                                               encoding="utf-8")

    code, document = _run(project, cli)

    assert code == 3  # INSUFFICIENT_EVIDENCE blocks
    assert not [w for w in document["warnings"] if "block_on" in w]
    assert document["decisions"][0]["reasons"][-1] == "errored_executions_hide_outcome"
