"""The plugin decides as `SequentialRate` decides (docs/pytest.md#how-a-marked-test-decides),
end to end: 28 marked tests, each replaying an outcome sequence drawn at a true pass rate from
0.5 to 1 with and without errored trials, at minimums 0.7 to 0.9, 20 to 100 trials and levels
0.9 and 0.95, run in one pytest session (the 14 rates and error shares and the 4 settings
cycle together every 28 tests, so more tests only repeat their pairings). Each test's state,
trials, bounds and "about N more trials" are `SequentialRate`'s on the same sequence, its body
ran exactly that many times, and the stored run decides each the same way — also when
`oloproof gate` decides it again.
(The type I error of the rule itself is the property test in tests/stats/test_stats_sequential.py.)
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest
from pytest_session import decided, environment, run_pytest, write

from oloproof.api import load_run, redecide

pytestmark = pytest.mark.slow

REPLAY = '''
import json
from pathlib import Path

import pytest

from counting import called

CASES = json.loads(Path(__file__).with_name("sequences.json").read_text())
DONE = {}


@pytest.mark.parametrize("number", range(len(CASES)))
def test_sequence(number):
    case = CASES[number]
    called(f"sequence-{number}")
    trial = DONE.get(number, 0)
    DONE[number] = trial + 1
    outcome = case["outcomes"][trial]
    if outcome == "errored":
        raise ConnectionError("the service is down")
    assert outcome == "passed", f"trial {trial + 1} failed"
'''

# The marker is added as each test is collected, as a user's parametrized marks are.
COLLECT = '''
import json
from pathlib import Path

import pytest

CASES = json.loads(Path(__file__).with_name("sequences.json").read_text())


def pytest_collection_modifyitems(items):
    for item in items:
        number = item.callspec.params["number"]
        item.add_marker(pytest.mark.oloproof(**CASES[number]["marker"]))
'''


def _sequences() -> list[dict[str, Any]]:
    draw = random.Random(20261206)
    cases = []
    grid = [(p, e) for p in (0.5, 0.7, 0.8, 0.85, 0.9, 0.95, 1.0) for e in (0.0, 0.08)]
    settings = [(0.8, 50, 0.95), (0.7, 20, 0.95), (0.9, 100, 0.9), (0.8, 30, 0.9)]
    for number in range(28):  # every rate, error share and setting the two cycles pair
        rate, errors = grid[number % len(grid)]
        minimum, trials, level = settings[number % len(settings)]
        outcomes = []
        for _ in range(trials):
            u = draw.random()
            outcomes.append("errored" if u < errors else
                            "passed" if draw.random() < rate else "failed")
        cases.append({"outcomes": outcomes,
                      "marker": {"trials": trials, "min": minimum, "level": level}})
    return cases


def test_the_plugin_decides_each_sequence_as_the_sequential_rule_does(tmp_path: Path) -> None:
    cases = _sequences()
    write(tmp_path, {"test_replay.py": REPLAY, "sequences.json": json.dumps(cases)})
    conftest = (tmp_path / "conftest.py").read_text(encoding="utf-8")
    (tmp_path / "conftest.py").write_text(conftest + COLLECT, encoding="utf-8")
    ran = run_pytest(tmp_path, "-q", env=environment())
    store = tmp_path / ".oloproof" / "store.sqlite"
    document = load_run("latest", store=store).document
    again = redecide("latest", store=store).document
    stored = {d.rule: d for d in document.decisions}
    redecided = {d.rule: d for d in again.decisions}
    states = set()
    for number, case in enumerate(cases):
        marker = case["marker"]
        expected = decided(case["outcomes"], marker["min"], marker["trials"], marker["level"])
        nodeid = f"test_replay.py::test_sequence[{number}]"
        got = ran.results[nodeid]
        assert (got["state"], len(got["outcomes"]), got["lower"], got["upper"]) == (
            expected.state, expected.trials_run, expected.lower, expected.upper), nodeid
        assert ran.calls[f"sequence-{number}"] == expected.trials_run, nodeid
        for row in (stored[nodeid], redecided[nodeid]):
            assert (row.state, row.trials_run, row.passed, row.failed, row.errored,
                    row.lower, row.upper, row.more_trials, row.level) == (
                expected.state, expected.trials_run, expected.passed, expected.failed,
                expected.errored, expected.lower, expected.upper, expected.more_trials,
                marker["level"]), nodeid
        if expected.more_trials is not None:
            assert f"INSUFFICIENT_EVIDENCE: about {expected.more_trials:,} more trials" \
                in ran.out
        states.add(expected.state)
    assert states == {"PASS", "FAIL", "INSUFFICIENT_EVIDENCE"}  # every outcome was met
    assert again.gate == document.gate
