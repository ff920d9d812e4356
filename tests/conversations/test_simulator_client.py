"""A `model:` simulator through the real `openai` SDK (`AsyncOpenAI`, `base_url` set) against the
scripted OpenAI-compatible server, and the same customer as a `callable:`
(docs/conversations.md#simulators)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from conversation_project import (  # noqa: F401 - the fixtures
    KEY,
    ConversationProject,
    customers,
    keyed_fixture,
    project_fixture,
    server_fixture,
)
from scripted_openai import LONG_REASON, SLOW_S, ScriptedServer

import oloproof


def _figures(result: oloproof.RunResult) -> dict[str, Any]:
    """What a run measured: metrics, decisions, conversations, usage (ids and timings aside)."""
    document = result.to_json()
    return {key: document.get(key) for key in ("metrics", "decisions", "conversations",
                                                "usage", "gate")}


def _simulator_requests(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests
            if "You are playing the part" in str(r["body"]["messages"][0]["content"])]


def test_a_model_simulator_plays_each_customer_through_the_sdk(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server, temperature=0.7)
    project.write_cases(customers(6, refuse={4}))
    result = oloproof.run(project.config)
    row = result.metric("refunded")
    assert (row.passed, row.observed, row.missing) == (5, 6, 0)
    conversations = result.to_json()["conversations"]
    assert conversations["simulated"] == 6 and conversations["failures"] == {}
    # The refused customer gives up after four turns; each other is done at its second
    # (its first message names the order, the desk refunds it at once).
    assert conversations["turns"] == 5 * 2 + 4
    requests = _simulator_requests(server)
    assert len(requests) == conversations["simulator_calls"] == conversations["turns"]
    first = requests[0]
    assert first["model"] == "customer-1" and first["temperature"] == 0.7
    assert first["response_format"]["type"] == "json_schema"  # structured output asked for
    assert first["response_format"]["json_schema"]["schema"]["required"] == ["message", "done"]
    assert first["messages"][0]["role"] == "system"
    assert "get order ord-" in first["messages"][0]["content"]
    assert all(r["authorization"] == f"Bearer {KEY}" for r in server.requests)
    # The agent's replies reach the simulator as the user, its own turns as the assistant.
    later = next(r for r in requests if len(r["messages"]) > 3)
    assert [m["role"] for m in later["messages"][:4]] == ["system", "user", "assistant", "user"]
    usage = result.to_json()["usage"]
    assert usage["cases"] == 0 and usage["input_tokens"] is None  # the agent recorded none
    assert usage["simulator"]["output_tokens"] == 9 * conversations["turns"]


def test_each_trial_meets_another_customer_and_each_request_carries_its_seed(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server)
    project.write_cases(customers(3))
    oloproof.run(project.config, trials=3)
    requests = _simulator_requests(server)
    openings = {(json.dumps(r["messages"][0]["content"]), r["seed"]) for r in requests
                if len(r["messages"]) == 2}
    assert len(openings) == 9  # 3 customers × 3 trials, each its own seed
    seeds_by_case: dict[str, set[int]] = {}
    for r in requests:
        order = r["messages"][0]["content"].split("ord-")[1][:3]
        seeds_by_case.setdefault(order, set()).add(r["seed"])
    assert all(len(seeds) == 3 for seeds in seeds_by_case.values())


@pytest.mark.parametrize("marker", ["fenced", "prose"])
def test_a_turn_in_a_fenced_block_or_in_prose_is_taken(
        project: ConversationProject, server: ScriptedServer, keyed: None, marker: str) -> None:
    project.model_simulator(server)
    project.write_cases(customers(2, **{marker: {1, 2}}))
    result = oloproof.run(project.config)
    assert result.metric("refunded").passed == 2
    assert result.to_json()["conversations"]["failures"] == {}


def test_a_rate_limit_is_waited_for_and_tried_again(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server)
    project.write_cases(customers(2, **{"429": {1}}))
    result = oloproof.run(project.config)
    assert result.metric("refunded").passed == 2
    conversations = result.to_json()["conversations"]
    assert conversations["failures"] == {}
    # Each of customer 1's two requests was refused once (429) and asked again.
    assert conversations["simulator_calls"] == len(_simulator_requests(server)) \
        == conversations["turns"] + 2


def test_a_reply_that_is_not_a_turn_is_the_simulators_error(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server)
    project.write_cases(customers(3, garbage={2}))
    result = oloproof.run(project.config)
    row = result.metric("refunded")
    assert (row.passed, row.observed, row.missing) == (2, 2, 1)
    assert row.missing_by_reason == {"simulator:simulator_error": 1}
    assert result.to_json()["conversations"]["failures"] == {"simulator_error": 1}
    # Asked twice (a reply that is not a turn is asked again once), then given up.
    garbled = [r for r in _simulator_requests(server) if "[garbage]" in
               r["messages"][0]["content"]]
    assert len(garbled) == 2


def test_a_server_error_is_the_simulators_error_never_the_agents(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server)
    project.write_cases(customers(3, **{"500": {3}}))
    result = oloproof.run(project.config)
    row = result.metric("refunded")
    assert (row.passed, row.missing) == (2, 1)
    assert row.missing_by_reason == {"simulator:simulator_error": 1}
    assert result.to_json()["executions"]["errored"] == {}  # the case itself did not error


def test_timeout_s_bounds_each_attempt_whole(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server, timeout_s=0.3,
                            retries={"attempts": 2, "on": ["builtins:TimeoutError"],
                                     "backoff_s": 0.01, "max_backoff_s": 0.01})
    project.write_cases(customers(2, slow={1}))
    result = oloproof.run(project.config)
    row = result.metric("refunded")
    assert row.missing_by_reason == {"simulator:simulator_error": 1}
    view = oloproof.case_view("c01", result.run_id, config=project.config)
    # Two attempts, each cut at timeout_s (the server waits SLOW_S before it answers).
    assert view["conversation"]["calls"] == 2 and SLOW_S > 0.3
    assert view["conversation"]["checks"] == [{"check": "simulator_error", "why": (
        "TimeoutError: the simulator did not answer within timeout_s=0.3 s (the whole call, "
        "its reply included)")}]


def _user_texts(view: dict[str, Any]) -> list[str]:
    return [t["text"] for t in view["conversation"]["turns"] if t["role"] == "user"]


def test_a_simulators_reply_is_kept_as_a_judges_is(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    """What a simulated user says is untrusted as a judge's reply is
    (docs/judges.md#what-a-reply-may-hold): the key blotted, the text capped with a marker, a
    lone surrogate no turn, token counts that are no counts dropped."""
    project.model_simulator(server)
    project.write_cases(customers(4, echo_key={1}, long_reason={2}, surrogate={3},
                                  bad_usage={4}))
    result = oloproof.run(project.config)
    row = result.metric("refunded")
    assert (row.passed, row.missing) == (3, 1)
    assert row.missing_by_reason == {"simulator:simulator_error": 1}
    stored = json.dumps(result.to_json())
    view = {case: oloproof.case_view(case, result.run_id, config=project.config)
            for case in ("c01", "c02", "c03", "c04")}
    stored += json.dumps(view)
    assert KEY not in stored
    echoed = _user_texts(view["c01"])
    assert echoed and all(text.endswith("(asked with key ***)") for text in echoed)
    long = _user_texts(view["c02"])
    assert long and all(text.endswith(
        f"… [cut: the simulator's text was {LONG_REASON:,} characters; the first 4,000 are "
        "kept]") for text in long)
    # A message the store cannot keep is no turn: asked again once, then the simulator's
    # error.
    checks = view["c03"]["conversation"]["checks"]
    assert [c["check"] for c in checks] == ["simulator_error"]
    assert "its message holds a lone surrogate" in checks[0]["why"]
    assert view["c03"]["conversation"]["calls"] == 2
    # -5 and Infinity are no counts: none is kept for c04's turns, c01's are.
    assert not view["c04"]["conversation"]["usage"]
    assert view["c01"]["conversation"]["usage"]["output_tokens"] == 9 * len(echoed)


def test_a_callable_simulator_gives_the_same_figures(
        project: ConversationProject, server: ScriptedServer, keyed: None,
        tmp_path: Any) -> None:
    cases = customers(8, refuse={3, 6}, leak={5}, done_first={7})
    project.write_cases(cases)
    by_callable = _figures(oloproof.run(project.config, trials=2))
    other = ConversationProject(tmp_path / "by-model")
    other.model_simulator(server)
    other.write_cases(cases)
    by_model = _figures(oloproof.run(other.config, trials=2))
    assert by_model == by_callable
    assert by_model["conversations"]["failures"] == {"ended_early": 2, "leaked_instructions": 2}


def test_an_async_system_awaits_its_users_turns(
        project: ConversationProject, server: ScriptedServer, keyed: None) -> None:
    project.model_simulator(server)
    project.asynchronous()
    project.write_cases(customers(4, refuse={2}))
    result = oloproof.run(project.config)
    assert result.metric("refunded").passed == 3
    assert result.to_json()["conversations"]["turns"] == 3 * 2 + 4
