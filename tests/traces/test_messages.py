"""`from_openai_messages` (dicts and the `openai` package's objects) and
`from_langchain_messages` (the real `langchain_core` classes, and the hand-off messages
`langgraph-supervisor` / `langgraph-swarm` themselves make)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from oloproof.recording.trajectory import trajectory_problems
from oloproof.traces import (
    TraceWarning,
    from_langchain_messages,
    from_openai_messages,
    read_langchain_messages,
    read_openai_messages,
)


def rows(trajectory: Any) -> list[tuple[Any, ...]]:
    return [(s.kind, s.agent, s.to_agent, s.tool_name, s.arguments, s.result)
            for s in trajectory.steps]


# --- OpenAI chat completions ----------------------------------------------------------------


def tool_call(cid: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


CONVERSATION: list[dict[str, Any]] = [
    {"role": "system", "content": "You are a support agent."},
    {"role": "user", "content": "Refund order o1"},
    {"role": "assistant", "content": None, "tool_calls": [
        tool_call("c1", "lookup_order", '{"order_id": "o1"}'),
        tool_call("c2", "search", '{"query": "refund policy"}'),
    ]},
    {"role": "tool", "tool_call_id": "c2", "content": '{"hits": 1}'},
    {"role": "tool", "tool_call_id": "c1", "content": '{"status": "delivered"}'},
    {"role": "assistant", "content": "Checking.", "tool_calls": [
        tool_call("c3", "issue_refund", "{order_id: o1"),
    ]},
    {"role": "tool", "tool_call_id": "c3", "content": "bad arguments"},
    {"role": "assistant", "content": "Refunded."},
]


def test_openai_conversation() -> None:
    reading = read_openai_messages(CONVERSATION)
    # The system message is the agent's instructions: no step, in every format.
    assert rows(reading.trajectory) == [
        ("message", None, None, None, {"role": "user", "content": "Refund order o1"}, None),
        ("tool_call", None, None, "lookup_order", {"order_id": "o1"}, None),
        ("tool_call", None, None, "search", {"query": "refund policy"}, None),
        ("tool_result", None, None, "search", None, {"hits": 1}),
        ("tool_result", None, None, "lookup_order", None, {"status": "delivered"}),
        ("message", None, None, None, {"role": "assistant", "content": "Checking."}, None),
        ("tool_call", None, None, "issue_refund", {"_raw": "{order_id: o1"}, None),
        ("tool_result", None, None, "issue_refund", None, "bad arguments"),
        ("final", None, None, None, {"role": "assistant", "content": "Refunded."}, None),
    ]
    assert [(n.step, n.kind) for n in reading.notes] == [(7, "arguments_not_json")]
    assert reading.ignored == {"instructions": 1}
    assert not reading.trajectory.truncated
    assert reading.trajectory.terminal_status == "success"  # it ends with the answer
    assert reading.input == "Refund order o1" and reading.output == "Refunded."


def test_openai_package_message_objects_read_like_dicts() -> None:
    openai_types = pytest.importorskip("openai.types.chat")
    message = openai_types.ChatCompletionMessage.model_validate(
        {"role": "assistant", "content": None,
         "tool_calls": [tool_call("c1", "lookup_order", '{"order_id": "o1"}')]})
    trajectory = from_openai_messages([
        {"role": "user", "content": "Refund order o1"}, message,
        {"role": "tool", "tool_call_id": "c1", "content": '{"status": "delivered"}'},
    ])
    assert [(s.kind, s.tool_name, s.arguments) for s in trajectory.steps] == [
        ("message", None, {"role": "user", "content": "Refund order o1"}),
        ("tool_call", "lookup_order", {"order_id": "o1"}),
        ("tool_result", "lookup_order", None),
    ]


def test_a_conversation_cut_after_a_call_is_truncated_not_finished() -> None:
    reading = read_openai_messages(CONVERSATION[:3])
    t = reading.trajectory
    assert t.truncated is True and t.step_limit is None
    assert [s.kind for s in t.steps][-2:] == ["tool_call", "tool_call"]
    assert [(n.step, n.kind, n.detail) for n in reading.notes] == [
        (2, "call_without_result", "c1"), (3, "call_without_result", "c2")]
    assert "final" not in [s.kind for s in t.steps]
    assert t.terminal_status == "unknown"  # it did not end with an answer


def test_messages_it_cannot_place_are_counted_and_warned_about() -> None:
    messages = CONVERSATION + [
        {"role": "tool", "tool_call_id": "nobody", "content": "?"},
        {"role": "critic", "content": "meh"},
    ]
    reading = read_openai_messages(messages)
    assert reading.skipped == {"tool_message_without_call": 1, "message:role=critic": 1}
    assert len(reading.trajectory.steps) == 9
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        from_openai_messages(messages)
    assert [w.category for w in caught] == [TraceWarning]
    assert "2 item(s)" in str(caught[0].message)


def test_legacy_function_calls() -> None:
    t = from_openai_messages([
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": None,
         "function_call": {"name": "lookup_order", "arguments": '{"order_id": "o1"}'}},
        {"role": "function", "name": "lookup_order", "content": '{"status": "delivered"}'},
        {"role": "assistant", "content": "Delivered."},
    ])
    assert [(s.kind, s.tool_name) for s in t.steps] == [
        ("message", None), ("tool_call", "lookup_order"), ("tool_result", "lookup_order"),
        ("final", None)]


# --- LangChain / LangGraph ------------------------------------------------------------------

messages = pytest.importorskip("langchain_core.messages")
AIMessage, AIMessageChunk = messages.AIMessage, messages.AIMessageChunk
HumanMessage, ToolMessage, SystemMessage = (messages.HumanMessage, messages.ToolMessage,
                                            messages.SystemMessage)


def test_langchain_tool_calls_results_and_errors() -> None:
    history = [
        SystemMessage("You are a support agent."),
        HumanMessage("Refund order o1"),
        AIMessage(content="", tool_calls=[
            {"name": "lookup_order", "args": {"order_id": "o1"}, "id": "c1"},
            {"name": "issue_refund", "args": {"order_id": "o1"}, "id": "c2"}],
            usage_metadata={"input_tokens": 30, "output_tokens": 5, "total_tokens": 35}),
        ToolMessage('{"status": "delivered"}', tool_call_id="c1"),
        ToolMessage("refund service down", tool_call_id="c2", status="error"),
        AIMessage("Sorry, refunds are down.",
                  usage_metadata={"input_tokens": 40, "output_tokens": 9, "total_tokens": 49}),
    ]
    reading = read_langchain_messages(history)
    assert rows(reading.trajectory) == [
        ("message", None, None, None, {"role": "user", "content": "Refund order o1"}, None),
        ("tool_call", None, None, "lookup_order", {"order_id": "o1"}, None),
        ("tool_call", None, None, "issue_refund", {"order_id": "o1"}, None),
        ("tool_result", None, None, "lookup_order", None, {"status": "delivered"}),
        ("tool_result", None, None, "issue_refund", None, {"error": "refund service down"}),
        ("final", None, None, None,
         {"role": "assistant", "content": "Sorry, refunds are down."}, None),
    ]
    assert reading.usage is not None
    assert reading.usage.payload() == {"input_tokens": 70, "output_tokens": 14}


LANGCHAIN_DESK = """
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from oloproof import current_case, system
from oloproof.traces import from_langchain_messages


