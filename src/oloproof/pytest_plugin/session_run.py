"""A pytest session's marked tests stored as a run (docs/pytest.md#the-stored-run), made by
`oloproof.run` like any run: the session is written as a suite in a temporary directory and
run there, so the store, `runs`, `inspect`, `gate` and `view` need nothing of their own.

The suite: one case per marked test (its id the test's node id), whose input holds the test's
trials as they happened (`outcomes`, a letter a trial, and what the trials that did not pass
raised); the system `recorded.play` replays trial t; the `recorded` evaluator
reads its verdict as criterion `passes` (an errored trial is an errored execution, so the
criterion is missing there); the suite's `trials` is the most trials any test ran, and a test's
trials past its own are excluded. The policy holds one `kind: sequential` rule per test, with
its `min`, `trials` and `level`: deciding the stored run walks each test's stored trials through
the same sequential rule the test stopped by, and gives the decisions the session gave (checked
here, each against the test's own). The project is the one at pytest's rootdir: its
`oloproof.yaml` names it and its store (`store:`, `$OLOPROOF_STORE`), else the rootdir's name
and `.oloproof/store.sqlite` beside it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import yaml

from oloproof.errors import OloproofError
from oloproof.pytest_plugin.recorded import LIMIT_KEY, OUTCOME_CODES, OUTCOMES_KEY, RAISED_KEY
from oloproof.pytest_plugin.trials import CRITERION, MarkedTestTrials
from oloproof.store.location import find_store
from oloproof.suite.config import load_suite_file

SYSTEM = {"name": "pytest", "version": "session",
          "callable": "oloproof.pytest_plugin.recorded:play"}


def project_of(rootdir: Path) -> tuple[str, Path, float]:
    """The project at pytest's rootdir: its name, its store and its confidence level
    (release.yaml's, else 0.95).

    Raises:
        ConfigError: its oloproof.yaml or release.yaml cannot be read.
    """
    from oloproof.suite.policy import load_policy

    suite = rootdir / "oloproof.yaml"
    name = load_suite_file(suite)[0].project if suite.is_file() else rootdir.name or "pytest"
    policy = rootdir / "release.yaml"
    level = load_policy(policy)[0].confidence_level if policy.is_file() else 0.95
    return name, find_store(suite), level


def problem(exc: OloproofError) -> str:
    """An error's message with where it is (`… (~/desk/release.yaml:2)`)."""
    where = exc.location()
    return exc.message + (f" ({where})" if where else "")


def case_id(nodeid: str) -> str:
    """The case a test is stored as: its node id (a `~`, which marks a metamorphic copy in a
    case id, written `-`)."""
    return nodeid.replace("~", "-")


def write_suite(directory: Path, project: str, level: float, tests: list[MarkedTestTrials]) -> Path:
    """The session as a suite in `directory`; returns its oloproof.yaml."""
    cases, rules = [], []
    for test in tests:
        cases.append({
            "id": case_id(test.nodeid),
            "input": {"test": test.nodeid, LIMIT_KEY: test.trials,
                      OUTCOMES_KEY: "".join(OUTCOME_CODES[t.outcome] for t in test.outcomes),
                      RAISED_KEY: {str(n): {k: getattr(t, k) for k in ("message", "phase",
                                                                        "where")
                                            if getattr(t, k) is not None}
                                   for n, t in enumerate(test.outcomes, 1)
                                   if t.outcome != "passed"}},
            "metadata": {"file": test.nodeid.split("::", 1)[0]},
        })
        rules.append({"id": test.nodeid, "kind": "sequential", "metric": CRITERION,
                      "case": case_id(test.nodeid), "min": test.minimum,
                      "trials": test.trials, "level": test.level})
    (directory / "cases.jsonl").write_text(
        "".join(json.dumps(c, ensure_ascii=False) + "\n" for c in cases), encoding="utf-8")
    suite = {
        "version": 1, "project": project, "dataset": "cases.jsonl",
        "system": {**SYSTEM, "concurrency": 4},
        "trials": max(len(t.outcomes) for t in tests),
        "evaluators": [{"type": "recorded", "criterion": CRITERION}],
    }
    (directory / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False),
                                             encoding="utf-8")
    (directory / "release.yaml").write_text(yaml.safe_dump(
        {"version": 1, "confidence_level": level, "rules": rules}, sort_keys=False,
        allow_unicode=True), encoding="utf-8")
    return directory / "oloproof.yaml"


def store_session(rootdir: Path, results: list[dict[str, Any]]) -> tuple[list[str], bool]:
    """Store the session's marked tests (`results`, as their reports carried them) as a run of
    the project at `rootdir`. Returns the terminal's lines — each test's decision as the stored
    run holds it, and where the run is — and whether it was stored."""
    from oloproof.api import run

    by_test: dict[str, MarkedTestTrials] = {}
    for data in results:  # a test run twice in one session (a rerun plugin) counts as its last
        test = MarkedTestTrials.from_json(data)
        by_test[test.nodeid] = test
    tests = list(by_test.values())
    try:
        project, store, level = project_of(rootdir)
        with tempfile.TemporaryDirectory(prefix="oloproof-pytest-") as tmp:
            result = run(write_suite(Path(tmp), project, level, tests), store=store)
    except OloproofError as exc:
        return [f"the session's marked tests were not stored: {problem(exc)}"], False
    from oloproof.api import RunResult
    from oloproof.report.decision_words import sequential_parts

    assert isinstance(result, RunResult)  # (the suite written has no variants: one run)
    document = result.document
    lines = []
    for test, decision in zip(tests, document.decisions, strict=True):
        if (decision.rule, decision.state, decision.lower, decision.upper) != (
                test.nodeid, test.state, test.lower, test.upper):
            return [f"internal error: the stored run {document.run_id} decided {test.nodeid} "
                    f"{decision.state} [{decision.lower}, {decision.upper}], the test "
                    f"{test.state} [{test.lower}, {test.upper}]; please report it"], False
        lines.append(f"{decision.state} {test.nodeid}")
        lines += [f"  {part}" for part in sequential_parts(decision) if part]
    lines += [f"Stored as run {document.run_id} of project {project}", f"  in {store}",
              f"  oloproof inspect {document.run_id} --case ID: a test's trials"]
    return lines, True
