"""What a judge's reply may bring into the store (docs/judges.md#what-a-reply-may-hold).

A judge's text is untrusted as a system's output is. The hostile audit had a reason repeat the
API key (it reached the store, `inspect`, the HTML report and the view's API), a 30 MB reason
per case (40 of them made a 3.2 GB store), a lone surrogate in a reason (the run failed, exit
5, after 0 of 40 cases), token counts that were no counts, and a server trickling its body
(`timeout_s` never fired). Now every text from a judge is blotted of the key as its error
messages are, capped with a marker, a lone surrogate makes its case `judge_unparseable`, token
counts are whole numbers at least 0 or dropped, and `timeout_s` bounds each attempt whole.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Callable
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)
from scripted_openai import LONG_REASON, ScriptedServer

import oloproof

KEY = "sk-test-0123456789abcdef-never-stored"


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", KEY)


def _stored_bytes(project: JudgedProject) -> bytes:
    with sqlite3.connect(project.store) as db:
        db.execute("PRAGMA wal_checkpoint(FULL)")
    return b"".join(p.read_bytes() for p in project.store.parent.iterdir() if p.is_file())


def test_a_reason_that_repeats_the_key_is_blotted_everywhere(
        judged: JudgedProject, server: ScriptedServer, cli: Callable[..., Any]) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(3, lies={2}, echo_key={1, 2}))
    env = {"JUDGE_TEST_KEY": KEY}
    printed = []
    for args in (("run", "--json"), ("inspect", "latest", "--case", "r001", "--json"),
                 ("inspect", "latest", "--case", "r002"), ("report", "--html", "r.html"),
                 ("labels", "sample", "--criterion", "reply_truthful", "--n", "3", "--seed",
                  "1", "-o", "l.jsonl")):
        code, out, err = cli(*args, cwd=judged.root, env=env)
        assert code in (0, 3), (args, out, err)
        printed.append(out + err)

    assert all(r["authorization"] == f"Bearer {KEY}" for r in server.requests)
    criterion = json.loads(printed[1])["criteria"][0]
    assert criterion["details"]["reason"] == "scripted: pass (asked with key ***)"
    for text in printed:
        assert KEY not in text
    assert KEY.encode() not in _stored_bytes(judged)
    for name in ("r.html", "l.jsonl"):
        assert KEY.encode() not in (judged.root / name).read_bytes()


def test_a_long_reason_is_capped_with_a_marker(judged: JudgedProject, server: ScriptedServer,
                                               keyed: None) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(3, long_reason={1}))

    oloproof.run(judged.config)

    view = oloproof.case_view("r001", "latest", judged.config)
    reason = view["criteria"][0]["details"]["reason"]
    assert reason.startswith("scripted: pass because because")
    assert len(reason) < 5_000
    assert reason.endswith(f"… [cut: the judge's text was {LONG_REASON:,} characters; the "
                           "first 4,000 are kept]")
    assert (" because" * 1_000).encode() not in _stored_bytes(judged)


def test_a_lone_surrogate_in_a_reason_makes_its_case_unparseable(
        judged: JudgedProject, server: ScriptedServer, cli: Callable[..., Any]) -> None:
    """The run failed (exit 5) after 0 of its cases; now that case alone is missing."""
    judged.model_judge(server)
    judged.write_cases(desk_cases(4, lies={3}, surrogate={2}))

    code, out, err = cli("run", "--json", cwd=judged.root, env={"JUDGE_TEST_KEY": KEY})

    assert code == 3, (out, err)  # 3 judged cases decide nothing at min 0.5: never exit 5
    document = json.loads(out)
    row = document["metrics"][0]
    assert (row["passed"], row["observed"], row["missing_by_reason"]) == (
        2, 3, {"judge_unparseable": 1})
    (error,) = document["errors"]
    assert error["case"] == "r002" and error["kind"] == "judge_unparseable"
    assert "not a verdict (asked 2 times); its reason holds a lone surrogate \\ud800" in \
        error["message"], error
    assert server.calls == 4 + 1  # a reply that is not a verdict is asked for again once


def test_a_callable_judges_surrogate_and_token_counts(judged: JudgedProject) -> None:
    (judged.root / "odd_judges.py").write_text(
        "def grade(request):\n"
        "    if request.case_id == 'r001':\n"
        "        return {'verdict': 'pass', 'reason': 'fine \\ud800'}\n"
        "    return {'verdict': 'pass', 'reason': 'fine', 'input_tokens': -3,\n"
        "            'output_tokens': 12}\n", encoding="utf-8")
    judged.suite["judges"] = [{"name": "house", "callable": "odd_judges:grade"}]
    judged.write()
    judged.write_cases(desk_cases(2))

    result = oloproof.run(judged.config)

    row = result.metric("reply_truthful")
    assert (row.passed, row.missing_by_reason) == (1, {"judge_unparseable": 1})
    details = oloproof.case_view("r002", "latest", judged.config)["criteria"][0]["details"]
    assert details["verdict"] == "pass" and details["output_tokens"] == 12
    assert "input_tokens" not in details  # -3 is no count: dropped, the verdict kept


def test_token_counts_that_are_no_counts_are_dropped(judged: JudgedProject,
                                                     server: ScriptedServer,
                                                     keyed: None) -> None:
    judged.model_judge(server)
    judged.write_cases(desk_cases(2, bad_usage={1}))

    result = oloproof.run(judged.config)

    assert result.metric("reply_truthful").passed == 2
    bad = oloproof.case_view("r001", "latest", judged.config)["criteria"][0]["details"]
    assert "input_tokens" not in bad and "output_tokens" not in bad
    good = oloproof.case_view("r002", "latest", judged.config)["criteria"][0]["details"]
    assert good["input_tokens"] > 0 and good["output_tokens"] == 12


@pytest.mark.timeout(120)
def test_timeout_bounds_each_attempt_whole(judged: JudgedProject, server: ScriptedServer,
                                           keyed: None) -> None:
    """A body trickled a byte every 0.25 s keeps every read under any timeout between two
    reads: the call never timed out. Now each attempt is bounded whole, and a retry is another
    attempt, bounded alike."""
    judged.model_judge(server, timeout_s=0.5, retries={
        "attempts": 2, "on": ["builtins:TimeoutError"], "backoff_s": 0.01,
        "max_backoff_s": 0.01})
    judged.write_cases(desk_cases(2, trickle={1}))

    began = time.monotonic()
    result = oloproof.run(judged.config)
    took = time.monotonic() - began

    assert result.metric("reply_truthful").missing_by_reason == {"judge_error": 1}
    (error,) = result.document.errors
    assert error.case == "r001" and error.kind == "judge_error"
    assert "TimeoutError: the judge did not answer within timeout_s=0.5 s" in error.message
    assert server.calls == 1 + 2  # r002 once, r001 twice: each attempt bounded
    assert took < 60, took  # the trickled body alone takes over 100 s


def test_timeout_bounds_a_callable_judge(judged: JudgedProject) -> None:
    (judged.root / "slow_judges.py").write_text(
        "import asyncio\n\nasync def hang(request):\n    await asyncio.sleep(3600)\n",
        encoding="utf-8")
    judged.suite["judges"] = [{"name": "house", "callable": "slow_judges:hang",
                               "timeout_s": 0.2, "retries": {
                                   "attempts": 2, "on": ["builtins:TimeoutError"],
                                   "backoff_s": 0.01, "max_backoff_s": 0.01}}]
    judged.write()
    judged.write_cases(desk_cases(1))

    result = oloproof.run(judged.config)

    (error,) = result.document.errors
    assert error.kind == "judge_error"
    assert "TimeoutError: the judge did not answer within timeout_s=0.2 s" in error.message
