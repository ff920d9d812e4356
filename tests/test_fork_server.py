"""The tests' CLI fork server (tests/conftest.py) reads every reply, however late (issue 30).

A command that ends at once has its two replies (its pid, then its exit code) written
together; the server's pipe was read through a buffered file, whose readline() took both, so
the select() for the second waited out the whole timeout: under load, a test slow to read
saw a quick command "not finish within 60 s".
"""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import conftest
import pytest

pytestmark = pytest.mark.slow


def test_both_replies_of_a_quick_command_are_read_when_the_test_reads_late(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, _fork_server: Any) -> None:
    real = conftest.select.select

    def late(*args: Any) -> Any:  # the test's process was busy: the replies are all written
        time.sleep(2.0)
        return real(*args)

    server = _fork_server  # the session's
    assert server.run(["--help"], tmp_path, conftest.cli_env(), timeout=120).code == 0
    # The server is up (it imported the engine once): a command now starts at once.
    monkeypatch.setattr(conftest, "select", SimpleNamespace(select=late))
    began = time.monotonic()
    code, out, _ = server.run(["--help"], tmp_path, conftest.cli_env(), timeout=30)
    assert code == 0 and out.startswith("Usage:")
    assert time.monotonic() - began < 25, "it waited for the timeout"
