"""A simulated user's turns are cached under the simulator's definition, the case's and trial's
seed and the conversation so far (docs/conversations.md#seeds-and-caching), counted at the
scripted server."""

from __future__ import annotations

from typing import Any

import pytest
from conversation_project import (  # noqa: F401 - the fixtures
    ConversationProject,
    customers,
    keyed_fixture,
    project_fixture,
    server_fixture,
)
from scripted_openai import ScriptedServer

import oloproof
from oloproof.execution.keys import seed, turn_key
from oloproof.execution.simulating import plan_conversation
from oloproof.suite.case import Case
from oloproof.suite.config import SimulatorConfig


def _asked(server: ScriptedServer) -> list[dict[str, Any]]:
    return [r["body"] for r in server.requests
            if "You are playing the part" in str(r["body"]["messages"][0]["content"])]


@pytest.fixture
def long_talks(project: ConversationProject, server: ScriptedServer, keyed: None
               ) -> ConversationProject:
    """Four customers the desk refuses, who never give up: six turns each."""
    project.model_simulator(server)
    project.write_cases(customers(4, refuse={1, 2, 3, 4}, never_done={1, 2, 3, 4},
                                  max_turns=6))
    return project


def test_an_unchanged_rerun_asks_the_simulator_nothing(long_talks: ConversationProject,
                                                       server: ScriptedServer) -> None:
    first = oloproof.run(long_talks.config)
    assert len(_asked(server)) == first.to_json()["conversations"]["simulator_calls"] == 24
    again = oloproof.run(long_talks.config)
    assert len(_asked(server)) == 24  # not one more
    assert again.to_json()["conversations"]["simulator_calls"] == 0
    assert again.to_json()["executions"]["cached"] == 4
    assert again.metric("refunded").passed == first.metric("refunded").passed == 0


def test_no_cache_runs_the_system_again_and_meets_the_same_customers(
        long_talks: ConversationProject, server: ScriptedServer) -> None:
    oloproof.run(long_talks.config)
    again = oloproof.run(long_talks.config, no_cache=True)
    assert again.to_json()["executions"]["ran"] == 4
    assert len(_asked(server)) == 24  # every turn answered from the cache
    assert again.to_json()["conversations"]["turns"] == 24


def test_an_agent_whose_third_reply_changed_asks_from_there_on(
        long_talks: ConversationProject, server: ScriptedServer) -> None:
    oloproof.run(long_talks.config)
    long_talks.desk(version="v2", changed=3)
    long_talks.suite["system"]["version"] = "v2"
    long_talks.write()
    result = oloproof.run(long_talks.config)
    new = _asked(server)[24:]
    # Turns 1-3 answer the first two replies, unchanged: from the cache. Turns 4-6 answer the
    # third reply on: asked again, each customer's conversation now holding the new words.
    assert len(new) == 4 * 3
    assert result.to_json()["conversations"]["simulator_calls"] == 12
    for body in new:
        agent = [m["content"] for m in body["messages"][2:] if m["role"] == "user"]
        assert len(agent) >= 3 and agent[2].startswith("(reworded) ")
    assert sorted(len(b["messages"]) for b in new) == [8] * 4 + [10] * 4 + [12] * 4


def test_the_seed_is_in_the_key_so_a_new_trial_meets_a_new_customer(
        long_talks: ConversationProject, server: ScriptedServer) -> None:
    oloproof.run(long_talks.config)
    result = oloproof.run(long_talks.config, trials=2)
    trial_two = _asked(server)[24:]
    assert len(trial_two) == 24  # trial 1 cached; trial 2's every turn asked
    assert result.to_json()["conversations"]["simulator_calls"] == 24
    assert {b["seed"] for b in trial_two}.isdisjoint({b["seed"] for b in _asked(server)[:24]})


def test_the_key_of_a_turn_holds_the_seed_and_the_conversation() -> None:
    case = Case("c1", 1, {}, {}, None, None, {}, None, "d", "e",
                user={"simulator": "customer", "goal": "a refund"})
    simulator = SimulatorConfig(name="customer", callable="users:simulate")
    one, two = (plan_conversation(case, t, simulator) for t in (1, 2))
    assert one.seed == seed(case, 1) != two.seed == seed(case, 2)
    assert one.key != two.key
    said = [{"role": "user", "text": "hi"}, {"role": "agent", "text": "hello"}]
    assert turn_key(one.key, said) != turn_key(one.key, said[:1]) != turn_key(two.key, said[:1])
    assert plan_conversation(case, 1, simulator).key == one.key  # the same user on a re-run


@pytest.mark.parametrize("change", [{"temperature": 0.2}, {"model": "customer-2"}])
def test_the_simulators_definition_is_in_the_key(
        long_talks: ConversationProject, server: ScriptedServer, change: dict[str, Any]) -> None:
    oloproof.run(long_talks.config)
    long_talks.suite["simulators"][0].update(change)
    long_talks.write()
    result = oloproof.run(long_talks.config)
    assert result.to_json()["executions"]["ran"] == 4  # another user: run again
    assert len(_asked(server)) == 24 + 24  # every turn asked anew


def test_a_changed_prompt_template_asks_every_turn_again(project: ConversationProject) -> None:
    project.write_cases(customers(3, refuse={1, 2, 3}))
    first = oloproof.run(project.config)
    turns = first.to_json()["conversations"]["turns"]
    assert first.to_json()["conversations"]["simulator_calls"] == turns
    template = ("You are playing the part of a user who is talking to an AI assistant.\n\n"
                "What you want: {goal}\n\nWhat you know:\n{facts}")
    project.suite["simulators"][0]["prompt"] = template
    project.write()
    again = oloproof.run(project.config)
    assert again.to_json()["executions"]["ran"] == 3
    assert again.to_json()["conversations"]["simulator_calls"] == turns
