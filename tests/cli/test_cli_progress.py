"""Acceptance 7 — progress: a live bar on a terminal, nothing animated otherwise
(docs/cli.md#oloproof-run).

The bar is drawn on stderr. A terminal is a real pseudo-terminal (`os.openpty`) given to the
process as its stderr (the command forked from the fork server, `forked_oloproof`: what it
draws depends on its stderr, not on how its interpreter started); everything else here is a
pipe or a file.
"""

from __future__ import annotations

import os
import re

import pytest

# Any CSI sequence except SGR colours (`...m`): cursor moves, erasing, hiding the cursor.
CURSOR_CONTROL = re.compile(r"\x1b\[[0-9;?]*[A-LN-Za-ln-z]")


@pytest.fixture
def twenty_cases(probe):
    probe.write_cases(probe.plain_cases(20, sleep=0.02))
    return probe


def _run_on_a_terminal(forked_oloproof, probe, env) -> tuple[int, str, str]:
    """Run with stderr on a pseudo-terminal; return (exit code, stdout, what the terminal got)."""
    primary, secondary = os.openpty()
    try:
        process = forked_oloproof("run", cwd=probe.path, env=env, stderr=secondary)
    finally:
        os.close(secondary)
    received = bytearray()
    try:
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:  # EIO: the process closed its side
                break
            if not chunk:
                break
            received += chunk
    finally:
        os.close(primary)
    out, _ = process.communicate(timeout=60)
    return process.returncode, out, received.decode("utf-8", errors="replace")


def test_a_terminal_shows_a_live_progress_bar(twenty_cases, forked_oloproof):
    env = {"CI": None, "TERM": "xterm-256color", "COLUMNS": "120"}

    code, out, terminal = _run_on_a_terminal(forked_oloproof, twenty_cases, env)

    assert code == 0
    assert "/20 cases" in terminal
    assert "errors" in terminal and "cached" in terminal and "/s" in terminal
    assert CURSOR_CONTROL.search(terminal), "the bar is redrawn in place"
    assert "Gate: ALLOW (exit 0)" in out


def test_ci_turns_the_bar_off_even_on_a_terminal(twenty_cases, forked_oloproof):
    env = {"CI": "1", "TERM": "xterm-256color", "COLUMNS": "120"}

    code, _, terminal = _run_on_a_terminal(forked_oloproof, twenty_cases, env)

    assert code == 0
    assert "cases" not in terminal
    assert not CURSOR_CONTROL.search(terminal)


@pytest.mark.parametrize("ci", ["1", None], ids=["CI set", "CI unset"])
def test_pipes_get_no_escape_sequences(twenty_cases, cli, ci):
    code, out, err = cli("run", cwd=twenty_cases.path, env={"CI": ci, "TERM": "xterm-256color"})

    assert code == 0
    assert "\x1b" not in out and "\x1b" not in err
    assert "\r" not in out + err
    assert err == ""
