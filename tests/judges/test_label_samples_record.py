"""Every labels sample drawn is on the record (issue 40 point 3, docs/judges.md#labelling):
`labels sample` keeps the criterion, seed, n, the cases' digest and when in the store; a sample
of another seed or n than an earlier one warns, naming them; the next run's warnings list them
all. A sample refused before it is drawn is not recorded; a sample the store cannot record is
not written (exit 5)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixture `judged`
    JudgedProject,
    desk_cases,
    judged_fixture,
)

import oloproof


@pytest.fixture
def project(judged: JudgedProject) -> JudgedProject:
    judged.write_cases(desk_cases(16, lies={2, 5}))
    judged.suite["evaluators"][0]["labels"] = "labels/truthful.jsonl"
    judged.write()
    (judged.root / "labels").mkdir()
    return judged


def _samples(project: JudgedProject) -> list[tuple[Any, ...]]:
    with sqlite3.connect(project.store) as conn:
        return conn.execute("SELECT criterion, seed, n, suite, file, drawn_at FROM "
                            "label_samples ORDER BY rowid").fetchall()


def _sample(cli: Callable[..., Any], project: JudgedProject, *args: str) -> str:
    code, _, err = cli("labels", "sample", "--criterion", "reply_truthful", *args,
                       cwd=project.root, env={"COLUMNS": "300"})
    assert code == 0, err
    return " ".join(err.split())


def test_every_sample_is_recorded_and_a_redraw_is_warned_and_listed(
        cli: Callable[..., Any], project: JudgedProject) -> None:
    assert cli("run", cwd=project.root)[0] == 3  # uncalibrated: no labels yet
    err = _sample(cli, project, "--n", "10", "--seed", "5", "-o", "labels/truthful.jsonl")
    assert "Warning" not in err
    # The same sample again (to add to its file): the same sample, no warning.
    assert "Warning" not in _sample(cli, project, "-o", "labels/truthful.jsonl")
    [(criterion, seed, n, suite, file, when)] = _samples(project)[:1]
    first_line = (project.root / "labels" / "truthful.jsonl").read_text().splitlines()[0]
    assert (criterion, seed, n) == ("reply_truthful", "5", 10)
    assert suite == json.loads(first_line)["sample"]["suite"] and when > 0
    assert file.endswith("truthful.jsonl") and len(_samples(project)) == 2

    # Another seed: warned, naming the earlier seed and n.
    err = _sample(cli, project, "--n", "10", "--seed", "6", "-o", "labels/other.jsonl")
    assert "Warning: reply_truthful already had 1 labels sample drawn with another seed or " \
        "n (seed 5, n 10, " in err
    assert "this one is seed 6, n 10" in err
    # Another n, from Python: both earlier ones named.
    made = oloproof.sample_labels("reply_truthful", project.root / "labels" / "third.jsonl",
                                  config=project.config, n=12, seed=5)
    [warning] = made.warnings
    assert "2 labels samples drawn" in warning and "seed 5, n 10" in warning \
        and "seed 6, n 10" in warning and "this one is seed 5, n 12" in warning
    # Refused before drawing (another seed than the file's): not recorded.
    with pytest.raises(oloproof.UsageError):
        oloproof.sample_labels("reply_truthful", project.root / "labels" / "truthful.jsonl",
                               config=project.config, seed=7)
    assert [(s, n) for _, s, n, *_ in _samples(project)] == [
        ("5", 10), ("5", 10), ("6", 10), ("5", 12)]

    # The next run lists them all, and which one its labels file holds.
    code, out, err = cli("run", "--json", cwd=project.root)
    assert code == 3, err
    [warning] = [w for w in json.loads(out)["warnings"] if "labels samples were drawn" in w]
    assert warning.startswith("reply_truthful: 3 labels samples were drawn (seed 5, n 10, ")
    assert "; seed 6, n 10, " in warning and "; seed 5, n 12, " in warning
    assert "its labels file holds the one of seed 5" in warning
    assert "docs/limits.md#re-runs-and-re-drawn-samples" in warning
    # A gate of it lists them in its JSON's warnings too (the record as it is now); a run's
    # report shows them.
    code, out, err = cli("gate", "latest", "--json", cwd=project.root)
    assert code == 3, err
    assert any("3 labels samples were drawn" in w for w in json.loads(out)["warnings"])
    code, out, err = cli("run", cwd=project.root, env={"COLUMNS": "300"})
    assert code == 3, err
    assert "Warning: reply_truthful: 3 labels samples were drawn (seed 5, n 10, " in " ".join(
        out.split())


def test_a_sample_the_store_cannot_record_is_not_written(cli: Callable[..., Any],
                                                         project: JudgedProject) -> None:
    assert cli("run", cwd=project.root)[0] == 3
    with sqlite3.connect(project.store) as conn:  # every write of a sample fails
        conn.execute("CREATE TRIGGER refused BEFORE INSERT ON label_samples "
                     "BEGIN SELECT RAISE(ABORT, 'disk I/O error'); END")
    code, _, err = cli("labels", "sample", "--criterion", "reply_truthful", "--n", "10",
                       "--seed", "5", "-o", "labels/truthful.jsonl", cwd=project.root)
    assert code == 5, err
    assert "disk I/O error" in err, err
    assert not (project.root / "labels" / "truthful.jsonl").exists()
    assert _samples(project) == []
