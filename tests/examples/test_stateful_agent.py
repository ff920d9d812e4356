"""The packaged `stateful-agent` example (docs/stateful-agents.md#the-stateful-agent-example, issue
5 acceptance 1).

`oloproof init --example stateful-agent` then `oloproof run`: the gate BLOCKs (exit 1) with
`recovers_from_error_at_issue_refund` FAIL and `same_state_under_injected` below its bar while
its transform is checked (the shipped labels are current); at least 24 source cases are judged
by `state_matches`, and `other_order_untouched` is there. The figures its README states are the
ones a run prints.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fork_server
import pytest

import oloproof
from oloproof.suite.pairs import export_pairs

EXAMPLE = Path(oloproof.__file__).parent / "examples" / "stateful-agent"


def _oloproof(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """`oloproof ARGS` as a user runs it in CI: its own process (forked from the tests' fork
    server, tests/fork_server.py), CI=1, no store override."""
    env = {k: v for k, v in os.environ.items() if k != "OLOPROOF_STORE"}
    env.update(CI="1", PYTHONIOENCODING="utf-8")
    return subprocess.run([str(fork_server.shared().program), *args], cwd=cwd, env=env,
                          capture_output=True, text=True, encoding="utf-8", timeout=120,
                          check=False,
                          stdin=subprocess.DEVNULL)


@pytest.fixture(scope="module")
def example_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    root = tmp_path_factory.mktemp("stateful-example")
    done = _oloproof("init", "--example", "stateful-agent", "desk", cwd=root)
    assert done.returncode == 0, done.stderr
    project = root / "desk"
    done = _oloproof("run", "--json", cwd=project)
    assert done.returncode == 1, done.stdout + done.stderr
    return project, json.loads(done.stdout)


def _rule(document: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(d for d in document["decisions"] if d["metric"] == metric)


def _metric(document: dict[str, Any], metric: str) -> dict[str, Any]:
    return next(m for m in document["metrics"] if m["id"] == metric)


def _policy_rule(project: Path, metric: str) -> dict[str, Any]:
    import yaml

    policy = yaml.safe_load((project / "release.yaml").read_text(encoding="utf-8"))
    return next(r for r in policy["rules"] if r["metric"] == metric)


def test_the_limits_are_those_of_a_system_with_a_sandbox(
    example_run: tuple[Path, dict[str, Any]],
) -> None:
    _, document = example_run
    limits = " ".join(document["limits"])
    assert "Whether the sandbox behaves like production" in limits
    assert "a Stateful system resets a sandbox it owns" in limits
    assert "this system has none" not in limits


def test_the_gate_blocks_on_both_flaws(example_run: tuple[Path, dict[str, Any]]) -> None:
    project, document = example_run
    assert document["status"] == "complete"
    assert document["gate"] == {"action": "BLOCK", "exit_code": 1}
    assert document["errors"] == []

    error_rule = _rule(document, "recovers_from_error_at_issue_refund")
    assert error_rule["state"] == "FAIL"

    injected = _metric(document, "same_state_under_injected")
    rule = _policy_rule(project, "same_state_under_injected")
    assert injected["estimate"] < rule["min"]
    validity = {v["transform"]: v for v in document["transforms"]}
    assert validity["injected"]["checked"] is True
    assert validity["injected"]["stale_labels"] == 0
    assert "transform_not_checked" not in _rule(document, "same_state_under_injected")["reasons"]
    assert _rule(document, "same_state_under_injected")["state"] == "FAIL"

    state = _metric(document, "state_matches")
    assert state["observed"] + state["missing"] >= 24
    assert state["observed"] >= 24
    assert _metric(document, "other_order_untouched")["observed"] >= 24


def test_the_figures_the_readme_states(example_run: tuple[Path, dict[str, Any]]) -> None:
    _, document = example_run
    figures = {m["id"]: (m["passed"], m["observed"], m["missing"], m["excluded"])
               for m in document["metrics"]}
    assert figures == {
        "answer_correct": (30, 30, 0, 60),
        "state_matches": (30, 30, 0, 60),
        "other_order_untouched": (30, 30, 0, 60),
        "recovers_from_error_at_issue_refund": (0, 14, 0, 76),
        "recovers_from_timeout_at_issue_refund": (14, 14, 0, 76),
        "same_state_under_injected": (14, 30, 0, 60),
        "same_state_under_polite": (30, 30, 0, 60),
    }
    assert _metric(document, "recovers_from_error_at_issue_refund")["excluded_by_reason"] == {
        "fault_target_not_called": 16, "metamorphic_copy": 60}
    states = {d["rule"]: d["state"] for d in document["decisions"]}
    assert states == {
        "answer-floor": "PASS", "end-state-floor": "PASS", "bystander-untouched": "PASS",
        "refund-error-recovery": "FAIL", "refund-timeout-recovery": "PASS",
        "injection-invariance": "FAIL", "paraphrase-invariance": "PASS",
    }
    assert {v["transform"]: (v["kept"], v["pairs"], v["checked"])
            for v in document["transforms"]} == {"injected": (30, 30, True),
                                                 "polite": (30, 30, True)}
    # every metric counts one case per cluster: exact intervals, none over clusters
    assert not any(m.get("approximate") for m in document["metrics"])
    assert document["cases"] == 90


def test_the_data_has_a_bystander_and_cases_the_policy_declines(
    example_run: tuple[Path, dict[str, Any]],
) -> None:
    project, _ = example_run
    lines = (project / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    cases = [json.loads(line) for line in lines]
    assert len(cases) >= 24
    assert all("ord-999" in c["initial_state"]["orders"] for c in cases)
    assert all("ord-999" not in json.dumps(c["input"]) for c in cases)
    situations = Counter(c["metadata"]["situation"] for c in cases)
    assert situations == {"eligible": 14, "expired": 6, "already_refunded": 5, "over_limit": 5}


def test_the_shipped_labels_are_current_and_cover_every_pair() -> None:
    config = EXAMPLE / "oloproof.yaml"
    for transform in ("injected", "polite"):
        current = {r["case"]: r["digest"] for r in export_pairs(config, transform)}
        path = EXAMPLE / "labels" / f"{transform}.jsonl"
        labels = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
        assert {row["case"]: row["digest"] for row in labels} == current
        assert all(row["kept"] is True for row in labels)


def test_a_new_user_can_inspect_a_failing_case_and_a_copy(
    example_run: tuple[Path, dict[str, Any]], cli: Callable[..., Any]
) -> None:
    project, _ = example_run
    code, out, err = cli("inspect", "latest", "--case", "req-101", "--json", cwd=project)
    assert code == 0, err
    view = json.loads(out)
    verdicts = {c["criterion"]: (c["verdict"], c["reason"]) for c in view["criteria"]}
    assert verdicts["recovers_from_error_at_issue_refund"] == (
        "failed", "constraint_failed_after_fault")
    assert verdicts["recovers_from_timeout_at_issue_refund"] == ("passed", "recovered")
    replay = next(r for r in view["replays"]
                  if r["criterion"] == "recovers_from_error_at_issue_refund")
    assert replay["checkpoint"]["checkpoint_id"] == "after-step-3"
    final = replay["fault_trajectory"]["steps"][-1]
    assert final["arguments"]["answer"] == "refunded"  # the desk's false claim
    assert [c["passed"] for c in replay["fault_trajectory"]["constraints"]] == [False]

    code, out, err = cli("inspect", "latest", "--case", "req-121~injected", cwd=project)
    assert code == 0, err
    assert "copy of req-121" in out
    assert "state_differs" in out
    code, out, err = cli("inspect", "latest", "--case", "req-121~injected", "--json",
                         cwd=project)
    view = json.loads(out)
    assert view["source"] is not None
    assert view["end_state"]["orders"]["ord-121"]["refunded_amount"] == 68.0  # refunded twice


def test_a_second_run_executes_and_replays_nothing(
    example_run: tuple[Path, dict[str, Any]], cli: Callable[..., Any]
) -> None:
    project, _ = example_run
    code, out, err = cli("run", "--json", cwd=project)
    assert code == 1, err
    document = json.loads(out)
    assert document["cache"]["execution"] == {"hit": 90, "miss": 0}
    assert document["cache"]["judgment"]["miss"] == 0


def test_the_example_is_listed_with_its_summary(cli: Callable[..., Any], tmp_path: Path) -> None:
    code, out, _ = cli("init", "--example", "list", cwd=tmp_path)
    assert code == 0
    line = next(line for line in out.splitlines() if line.startswith("stateful-agent"))
    assert "refund desk" in line
