"""The Replayable contract as `docs/stateful-agents.md` teaches it: the page's two examples (the
sync desk of the worked example and the async desk) are taken from the page as they are, run
through `oloproof.run`, and what the page says happens to one case is checked against what
was stored — the numbering of the recording, the control replay and the joined fault
trajectory, the checkpoint resumed from, the constraint's step, `terminal_status`, the
verdict, and the `inspect` excerpt the page prints.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from stateful_support import StatefulProject

PAGE = Path(__file__).resolve().parents[2] / "docs" / "stateful-agents.md"


def _python_block_after(heading: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    at = text.index(heading)
    block = re.search(r"```python\n(.*?)```", text[at:], re.DOTALL)
    assert block is not None, f"no python block after {heading!r}"
    return block.group(1)


def _console_block_after(heading: str) -> str:
    text = PAGE.read_text(encoding="utf-8")
    at = text.index(heading)
    block = re.search(r"```console\n(.*?)```", text[at:], re.DOTALL)
    assert block is not None
    return block.group(1)


SYNC_EXAMPLE = _python_block_after("### Writing `replay`: a worked example")
ASYNC_EXAMPLE = _python_block_after("An **async** system writes the same code")

CASE = {"id": "req-1",
        "input": {"order_id": "ord-1", "message": "Please refund ord-1."},
        "initial_state": {"orders": {"ord-1": {"status": "delivered"}}},
        "expected": {"answer": "refunded"}}


def _project(root: Path, source: str, name: str, escalate: list[str]) -> StatefulProject:
    project = StatefulProject(root, source)
    project.suite["system"].update(name=name, version="1")  # as the page's @system says
    project.suite["evaluators"] = [
        {"type": "agent_constraints_satisfied"},
        {"type": "fault_recovery", "tool": "issue_refund", "fault": "error",
         "escalate_tools": escalate},
    ]
    return project.write([CASE])


def _steps(trajectory: dict[str, Any]) -> list[tuple[int, str, str | None]]:
    return [(s["index"], s["kind"], s["tool_name"]) for s in trajectory["steps"]]


@pytest.fixture(scope="module")
def sync_desk(tmp_path_factory: pytest.TempPathFactory) -> tuple[StatefulProject, Any]:
    project = _project(tmp_path_factory.mktemp("docs") / "desk", SYNC_EXAMPLE, "desk",
                       ["escalate_to_human"])
    return project, project.run()


def test_the_worked_examples_recording_is_numbered_as_the_page_says(
    sync_desk: tuple[StatefulProject, Any],
) -> None:
    project, result = sync_desk
    assert result.to_json()["errors"] == []
    trajectory = project.view(result.run_id, "req-1")["trajectory"]
    assert _steps(trajectory) == [
        (1, "message", None), (2, "tool_call", "lookup_order"),
        (3, "tool_result", "lookup_order"), (4, "tool_call", "issue_refund"),
        (5, "tool_result", "issue_refund"), (6, "final", None)]
    assert [(c["checkpoint_id"], c["step_index"]) for c in trajectory["checkpoints"]] == [
        ("start", None), ("looked-up", 3)]
    assert trajectory["constraints"] == [
        {"name": "claim_matches_store", "passed": True, "step_index": 6}]
    assert trajectory["terminal_status"] == "success"


def test_the_worked_examples_replays_are_numbered_and_judged_as_the_page_says(
    sync_desk: tuple[StatefulProject, Any],
) -> None:
    project, result = sync_desk
    replay = next(r for r in project.view(result.run_id, "req-1")["replays"]
                  if r["criterion"] == "recovers_from_error_at_issue_refund")
    assert (replay["status"], replay["checkpoint"]["checkpoint_id"]) == ("ok", "looked-up")
    # the control replay is the continuation, numbered from 1: step 4 of the recording is
    # its step 1, and the constraint is at its step 3
    control = replay["control"]
    assert _steps(control) == [(1, "tool_call", "issue_refund"),
                               (2, "tool_result", "issue_refund"), (3, "final", None)]
    assert control["constraints"] == [
        {"name": "claim_matches_store", "passed": True, "step_index": 3}]
    # the fault trajectory: the recording's steps 1-3 joined with what followed, numbered as
    # the recording, the constraint at step 8, the desk's claim `failure`
    fault = replay["fault_trajectory"]
    assert _steps(fault) == [
        (1, "message", None), (2, "tool_call", "lookup_order"),
        (3, "tool_result", "lookup_order"), (4, "tool_call", "issue_refund"),
        (5, "tool_result", "issue_refund"), (6, "tool_call", "escalate_to_human"),
        (7, "tool_result", "escalate_to_human"), (8, "final", None)]
    assert fault["steps"][4]["result"]["error"] == "tool_error"
    assert fault["constraints"] == [
        {"name": "claim_matches_store", "passed": True, "step_index": 8}]
    assert fault["terminal_status"] == "failure"
    assert project.verdicts(result.run_id)["req-1"]["recovers_from_error_at_issue_refund"] == (
        "passed", "escalated")


@pytest.mark.slow
def test_the_pages_inspect_excerpt_is_what_inspect_prints(
    sync_desk: tuple[StatefulProject, Any],
) -> None:
    project, _ = sync_desk
    env = {**os.environ, "COLUMNS": "80", "NO_COLOR": "1", "CI": "1"}
    shown = subprocess.run(
        [sys.executable, "-m", "oloproof.cli.main", "inspect", "latest", "--case", "req-1",
         "--config", str(project.root / "oloproof.yaml")],
        capture_output=True, text=True, env=env, check=True, cwd=project.root).stdout
    excerpt = _console_block_after("The system never does index arithmetic.")
    printed = [line.rstrip() for line in shown.splitlines()]
    lines = [line.rstrip() for line in excerpt.splitlines()]
    at = printed.index(lines[0])
    assert printed[at: at + len(lines)] == lines


def test_the_async_example_runs_and_fails_as_the_page_says(tmp_path: Path) -> None:
    project = _project(tmp_path / "async-desk", ASYNC_EXAMPLE, "async-desk", [])
    result = project.run()
    assert result.to_json()["errors"] == []
    view = project.view(result.run_id, "req-1")
    assert view["trajectory"]["terminal_status"] == "success"
    assert [(c["checkpoint_id"], c["step_index"])
            for c in view["trajectory"]["checkpoints"]] == [("start", None), ("asked", 1)]
    replay = next(r for r in view["replays"]
                  if r["criterion"] == "recovers_from_error_at_issue_refund")
    assert (replay["status"], replay["checkpoint"]["checkpoint_id"]) == ("ok", "asked")
    fault = replay["fault_trajectory"]
    assert _steps(fault) == [(1, "message", None), (2, "tool_call", "issue_refund"),
                             (3, "tool_result", "issue_refund"), (4, "final", None)]
    assert fault["steps"][2]["result"]["error"] == "tool_error"
    assert fault["steps"][3]["arguments"] == {"answer": "sorry"}
    assert fault["terminal_status"] == "failure"
    verdicts = project.verdicts(result.run_id)["req-1"]
    assert verdicts["recovers_from_error_at_issue_refund"] == (
        "failed", "ended_in_failure_without_escalation")
    assert verdicts["agent_constraints_satisfied"] == ("passed", None)
