"""`from_openai_agents` on runs of the real `openai-agents` package, driven offline."""

from __future__ import annotations

import asyncio
import importlib.util
import warnings
from typing import Any

import pytest

from oloproof import current_case
from oloproof.errors import TraceError
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
from oloproof.recording.trajectory import trajectory_problems
from oloproof.traces import TraceWarning, from_openai_agents, read_openai_agents

if importlib.util.find_spec("agents") is None:
    pytest.skip("the openai-agents package is not installed", allow_module_level=True)


@pytest.fixture(scope="module", autouse=True)
def _the_sdk() -> None:
    """The SDK (and the scripted model built on it) is imported when this module's tests run,
    not when pytest collects the module: 2.7 s of CPU in every worker, most of which never
    runs these tests (docs/architecture.md#tests)."""
    global Agent, RunConfig, Runner, MaxTurnsExceeded, OFFLINE
    global INPUT_TOKENS, OUTPUT_TOKENS, ScriptedModel, call, lookup_order
    global looping_agent, raw_call, say, support_team
    from agents import Agent, RunConfig, Runner
    from agents.exceptions import MaxTurnsExceeded
    from traces_scripted import (
        INPUT_TOKENS,
        OUTPUT_TOKENS,
        ScriptedModel,
        call,
        lookup_order,
        looping_agent,
        raw_call,
        say,
        support_team,
    )

    OFFLINE = RunConfig(tracing_disabled=True)


def run(agent: Agent[Any], text: str, **kwargs: Any) -> Any:
    return asyncio.run(Runner.run(agent, text, run_config=OFFLINE, **kwargs))


def rows(trajectory: Any) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.to_agent, s.tool_name, s.arguments, s.result)
            for s in trajectory.steps]


def test_tools_parallel_calls_and_a_handoff_between_two_agents() -> None:
    result = run(support_team(), "Refund order o1 please")
    reading = read_openai_agents(result)
    assert rows(reading.trajectory) == [
        ("message", "triage", None, None, {"role": "user", "content": "Refund order o1 please"},
         None),
        ("tool_call", "triage", None, "lookup_order", {"order_id": "o1"}, None),
        ("tool_call", "triage", None, "lookup_order", {"order_id": "o2"}, None),
        ("tool_result", "triage", None, "lookup_order", None,
         {"order_id": "o1", "status": "delivered"}),
        ("tool_result", "triage", None, "lookup_order", None,
         {"order_id": "o2", "status": "delivered"}),
        ("handoff", "triage", "refunds", None, {"tool": "transfer_to_refunds"}, None),
        ("tool_call", "refunds", None, "issue_refund", {"order_id": "o1"}, None),
        # The SDK turns a tool's exception into this text for the model; the item has no flag.
        ("tool_result", "refunds", None, "issue_refund", None,
         "An error occurred while running the tool. Please try again."),
        ("final", "refunds", None, None,
         {"role": "assistant", "content": "Your refund could not be issued yet."}, None),
    ]
    t = reading.trajectory
    # The run returned its answer: a success (what the panel shows), in every format alike.
    assert (t.truncated, t.step_limit, t.terminal_status) == (False, None, "success")
    assert trajectory_problems(t.steps) == []
    assert reading.skipped == {} and reading.notes == ()
    assert reading.usage is not None
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (
        4 * INPUT_TOKENS, 4 * OUTPUT_TOKENS)
    assert reading.input == "Refund order o1 please"
    assert reading.output == "Your refund could not be issued yet."


def test_max_turns_exceeded_is_a_truncated_trace_with_the_turn_limit() -> None:
    with pytest.raises(MaxTurnsExceeded) as raised:
        run(looping_agent(), "go", max_turns=3)
    reading = read_openai_agents(raised.value)
    t = reading.trajectory
    assert t.truncated is True and t.step_limit == 3 and t.terminal_status == "unknown"
    kinds = [s.kind for s in t.steps]
    assert kinds == ["message"] + ["tool_call", "tool_result"] * 3
    assert {s.agent for s in t.steps} == {"looper"}


def test_a_run_that_fails_otherwise_is_a_failure_not_truncated() -> None:
    # A model that calls a tool the agent does not have makes the SDK raise ModelBehaviorError.
    agent = Agent(name="solo", tools=[lookup_order],
                  model=ScriptedModel([call("no_such_tool", "x1")]))
    with pytest.raises(Exception) as raised:
        run(agent, "go")
    if getattr(raised.value, "run_data", None) is None:
        pytest.skip("this SDK version attaches no run_data to this error")
    t = read_openai_agents(raised.value).trajectory
    assert t.terminal_status == "failure" and t.truncated is False


def test_arguments_that_are_not_json_are_kept_raw_and_marked() -> None:
    agent = Agent(name="solo", tools=[lookup_order],
                  model=ScriptedModel([raw_call("lookup_order", "r1", "{order_id: o1")],
                                      [say("done")]))
    result = run(agent, "go")
    reading = read_openai_agents(result)
    call_step = reading.trajectory.steps[1]
    assert call_step.kind == "tool_call"
    assert call_step.arguments == {"_raw": "{order_id: o1"}
    assert [(n.step, n.kind) for n in reading.notes] == [(2, "arguments_not_json")]


def test_from_openai_agents_records_in_a_case_and_rejects_other_objects() -> None:
    result = run(support_team(), "Refund order o1 please")
    recorder = CaseRecorder("c1")
    token = set_current(recorder)
    try:
        current_case().agent_trajectory(from_openai_agents(result))
    finally:
        reset_current(token)
    assert "agent_trajectory/v1" in recorder.artifacts
    with pytest.raises(TraceError, match="run result"):
        from_openai_agents(42)


def test_an_item_it_does_not_know_is_counted_and_warned_about() -> None:
    result = run(support_team(), "Refund order o1 please")

    class Strange:
        type = "tool_search_call_item"
        agent = None
        raw_item: dict[str, Any] = {}

    result.new_items.append(Strange())
    reading = read_openai_agents(result)
    assert reading.skipped == {"item:tool_search_call_item": 1}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from_openai_agents(result)
    assert [w.category for w in caught] == [TraceWarning]
    assert "tool_search_call_item" in str(caught[0].message)
