"""A `model:` judge through the real `openai` SDK (`AsyncOpenAI`, `base_url` set) against the
scripted OpenAI-compatible server, and the same suite with a `callable:` judge
(docs/judges.md)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)
from scripted_openai import ScriptedServer

import oloproof

KEY = "sk-test-0123456789abcdef-never-stored"


def _verdicts(result: oloproof.RunResult, project: JudgedProject) -> dict[str, tuple[str, Any]]:
    """case id → (verdict, reason) of the judge criterion, read from the stored run."""
    from oloproof.report.case_view import iter_case_views
    from oloproof.store.store import Store

    with Store(project.store, read_only=True) as db:
        views = iter_case_views(db, result.run_id)
    return {v["case"]: (v["criteria"][0]["verdict"], v["criteria"][0]["reason"]) for v in views}


def _run(project: JudgedProject) -> oloproof.RunResult:
    return oloproof.run(project.config)


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)


def test_the_sdk_judges_against_a_scripted_server(judged: JudgedProject, server: ScriptedServer,
                                                  keyed: None) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(12, lies={2, 5, 9}))
    result = _run(judged)
    row = result.metric("reply_truthful")
    assert (row.passed, row.observed, row.missing) == (9, 12, 0)
    verdicts = _verdicts(result, judged)
    assert {c for c, (v, _) in verdicts.items() if v == "failed"} == {"r002", "r005", "r009"}
    assert server.calls == 12
    sent = server.requests[0]
    body = sent["body"]
    assert body["model"] == "grader-1" and body["temperature"] == 0
    assert body["response_format"]["type"] == "json_schema"  # structured output asked for
    assert body["response_format"]["json_schema"]["schema"]["properties"]["verdict"][
        "enum"] == ["pass", "fail"]
    assert sent["authorization"] == f"Bearer {KEY}"
    user = body["messages"][1]["content"]
    assert "<<<BEGIN input.message " in user and "<<<END trajectory.tool_results " in user
    # what the judgment keeps: verdict, reason, the model that answered, tokens, latency
    from oloproof.report.case_view import case_view
    from oloproof.store.store import Store
    with Store(judged.store, read_only=True) as db:
        details = case_view(db, result.run_id, "r002")["criteria"][0]["details"]
    assert details["verdict"] == "fail" and details["reason"] == "scripted: fail"
    assert details["model"] == "grader-1-served"
    assert details["input_tokens"] > 0 and details["output_tokens"] == 12
    assert details["latency_ms"] > 0
    # an unchanged re-run calls no judge
    again = _run(judged)
    assert server.calls == 12
    assert again.to_json()["cache"]["judge"] == {"hit": 0, "miss": 0}
    assert again.metric("reply_truthful").passed == 9


def test_a_changed_rubric_rejudges_without_running_the_system(
        judged: JudgedProject, server: ScriptedServer, keyed: None) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(6, lies={1}))
    first = _run(judged)
    assert first.to_json()["cache"]["execution"] == {"hit": 0, "miss": 6}
    judged.suite["evaluators"][0]["rubric"] += " Be strict."
    judged.write()
    second = _run(judged)
    cache = second.to_json()["cache"]
    assert cache["execution"] == {"hit": 6, "miss": 0}  # the system was not called again
    assert cache["judgment"]["miss"] == 6 and cache["judge"] == {"hit": 0, "miss": 6}
    assert server.calls == 12
    # back to the first rubric: its verdicts are still in the judge cache
    judged.suite["evaluators"][0]["rubric"] = judged.suite["evaluators"][0]["rubric"][:-11]
    judged.write()
    third = _run(judged)
    assert third.to_json()["cache"]["judge"] == {"hit": 0, "miss": 0}  # judgments cached
    assert server.calls == 12


def test_a_changed_judge_version_rejudges_without_running_the_system(
        judged: JudgedProject, cli: Callable[..., Any]) -> None:
    """A callable judge's code is not in its verdicts' key (as a system's code is not in its
    executions'): an edit alone re-judges nothing; its `version` changed, every case is
    judged again by the new code, and the system is not called again."""
    def run() -> dict[str, Any]:
        code, out, err = cli("run", "--json", cwd=judged.root)
        assert code in (0, 3), err
        document: dict[str, Any] = json.loads(out)
        return document

    (judged.root / "strict.py").write_text(
        "def grade(request):\n    return {'verdict': 'pass', 'reason': 'first'}\n",
        encoding="utf-8")
    judged.suite["judges"] = [{"name": "house", "callable": "strict:grade", "version": 1}]
    judged.write()
    judged.write_cases(desk_cases(4))
    assert run()["metrics"][0]["passed"] == 4
    (judged.root / "strict.py").write_text(
        "def grade(request):\n    return {'verdict': 'fail', 'reason': 'second'}\n",
        encoding="utf-8")
    edited = run()
    assert edited["metrics"][0]["passed"] == 4  # the cached verdicts
    assert edited["cache"]["judge"] == {"hit": 0, "miss": 0}
    judged.suite["judges"][0]["version"] = 2
    judged.write()
    again = run()
    assert again["cache"]["execution"] == {"hit": 4, "miss": 0}
    assert again["cache"]["judge"] == {"hit": 0, "miss": 4}
    assert again["metrics"][0]["passed"] == 0


def test_failures_of_the_judge_are_missing_never_failed_or_passed(
        judged: JudgedProject, server: ScriptedServer, keyed: None) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(8, garbage={2}, garbage_once={3}, **{"500": {4}}))
    result = _run(judged)
    verdicts = _verdicts(result, judged)
    assert verdicts["r002"] == ("missing", "judge_unparseable")
    assert verdicts["r003"][0] == "passed"  # not a verdict, asked again: a verdict
    assert verdicts["r004"] == ("missing", "judge_error")
    row = result.metric("reply_truthful")
    assert (row.passed, row.observed, row.missing) == (6, 6, 2)
    assert row.missing_by_reason == {"judge_error": 1, "judge_unparseable": 1}
    kinds = {(e.case, e.kind) for e in result.document.errors}
    assert kinds == {("r002", "judge_unparseable"), ("r004", "judge_error")}
    calls = server.calls
    assert calls == 8 + 1 + 1  # each unparseable reply asked again once
    # failures are not cached: the next run asks again, and only them
    _run(judged)
    assert server.calls == calls + 2 + 1


def test_a_reply_that_is_no_completion_is_missing(judged: JudgedProject,
                                                  server: ScriptedServer, keyed: None) -> None:
    """A 200 whose body is cut off mid-JSON, and a completion with no choices: replies that
    are not a verdict, asked again once, then missing (`judge_unparseable`) — never passed or
    failed — and the other cases judged as usual."""
    judged.model_judge(server)
    judged.write_cases(desk_cases(5, lies={4}, broken_body={1}, no_choices={2}))
    result = _run(judged)
    verdicts = _verdicts(result, judged)
    assert verdicts["r001"] == verdicts["r002"] == ("missing", "judge_unparseable")
    assert verdicts["r003"][0] == "passed" and verdicts["r004"][0] == "failed"
    row = result.metric("reply_truthful")
    assert (row.passed, row.observed, row.missing) == (2, 3, 2)
    assert row.missing_by_reason == {"judge_unparseable": 2}
    errors = {e.case: e for e in result.document.errors}
    assert set(errors) == {"r001", "r002"}
    assert "not a chat completion (JSONDecodeError" in errors["r001"].message
    assert server.calls == 3 + 2 * 2


def test_a_short_stand_in_key_leaves_the_words_around_it(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A local server takes any key (`export OLLAMA_API_KEY=ollama`): blotted out where it
    stands as a word, never inside the words of a message; a real key everywhere."""
    from oloproof.execution.judging import PanelJudge
    from oloproof.suite.config import JudgeConfig

    judge = PanelJudge(JudgeConfig(name="g", model="m", api_key_env="JUDGE_TEST_KEY"), 1)
    monkeypatch.setenv("JUDGE_TEST_KEY", "k")
    assert judge.scrub("asked 2 times with key k") == "asked 2 times with key ***"
    monkeypatch.setenv("JUDGE_TEST_KEY", "ollama")
    assert judge.scrub("key 'ollama' refused by ollamad") == "key '***' refused by ollamad"
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)
    assert judge.scrub(f"tokens x{KEY}y and {KEY}.") == "tokens x***y and ***."


