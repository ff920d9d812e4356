"""Exit codes keep their meaning under every failure (docs/ci.md#exit-codes).

1 means "blocked with a FAIL" and nothing else: an unexpected internal error exits 5 with one
paragraph naming the file its traceback was written to, and a reader that closes the output
pipe (`oloproof run | head -1`) leaves the command's own exit code in place.

The closed-pipe tests hand the command the write end of a real pipe whose read end is already
closed, so every write it makes fails with EPIPE (a `head -1` that has stopped reading).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import fork_server
import pytest
from conftest import cli_env

import oloproof


def _with_closed_stdout(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the command writes anything
    try:
        return subprocess.run([str(fork_server.shared().program), *args], cwd=cwd,
                              env=cli_env(), stdin=subprocess.DEVNULL, stdout=write_end,
                              stderr=subprocess.PIPE, text=True, timeout=120, check=False)
    finally:
        os.close(write_end)


def _blocking(probe):
    """The probe, with a rule its answers fail: BLOCK (exit 1)."""
    probe.policy["rules"] = [{"id": "answers", "metric": "answer_correct", "min": 0.5}]
    probe.write_policy()
    probe.write_cases([{**c, "expected": {"answer": "no"}} for c in probe.plain_cases(10)])
    return probe


@pytest.mark.slow
@pytest.mark.parametrize("args", [("run",), ("run", "--json")], ids=" ".join)
def test_a_closed_pipe_keeps_the_exit_code_of_an_allowed_run(probe, args):
    done = _with_closed_stdout(*args, cwd=probe.path)

    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    assert "Broken pipe" not in done.stderr


@pytest.mark.slow
def test_a_closed_pipe_keeps_the_exit_code_of_a_blocked_run(new_probe):
    probe = _blocking(new_probe())

    done = _with_closed_stdout("run", cwd=probe.path)

    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr


@pytest.mark.slow
def test_a_closed_pipe_keeps_the_exit_code_of_every_reading_command(cli, new_probe):
    probe = _blocking(new_probe())
    assert cli("run", cwd=probe.path).code == 1

    for args, code in ((("gate",), 1), (("gate", "--json"), 1), (("runs",), 0),
                       (("inspect",), 0), (("inspect", "--failures"), 0), (("--help",), 0),
                       (("--version",), 0)):
        done = _with_closed_stdout(*args, cwd=probe.path)
        assert done.returncode == code, (args, done.stderr)
        assert "Traceback" not in done.stderr, args


def test_the_run_is_stored_although_nobody_read_its_report(cli, probe):
    """What the gate decided is in the store whatever happened to stdout."""
    done = _with_closed_stdout("run", cwd=probe.path)
    assert done.returncode == 0

    code, out, _ = cli("gate", "--json", cwd=probe.path)

    assert code == 0
    assert json.loads(out)["gate"] == {"action": "ALLOW", "exit_code": 0}


# ---- unexpected internal errors ---------------------------------------------------------------

# A real `oloproof` process in which one engine function has a bug: it raises where nothing
# expects it. The command line must turn it into exit 5 and one paragraph, whatever it is.
# (`python -c` through the fork server, `ForkServer.python`: a process forked from it, with the
# engine imported already, as `cli`'s commands are.)
_WITH_A_BUG = """
import sys
import oloproof.api

def bug(*args, **kwargs):
    raise ZeroDivisionError("an engine bug")

setattr(oloproof.api, sys.argv.pop(1), bug)
from oloproof.cli.main import main
main()
"""


def _run_with_a_bug(function: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(fork_server.shared().python), "-c", _WITH_A_BUG, function,
                           *args], cwd=cwd,
                          env=cli_env(TMPDIR=str(cwd)), stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_an_internal_error_exits_5_with_one_paragraph_and_the_traceback_in_a_file(probe):
    done = _run_with_a_bug("run", "run", cwd=probe.path)

    assert done.returncode == 5
    assert done.stdout == ""
    message = done.stderr.strip()
    assert "Traceback" not in message
    assert "\n" not in message, "one paragraph"
    assert message.startswith("Internal error:")
    assert "ZeroDivisionError: an engine bug" in message
    found = re.search(r"the traceback is in (\S+\.txt)", message)
    assert found, message
    report = Path(found.group(1))
    text = report.read_text(encoding="utf-8")
    assert "Traceback (most recent call last)" in text
    assert "ZeroDivisionError: an engine bug" in text
    # No project store yet: the file is in the temporary directory.
    assert report.parent == probe.path


# An engine bug that strikes half-way through a run: tallying the sixth case raises.
_BREAKS_MID_RUN = """
import oloproof.analysis.metrics as metrics

