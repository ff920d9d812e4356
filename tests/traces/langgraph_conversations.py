"""The conversations `langgraph_scripted.py` runs through its LangGraph agents, as plain data:
`tests/traces/test_langgraph.py` parametrizes over them when pytest collects it, without
importing LangChain (0.6-0.8 s of CPU in every worker that collects the file, most of which never
runs it; docs/architecture.md#tests)."""

from __future__ import annotations

from typing import Any

#: The names of `langgraph_scripted.GRAPHS` (which checks that they agree).
GRAPH_NAMES = ("react_agent", "state_graph")


def call(name: str, call_id: str, **arguments: Any) -> dict[str, Any]:
    return {"name": name, "args": arguments, "id": call_id, "type": "tool_call"}


def say(text: str, *calls: dict[str, Any]) -> tuple[str, list[dict[str, Any]]]:
    """One model turn: its text and tool calls (`langgraph_scripted` makes it an AIMessage)."""
    return text, list(calls)


#: name -> (the user's message, the model's turns, the tools the truth calls).
CONVERSATIONS: dict[str, tuple[str, list[tuple[str, list[dict[str, Any]]]], list[str]]] = {
    "one_lookup": ("Where is ord-001?", [
        say("", call("lookup_order", "c1", order_id="ord-001")),
        say("ord-001 was delivered."),
    ], ["lookup_order"]),
    # The same tool with the same arguments in two model turns: two calls, both kept.
    "same_call_twice": ("Is ord-002 still lost?", [
        say("", call("lookup_order", "c1", order_id="ord-002")),
        say("Let me check once more.", call("lookup_order", "c2", order_id="ord-002")),
        say("ord-002 is still lost."),
    ], ["lookup_order", "lookup_order"]),
    # Two identical calls in one model message: told apart by their call ids alone.
    "parallel_twins": ("Check ord-003 twice.", [
        say("", call("lookup_order", "c1", order_id="ord-003"),
            call("lookup_order", "c2", order_id="ord-003")),
        say("ord-003 was delivered, both times."),
    ], ["lookup_order", "lookup_order"]),
    "lookup_then_refund": ("Refund 20 on ord-002.", [
        say("", call("lookup_order", "c1", order_id="ord-002")),
        say("It is lost; refunding.", call("issue_refund", "c2", order_id="ord-002",
                                           amount=20)),
        say("Refunded 20 on ord-002."),
    ], ["lookup_order", "issue_refund"]),
    "no_tool": ("Hello!", [say("Hello, how can I help?")], []),
    "refund_refused": ("Refund 500 on ord-001.", [
        say("", call("issue_refund", "c1", order_id="ord-001", amount=500)),
        say("A manager has to approve that refund."),
    ], ["issue_refund"]),
}
