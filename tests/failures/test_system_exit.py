"""A system that calls `sys.exit` or raises `KeyboardInterrupt` errors its case, never the run.

argparse inside a tool is enough (it calls `sys.exit(2)` on arguments it refuses). Before,
such a case hung the run forever, even with `timeout_s`, on every executor: the exception is
not an `Exception`, so it ended the lane's thread and its unit never came back. Now it is the
case's error (`system_exit`), on every executor, for sync and async systems, inside fault
replays too; only Ctrl-C at the terminal stops a run (tests/cli/test_cli_store.py, and the
async Ctrl-C below).
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case

EXITS = {"c002": ("exit", "SystemExit(3)"), "c003": ("interrupt", "KeyboardInterrupt"),
         "c004": ("argparse", "SystemExit(2)")}


def _cases() -> list[dict[str, Any]]:
    return [case(f"c{i:03d}", EXITS.get(f"c{i:03d}", ("ok",))[0]) for i in range(1, 7)]


def _check_contained(document: dict[str, Any]) -> None:
    errors = {e["case"]: e for e in document["errors"]}
    assert set(errors) == set(EXITS)
    for case_id, (_, said) in EXITS.items():
        assert errors[case_id]["kind"] == "system_exit"
        assert said in errors[case_id]["message"]
    answers = document["metrics"][0]
    assert (answers["passed"], answers["missing"]) == (3, 3)


@pytest.mark.parametrize("entry", ["app:run", "app:run_async"])
def test_an_exiting_system_errors_its_case_and_the_run_goes_on(
        tmp_path: Path, cli: Any, entry: str) -> None:
    project = FailingProject(tmp_path / "p", entry).set_system(timeout_s=5).write(_cases())

    code, out, err = cli("run", "--json", cwd=project.path, timeout=40)

    assert code == 3, err  # 3 answered cases cannot show a 50% floor
    _check_contained(json.loads(out))
    assert {c for _, c, _, _ in project.calls()} == {f"c{i:03d}" for i in range(1, 7)}


def test_what_broke_hints_at_what_each_exit_was(tmp_path: Path, cli: Any) -> None:
    """A KeyboardInterrupt's hint spoke of sys.exit, as SystemExit's does."""
    project = FailingProject(tmp_path / "p").write(_cases())

    code, out, err = cli("run", cwd=project.path, timeout=40, env={"COLUMNS": "300"})

    assert code == 3, err
    groups = out[out.index("What broke"):out.index("Gate:")].split("  system_exit × ")[1:]
    by_cause = {group.splitlines()[0].split(":")[1].split()[3]: group for group in groups}
    assert set(by_cause) == {"KeyboardInterrupt", "SystemExit(2)", "SystemExit(3)"}, groups
    assert "hint: the system (or a library inside it) raised KeyboardInterrupt itself" in \
        by_cause["KeyboardInterrupt"]
    assert "sys.exit" not in by_cause["KeyboardInterrupt"]
    for said in ("SystemExit(2)", "SystemExit(3)"):
        assert "hint: the system (or a tool inside it: argparse on arguments it refuses) " \
            "called sys.exit" in by_cause[said]


def test_inspect_shows_the_exit_with_its_traceback(tmp_path: Path, cli: Any) -> None:
    project = FailingProject(tmp_path / "p").write(_cases())
    cli("run", cwd=project.path, timeout=40)

    code, out, err = cli("inspect", "latest", "--case", "c004", cwd=project.path)

    assert code == 0, err
    assert "errored (system_exit): the system raised SystemExit(2)" in out
    assert "parse_args" in out, "the traceback reaches the argparse call"


def test_an_exiting_replay_leaves_its_criterion_missing_and_the_run_goes_on(
        tmp_path: Path, cli: Any) -> None:
    project = FailingProject(tmp_path / "p", "app:desk")
    project.suite["evaluators"] = [{"type": "fault_recovery", "tool": "refund",
                                    "fault": "error", "escalate_tools": ["escalate"]}]
    project.policy["rules"] = []
    project.write([case("c001"), case("c002", "replay_exit"), case("c003", "replay_interrupt"),
                   case("c004")])

    code, out, err = cli("run", "--json", cwd=project.path, timeout=40)

    assert code == 0, err
    document = json.loads(out)
    (recovers,) = document["metrics"]
    assert recovers["passed"] == 2 and recovers["missing"] == 2
    code, out, _ = cli("inspect", "latest", "--case", "c002", "--json", cwd=project.path)
    (criterion,) = json.loads(out)["criteria"]
    assert criterion["verdict"] == "missing"
    assert "SystemExit(4)" in json.dumps(criterion)


def test_a_system_module_that_exits_on_import_is_a_configuration_error(
        tmp_path: Path, cli: Any) -> None:
    project = FailingProject(tmp_path / "p").write([case("c001")])
    (project.path / "app.py").write_text(
        "import argparse\nargparse.ArgumentParser().parse_args(['--nope'])\n",
        encoding="utf-8")

    code, out, err = cli("run", cwd=project.path, timeout=40)

    assert code == 2, (out, err)
    assert "cannot import the system module 'app'" in err and "SystemExit: 2" in err


@pytest.mark.slow
def test_on_processes_an_exiting_system_errors_its_case(tmp_path: Path, cli: Any) -> None:
    project = FailingProject(tmp_path / "p").set_system(timeout_s=5)
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write(_cases())

    code, out, err = cli("run", "--json", cwd=project.path, timeout=60)

    assert code == 3, err
    _check_contained(json.loads(out))


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_on_ray_an_exiting_system_errors_its_case(tmp_path: Path, local_ray: Any) -> None:
    import oloproof

    project = FailingProject(tmp_path / "p").set_system(timeout_s=5)
    project.suite["execution"] = {"executor": "ray", "workers": 2}
    project.write(_cases())

    result = oloproof.run(project.path / "oloproof.yaml")

    _check_contained(result.to_json())


@pytest.mark.slow
def test_ctrl_c_still_stops_a_run_of_an_async_system(tmp_path: Path, spawn_oloproof: Any) -> None:
    """A real SIGINT during an async system's call is Ctrl-C, not the system's own."""
    project = FailingProject(tmp_path / "p", "app:run_async")
    project.write([case(f"c{i:03d}", sleep=0.05) for i in range(200)])
    process = spawn_oloproof("run", cwd=project.path)
    deadline = time.monotonic() + 30
    while len(project.starts()) < 20:
        assert time.monotonic() < deadline and process.poll() is None
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGINT)
    _, err = process.communicate(timeout=30)

    assert process.returncode == 5, err
    assert err.startswith("Run stopped:")
    assert len(project.starts()) < 200
