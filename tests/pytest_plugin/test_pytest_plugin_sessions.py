"""The pytest plugin as a user meets it (docs/pytest.md): one test file with a reliable body, a
seeded coin flip, a body whose service refuses every third call, a body that always passes, async
bodies under pytest-asyncio and anyio's plugin and one under neither, function- and module-scoped
fixtures, run by pytest in its own process — alone, under pytest-xdist, and with
`-p no:oloproof`. Each test's outcome, decision and number of body calls is checked against what
`SequentialRate` decides on the same outcomes, and so is the run the session is stored as.
"""

from __future__ import annotations

import random
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from pytest_session import Ran, decided, run_pytest, write

from oloproof.api import load_case_trials, load_run
from oloproof.stats import percent_upper

pytestmark = pytest.mark.slow

AGENT_TESTS = '''
import asyncio
import random

import pytest

from counting import called

COIN = random.Random(41)
SERVICE = {"calls": 0}


@pytest.fixture(scope="module")
def client():
    called("client")
    return object()


@pytest.fixture
def conversation():
    called("conversation")
    turns = []
    yield turns
    called("conversation_closed")


@pytest.mark.oloproof(trials=50, min=0.8)
def test_reliable(client, conversation):
    called("reliable")
    conversation.append("hello")
    assert conversation == ["hello"]  # a list kept from an earlier trial would hold two


@pytest.mark.oloproof(trials=50, min=0.8)
def test_coin_flip():
    called("coin_flip")
    assert COIN.random() < 0.5, "tails"


@pytest.mark.oloproof(trials=30, min=0.8)
def test_flaky_service():
    called("flaky_service")
    SERVICE["calls"] += 1
    if SERVICE["calls"] % 3 == 0:
        raise ConnectionError("the agent's service refused the connection")


@pytest.mark.oloproof(trials=30, min=0.8)
def test_always_passes():
    called("always_passes")


@pytest.mark.asyncio
@pytest.mark.oloproof(trials=50, min=0.8)
async def test_async_agent(conversation):
    called("async_agent")
    await asyncio.sleep(0)
    conversation.append("hello")
    assert conversation == ["hello"]


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
@pytest.mark.oloproof(trials=50, min=0.8)
async def test_anyio_agent():
    called("anyio_agent")
    await asyncio.sleep(0)


@pytest.mark.oloproof(trials=50, min=0.8)
async def test_async_without_a_plugin():
    called("no_plugin")


def test_unmarked():
    called("unmarked")
'''

MODULE = "test_agent.py::"


def _coin(trials: int) -> list[str]:
    draws = random.Random(41)
    return ["passed" if draws.random() < 0.5 else "failed" for _ in range(trials)]


#: Each marked test's outcomes, trial by trial, as its body makes them.
SEQUENCES = {
    "test_reliable": (["passed"] * 50, 0.8, 50),
    "test_coin_flip": (_coin(50), 0.8, 50),
    "test_flaky_service": (["passed", "passed", "errored"] * 10, 0.8, 30),
    "test_always_passes": (["passed"] * 30, 0.8, 30),
    "test_async_agent": (["passed"] * 50, 0.8, 50),
    "test_anyio_agent": (["passed"] * 50, 0.8, 50),
}
BODIES = {"test_reliable": "reliable", "test_coin_flip": "coin_flip",
          "test_flaky_service": "flaky_service", "test_always_passes": "always_passes",
          "test_async_agent": "async_agent", "test_anyio_agent": "anyio_agent"}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("agent")
    write(directory, {"test_agent.py": AGENT_TESTS})
    return directory


def _check_decisions(ran: Ran) -> None:
    """Every marked test decided as SequentialRate decides its outcomes, its body run exactly
    as many times as it had trials, and fresh function-scoped fixtures for each."""
    assert set(ran.results) == {MODULE + name for name in SEQUENCES}, ran.out
    for name, (outcomes, minimum, trials) in SEQUENCES.items():
        expected = decided(outcomes, minimum, trials)
        got = ran.results[MODULE + name]
        assert (got["state"], len(got["outcomes"]), got["lower"], got["upper"]) == (
            expected.state, expected.trials_run, expected.lower, expected.upper), name
        assert [t["outcome"] for t in got["outcomes"]] == outcomes[:expected.trials_run]
        assert ran.calls[BODIES[name]] == expected.trials_run, name
    # The always-passing body decides within 30 trials at min 0.8 (docs/pytest.md).
    assert ran.results[MODULE + "test_always_passes"]["state"] == "PASS"
    assert ran.calls["always_passes"] <= 30
    # Fresh function-scoped fixtures each trial, torn down each trial; the module's made once.
    fresh = ran.calls["reliable"] + ran.calls["async_agent"]
    assert ran.calls["conversation"] == ran.calls["conversation_closed"] == fresh
    assert ran.calls["client"] == 1
    assert ran.calls["unmarked"] == 1
    assert ran.calls["no_plugin"] == 0  # pytest refuses a plain `async def` before its body


