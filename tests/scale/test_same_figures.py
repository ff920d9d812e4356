"""Identical figures on every executor (issue 11, acceptance 1 and 5; docs/scaling.md).

The three examples of docs/agents-and-tools.md#the-support_agent-example give the same run document
-- every metric, slice, decision and judgment; ids, timings and the `execution` block that names the
executor aside -- and store the same executions, artifacts (trajectories, end states as diffs),
judgments and replays, on `local` with one worker and with four, `processes` with two and `ray` with
two actors on a local Ray with two CPUs. The stateful example's fault replays run on the workers, so
its replay verdicts (`recovers_from_error_at_issue_refund` FAIL) are among what must agree.

The stateful desk is given as `factory: app:RefundDesk` (a class is a zero-argument factory):
four local workers need four desks.
"""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import oloproof

pytestmark = pytest.mark.slow

EXAMPLES = Path(oloproof.__file__).parent / "examples"
SETUPS = [("local", 1), ("local", 4), ("processes", 2), ("ray", 2)]


def _copy(example: str, into: Path) -> Path:
    project = shutil.copytree(EXAMPLES / example, into,
                              ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
    suite = project / "oloproof.yaml"
    text = suite.read_text(encoding="utf-8")
    if example == "stateful-agent":
        assert "callable: app:desk" in text
        suite.write_text(text.replace("callable: app:desk", "factory: app:RefundDesk"),
                         encoding="utf-8")
    return project


def _document(result: oloproof.RunResult, project: Path) -> Any:
    document = result.to_json()
    document.pop("run_id")
    document.pop("execution")
    return json.loads(json.dumps(document).replace(str(project), "<project>"))


def _without_judge_latency(body: str) -> Any:
    """A case's judgments, a judge's latency aside (a timing, docs/judges.md)."""
    judgments = json.loads(body)
    for entry in judgments.values():
        if isinstance(entry[2], dict):
            entry[2].pop("latency_ms", None)
    return judgments


def _stored(project: Path) -> dict[str, Any]:
    """What the store holds of the run, timings aside."""
    db = sqlite3.connect(project / ".oloproof" / "store.sqlite")
    try:
        def rows(sql: str) -> list[tuple[Any, ...]]:
            return sorted(db.execute(sql).fetchall())

        outcomes = []
        for seq, case_id, digest, key, body in rows(
                "SELECT seq, case_id, case_digest, exec_key, outcome FROM run_cases"):
            outcome = json.loads(body)
            outcome.pop("l", None)  # latency
            outcomes.append((seq, case_id, digest, key, outcome))
        return {
            "cases": rows("SELECT digest, body FROM cases"),
            "executions": rows("SELECT key, case_digest, output, artifacts, facts "
                               "FROM executions"),
            "artifacts": rows("SELECT hash, kind, base, body FROM artifacts"),
            "judgments": [(key, _without_judge_latency(body))
                          for key, body in rows("SELECT key, body FROM judgments")],
            "replays": rows("SELECT key, body FROM replays"),
            # (a judge's latency aside: the verdicts its judge gave, docs/judges.md)
            "judge_verdicts": [(key, {k: v for k, v in json.loads(body).items()
                                      if k != "latency_ms"})
                               for key, body in rows("SELECT key, body FROM judge_verdicts")],
            "run_cases": outcomes,
        }
    finally:
        db.close()


@pytest.mark.parametrize("example", ["support_agent", "triage_agents", "stateful-agent",
                                     "judged_agent"])
def test_every_executor_gives_the_same_run_document_and_store(
        example: str, tmp_path: Path, local_ray: Any) -> None:
    runs = {}
    for executor, workers in SETUPS:
        project = _copy(example, tmp_path / f"{executor}-{workers}")
        result = oloproof.run(project / "oloproof.yaml", policy=project / "release.yaml",
                              executor=executor, workers=workers)
        expected: dict[str, Any] = {"executor": executor, "workers": workers, "retried": 0}
        if executor == "ray":  # the one node of the local instance
            expected["nodes"] = [local_ray.get_runtime_context().get_node_id()]
        assert result.to_json()["execution"] == expected
        runs[(executor, workers)] = (_document(result, project), _stored(project), result)

    reference_document, reference_store, reference = runs[("local", 1)]
    assert reference_store["executions"], "the runs stored their executions"
    for setup, (document, stored, _) in runs.items():
        assert document == reference_document, f"{setup} gave another run document"
        assert stored == reference_store, f"{setup} stored something else"
    if example == "stateful-agent":
        whole = reference.to_json()
        assert whole["gate"]["action"] == "BLOCK"
        assert reference_store["replays"], "the fault replays ran on the workers"
        replayed = reference.metric("recovers_from_error_at_issue_refund")
        assert replayed.observed > 0 and replayed.passed < replayed.observed
