"""Local workers (docs/scaling.md#local-workers-many-sandboxes-in-one-process, `executor: local`):
copies of the system from `system.factory`, each with its own sandbox, all in this process.

Each desk raises if a case ever sees a state that is not its own or if two cases are inside it
at once, so zero errors and every state check passing is the isolation proof; the call log says
which desk ran each case and when, so a test can count the sandboxes that ran at once.
"""

from __future__ import annotations

from pathlib import Path

from scale_support import DeskProject, desk_cases, most_at_once

from oloproof.execution.intake import Progress


def test_an_async_stateful_system_with_32_workers_runs_32_sandboxes_at_once(
        tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p", factory="app:make_async_desk")
    project.suite["execution"] = {"workers": 32}
    project.write(desk_cases(96, sleep=0.2))

    result = project.run()

    document = result.to_json()
    assert document["errors"] == []
    row = result.metric("state_matches")
    assert (row.passed, row.observed) == (96, 96)
    calls = project.calls()
    assert len(calls) == 96
    assert len({c["desk"] for c in calls}) == 32, "each of the 32 desks ran cases"
    assert most_at_once(calls) >= 24, "the 32 sandboxes ran side by side"
    assert document["execution"] == {"executor": "local", "workers": 32, "retried": 0}


def test_sync_workers_run_their_sandboxes_side_by_side_on_threads(tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p")
    project.suite["execution"] = {"workers": 4}
    project.write(desk_cases(24, sleep=0.1))

    result = project.run()

    assert result.to_json()["errors"] == []
    assert result.metric("state_matches").passed == 24
    calls = project.calls()
    assert len({c["desk"] for c in calls}) == 4
    assert 2 <= most_at_once(calls) <= 4, "never more cases at once than sandboxes"


def test_workers_from_the_run_override_the_file_and_progress_counts_them_busy(
        tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p", factory="app:make_async_desk")
    project.write(desk_cases(40, sleep=0.05))
    seen: list[tuple[int, int]] = []

    def watch(progress: Progress) -> None:
        seen.append((progress.busy, progress.workers))

    result = project.run(workers=8, on_progress=watch)

    assert result.to_json()["execution"] == {"executor": "local", "workers": 8, "retried": 0}
    assert {total for _, total in seen} == {8}
    assert max(busy for busy, _ in seen) >= 4
    assert len({c["desk"] for c in project.calls()}) == 8


def test_one_worker_is_one_sandbox_as_before(tmp_path: Path) -> None:
    project = DeskProject(tmp_path / "p", factory=None, callable_="app:desk")
    project.write(desk_cases(12, sleep=0.02))

    result = project.run()

    assert result.metric("state_matches").passed == 12
    assert len({c["desk"] for c in project.calls()}) == 1
    assert most_at_once(project.calls()) == 1
    assert result.to_json()["execution"] == {"executor": "local", "workers": 1, "retried": 0}


def test_a_stateless_callable_may_have_several_local_workers(tmp_path: Path) -> None:
    # Without a sandbox, one object serves every worker: workers only multiply the lanes.
    root = tmp_path / "plain"
    root.mkdir()
    (root / "app.py").write_text(
        "import time\n"
        "def answer(case_input):\n"
        "    time.sleep(0.05)\n"
        "    return {'answer': case_input['q']}\n", encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(
        f'{{"id": "q{i}", "input": {{"q": "a{i}"}}, "expected": {{"answer": "a{i}"}}}}\n'
        for i in range(16)), encoding="utf-8")
    (root / "oloproof.yaml").write_text(
        "version: 1\ndataset: cases.jsonl\n"
        "system: {name: plain, version: '1', callable: app:answer, concurrency: 2}\n"
        "execution: {workers: 4}\n"
        "evaluators:\n"
        "  - {type: exact_match, criterion: exact, field: answer, expected_field: answer}\n",
        encoding="utf-8")
    (root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")

    import oloproof

    result = oloproof.run(root / "oloproof.yaml")

    assert result.metric("exact").passed == 16
    assert result.to_json()["execution"] == {"executor": "local", "workers": 4, "retried": 0}


def test_never_more_workers_than_units_to_run(tmp_path: Path) -> None:
    """32 workers for 6 cases made 32 systems (or started 32 processes), 26 of them idle; a
    run has at most one worker per unit to run: a case, each trial apart."""
    import sys

    project = DeskProject(tmp_path / "p", factory="app:make_desk")
    project.suite["execution"] = {"workers": 32}
    project.write(desk_cases(3))
    seen: set[int] = set()

    result = project.run(on_progress=lambda progress: seen.add(progress.workers))

    assert result.to_json()["execution"] == {"executor": "local", "workers": 3, "retried": 0}
    assert seen == {3}
    app = sys.modules["app"]
    from_the_factory = [d for d in app._made if d is not app._one and d is not app.desk]
    assert len(from_the_factory) == 3, "one system per worker, none for idle ones"

    result = project.run(trials=2, no_cache=True)
    assert result.to_json()["execution"]["workers"] == 6