def _check_outcomes(ran: Ran) -> None:
    """PASS passes, FAIL and INSUFFICIENT_EVIDENCE fail, each saying why."""
    states = {name: decided(*SEQUENCES[name]).state for name in SEQUENCES}
    assert states["test_coin_flip"] == "FAIL"
    assert states["test_flaky_service"] == "INSUFFICIENT_EVIDENCE"
    for name, state in states.items():
        shown = "PASSED" if state == "PASS" else "FAILED"
        assert f"{shown} {MODULE}{name}" in ran.out, name
    assert f"FAILED {MODULE}test_async_without_a_plugin" in ran.out
    assert "async def functions are not natively supported" in ran.out
    assert f"PASSED {MODULE}test_unmarked" in ran.out
    coin = decided(*SEQUENCES["test_coin_flip"])
    assert (f"oloproof: FAIL · upper {percent_upper(coin.upper)} < min 80.0%\n"
            f"after {coin.trials_run} of 50 trials: {coin.passed} passed, {coin.failed} failed\n"
            in ran.out)
    assert "AssertionError: tails" in ran.out
    assert "INSUFFICIENT_EVIDENCE: the errored trials leave it open" in ran.out
    assert "ConnectionError: the agent's service refused the connection" in ran.out
    assert "Errored trials: 10 (counted as missing: a failure for PASS, a pass for FAIL)" \
        not in ran.out  # (the flaky service decided before its tenth error)
    flaky = decided(*SEQUENCES["test_flaky_service"])
    assert (f"Errored trials: {flaky.errored} (counted as missing: a failure for PASS, a pass "
            "for FAIL)") in ran.out
    assert ran.code == 1


def _check_stored(ran: Ran) -> None:
    """One run, holding each marked test with its trials and the decision the session made."""
    store = ran.directory / ".oloproof" / "store.sqlite"
    document = load_run("latest", store=store).document
    assert document.project == ran.directory.name
    assert document.system.name == "pytest"
    by_rule = {d.rule: d for d in document.decisions}
    assert set(by_rule) == set(ran.results)
    for nodeid, result in ran.results.items():
        row = by_rule[nodeid]
        assert (row.state, row.lower, row.upper, row.trials_run) == (
            result["state"], result["lower"], result["upper"], len(result["outcomes"]))
        assert row.case == nodeid and row.kind == "sequential"
    trials = {c.case_id: c for c in load_case_trials("latest", store=store)}
    flaky = trials[MODULE + "test_flaky_service"].counts[0]
    flaky_run = len(ran.results[MODULE + "test_flaky_service"]["outcomes"])
    assert (flaky.passed, flaky.failed, flaky.missing) == (
        flaky_run - flaky_run // 3, 0, flaky_run // 3)
    assert document.gate.exit_code == 1  # a FAIL among them


def test_a_session_decides_each_marked_test_and_stores_it(project: Path) -> None:
    ran = run_pytest(project, "-rA", "-p", "anyio", "--junitxml=junit.xml")
    _check_decisions(ran)
    _check_outcomes(ran)
    _check_stored(ran)
    document = load_run("latest", store=project / ".oloproof" / "store.sqlite").document
    assert f"oloproof inspect {document.run_id} --case ID: a test's trials" in ran.out
    # Other plugins see one test; a JUnit file's failure message is the decision's first line.
    coin = decided(*SEQUENCES["test_coin_flip"])
    junit = ET.parse(project / "junit.xml").getroot()
    failure = junit.find(".//testcase[@name='test_coin_flip']/failure")
    assert failure is not None
    assert failure.get("message") == f"oloproof: FAIL · upper {percent_upper(coin.upper)} " \
        "< min 80.0%"
    assert len(junit.findall(".//testcase[@name='test_coin_flip']")) == 1


def test_under_xdist_each_test_runs_on_one_worker_and_the_session_is_stored_once(
        project: Path) -> None:
    store = project / ".oloproof" / "store.sqlite"
    before = len(load_run_ids(store))
    ran = run_pytest(project, "-rA", "-n", "2", "-p", "anyio")
    _check_decisions(ran)
    _check_outcomes(ran)
    _check_stored(ran)
    assert len(load_run_ids(store)) == before + 1


def load_run_ids(store: Path) -> list[str]:
    from oloproof.api import list_runs

    return [r["run_id"] for r in list_runs(None, store=store)] if store.exists() else []


def test_without_the_plugin_each_marked_body_runs_once_and_nothing_is_stored(
        tmp_path: Path) -> None:
    write(tmp_path, {"test_agent.py": AGENT_TESTS})
    ran = run_pytest(tmp_path, "-rA", "-p", "no:oloproof", "-p", "anyio")
    for name in ("reliable", "coin_flip", "flaky_service", "always_passes", "async_agent",
                 "anyio_agent", "unmarked"):
        assert ran.calls[name] == 1, name
    assert not ran.results
    assert not (tmp_path / ".oloproof").exists()
    assert "Unknown pytest.mark.oloproof" in ran.out
    # One coin flip decides the test as plain pytest would.
    first = "PASSED" if _coin(1) == ["passed"] else "FAILED"
    assert f"{first} {MODULE}test_coin_flip" in ran.out
