"""`system.retries`: what is declared transient is tried again, from a fresh sandbox, after a
backoff; a rate limit's `retry_after` is honoured and pauses every new call meanwhile; every
attempt's error is kept (docs/failures.md#retries)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from failing_systems import FailingProject, case

FAST = {"attempts": 3, "on": ["app:Transient"], "backoff_s": 0.01, "max_backoff_s": 0.05}


def _project(root: Path, entry: str = "app:run", **retries: Any) -> FailingProject:
    project = FailingProject(root, entry)
    project.suite["system"]["retries"] = {**FAST, **retries}
    return project


def _run(project: FailingProject, cli: Any, *options: str) -> tuple[int, dict[str, Any], str]:
    code, out, err = cli("run", "--json", *options, cwd=project.path, timeout=60)
    return code, json.loads(out), err


def _view(project: FailingProject, cli: Any, case_id: str) -> dict[str, Any]:
    code, out, err = cli("inspect", "latest", "--case", case_id, "--json", cwd=project.path)
    assert code == 0, err
    view: dict[str, Any] = json.loads(out)
    return view


def _attempts(project: FailingProject) -> dict[str, int]:
    counts: dict[str, int] = {}
    for case_id, attempt, _ in project.starts():
        counts[case_id] = max(counts.get(case_id, 0), attempt)
    return counts


@pytest.mark.parametrize("entry", ["app:run", "app:run_async"])
def test_a_declared_transient_error_is_retried_and_the_case_passes(
        tmp_path: Path, cli: Any, entry: str) -> None:
    project = _project(tmp_path / "p", entry).write([
        case("c001"), case("c002", "flaky", fails=1), case("c003", "flaky", fails=2),
        case("c004", "raise"), case("c005")])

    code, document, err = _run(project, cli)

    assert code == 3, err
    assert [(e["case"], e["kind"]) for e in document["errors"]] == [("c004", "system_error")]
    assert document["metrics"][0]["passed"] == 4
    assert _attempts(project) == {"c001": 1, "c002": 2, "c003": 3, "c004": 1, "c005": 1}, \
        "an undeclared error is not retried"
    view = _view(project, cli, "c003")
    assert view["attempts"] == 3 and not view["errors"]
    assert [(e["attempt"], e["kind"], e["message"]) for e in view["attempt_errors"]] == [
        (1, "system_error", "Transient: connection reset (attempt 1)"),
        (2, "system_error", "Transient: connection reset (attempt 2)")]
    assert _view(project, cli, "c001")["attempts"] == 1


def test_inspect_shows_each_attempt_s_error(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p").write([case("c001", "flaky", fails=5)])
    _run(project, cli)

    code, out, err = cli("inspect", "latest", "--case", "c001", cwd=project.path)

    assert code == 0, err
    assert "errored (system_error): Transient: connection reset (attempt 3)" in out
    assert "Attempts: 3 (system.retries); the last failed too, as above" in out
    assert "  attempt 1: system_error: Transient: connection reset (attempt 1)" in out
    assert "  attempt 2: system_error: Transient: connection reset (attempt 2)" in out


def test_each_attempt_starts_from_a_freshly_reset_sandbox(tmp_path: Path, cli: Any) -> None:
    """A Stateful desk whose failing attempts wrote to the sandbox: the attempt that answers
    finds the case's initial state, not what the failed ones left."""
    project = _project(tmp_path / "p", "app:desk")
    dirty = case("c001", "flaky", fails=2, dirty=True)
    dirty["initial_state"] = {"stock": 3}
    project.write([dirty])

    _code, document, err = _run(project, cli)

    assert document["errors"] == [], err
    view = _view(project, cli, "c001")
    assert view["attempts"] == 3
    assert view["output"]["found"] == {"stock": 3}, "no attempt sees another's writes"
    assert view["end_state"]["written_by_attempt"] == 3


@pytest.mark.parametrize("entry", ["app:run", "app:run_async"])
def test_a_timeout_is_retried_only_when_declared(tmp_path: Path, cli: Any, entry: str) -> None:
    cases = [case("c001"), case("c002", "slow_first", sleep=2.0)]
    project = _project(tmp_path / "p", entry).set_system(timeout_s=0.3).write(cases)

    code, document, err = _run(project, cli)

    assert [(e["case"], e["kind"]) for e in document["errors"]] == [("c002", "timeout")]
    assert _attempts(project)["c002"] == 1

    project.suite["system"]["retries"]["on"] = ["app:Transient", "builtins:TimeoutError"]
    project.write()
    project.forget_calls()
    code, document, err = _run(project, cli)

    assert code == 3 and document["errors"] == [], err
    assert _attempts(project) == {"c002": 2}, "only the errored case ran again"
    assert _view(project, cli, "c002")["attempt_errors"][0]["kind"] == "timeout"


@pytest.mark.parametrize(("entry", "how"), [("app:run", "rate_limited"),
                                            ("app:run_async", "rate_limited"),
                                            ("app:run", "header_limited")])