def test_a_rate_limit_is_retried_after_the_wait_it_asks(
        judged: JudgedProject, server: ScriptedServer, keyed: None) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(4, lies={2}, **{"429": {1, 2}}))
    result = _run(judged)
    verdicts = _verdicts(result, judged)
    assert verdicts["r001"][0] == "passed" and verdicts["r002"][0] == "failed"
    assert server.calls == 4 + 2  # each rate-limited request asked again, once
    from oloproof.report.case_view import case_view
    from oloproof.store.store import Store
    with Store(judged.store, read_only=True) as db:
        details = case_view(db, result.run_id, "r001")["criteria"][0]["details"]
    assert details["attempts"] == 2
    assert details["latency_ms"] >= 50  # the 0.05 s the server's retry-after asked for
    assert not result.document.errors


def test_a_lost_connection_is_retried_then_judge_error(judged: JudgedProject,
                                                       keyed: None) -> None:
    import socket
    with socket.socket() as free:  # a port nothing listens on
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    judged.suite["judges"] = [{"name": "house", "model": "grader-1", "base_url":
                               f"http://127.0.0.1:{port}/v1", "api_key_env": "JUDGE_TEST_KEY",
                               "retries": {"attempts": 3, "on": ["openai:APIConnectionError"],
                                           "backoff_s": 0.01, "max_backoff_s": 0.05}}]
    judged.write()
    judged.write_cases(desk_cases(2))
    result = _run(judged)
    row = result.metric("reply_truthful")
    assert (row.observed, row.missing_by_reason) == (0, {"judge_error": 2})
    error = result.document.errors[0]
    assert error.kind == "judge_error" and "APIConnectionError" in error.message


