"""Bad input about workers (issue 11, acceptance 6): exit 2, the file, line and key named, the
system never called on a case and nothing stored.

The desks log every call to calls.log; a factory may be called while the suite is loaded (that
is how a factory that raises or returns one object twice is found), but no case runs.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import cli_env, oloproof_argv
from scale_support import DeskProject, desk_cases

from oloproof.errors import ConfigError


def _project(tmp_path: Path, **system: str | None) -> DeskProject:
    project = DeskProject(tmp_path / "p", **system)  # type: ignore[arg-type]
    return project


def _line_of(project: DeskProject, text: str) -> int:
    lines = (project.root / "oloproof.yaml").read_text().splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def _refused(cli, project: DeskProject, *args: str) -> str:
    done = cli("run", *args, cwd=project.root)
    assert done.code == 2, done.err
    assert "Traceback" not in done.err
    assert project.calls() == [], "no case ran"
    assert not (project.root / ".oloproof").exists(), "nothing was stored"
    return done.err


def test_zero_workers_is_refused_with_its_line(cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.suite["execution"] = {"workers": 0}
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert f"oloproof.yaml:{_line_of(project, 'workers')}" in err
    assert "execution.workers" in err and "must be at least 1 (got 0)" in err


def test_an_unknown_executor_is_refused_naming_the_executors(cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.suite["execution"] = {"executor": "spark"}
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert f"oloproof.yaml:{_line_of(project, 'executor')}" in err
    assert "execution.executor" in err
    assert "'local', 'processes' or 'ray'" in err


def test_an_unknown_executor_on_the_command_line_is_refused(cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(desk_cases(3))

    err = _refused(cli, project, "--executor", "spark")

    assert "--executor" in err and "'processes'" in err


def test_zero_workers_on_the_command_line_is_refused(cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(desk_cases(3))

    err = _refused(cli, project, "--workers", "0")

    assert "--workers" in err


def test_an_unknown_key_under_execution_names_the_accepted_keys(cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.suite["execution"] = {"workers": 2, "nodes": 3}
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert "unknown key 'nodes' in execution" in err
    assert "workers, executor, ray" in err


def test_a_stateful_callable_with_several_local_workers_needs_a_factory(
        cli, tmp_path: Path) -> None:
    project = _project(tmp_path, factory=None, callable_="app:desk")
    project.suite["execution"] = {"workers": 4}
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert f"oloproof.yaml:{_line_of(project, 'workers')}" in err
    assert "needs system.factory" in err and "one object is one sandbox" in err


def test_the_same_mistake_through_workers_on_the_command_line(cli, tmp_path: Path) -> None:
    project = _project(tmp_path, factory=None, callable_="app:desk")
    project.write(desk_cases(3))

    err = _refused(cli, project, "--workers", "3")

    assert "--workers 3 on executor local needs system.factory" in err
    assert f"oloproof.yaml:{_line_of(project, 'callable')}" in err


def test_a_factory_that_returns_the_same_object_twice_is_refused(cli, tmp_path: Path) -> None:
    project = _project(tmp_path, factory="app:same_desk")
    project.suite["execution"] = {"workers": 2}
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert f"oloproof.yaml:{_line_of(project, 'factory')}" in err
    assert "system.factory 'app:same_desk' returned the same object twice" in err


def test_a_factory_that_raises_is_named_with_its_error(cli, tmp_path: Path) -> None:
    project = _project(tmp_path, factory="app:broken_factory")
    project.suite["execution"] = {"workers": 2}
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert f"oloproof.yaml:{_line_of(project, 'factory')}" in err
    assert "system.factory 'app:broken_factory' raised" in err
    assert "RuntimeError: the sandbox database is not reachable" in err


@pytest.mark.parametrize("entries", [
    {"callable": "app:desk", "factory": "app:make_desk"},
    {},
])
def test_exactly_one_of_callable_and_factory(cli, tmp_path: Path, entries) -> None:
    project = _project(tmp_path, factory=None)
    project.suite["system"].update(entries)
    project.write(desk_cases(3))

    err = _refused(cli, project)

    assert "give exactly one of system.callable" in err
    assert f"oloproof.yaml:{_line_of(project, 'system:')}" in err


def test_executor_ray_without_ray_installed_says_how_to_install_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    project = _project(tmp_path)
    project.suite["execution"] = {"executor": "ray", "workers": 2}
    project.write(desk_cases(3))
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` now fails: Ray is hidden

    with pytest.raises(ConfigError) as raised:
        project.run()

    error = raised.value
    assert error.line == _line_of(project, "executor")
    assert "pip install -e '.[ray]'" in str(error)
    assert project.calls() == []
    assert not (project.root / ".oloproof").exists()


def test_executor_ray_on_the_command_line_without_ray(cli, tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(desk_cases(3))
    # A `ray` package that cannot be imported, first on the path: Ray is not installed here.
    hidden = tmp_path / "no_ray"
    (hidden / "ray").mkdir(parents=True)
    (hidden / "ray" / "__init__.py").write_text("raise ImportError('No module named ray')\n")

    done = subprocess.run(oloproof_argv("run", "--executor", "ray"), cwd=project.root,
                          env=cli_env(PYTHONPATH=str(hidden)), capture_output=True, text=True,
                          timeout=120, check=False)

    assert done.returncode == 2, done.stderr
    err = done.stderr
    assert project.calls() == [] and not (project.root / ".oloproof").exists()
    assert "--executor ray needs Ray" in err and "pip install -e '.[ray]'" in err


def test_bad_workers_or_executor_through_the_api(tmp_path: Path) -> None:
    project = _project(tmp_path)
    project.write(desk_cases(3))

    with pytest.raises(ConfigError, match="workers=0 was asked for"):
        project.run(workers=0)
    with pytest.raises(ConfigError, match="executor='spark' was asked for"):
        project.run(executor="spark")
    assert project.calls() == []


def test_an_unreachable_ray_address_exits_2_naming_its_line(cli, tmp_path: Path) -> None:
    pytest.importorskip("ray")
    project = _project(tmp_path)
    # Port 9 (discard) on loopback: nothing listens there.
    project.suite["execution"] = {"executor": "ray", "ray": {"address": "127.0.0.1:9"}}
    project.write(desk_cases(3))

    done = cli("run", cwd=project.root)

    assert done.code == 2, done.err
    assert "Traceback" not in done.err
    assert f"oloproof.yaml:{_line_of(project, 'address')}" in done.err
    assert "cannot reach the Ray cluster" in done.err and "ray start --head" in done.err
    assert project.calls() == []
    store = project.root / ".oloproof" / "store.sqlite"
    if store.exists():  # opened, but no run was registered
        db = sqlite3.connect(store)
        try:
            assert db.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
        finally:
            db.close()
