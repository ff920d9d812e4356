"""The tests' CLI fork server (tests/fork_server.py) reads every reply, however late (issue 30).

A command that ends at once has its two replies (its pid, then its exit code) written
together; the server's replies were read through a buffered file, whose readline() took both, so
the select() for the second waited out the whole timeout: under load, a test slow to read
saw a quick command "not finish within 60 s".
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import fork_server
import pytest

pytestmark = pytest.mark.slow


def test_both_replies_of_a_quick_command_are_read_when_the_test_reads_late(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _fork_server: Any) -> None:
    real = fork_server.select.select

    def late(*args: Any) -> Any:  # the test's process was busy: the replies are all written
        time.sleep(2.0)
        return real(*args)

    server = _fork_server  # the session's
    assert server.run(["--help"], tmp_path, fork_server.cli_env(), timeout=120).code == 0
    # The server is up (it imported the engine once): a command now starts at once.
    monkeypatch.setattr(fork_server, "select", SimpleNamespace(select=late))
    began = time.monotonic()
    code, out, _ = server.run(["--help"], tmp_path, fork_server.cli_env(), timeout=30)
    assert code == 0 and out.startswith("Usage:")
    assert time.monotonic() - began < 25, "it waited for the timeout"


def test_the_program_is_the_command_a_fresh_interpreter_runs(tmp_path: Path) -> None:
    """`ForkServer.program` on PATH gives what `python -m oloproof.cli.main` gives: the same
    output on each stream and the same exit status, from its own working directory."""
    program = str(fork_server.shared().program)
    (tmp_path / "empty").mkdir()
    for args in (["--help"], ["gate", "latest"], ["init", "p"], ["nonsense"]):
        forked = subprocess.run([program, *args], cwd=tmp_path / "empty", capture_output=True,
                                text=True, env=fork_server.cli_env(), timeout=120, check=False)
        shutil.rmtree(tmp_path / "empty" / "p", ignore_errors=True)
        fresh = subprocess.run(fork_server.oloproof_argv(*args), cwd=tmp_path / "empty",
                               capture_output=True, text=True, env=fork_server.cli_env(),
                               timeout=120, check=False)
        shutil.rmtree(tmp_path / "empty" / "p", ignore_errors=True)
        assert (forked.returncode, forked.stdout, forked.stderr) == (
            fresh.returncode, fresh.stdout, fresh.stderr), args
    assert forked.returncode == 2 and "No such command" in forked.stderr


SCRIPT = """import os, sys
print(__name__, sys.argv, sys.path[0] == os.path.dirname(os.path.abspath(__file__)))
print(sys.stdin.read().upper(), end="")
if sys.argv[1:] == ["raise"]:
    raise ValueError("the script raised")
sys.exit(int(sys.argv[1]) if sys.argv[1:] else 0)
"""


def test_the_python_program_runs_a_script_as_a_fresh_interpreter_does(tmp_path: Path) -> None:
    """`ForkServer.python` gives what `python SCRIPT ARGS` / `python -c CODE ARGS` gives: the
    script as `__main__`, its arguments, its folder first on sys.path (for -c, the working
    directory), stdin, output, status, an uncaught exception's traceback and exit 1; anything
    else it hands to the interpreter itself."""
    python = str(fork_server.shared().python)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "script.py").write_text(SCRIPT, encoding="utf-8")
    code = "import sys; print(__name__, sys.argv, repr(sys.path[0])); sys.exit(3)"
    for args in (["sub/script.py"], ["sub/script.py", "5"], ["sub/script.py", "raise"],
                 ["-c", code, "a", "b"], ["-c", "raise KeyError(7)"], ["-V"],
                 ["-m", "json.tool", "sub/missing.json"]):
        forked, fresh = (subprocess.run([interpreter, *args], cwd=tmp_path, input="in\n",
                                        capture_output=True, text=True, timeout=120,
                                        env=fork_server.cli_env(), check=False)
                         for interpreter in (python, sys.executable))
        assert (forked.returncode, forked.stdout) == (fresh.returncode, fresh.stdout), args
        # a traceback names the same lines (the forked one starts in the server's frames)
        assert forked.stderr.splitlines()[-1:] == fresh.stderr.splitlines()[-1:], args
    assert forked.returncode != 0 and "missing.json" in forked.stderr


def test_the_program_writes_to_the_pipe_its_shell_gave_it(tmp_path: Path) -> None:
    """Its stdout is the shell's pipe itself: a reader that stops early ends the command as it
    would end the real one, and stdin is the shell's too."""
    env = fork_server.cli_env(PATH=f"{fork_server.shared().program.parent}:{os.environ['PATH']}")
    done = subprocess.run(["bash", "-c", "oloproof --help | head -1; echo ${PIPESTATUS[0]}"],
                          cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
                          check=False)
    assert done.stdout.splitlines()[0].startswith("Usage: ")
    assert done.stdout.splitlines()[1] == "0", done
    (tmp_path / "labels.jsonl").write_text("", encoding="utf-8")
    stdin = subprocess.run(["bash", "-c", "printf 'p\\n' | oloproof labels review nope.jsonl"],
                           cwd=tmp_path, capture_output=True, text=True, env=env, timeout=120,
                           check=False)
    fresh = subprocess.run(fork_server.oloproof_argv("labels", "review", "nope.jsonl"),
                           input="p\n", cwd=tmp_path, capture_output=True, text=True,
                           env=fork_server.cli_env(), timeout=120, check=False)
    assert (stdin.returncode, stdin.stdout, stdin.stderr) == (
        fresh.returncode, fresh.stdout, fresh.stderr)


def test_sigterm_to_the_program_stops_its_command(new_probe: Any) -> None:
    """The program forwards SIGTERM (and Ctrl-C) to the command, and exits as the command
    exits: a run it stops says so, exit 5, as a run stopped directly does."""
    probe = new_probe()
    probe.write_cases(probe.held_cases(20, held_from=3))
    program = subprocess.Popen([str(fork_server.shared().program), "run", "--json"],
                               cwd=probe.path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env=fork_server.cli_env())
    deadline = time.monotonic() + 120
    while len(probe.calls()) < 3 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert program.poll() is None

    program.send_signal(signal.SIGTERM)
    out, err = program.communicate(timeout=60)
    probe.release()

    assert program.returncode == 5, err
    assert json.loads(out)["error"]["kind"] == "stopped"