def test_what_a_judge_retries_by_default() -> None:
    import openai

    from oloproof.execution.judging import judge_retries
    from oloproof.suite.config import JudgeConfig

    model = judge_retries(JudgeConfig(name="m", model="x"))
    assert model.attempts == 4  # three retries
    assert model.matches(openai.RateLimitError("slow", response=_response(429), body=None))
    assert model.matches(openai.APITimeoutError(request=_response(200).request))
    assert not model.matches(openai.InternalServerError("broke", response=_response(500),
                                                        body=None))
    function = judge_retries(JudgeConfig(name="f", callable="judges:grade"))
    assert function.attempts == 4
    assert function.matches(ConnectionResetError()) and function.matches(TimeoutError())
    assert not function.matches(ValueError())


def _response(status: int) -> Any:
    import httpx
    return httpx.Response(status, request=httpx.Request("POST", "http://127.0.0.1/v1"))


def test_the_key_is_never_stored_nor_printed(judged: JudgedProject, server: ScriptedServer,
                                              keyed: None, capsys: pytest.CaptureFixture[str]
                                              ) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(3, **{"401": {1}}))
    result = _run(judged)
    error = next(e for e in result.document.errors if e.case == "r001")
    assert error.kind == "judge_error" and "Incorrect API key" in error.message
    assert KEY not in error.message and "***" in error.message
    assert KEY not in repr(result.to_json())
    from rich.console import Console

    from oloproof.report.terminal import render_run
    console = Console(record=True, width=120)
    render_run(result.document, console)
    assert KEY not in console.export_text()
    assert KEY not in capsys.readouterr().out
    with sqlite3.connect(judged.store) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    for path in judged.store.parent.iterdir():
        assert KEY.encode() not in path.read_bytes(), path


def test_the_key_is_in_no_output_of_the_command_line(judged: JudgedProject,
                                                     server: ScriptedServer,
                                                     cli: Callable[..., Any]) -> None:
    """Every command a user runs on a judged project, and every file they write: the key the
    server saw in each request is in none of them, though the server's error repeats it."""
    judged.model_judge(server)
    judged.write_cases(desk_cases(3, lies={2}, **{"401": {1}}))
    env = {"JUDGE_TEST_KEY": KEY}
    (judged.root / "out").mkdir()
    (judged.root / "labels").mkdir()
    printed = []
    for args in (("run",),
                 ("run", "--json", "--junit", "out/junit.xml", "--markdown", "out/run.md"),
                 ("inspect", "latest"), ("inspect", "latest", "--failures"),
                 ("inspect", "latest", "--case", "r001"),
                 ("inspect", "latest", "--case", "r001", "--json"),
                 ("cases", "latest"), ("gate", "latest", "--json"), ("runs",),
                 ("report", "--html", "out/report.html"),
                 ("labels", "sample", "--criterion", "reply_truthful", "--n", "3", "--seed",
                  "1", "-o", "labels/truthful.jsonl")):
        code, out, err = cli(*args, cwd=judged.root, env=env)
        assert code in (0, 3), (args, out, err)
        printed.append(out + err)
    assert server.requests and all(r["authorization"] == f"Bearer {KEY}"
                                   for r in server.requests)  # it was sent, every time
    assert any("Incorrect API key provided: ***" in text for text in printed)
    for at, text in enumerate(printed):
        assert KEY not in text, at
    with sqlite3.connect(judged.store) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    written = [p for p in judged.root.rglob("*") if p.is_file()]
    assert {"junit.xml", "run.md", "report.html", "truthful.jsonl", "store.sqlite"} <= \
        {p.name for p in written}
    for path in written:
        assert KEY.encode() not in path.read_bytes(), path


