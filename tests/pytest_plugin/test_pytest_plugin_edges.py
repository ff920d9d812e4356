"""What a marked test does at the edges (docs/pytest.md): a marker it cannot use errors at
setup, naming what to write, and runs nothing; a skip skips the test; a fixture that raises in
setup makes an errored trial, one that raises in teardown is reported as pytest reports it;
`pytest.fail` is a failure and any other exception an errored trial; the project at the rootdir
gives the store, the project's name and the confidence level; a policy that cannot be read
stops the marked tests, and a session that cannot be stored says so and does not exit 0.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from pytest_session import decided, environment, run_pytest, write

from oloproof.api import list_runs, load_run

pytestmark = pytest.mark.slow

EDGES = '''
import pytest

from counting import called

TRIALS = {}


def trial(name):
    TRIALS[name] = TRIALS.get(name, 0) + 1
    called(name)
    return TRIALS[name]


@pytest.mark.oloproof(trials=20)
def test_no_min():
    called("no_min")


@pytest.mark.oloproof(trials=20, min=80)
def test_min_as_percent():
    called("min_as_percent")


@pytest.mark.oloproof(20, 0.8)
def test_positional():
    called("positional")


@pytest.mark.oloproof(trials=20, min=0.8, tries=3)
def test_unknown_argument():
    called("unknown_argument")


@pytest.mark.xfail
@pytest.mark.oloproof(trials=20, min=0.8)
def test_xfail_too():
    called("xfail_too")


@pytest.mark.oloproof(trials=30, min=0.8)
def test_skips_at_trial_3():
    if trial("skips") == 3:
        pytest.skip("the sandbox is not available")


@pytest.fixture
def session_token():
    if trial("token") in (2, 5):
        raise ConnectionError("the auth service timed out")
    return "token"


@pytest.mark.oloproof(trials=30, min=0.7)
def test_setup_errors(session_token):
    called("setup_errors")


@pytest.fixture
def scratch():
    yield []
    if trial("scratch_teardown") == 2:
        raise OSError("could not remove the scratch directory")


@pytest.mark.oloproof(trials=30, min=0.8)
def test_teardown_raises_once(scratch):
    called("teardown_raises_once")


@pytest.mark.oloproof(trials=30, min=0.8)
def test_pytest_fail_and_value_error():
    n = trial("fail_and_error")
    if n == 1:
        pytest.fail("the answer was wrong")
    if n == 2:
        raise ValueError("the agent returned nothing")
'''

MARKER_ERRORS = {
    "test_no_min": "needs min, the pass rate the test must show",
    "test_min_as_percent": "min is a pass rate strictly between 0 and 1 (min=0.8 is 80%), "
                           "not 80",
    "test_positional": "takes keyword arguments only",
    "test_unknown_argument": "has no argument 'tries'",
    "test_xfail_too": "cannot also be marked xfail",
}


def test_edges_of_a_marked_test(tmp_path: Path) -> None:
    write(tmp_path, {"test_edges.py": EDGES})
    ran = run_pytest(tmp_path, "-rA")
    for name, says in MARKER_ERRORS.items():
        assert f"ERROR test_edges.py::{name} - pytest.UsageError: oloproof: " in ran.out, name
        assert says in ran.out, name
        assert ran.calls[name.removeprefix("test_")] == 0, name
    # A skip at the third trial skips the test; its two trials are not kept.
    assert ran.calls["skips"] == 3
    assert "SKIPPED [1] test_edges.py:" in ran.out and "the sandbox is not available" in ran.out
    assert "test_edges.py::test_skips_at_trial_3" not in ran.results
    # A fixture that raises in setup: an errored trial, the body not called.
    setup = ran.results["test_edges.py::test_setup_errors"]
    outcomes = [t["outcome"] for t in setup["outcomes"]]
    assert outcomes[:6] == ["passed", "errored", "passed", "passed", "errored", "passed"]
    assert [t.get("phase") for t in setup["outcomes"][:2]] == [None, "setup"]
    assert ran.calls["setup_errors"] == outcomes.count("passed")
    assert setup["state"] == decided(outcomes, 0.7, 30).state
    assert setup["outcomes"][1]["message"] == "ConnectionError: the auth service timed out"
    lines = ran.out.splitlines()
    at = lines.index(f"{setup['state']} test_edges.py::test_setup_errors")
    assert lines[at + 2] == (f"  {len(outcomes)} of 30 trials: {outcomes.count('passed')} "
                             f"passed, 0 failed, 2 errored")
    # A teardown that raises leaves every trial passing and is reported on the teardown.
    teardown = ran.results["test_edges.py::test_teardown_raises_once"]
    assert teardown["state"] == "PASS"
    assert {t["outcome"] for t in teardown["outcomes"]} == {"passed"}
    assert "PASSED test_edges.py::test_teardown_raises_once" in ran.out
    assert ("ERROR test_edges.py::test_teardown_raises_once - oloproof: the test's teardown "
            "raised in trial 2: OSError: could not remove the scratch directory") in ran.out
    # pytest.fail is a failure; a ValueError an errored trial.
    mixed = ran.results["test_edges.py::test_pytest_fail_and_value_error"]
    assert [t["outcome"] for t in mixed["outcomes"][:3]] == ["failed", "errored", "passed"]
    assert mixed["outcomes"][0]["message"] == "Failed: the answer was wrong"
    # Only the tests that decided are stored.
    document = load_run("latest", store=tmp_path / ".oloproof" / "store.sqlite").document
    assert {d.rule for d in document.decisions} == set(ran.results) == {
        "test_edges.py::test_setup_errors", "test_edges.py::test_teardown_raises_once",
        "test_edges.py::test_pytest_fail_and_value_error"}


ALWAYS = '''
import pytest

from counting import called


@pytest.mark.oloproof(trials=40, min=0.8)
def test_answers():
    called("answers")


@pytest.mark.oloproof(trials=40, min=0.8, level=0.8)
def test_answers_at_its_own_level():
    called("own_level")


def test_unmarked():
    called("unmarked")
'''


def test_the_project_at_the_rootdir_names_the_run_its_store_and_its_level(
        tmp_path: Path) -> None:
    write(tmp_path, {"test_answers.py": ALWAYS,
                     "oloproof.yaml": """
                         version: 1
                         project: refund-desk
                         dataset: data/cases.jsonl
                         store: runs/desk.sqlite
                         system: {name: desk, version: "1", callable: "app:desk"}
                         evaluators: [{type: exact_match, field: answer}]
                         """,
                     "release.yaml": "version: 1\nconfidence_level: 0.9\nrules: []\n"})
    ran = run_pytest(tmp_path, "-q")
    assert ran.code == 0, ran.out
    assert not (tmp_path / ".oloproof").exists()
    document = load_run("latest", store=tmp_path / "runs" / "desk.sqlite").document
    assert document.project == "refund-desk"
    levels = {d.rule: d.level for d in document.decisions}
    assert levels == {"test_answers.py::test_answers": 0.9,
                      "test_answers.py::test_answers_at_its_own_level": 0.8}
    # At a lower level an always-passing body decides sooner.
    assert ran.calls["answers"] == decided(["passed"] * 40, 0.8, 40, 0.9).trials_run
    assert ran.calls["own_level"] == decided(["passed"] * 40, 0.8, 40, 0.8).trials_run
    assert ran.calls["own_level"] < ran.calls["answers"]
    assert (f"Stored as run {document.run_id} of project refund-desk\n"
            f"  in {tmp_path / 'runs' / 'desk.sqlite'}\n") in ran.out
    # $OLOPROOF_STORE moves the store, as it does for `oloproof run`.
    elsewhere = tmp_path / "elsewhere.sqlite"
    moved = run_pytest(tmp_path, "-q", env=environment(OLOPROOF_STORE=str(elsewhere)))
    assert moved.code == 0
    assert len(list_runs(None, store=elsewhere)) == 1
    assert len(list_runs(None, store=tmp_path / "runs" / "desk.sqlite")) == 1


@pytest.mark.parametrize(("name", "text", "says"), [
    ("release.yaml", "version: 1\nconfidence_level: 95\nrules: []\n", "write 0.95"),
    ("oloproof.yaml", "version: 1\nproject: [desk]\n", "oloproof.yaml"),
])
def test_a_project_that_cannot_be_read_stops_the_marked_tests_before_they_run(
        tmp_path: Path, name: str, text: str, says: str) -> None:
    write(tmp_path, {"test_answers.py": ALWAYS, name: text})
    ran = run_pytest(tmp_path, "-rA")
    assert ran.calls["answers"] == ran.calls["own_level"] == 0
    assert ran.calls["unmarked"] == 1
    assert "ERROR test_answers.py::test_answers - pytest.UsageError: oloproof: the project " \
           "at pytest's rootdir cannot be read: " in ran.out
    assert name in ran.out and says in ran.out
    assert not (tmp_path / ".oloproof").exists()


def test_a_session_that_cannot_be_stored_says_so_and_does_not_exit_0(tmp_path: Path) -> None:
    write(tmp_path, {"test_answers.py": ALWAYS})
    (tmp_path / "blocked").write_text("a file where the store's directory would be\n")
    ran = run_pytest(tmp_path, "-q", env=environment(
        OLOPROOF_STORE=str(tmp_path / "blocked" / "store.sqlite")))
    assert "3 passed" in ran.out
    assert "the session's marked tests were not stored: " in ran.out
    assert ran.code == pytest.ExitCode.INTERNAL_ERROR