def test_a_rate_limit_s_wait_is_honoured_and_no_call_starts_meanwhile(
        tmp_path: Path, cli: Any, entry: str, how: str) -> None:
    """Other cases keep coming (40 of 50 ms at concurrency 4); while the refused call waits
    its `retry_after` (0.4 s), none of them starts."""
    cases = [case(f"c{i:03d}", sleep=0.05) for i in range(40)]
    cases[10] = case("c010", how, retry_after=0.4)
    project = _project(tmp_path / "p", entry, max_backoff_s=1,
                       on=["app:RateLimited", "app:HeaderLimited"]).write(cases)

    code, document, err = _run(project, cli)

    assert code == 0 and document["errors"] == [], err
    events = project.calls()
    (refused,) = [t for kind, c, a, t in events if (kind, c, a) == ("end", "c010", 1)]
    (again,) = [t for kind, c, a, t in events if (kind, c, a) == ("start", "c010", 2)]
    assert again - refused >= 0.4, "the wait the provider asked for, in full"
    during = [(c, a) for c, a, t in project.starts() if refused + 0.05 < t < refused + 0.4]
    assert during == [], "no call started while the rate limit's wait ran"
    assert len(project.starts()) == 41


def test_on_names_that_do_not_import_are_a_configuration_error_before_any_call(
        tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p", on=["app:Transient", "nosuch.module:Error"])
    project.write([case("c001")])

    code, out, err = cli("run", cwd=project.path)

    assert code == 2, out
    assert "oloproof.yaml:" in err and "system.retries.on: 'nosuch.module:Error': module " \
        "'nosuch.module' cannot be imported" in err
    assert project.calls() == []


def test_on_is_the_word_on_as_written_in_yaml(tmp_path: Path, cli: Any) -> None:
    """YAML 1.1 reads a plain `on:` as the key true; a suite means the word."""
    project = FailingProject(tmp_path / "p").write([case("c001", "flaky", fails=1)])
    suite = (project.path / "oloproof.yaml").read_text(encoding="utf-8")
    suite = suite.replace("  timeout_s: 10\n", "  timeout_s: 10\n  retries:\n    attempts: 2\n"
                          "    on: [app:Transient]\n    backoff_s: 0.01\n")
    (project.path / "oloproof.yaml").write_text(suite, encoding="utf-8")

    code, document, err = _run(project, cli)

    assert code == 3 and document["errors"] == [], err
    assert _attempts(project) == {"c001": 2}


@pytest.mark.parametrize(("retries", "says"), [
    ({"attempts": 3}, "attempts: 3 retries nothing without `on:`"),
    ({"attempts": 1, "on": ["builtins:TimeoutError"]}, "`on:` has no effect with attempts: 1"),
    ({"attempts": 3, "on": ["TimeoutError"]}, "is not an exception class as module:Class"),
    ({"attempts": 3, "on": ["builtins:len"]}, "'builtins:len' is a builtin_function_or_method"),
    ({"attempts": 3, "on": ["builtins:OSError"], "backoff_s": 5, "max_backoff_s": 1},
     "max_backoff_s (1) is below backoff_s (5)"),
    ({"attempts": 0, "on": ["builtins:OSError"]}, "attempts"),
    ({"attempts": "3", "on": ["builtins:OSError"]}, "unquoted"),
])
def test_a_retry_policy_that_cannot_mean_what_it_says_is_refused(
        tmp_path: Path, cli: Any, retries: dict[str, Any], says: str) -> None:
    project = FailingProject(tmp_path / "p")
    project.suite["system"]["retries"] = retries
    project.write([case("c001")])

    code, out, err = cli("run", cwd=project.path)

    assert code == 2, out
    assert says in err, err


@pytest.mark.slow
def test_retries_happen_where_the_case_runs_on_processes(tmp_path: Path, cli: Any) -> None:
    project = _project(tmp_path / "p")
    project.suite["execution"] = {"executor": "processes", "workers": 2}
    project.write([case("c001"), case("c002", "flaky", fails=1), case("c003", "flaky", fails=2),
                   case("c004", "raise")])

    code, document, err = _run(project, cli)

    assert code == 3, err
    assert [(e["case"], e["kind"]) for e in document["errors"]] == [("c004", "system_error")]
    assert _attempts(project) == {"c001": 1, "c002": 2, "c003": 3, "c004": 1}
    view = _view(project, cli, "c003")
    assert view["attempts"] == 3 and len(view["attempt_errors"]) == 2


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_retries_happen_where_the_case_runs_on_ray(tmp_path: Path, local_ray: Any) -> None:
    import oloproof
    from oloproof.report.case_view import case_view
    from oloproof.store.store import Store

    project = _project(tmp_path / "p")
    project.suite["execution"] = {"executor": "ray", "workers": 2}
    project.write([case("c001"), case("c002", "flaky", fails=1), case("c003", "flaky", fails=2),
                   case("c004", "raise")])

    result = oloproof.run(project.path / "oloproof.yaml")

    assert [(e.case, e.kind) for e in result.document.errors] == [("c004", "system_error")]
    assert _attempts(project) == {"c001": 1, "c002": 2, "c003": 3, "c004": 1}
    with Store(project.store) as store:
        view = case_view(store, result.run_id, "c003")
    assert view["attempts"] == 3 and len(view["attempt_errors"]) == 2
