"""The files a command writes where its user said (docs/ci.md#output-files): `--junit`,
`--markdown` (run, gate, compare), `--html` (report) and `labels export -o`.

They used to rename a temporary file over whatever the path named, so a FIFO or a symbolic
link became a regular file, and `--junit DIR` exited 5 naming an `.html` temporary. Now: a
path that exists and is not a regular file is exit 2 naming it, before anything runs; a
symbolic link is written through; a missing folder is made as pytest's `--junitxml` makes it,
but never through a symbolic link (exit 2 naming the link); and a run that fails leaves its
failure in its CI files, never an earlier run's results. Only
FIFOs, links and folders of a temporary directory are used — never a real device node.
"""

from __future__ import annotations

import os
import signal
import stat
import time
from pathlib import Path
from typing import Any

import pytest
from junitparser import Error, JUnitXml

import oloproof
from oloproof.api import write_html_report
from oloproof.errors import UsageError

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")


def _runs(probe: Any) -> int:
    """How many runs the probe's store holds."""
    import sqlite3

    if not probe.store.exists():
        return 0
    with sqlite3.connect(probe.store) as conn:
        return int(conn.execute("SELECT count(*) FROM runs").fetchone()[0])


@pytest.fixture(scope="module")
def ran(new_probe: Any, cli: Any) -> Any:
    """A probe project with two stored runs (for gate, compare and report)."""
    probe = new_probe()
    probe.write_cases(probe.plain_cases(6))
    assert cli("run", cwd=probe.path).code == 0
    assert cli("run", cwd=probe.path).code == 0
    return probe


_COMMANDS = [
    ("run", "--junit"), ("run", "--markdown"), ("gate", "--junit"), ("gate", "--markdown"),
    ("compare", "--junit"), ("compare", "--markdown"), ("report", "--html"),
    ("labels", "-o"),
]


def _command(name: str, option: str, path: str) -> list[str]:
    return {"run": ["run"], "gate": ["gate", "latest"], "compare": ["compare", "latest~1",
                                                                   "latest"],
            "report": ["report", "latest"],
            "labels": ["labels", "export", "--transform", "t"]}[name] + [option, path]


@pytest.mark.parametrize(("name", "option"), _COMMANDS)
def test_a_fifo_is_a_usage_error_before_anything_runs(ran: Any, cli: Any, name: str,
                                                      option: str) -> None:
    fifo = ran.path / f"fifo-{name}{option}"
    os.mkfifo(fifo)
    before, calls = _runs(ran), len(ran.calls())

    code, out, err = cli(*_command(name, option, fifo.name), cwd=ran.path, timeout=30)

    assert code == 2, (out, err)
    assert err.startswith(f"Usage error: {fifo.name} is a named pipe (FIFO), not a regular "
                          "file"), err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode), "the FIFO is still a FIFO"
    assert (_runs(ran), len(ran.calls())) == (before, calls), "no run was wasted"
    assert not [p for p in ran.path.iterdir() if p.name.endswith(".tmp")]


@pytest.mark.parametrize(("name", "option"), _COMMANDS)
def test_a_directory_is_a_usage_error_naming_it(ran: Any, cli: Any, name: str,
                                                option: str) -> None:
    folder = ran.path / f"dir-{name}{option}"
    folder.mkdir()

    code, _, err = cli(*_command(name, option, folder.name), cwd=ran.path)

    assert code == 2
    assert err.startswith(f"Usage error: {folder.name} is a directory, not a regular file"), err
    assert ".html" not in err and list(folder.iterdir()) == []


@pytest.mark.parametrize(("name", "option"), [c for c in _COMMANDS if c[0] != "labels"])
def test_missing_folders_are_made_as_pytest_makes_them(ran: Any, cli: Any, name: str,
                                                       option: str) -> None:
    wanted = f"made-{name}{option}/and/below/out.file"

    code, _, err = cli(*_command(name, option, wanted), cwd=ran.path)

    # (`labels sample -o`: tests/judges/test_labels.py, in a project that has labels)
    assert code == 0, err
    written = (ran.path / wanted).read_text(encoding="utf-8")
    assert written.startswith(("<?xml", "## Oloproof", "<!DOCTYPE html>")), written[:80]
    assert (ran.path / f"made-{name}{option}").is_dir()
    assert not (ran.path / f"made-{name}{option}").is_symlink()