@pytest.mark.parametrize("function", ["grade", "grade_async"])
def test_the_same_suite_with_a_callable_judge(judged: JudgedProject, server: ScriptedServer,
                                              keyed: None, function: str) -> None:
    cases = desk_cases(12, lies={2, 5, 9})
    judged.model_judge(server)
    judged.write_cases(cases)
    by_model = _run(judged)
    judged.suite["judges"] = [{"name": "house",
                               "callable": f"{judged.judges_module}:{function}"}]
    judged.write()
    by_function = _run(judged)
    assert by_function.to_json()["cache"]["judge"]["miss"] == 12  # another judge: asked again
    model_row, function_row = by_model.metric("reply_truthful"), by_function.metric(
        "reply_truthful")
    for key in ("estimate", "lower", "upper", "passed", "observed", "missing"):
        assert getattr(model_row, key) == getattr(function_row, key)
    assert _verdicts(by_model, judged).keys() == _verdicts(by_function, judged).keys()
    assert [v for v, _ in _verdicts(by_model, judged).values()] == \
        [v for v, _ in _verdicts(by_function, judged).values()]


def test_a_judge_that_raises_or_returns_no_verdict(judged: JudgedProject) -> None:
    (judged.root / "odd_judges.py").write_text(
        "def broken(request):\n    raise ConnectionError('the grader is down')\n\n"
        "def vague(request):\n    return {'verdict': 'maybe'}\n", encoding="utf-8")
    judged.write_cases(desk_cases(3))
    judged.suite["judges"] = [{"name": "house", "callable": "odd_judges:broken"}]
    judged.write()
    row = _run(judged).metric("reply_truthful")
    assert (row.observed, row.missing, row.missing_by_reason) == (0, 3, {"judge_error": 3})
    judged.suite["judges"] = [{"name": "house", "callable": "odd_judges:vague"}]
    judged.write()
    row = _run(judged).metric("reply_truthful")
    assert (row.observed, row.missing, row.missing_by_reason) == (0, 3,
                                                                 {"judge_unparseable": 3})


def test_the_judges_concurrency_bounds_its_calls(judged: JudgedProject, keyed: None) -> None:
    with ScriptedServer(delay_s=0.05) as slow:
        judged.model_judge(slow, concurrency=3)
        judged.suite["system"]["concurrency"] = 8
        judged.write()
        judged.write_cases(desk_cases(12))
        _run(judged)
    assert slow.calls == 12
    assert slow.peak == 3  # never more at once, and it reaches it
    assert slow.span_s >= 12 * 0.05 / 3


def test_two_projects_in_one_process_each_get_their_own_judge(tmp_path: Any) -> None:
    """Both name their judge's module `judges` (as the example does): in one process (a
    notebook, a test session) the second project is judged by its own `judges.py`, not by the
    module the first one imported."""
    found = []
    for name, verdict in (("first", "pass"), ("second", "fail")):
        project = JudgedProject(tmp_path / name)
        (project.root / "judges.py").write_text(
            f"def grade(request):\n    return {{'verdict': {verdict!r}, 'reason': {name!r}}}\n",
            encoding="utf-8")
        project.suite["judges"] = [{"name": "house", "callable": "judges:grade"}]
        project.write()
        project.write_cases(desk_cases(3))
        found.append(_run(project).metric("reply_truthful").passed)
    assert found == [3, 0]
