"""A labels file is read only when it is a regular file
(docs/configuration.md#how-oloproof-fails-closed).

A judge criterion's `labels:` naming a FIFO waited for a writer for ever; naming `/dev/zero` it
read until memory ran out; `oloproof labels review` on a FIFO waited likewise. Each is now a
configuration error (exit 2) naming the file, as `dataset:` is, and nothing is opened. Devices
are tested on a file whose `stat()` answers as a device would: no test reads a real device.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


@pytest.fixture
def project(judged: JudgedProject) -> JudgedProject:
    judged.write_cases(desk_cases(6))
    judged.suite["evaluators"][0]["labels"] = "labels/truthful.jsonl"
    judged.write()
    (judged.root / "labels").mkdir()
    return judged


def _refused(cli: Callable[..., Any], project: JudgedProject, says: str) -> dict[str, Any]:
    code, out, err = cli("run", "--json", cwd=project.root, timeout=30)
    assert code == 2, (out, err)
    error = json.loads(out)["error"]
    assert says in error["message"], error
    assert "oloproof labels sample" in error["message"], error
    assert Path(error["file"]).name == "oloproof.yaml"
    line = (project.root / "oloproof.yaml").read_text(encoding="utf-8").splitlines()[
        error["line"] - 1]
    assert line.strip().startswith("labels:"), line
    assert not project.store.exists()  # nothing ran
    return error  # type: ignore[no-any-return]


def test_a_judge_labels_file_that_is_a_fifo_is_never_opened(cli: Callable[..., Any],
                                                            project: JudgedProject) -> None:
    os.mkfifo(project.root / "labels" / "truthful.jsonl")  # opening it would wait for a writer

    _refused(cli, project, "labels 'labels/truthful.jsonl' is a named pipe (FIFO), not a "
             "regular file")


def test_a_judge_labels_file_that_is_a_directory(cli: Callable[..., Any],
                                                 project: JudgedProject) -> None:
    (project.root / "labels" / "truthful.jsonl").mkdir()

    _refused(cli, project, "labels 'labels/truthful.jsonl' is a directory")


def test_labels_review_of_a_fifo_or_a_directory(cli: Callable[..., Any],
                                                project: JudgedProject) -> None:
    fifo = project.root / "labels" / "pipe.jsonl"
    os.mkfifo(fifo)

    code, out, err = cli("labels", "review", str(fifo), cwd=project.root, timeout=30)

    assert code == 2, (out, err)
    assert f"{fifo}: the labels file is a named pipe (FIFO), not a regular file" in err, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    code, out, err = cli("labels", "review", str(project.root / "labels"), cwd=project.root,
                         timeout=30)
    assert code == 2 and "is a directory" in err, (out, err)


def test_a_validity_labels_file_that_is_a_fifo(cli: Callable[..., Any],
                                               project: JudgedProject) -> None:
    """A transform's `validity_labels` FIFO was said not to exist."""
    project.suite["evaluators"][0].pop("labels")
    project.suite["metamorphic"] = {"transforms": [{
        "name": "polite", "field": "message", "template": "Please: {value}",
        "validity_labels": "labels/polite.jsonl"}]}
    project.write()
    os.mkfifo(project.root / "labels" / "polite.jsonl")

    code, out, err = cli("run", "--json", cwd=project.root, timeout=30)

    assert code == 2, (out, err)
    error = json.loads(out)["error"]
    assert "validity_labels file 'labels/polite.jsonl' is a named pipe (FIFO), not a regular " \
        "file" in error["message"], error
    line = (project.root / "oloproof.yaml").read_text(encoding="utf-8").splitlines()[
        error["line"] - 1]
    assert "validity_labels" in line


@pytest.mark.parametrize(("mode", "says"), [
    (stat.S_IFCHR | 0o666, "is a character device, not a regular file"),
    (stat.S_IFBLK | 0o660, "is a block device, not a regular file"),
])
def test_a_labels_file_that_is_a_device_is_never_read(tmp_path: Path, monkeypatch: Any,
                                                      mode: int, says: str) -> None:
    """`labels: /dev/zero` read until memory ran out."""
    from oloproof.errors import ConfigError
    from oloproof.suite.judge_labels import read_labels_file
    from oloproof.suite.validity import read_labels

    fake = tmp_path / "zero"
    fake.write_text("", encoding="utf-8")
    real_stat = Path.stat

    def stat_of(path: Path, *args: Any, **kwargs: Any) -> os.stat_result:
        found = real_stat(path, *args, **kwargs)
        if path == fake:
            return os.stat_result((mode, *tuple(found)[1:]))
        return found

    monkeypatch.setattr(Path, "stat", stat_of)
    monkeypatch.setattr(Path, "open", lambda *a, **k: pytest.fail("the device was opened"))
    monkeypatch.setattr(Path, "read_text", lambda *a, **k: pytest.fail("the device was read"))

    for read in (read_labels_file, read_labels):
        with pytest.raises(ConfigError, match=f"the labels file {says}"):
            read(fake)