@pytest.mark.parametrize(("name", "option"), _COMMANDS)
@pytest.mark.parametrize("link", ["elsewhere", "dangling"])
def test_a_folder_is_never_made_through_a_symbolic_link(ran: Any, cli: Any, tmp_path: Path,
                                                        name: str, option: str,
                                                        link: str) -> None:
    outside = tmp_path / f"outside-{link}"
    if link == "elsewhere":
        outside.mkdir()
    via = ran.path / f"via-{link}-{name}{option}"
    via.symlink_to(outside)
    before, calls = _runs(ran), len(ran.calls())

    code, out, err = cli(*_command(name, option, f"{via.name}/new/out.file"), cwd=ran.path)

    assert code == 2, (out, err)
    state = "a dangling symbolic link" if link == "dangling" else "a symbolic link"
    assert f"{via.name} is {state} (to {outside})" in err, err
    assert (list(outside.iterdir()) == []) if link == "elsewhere" else not outside.exists()
    assert (_runs(ran), len(ran.calls())) == (before, calls), "no run was wasted"


def test_a_link_whose_target_folder_is_missing_is_refused(ran: Any, cli: Any,
                                                          tmp_path: Path) -> None:
    (ran.path / "points-away.xml").symlink_to(tmp_path / "gone" / "junit.xml")

    code, _, err = cli("gate", "latest", "--junit", "points-away.xml", cwd=ran.path)

    assert code == 2 and "where the symbolic link points-away.xml points" in err, err
    assert not (tmp_path / "gone").exists()


@pytest.mark.parametrize(("name", "option"), [c for c in _COMMANDS if c[0] != "labels"])
def test_a_symbolic_link_is_written_through_to_its_target(ran: Any, cli: Any, name: str,
                                                          option: str) -> None:
    target = ran.path / f"target-{name}{option}"
    target.write_text("an earlier run's file\n", encoding="utf-8")
    target.chmod(0o640)
    link = ran.path / f"link-{name}{option}"
    link.symlink_to(target.name)

    code, _, err = cli(*_command(name, option, link.name), cwd=ran.path)

    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == target.name, "the link stays a link"
    written = target.read_text(encoding="utf-8")
    assert written != "an earlier run's file\n"
    assert written.startswith(("<?xml", "## Oloproof", "<!DOCTYPE html>"))
    assert stat.S_IMODE(target.stat().st_mode) == 0o640, "the target keeps its permissions"


def test_a_symbolic_link_to_a_fifo_is_refused(ran: Any, cli: Any) -> None:
    os.mkfifo(ran.path / "pipe-behind-a-link")
    (ran.path / "to-a-pipe.xml").symlink_to("pipe-behind-a-link")

    code, _, err = cli("gate", "latest", "--junit", "to-a-pipe.xml", cwd=ran.path, timeout=30)

    assert code == 2 and "to-a-pipe.xml is a named pipe (FIFO)" in err
    assert stat.S_ISFIFO(os.stat(ran.path / "to-a-pipe.xml").st_mode)


