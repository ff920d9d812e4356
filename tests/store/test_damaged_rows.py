"""A store damaged outside Oloproof says so: a row whose JSON
cannot be read was an internal error ("This is a bug in Oloproof"); now it is a store error
naming the table and the row and saying what to do. A dangling `.oloproof` symbolic link said
"File exists"; now it says what it is."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest


@pytest.fixture(scope="module")
def stored(new_probe: Any, cli: Any) -> Any:
    """A probe project with two runs of six cases."""
    probe = new_probe()
    probe.write_cases(probe.plain_cases(6))
    for _ in range(2):
        assert cli("run", cwd=probe.path).code == 0
    return probe


def _damaged_copy(stored: Any, tmp_path: Path, table: str, column: str) -> Path:
    project = tmp_path / "project"
    shutil.copytree(stored.path, project)
    with sqlite3.connect(project / ".oloproof" / "store.sqlite") as conn:
        changed = conn.execute(f"UPDATE {table} SET {column} = '{{broken' WHERE {column} "
                               "IS NOT NULL").rowcount
    assert changed > 0
    return project


# (table, column, a command that reads it, the words naming the row)
DAMAGE = [
    ("runs", "summary", ("runs",), "the runs row run_"),
    ("runs", "policy", ("gate", "latest"), "the runs row run_"),
    ("runs", "suite", ("inspect", "latest"), "the runs row run_"),
    ("run_cases", "outcome", ("gate", "latest"), "the run_cases row of case 'c00"),
    ("run_cases", "outcome", ("compare", "latest~1", "latest"), "a run_cases row of run run_"),
    ("executions", "output", ("report", "latest", "--html", "r.html"), "the executions row "),
    ("executions", "facts", ("run",), "the executions row "),
    ("judgments", "body", ("inspect", "latest", "--case", "c001"), "the judgments row "),
    ("artifacts", "body", ("inspect", "latest", "--case", "c001"), "the artifacts row sha256:"),
    ("cases", "body", ("inspect", "latest", "--case", "c001"), "the cases row sha256:"),
]


@pytest.mark.parametrize(("table", "column", "command", "row"), DAMAGE,
                         ids=[f"{t}.{c}-{cmd[0]}" for t, c, cmd, _ in DAMAGE])
def test_a_row_that_is_not_json_is_a_damaged_store(stored: Any, cli: Any, tmp_path: Path,
                                                   table: str, column: str,
                                                   command: tuple[str, ...], row: str) -> None:
    project = _damaged_copy(stored, tmp_path, table, column)

    code, _, err = cli(*command, cwd=project)

    assert code == 5, err
    assert err.startswith("Store error: ") and "store.sqlite: the store is damaged: " in err, err
    assert row in err and "does not hold valid JSON" in err
    assert "Move it aside (`mv " in err and "Internal error" not in err


def test_a_dangling_store_link_says_what_it_is(new_probe: Any, cli: Any) -> None:
    probe = new_probe()
    probe.write_cases(probe.plain_cases(2))
    (probe.path / ".oloproof").symlink_to(probe.path / "moved-away")

    code, _, err = cli("run", cwd=probe.path)

    assert code == 5
    assert "File exists" not in err
    assert (f"{probe.path}/.oloproof is a symbolic link to {probe.path}/moved-away, which does "
            "not exist, so the store cannot be made there; create what it points to, remove "
            f"the link (`rm {probe.path}/.oloproof`)") in err, err
    assert probe.calls() == []


def test_a_store_link_that_loops_says_so(new_probe: Any, cli: Any) -> None:
    probe = new_probe()
    probe.write_cases(probe.plain_cases(2))
    (probe.path / ".oloproof").symlink_to(".oloproof")  # a link to itself

    code, _, err = cli("run", cwd=probe.path)

    assert code == 5
    assert "does not exist" not in err, err
    assert (f"{probe.path}/.oloproof is a symbolic link to .oloproof, which leads back to "
            "itself (a loop of links), so the store cannot be made there") in err, err
    assert probe.calls() == []