@system(name="lc-desk", version="1", records=("agent_trajectory/v1", "usage/v1"))
def desk(case_input):
    n = case_input["n"]
    history = [
        HumanMessage(f"Refund order o{n}"),
        AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {"order_id": n},
                                           "id": "c1"}],
                  usage_metadata={"input_tokens": 10 * n, "output_tokens": n,
                                  "total_tokens": 11 * n}),
        ToolMessage('{"status": "delivered"}', tool_call_id="c1"),
        AIMessage("Refunded.", usage_metadata={"input_tokens": 5, "output_tokens": 2,
                                               "total_tokens": 7}),
    ]
    current_case().agent_trajectory(from_langchain_messages(history))
    if case_input.get("also"):
        current_case().usage(input_tokens=1)
    if case_input.get("cost"):
        current_case().usage(cost=0.5)
    return {"answer": "refunded"}
"""


def test_recording_from_langchain_messages_stores_their_usage(tmp_path: Path) -> None:
    # (issue 42 point 5) No extra code: the messages' usage_metadata is the case's usage/v1.
    import json as json_module

    import oloproof

    (tmp_path / "data").mkdir()
    (tmp_path / "lc_desk.py").write_text(LANGCHAIN_DESK, encoding="utf-8")
    (tmp_path / "oloproof.yaml").write_text(
        "version: 1\nproject: lc\ndataset: data/cases.jsonl\n"
        "system: {name: lc-desk, version: '1', callable: lc_desk:desk,\n"
        "         records: [agent_trajectory/v1, usage/v1]}\n"
        "evaluators:\n  - {type: agent_tool_called, tool_name: lookup_order}\n"
        "metrics:\n  - {id: tokens_p50, type: quantile, source: tokens, quantile: 0.5}\n",
        encoding="utf-8")
    (tmp_path / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    cases = [{"id": f"c{n}", "input": {"n": n, **({"cost": True} if n == 2 else {})}}
             for n in (1, 2, 3)]
    (tmp_path / "data" / "cases.jsonl").write_text(
        "".join(json_module.dumps(c) + "\n" for c in cases), encoding="utf-8")
    result = oloproof.run(tmp_path / "oloproof.yaml")
    usage = result.document.usage
    assert usage is not None
    # each case: 10n + 5 input, n + 2 output tokens
    assert (usage.input_tokens, usage.output_tokens) == (sum(10 * n + 5 for n in (1, 2, 3)),
                                                        sum(n + 2 for n in (1, 2, 3)))
    assert result.metric("tokens_p50").estimate == 11 * 2 + 7  # the median case, c2
    view = oloproof.case_view("c2", config=tmp_path / "oloproof.yaml")
    assert view["other_artifacts"]["usage/v1"] == {"input_tokens": 25, "output_tokens": 4,
                                                   "cost": 0.5}

    # The same tokens given again by hand are recorded twice: the case errors, never doubled.
    cases[0]["input"]["also"] = True
    (tmp_path / "data" / "cases.jsonl").write_text(
        "".join(json_module.dumps(c) + "\n" for c in cases), encoding="utf-8")
    again = oloproof.run(tmp_path / "oloproof.yaml")
    assert [(e.case, e.kind) for e in again.document.errors] == [("c1", "system_error")]
    assert "usage recorded twice: input_tokens both from the trajectory's messages and from " \
           "current_case().usage()" in again.document.errors[0].message


def test_langchain_invalid_tool_calls_are_kept_raw() -> None:
    bad = AIMessage(content="", invalid_tool_calls=[
        {"name": "lookup_order", "args": "{order_id: o1", "id": "c1", "error": "not JSON"}])
    reading = read_langchain_messages([HumanMessage("hi"), bad])
    step = reading.trajectory.steps[1]
    assert (step.kind, step.arguments) == ("tool_call", {"_raw": "{order_id: o1"})
    assert [n.kind for n in reading.notes] == ["arguments_not_json", "call_without_result"]


def test_streamed_chunks_are_joined_before_the_arguments_are_read() -> None:
    chunks = [
        AIMessageChunk(content="", id="run-1", tool_call_chunks=[
            {"name": "lookup_order", "args": '{"order', "id": "c1", "index": 0}]),
        AIMessageChunk(content="", id="run-1", tool_call_chunks=[
            {"name": None, "args": '_id": "o1"}', "id": None, "index": 0}]),
        AIMessageChunk(content="", id="run-1", tool_call_chunks=[
            {"name": "search", "args": '{"query": "x"}', "id": "c2", "index": 1}]),
    ]
    t = from_langchain_messages([HumanMessage("hi"), *chunks,
                                 ToolMessage("ok", tool_call_id="c1"),
                                 ToolMessage("none", tool_call_id="c2")])
    assert [(s.kind, s.tool_name, s.arguments) for s in t.steps] == [
        ("message", None, {"role": "user", "content": "hi"}),
        ("tool_call", "lookup_order", {"order_id": "o1"}),
        ("tool_call", "search", {"query": "x"}),
        ("tool_result", "lookup_order", None),
        ("tool_result", "search", None),
    ]


def test_supervisor_handoffs_from_the_library_s_own_messages() -> None:
    handoff = pytest.importorskip("langgraph_supervisor.handoff")
    to_math = handoff.create_handoff_tool(agent_name="math expert")
    ask = AIMessage(content="", name="supervisor",
                    tool_calls=[{"name": to_math.name, "args": {}, "id": "h1"}])
    state = {"messages": [HumanMessage("What is 2+2?"), ask]}
    history = to_math.func(state=state, tool_call_id="h1").update["messages"]
    answer = AIMessage(content="", name="math expert",
                       tool_calls=[{"name": "add", "args": {"a": 2, "b": 2}, "id": "t1"}])
    back_ai, back_tool = handoff.create_handoff_back_messages("math expert", "supervisor")
    history += [answer, ToolMessage("4", tool_call_id="t1"), AIMessage("4", name="math expert"),
                back_ai, back_tool, AIMessage("2+2 is 4.", name="supervisor")]
    reading = read_langchain_messages(history)
    t = reading.trajectory
    assert [(s.kind, s.agent, s.to_agent, s.tool_name) for s in t.steps] == [
        ("message", "supervisor", None, None),  # the question: held by whoever answers it
        ("handoff", "supervisor", "math expert", None),
        ("tool_call", "math expert", None, "add"),
        ("tool_result", "math expert", None, "add"),
        ("message", "math expert", None, None),
        ("message", "math expert", None, None),  # "Transferring back to supervisor"
        ("handoff", "math expert", "supervisor", None),
        ("final", "supervisor", None, None),
    ]
    assert t.steps[1].arguments == {"tool": "transfer_to_math_expert",
                                    "content": "Successfully transferred to math expert"}
    assert trajectory_problems(t.steps) == []
    assert [(n.step, n.kind) for n in reading.notes] == [(1, "agent_by_control")]


def test_swarm_handoff_from_the_library_s_own_tool() -> None:
    swarm = pytest.importorskip("langgraph_swarm.handoff")
    to_bob = swarm.create_handoff_tool(agent_name="Bob")
    ask = AIMessage(content="", name="Alice",
                    tool_calls=[{"name": to_bob.name, "args": {}, "id": "h1"}])
    state = {"messages": [HumanMessage("Talk to Bob"), ask]}
    history = to_bob.func(state=state, tool_call_id="h1").update["messages"]
    history.append(AIMessage("Bob here.", name="Bob"))
    t = from_langchain_messages(history)
    assert [(s.kind, s.agent, s.to_agent) for s in t.steps] == [
        ("message", "Alice", None), ("handoff", "Alice", "Bob"), ("final", "Bob", None)]


def test_a_tool_named_like_a_handoff_is_not_one_without_the_library_s_marker() -> None:
    ask = AIMessage(content="", name="Alice",
                    tool_calls=[{"name": "transfer_to_bob", "args": {}, "id": "h1"}])
    t = from_langchain_messages([
        HumanMessage("hi"), ask,
        ToolMessage(json.dumps({"ok": True}), tool_call_id="h1", name="transfer_to_bob"),
    ])
    assert [s.kind for s in t.steps] == ["message", "tool_call", "tool_result"]


def test_streamed_chat_completion_chunks_are_joined() -> None:
    # The chunks the `openai` package yields for a streamed response: content and tool-call
    # argument fragments, joined by index into the one assistant message they make up.
    pytest.importorskip("openai")
    from openai.types.chat import ChatCompletionChunk

    def chunk(delta: dict[str, Any], cid: str = "chatcmpl-1") -> ChatCompletionChunk:
        return ChatCompletionChunk.model_validate({
            "id": cid, "object": "chat.completion.chunk", "created": 0, "model": "m",
            "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})

    def fragment(index: int, arguments: str, cid: str | None = None,
                 name: str | None = None) -> dict[str, Any]:
        function: dict[str, Any] = {"arguments": arguments}
        if name:
            function["name"] = name
        body: dict[str, Any] = {"index": index, "function": function}
        if cid:
            body.update(id=cid, type="function")
        return body

    stream = [
        chunk({"role": "assistant", "tool_calls": [fragment(0, "", "c1", "lookup_order")]}),
        chunk({"tool_calls": [fragment(0, '{"order_')]}),
        chunk({"tool_calls": [fragment(1, "", "c2", "search")]}),
        chunk({"tool_calls": [fragment(0, 'id": "o1"}'), fragment(1, '{"query": "po')]}),
        chunk({"tool_calls": [fragment(1, 'licy"}')]}),
        ChatCompletionChunk.model_validate({"id": "chatcmpl-1", "object":
                                            "chat.completion.chunk", "created": 0,
                                            "model": "m", "choices": []}),
    ]
    answer = [chunk({"role": "assistant", "content": "Re"}, "chatcmpl-2"),
              chunk({"content": "funded."}, "chatcmpl-2")]
    messages = [{"role": "user", "content": "Refund o1"}, *stream,
                {"role": "tool", "tool_call_id": "c1", "content": '{"status": "ok"}'},
                {"role": "tool", "tool_call_id": "c2", "content": "[]"}, *answer]
    reading = read_openai_messages(messages)
    assert rows(reading.trajectory) == [
        ("message", None, None, None, {"role": "user", "content": "Refund o1"}, None),
        ("tool_call", None, None, "lookup_order", {"order_id": "o1"}, None),
        ("tool_call", None, None, "search", {"query": "policy"}, None),
        ("tool_result", None, None, "lookup_order", None, {"status": "ok"}),
        ("tool_result", None, None, "search", None, []),
        ("final", None, None, None, {"role": "assistant", "content": "Refunded."}, None),
    ]
    assert reading.skipped == {} and reading.ignored == {"chunk without delta": 1}