def test_the_library_refuses_them_too(ran: Any, tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    config = ran.path / "oloproof.yaml"
    result = oloproof.redecide("latest", config=config)

    with pytest.raises(UsageError, match="is a named pipe"):
        oloproof.write_ci_reports(result, junit=tmp_path / "fifo", config=config)
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere")
    with pytest.raises(UsageError, match="gone is a dangling symbolic link"):
        write_html_report("latest", tmp_path / "gone" / "r.html", config)
    assert write_html_report("latest", tmp_path / "no" / "r.html", config).is_file()
    with pytest.raises(UsageError, match="is a directory"):
        oloproof.write_ci_reports(result, markdown=tmp_path, config=config)


# ---- a run that fails leaves no earlier run's results looking current ----------------------

def test_a_failed_run_writes_its_failure_over_an_earlier_runs_files(ran: Any,
                                                                    cli: Any) -> None:
    assert cli("run", "--junit", "ci.xml", "--markdown", "ci.md", cwd=ran.path).code == 0
    assert "oloproof.rules" in (ran.path / "ci.xml").read_text(encoding="utf-8")
    # The store's folder is a file: the run cannot start (exit 5).
    (ran.path / "not-a-folder").write_text("", encoding="utf-8")

    code, _, err = cli("run", "--junit", "ci.xml", "--markdown", "ci.md",
                       "--store", "not-a-folder/store.sqlite", cwd=ran.path)

    assert code == 5 and err.startswith("Store error:"), err
    xml = JUnitXml.fromfile(str(ran.path / "ci.xml"))
    [suite] = list(xml)
    assert suite.name == "oloproof.command" and suite.errors == 1
    [case] = list(suite)
    [error] = case.result
    assert isinstance(error, Error) and error.message == "`oloproof run` failed (exit 5)"
    assert "Store error:" in (error.text or "") and "not-a-folder" in (error.text or "")
    markdown = (ran.path / "ci.md").read_text(encoding="utf-8")
    assert markdown.startswith("## Oloproof: `oloproof run` failed (exit 5)\n\nStore error")
    assert "Decisions" not in markdown


def test_a_configuration_error_is_written_in_place_of_the_results_too(ran: Any,
                                                                      cli: Any) -> None:
    assert cli("gate", "latest", "--markdown", "gate.md", cwd=ran.path).code == 0

    code, _, _ = cli("gate", "no-such-run", "--markdown", "gate.md", cwd=ran.path)

    assert code == 2
    text = (ran.path / "gate.md").read_text(encoding="utf-8")
    assert text.startswith("## Oloproof: `oloproof gate` failed (exit 2)"), text


@pytest.mark.slow
def test_a_stopped_or_killed_run_leaves_its_stand_in_never_the_last_results(
        new_probe: Any, cli: Any, spawn_oloproof: Any) -> None:
    probe = new_probe()
    probe.write_cases(probe.plain_cases(2))
    assert cli("run", "--junit", "ci.xml", "--markdown", "ci.md", cwd=probe.path).code == 3
    probe.write_cases(probe.plain_cases(40, sleep=0.5))
    probe.set_system(concurrency=1)
    probe.forget_calls()

    for stop in (signal.SIGINT, signal.SIGKILL):
        process = spawn_oloproof("run", "--junit", "ci.xml", "--markdown", "ci.md",
                                 cwd=probe.path)
        deadline = time.monotonic() + 60
        while not probe.calls() and time.monotonic() < deadline:
            time.sleep(0.05)
        # While the run goes, the files say it has not finished.
        shown = (probe.path / "ci.md").read_text(encoding="utf-8")
        assert shown.startswith("## Oloproof: `oloproof run` has not finished"), shown
        os.kill(process.pid, stop)
        process.communicate(timeout=30)
        probe.forget_calls()
        xml = (probe.path / "ci.xml").read_text(encoding="utf-8")
        markdown = (probe.path / "ci.md").read_text(encoding="utf-8")
        assert "oloproof.rules" not in xml and "Decisions" not in markdown
        if stop == signal.SIGINT:
            assert process.returncode == 5
            assert markdown.startswith("## Oloproof: `oloproof run` failed (exit 5)\n\n"
                                       "Run stopped"), markdown
        else:  # nothing could be written: the stand-in stays
            assert markdown.startswith("## Oloproof: `oloproof run` has not finished")
            assert 'type="no_results"' in xml


def test_a_failure_quoting_a_case_is_escaped_in_the_markdown(ran: Any, cli: Any) -> None:
    code, _, _ = cli("gate", "latest", "--policy", "no|such`file<b>.yaml", "--markdown",
                     "quoted.md", "--json", cwd=ran.path)

    assert code == 2
    text = (ran.path / "quoted.md").read_text(encoding="utf-8")
    assert "no\\|such\\`file\\<b\\>" in text