real_add = metrics.Analysis.add

def add(self, outcome):
    if self.cases == 5:
        raise ZeroDivisionError("a tally bug")
    real_add(self, outcome)

metrics.Analysis.add = add
from oloproof.cli.main import main
main()
"""


@pytest.mark.slow
def test_a_run_that_breaks_half_way_is_marked_failed_and_keeps_what_finished(probe, cli):
    probe.write_cases(probe.plain_cases(40))
    done = subprocess.run([str(fork_server.shared().python), "-c", _BREAKS_MID_RUN, "run"],
                          cwd=probe.path,
                          env=cli_env(), stdin=subprocess.DEVNULL, capture_output=True,
                          text=True, timeout=120, check=False)

    assert done.returncode == 5
    message = done.stderr.strip()
    assert message.startswith("Internal error:") and "\n" not in message, message
    assert "ZeroDivisionError: a tally bug" in message
    found = re.search(r"The run (run_\w+) failed after (\d+) of 40 cases and is marked `failed`; "
                      r"what finished is stored\.", message)
    assert found, message
    assert re.search(r"the traceback is in \S+\.txt", message)
    stored = oloproof.load_run("latest", config=probe.path / "oloproof.yaml")
    assert (stored.run_id, stored.status) == (found.group(1), "failed")
    assert (stored.gate.action, stored.gate.exit_code) == ("BLOCK", 5)
    code, out, _ = cli("runs", cwd=probe.path)
    assert found.group(1)[-6:] in out and "failed" in out
    # the executions that finished are stored: the next run reuses them
    probe.forget_calls()
    code, out, _ = cli("run", "--json", cwd=probe.path)
    assert code == 0
    assert json.loads(out)["cache"]["execution"]["hit"] >= 5
    assert len(probe.calls()) == json.loads(out)["cache"]["execution"]["miss"]


@pytest.mark.slow
def test_the_traceback_goes_under_the_projects_oloproof_directory_when_there_is_one(cli, probe):
    assert cli("run", cwd=probe.path).code == 0

    done = _run_with_a_bug("redecide", "gate", cwd=probe.path)

    assert done.returncode == 5
    found = re.search(r"the traceback is in (\S+\.txt)", done.stderr)
    assert found, done.stderr
    assert Path(found.group(1)).parent == probe.path / ".oloproof"


@pytest.mark.slow
def test_an_internal_error_in_json_mode_is_a_document(probe):
    done = _run_with_a_bug("run", "run", "--json", cwd=probe.path)

    assert done.returncode == 5
    error = json.loads(done.stdout)["error"]
    assert error["kind"] == "internal"
    assert "ZeroDivisionError" in error["message"]
    assert Path(error["file"]).is_file()
    assert done.stderr == ""


def test_usage_errors_still_exit_2(cli, tmp_path):
    code, _, err = cli("run", "--concurrency", "0", cwd=tmp_path)

    assert code == 2
    assert "Traceback" not in err


_CRASHING_FACTORY = '''


def make_crashing():
    """A factory whose native code crashes the process (a segmentation fault)."""
    import ctypes
    import resource

    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the project
    ctypes.string_at(0)
'''


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_a_factory_that_crashes_the_process_leaves_pythons_fault_report(
        marked_starter: Path, spawn_oloproof) -> None:
    """A segmentation fault cannot be caught: the process dies of it (exit 139 in a shell).
    It used to die without a word; now stderr names the line that was running."""
    import signal

    app = marked_starter / "app.py"
    app.write_text(app.read_text(encoding="utf-8") + _CRASHING_FACTORY, encoding="utf-8")
    suite = marked_starter / "oloproof.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        "callable: app:run ", "factory: app:make_crashing "), encoding="utf-8")
    line = app.read_text(encoding="utf-8").splitlines().index("    ctypes.string_at(0)") + 1

    process = spawn_oloproof("run", cwd=marked_starter)
    out, err = process.communicate(timeout=60)

    assert process.returncode == -signal.SIGSEGV, (out, err)
    assert err.startswith("Fatal Python error: Segmentation fault"), err
    assert f'File "{app}", line {line} in make_crashing' in err
    assert not (marked_starter / "calls.log").exists()
