"""A system that ends the process never makes `oloproof run` exit 0
(docs/failures.md#a-system-that-ends-the-process).

On `executor: local` the system runs in the command's own process. `os._exit(0)` in it ended
the run at once, with exit 0 and nothing printed: a CI read a pass. The command now guards
`os._exit` while a run executes: the call raises instead, the case errors (`process_exit`),
the run goes on with the other cases and is `failed`, exit 5, with "What broke" naming the
case. A segmentation fault or a SIGKILL cannot be caught in the process it kills: the command
ends with the signal's status — never 0 — after Python's fault report for a segfault. On
`executor: processes` the coordinator survives all three: the case's worker is lost
(`worker_lost`, the case named) and the run goes on.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case


def _project(root: Path, do: str, entry: str = "app:run", **fields: Any) -> FailingProject:
    """Six cases; c003 does `do`."""
    project = FailingProject(root, entry)
    project.write([case(f"c{i:03d}", do if i == 3 else "ok", **(fields if i == 3 else {}))
                   for i in range(1, 7)])
    return project


def _what_broke(out: str) -> str:
    return " ".join(out[out.index("\nWhat broke") + 1:out.index("Gate:")].split())


@pytest.mark.parametrize("entry", ["app:run", "app:run_async"])
def test_os_exit_0_fails_the_run_naming_the_case(tmp_path: Path, cli: Any, entry: str) -> None:
    project = _project(tmp_path / "p", "os_exit", entry)

    code, out, err = cli("run", cwd=project.path, env={"COLUMNS": "200"})

    assert code == 5, (out, err)
    assert out.startswith("Run run_") and " · failed (" in out.splitlines()[0]
    broke = _what_broke(out)
    assert broke.startswith("What broke: the system called os._exit while running case c003, "
                            "which would have ended the run without a word"), broke
    assert "process_exit × 1: the system called os._exit(0)" in broke
    assert "cases: c003" in broke
    assert "Gate: BLOCK (exit 5)" in out
    assert len(project.starts()) == 6, "the other cases ran"


def test_the_document_and_the_store_say_failed(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p", "os_exit", code=3)

    code, out, err = cli("run", "--json", cwd=project.path)

    assert code == 5, err
    document = json.loads(out)
    assert document["status"] == "failed" and document["gate"]["exit_code"] == 5
    (error,) = document["errors"]
    assert (error["case"], error["kind"]) == ("c003", "process_exit")
    assert error["message"].startswith("the system called os._exit(3)")
    assert document["metrics"][0]["passed"] == 5  # what the other cases did is measured
    assert any("os._exit(3) while running case c003" in w for w in document["warnings"])
    code, out, _ = cli("runs", cwd=project.path)
    assert "· failed ·" in out, out
    code, out, _ = cli("gate", "latest", "--json", cwd=project.path)
    assert code == 5 and json.loads(out)["status"] == "failed"


def test_os_exit_from_a_thread_of_the_system(tmp_path: Path, cli: Any) -> None:
    """Called outside the case's call (a thread the system started), it is still caught."""
    project = _project(tmp_path / "p", "os_exit_thread")

    code, out, err = cli("run", "--json", cwd=project.path)

    assert code == 5, (out, err)
    document = json.loads(out)
    assert document["status"] == "failed"
    warning = next(w for w in document["warnings"] if "os._exit" in w)
    assert "os._exit(0) in thread 'ender', outside any case's call" in warning


def test_a_library_run_is_not_guarded(tmp_path: Path) -> None:
    """`oloproof.run()` changes nothing in its caller's process: os._exit is the caller's."""
    import os

    import oloproof

    before = os._exit
    FailingProject(tmp_path / "p").write([case("c001")])
    oloproof.run(tmp_path / "p" / "oloproof.yaml")
    assert os._exit is before


def test_a_segfault_never_exits_0(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p", "segfault")

    code, out, err = cli("run", cwd=project.path)

    assert code == -signal.SIGSEGV, (code, out, err)
    assert "Fatal Python error: Segmentation fault" in err
    assert 'app.py", line' in err  # the line of the system that crashed


def test_a_sigkill_of_its_own_process_never_exits_0(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p", "sigkill")

    code, out, err = cli("run", cwd=project.path)

    assert code == -signal.SIGKILL, (code, out, err)


@pytest.mark.slow
def test_on_processes_each_loses_only_its_worker(tmp_path: Path, cli: Any) -> None:
    project = FailingProject(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    ends = {"c002": "os_exit", "c004": "segfault", "c006": "sigkill"}
    project.write([case(f"c{i:03d}", ends.get(f"c{i:03d}", "ok")) for i in range(1, 9)])

    code, out, err = cli("run", "--json", cwd=project.path, timeout=120)

    assert code == 3, (out, err)  # 5 of 8 answered decide nothing at min 0.5: never 0
    document = json.loads(out)
    assert {e["case"]: e["kind"] for e in document["errors"]} == {
        case_id: "worker_lost" for case_id in ends}
    assert document["metrics"][0]["passed"] == 5
