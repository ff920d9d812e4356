"""LangGraph agents driven by a scripted chat model, offline: the two shapes people build —
a `StateGraph` with a `ToolNode`, and the installed version's prebuilt ReAct agent — and
`converse`, which runs one of `langgraph_conversations.py`'s conversations through one of them
(imported by the tests and written into projects).

`Scripted` is a real `BaseChatModel`: LangChain's callbacks (and so OpenInference's
instrumentor) see it as any chat model, and it returns the AIMessages a script gives, tool
calls included, one per model turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from langchain_core.language_models.chat_models import BaseChatModel
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph_conversations import CONVERSATIONS, GRAPH_NAMES


class Scripted(BaseChatModel):
    """A chat model that answers with the script's messages, in order."""

    script: list[AIMessage]
    turn: int = 0

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Any, **_: Any) -> Scripted:  # type: ignore[override]
        return self

    def _generate(self, messages: list[BaseMessage], stop: Any = None, run_manager: Any = None,
                  **_: Any) -> ChatResult:
        reply = self.script[self.turn]
        self.turn += 1
        return ChatResult(generations=[ChatGeneration(message=reply)])


ORDERS = {"ord-001": "delivered", "ord-002": "lost", "ord-003": "delivered"}


@tool
def lookup_order(order_id: str) -> dict[str, str]:
    """Look an order up."""
    return {"order_id": order_id, "status": ORDERS.get(order_id, "unknown")}


@tool
def issue_refund(order_id: str, amount: float) -> dict[str, Any]:
    """Refund part of an order."""
    if amount > 100:
        raise ValueError("refunds above 100 need a manager")
    return {"order_id": order_id, "refunded": amount}


TOOLS = [lookup_order, issue_refund]


def ai_message(text: str, calls: list[dict[str, Any]]) -> AIMessage:
    """A model turn of `langgraph_conversations.CONVERSATIONS` as the model's message."""
    return AIMessage(content=text, tool_calls=list(calls))


def state_graph(model: Scripted) -> Any:
    """A `StateGraph` over `MessagesState`: the model's node, a `ToolNode`, `tools_condition`
    between them."""
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    def agent(state: MessagesState) -> dict[str, Any]:
        return {"messages": [model.invoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode(TOOLS, handle_tool_errors=True))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile()


def react_agent(model: Scripted) -> Any:
    """The installed version's prebuilt ReAct agent."""
    import warnings

    from langgraph.prebuilt import ToolNode, create_react_agent

    with warnings.catch_warnings():  # (deprecated in favour of langchain's own, still shipped)
        warnings.simplefilter("ignore")
        return create_react_agent(model, ToolNode(TOOLS, handle_tool_errors=True))


GRAPHS: dict[str, Callable[[Scripted], Any]] = {"state_graph": state_graph,
                                                 "react_agent": react_agent}
if sorted(GRAPHS) != sorted(GRAPH_NAMES):
    raise AssertionError(f"langgraph_conversations.GRAPH_NAMES {GRAPH_NAMES} are not the "
                         f"graphs' names {sorted(GRAPHS)}")


def converse(graph: str, conversation: str) -> list[BaseMessage]:
    """Run one conversation through one graph; the graph state's messages."""
    message, turns, _ = CONVERSATIONS[conversation]
    model = Scripted(script=[ai_message(text, calls) for text, calls in turns])
    out = GRAPHS[graph](model).invoke({"messages": [HumanMessage(message)]})
    return list(out["messages"])
