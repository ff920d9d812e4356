"""A refund desk instrumented with OpenTelemetry: the system under test of `otel_agent`.

The desk records nothing for Oloproof. Like an agent in production, it emits OpenTelemetry
spans in the GenAI semantic conventions — an `invoke_agent` span per request, a `chat` span
per model call (its input and output messages, its token usage), an `execute_tool` span per
tool call — through the global tracer provider. The suite sets `system.trace: otel`, so the
engine opens a span for each case and reads the trajectory and the usage from the spans the
desk emits under it.

There is no model and no network: `ScriptedModel` decides as a model would, from the
conversation so far, and counts tokens as words. It is deterministic, so every run prints the
same figures. The desk looks each order up and refunds it when it was delivered within 30
days; two things go wrong on purpose:

- a message that says "urgent" makes it refund at once, without looking the order up;
- when the order service fails (the tool's span has an error status) it tries the lookup
  again, three times in all, before it gives up.

A request about two orders is worked with parallel tool calls (two calls in one model turn),
and a refund above 200 goes to the `billing` agent: the desk calls its `transfer_to_billing`
tool, which runs billing in its own `invoke_agent` span (billing issues the refund).
"""

from __future__ import annotations

import json
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode

tracer = trace.get_tracer("otel_agent")

REFUND_WINDOW_DAYS = 30
BILLING_ABOVE = 200.0

ORDERS: dict[str, dict[str, Any]] = {
    f"ord-{n:03d}": {"days_since_delivery": days, "amount": amount}
    for n, (days, amount) in enumerate([
        (3, 25.0), (12, 80.0), (45, 15.0), (29, 120.0), (31, 60.0), (1, 9.5), (90, 300.0),
        (7, 42.0), (30, 18.0), (60, 75.0), (14, 233.0), (2, 210.0), (33, 12.0), (20, 55.0),
        (5, 64.0),
    ], start=1)
}
#: Orders the order service fails on (its span records the error).
SERVICE_DOWN = {"ord-013"}


def text(role: str, content: str) -> dict[str, Any]:
    return {"role": role, "parts": [{"type": "text", "content": content}]}


def calls(*items: tuple[str, str, dict[str, Any]]) -> dict[str, Any]:
    return {"role": "assistant", "parts": [
        {"type": "tool_call", "id": cid, "name": name, "arguments": arguments}
        for cid, name, arguments in items]}


def responses(*items: tuple[str, Any]) -> dict[str, Any]:
    return {"role": "tool", "parts": [
        {"type": "tool_call_response", "id": cid, "response": value} for cid, value in items]}


def words(messages: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(part).split()) for m in messages for part in m["parts"])


class ScriptedModel:
    """Answers a conversation as the desk's model would; deterministic."""

    def __init__(self, request: dict[str, Any]) -> None:
        self.orders = request["order_ids"]
        self.urgent = "urgent" in request["message"].lower()

    def next(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        looked = {}
        attempts: dict[str, int] = {}
        asked: dict[str, str] = {}
        refunded = set()
        for message in history:
            for part in message["parts"]:
                if part["type"] == "tool_call":
                    asked[part["id"]] = part["arguments"]["order_id"]
                    if part["name"] == "lookup_order":
                        attempts[part["arguments"]["order_id"]] = attempts.get(
                            part["arguments"]["order_id"], 0) + 1
                elif part["type"] == "tool_call_response":
                    order = asked[part["id"]]
                    if "refund_id" in part["response"]:
                        refunded.add(order)
                    elif "error" not in part["response"]:
                        looked[order] = part["response"]
        if self.urgent and not refunded:
            return calls(*[(f"call-refund-{o}", "issue_refund", {"order_id": o})
                           for o in self.orders])
        pending = [o for o in self.orders if o not in looked and attempts.get(o, 0) < 3]
        if pending:
            return calls(*[(f"call-lookup-{o}-{attempts.get(o, 0) + 1}", "lookup_order",
                            {"order_id": o}) for o in pending])
        due = [o for o in self.orders if o in looked and o not in refunded
               and looked[o]["days_since_delivery"] <= REFUND_WINDOW_DAYS]
        if due:
            return calls(*[(f"call-refund-{o}", "transfer_to_billing"
                            if looked[o]["amount"] > BILLING_ABOVE else "issue_refund",
                            {"order_id": o}) for o in due])
        return text("assistant", self.reply(looked, refunded))

    def reply(self, looked: dict[str, Any], refunded: set[str]) -> str:
        parts = []
        for order in self.orders:
            if order in refunded:
                parts.append(f"{order} refunded")
            elif order not in looked:
                parts.append(f"{order} could not be checked, please try again later")
            else:
                parts.append(f"{order} declined: past the {REFUND_WINDOW_DAYS}-day window")
        return "; ".join(parts) + "."


def lookup_order(order_id: str) -> dict[str, Any]:
    if order_id in SERVICE_DOWN:
        raise ConnectionError("order service unavailable")
    order = ORDERS.get(order_id)
    return {"found": False} if order is None else {"found": True, **order}


def issue_refund(order_id: str) -> dict[str, Any]:
    return {"refund_id": f"rf-{order_id}"}


def transfer_to_billing(order_id: str) -> dict[str, Any]:
    """Billing refunds large orders: its own agent, with its own model and tools."""
    history = [text("user", f"Refund {order_id}.")]
    agent("billing", BillingModel(order_id), history)
    return {"refund_id": f"rf-{order_id}", "by": "billing"}


TOOLS = {"lookup_order": lookup_order, "issue_refund": issue_refund,
         "transfer_to_billing": transfer_to_billing}


def chat(model: ScriptedModel, history: list[dict[str, Any]]) -> dict[str, Any]:
    """One model call, in a `chat` span with its messages and token usage."""
    with tracer.start_as_current_span("chat scripted-desk-model") as span:
        answer = model.next(history)
        span.set_attributes({
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "scripted",
            "gen_ai.request.model": "scripted-desk-model",
            "gen_ai.input.messages": json.dumps(history),
            "gen_ai.output.messages": json.dumps([answer]),
            "gen_ai.usage.input_tokens": words(history),
            "gen_ai.usage.output_tokens": words([answer]),
        })
        return answer


def run_tool(name: str, call_id: str, arguments: dict[str, Any]) -> Any:
    """One tool call, in an `execute_tool` span; a tool that raises sets the error status."""
    with tracer.start_as_current_span(f"execute_tool {name}", record_exception=False,
                                      set_status_on_exception=False) as span:
        span.set_attributes({
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.call.arguments": json.dumps(arguments),
        })
        try:
            result = TOOLS[name](**arguments)
        except Exception as exc:
            span.record_exception(exc)
            span.set_attribute("error.type", type(exc).__name__)
            span.set_status(Status(StatusCode.ERROR, str(exc)))
            return {"error": str(exc)}
        span.set_attribute("gen_ai.tool.call.result", json.dumps(result))
        return result


def agent(name: str, model: ScriptedModel, history: list[dict[str, Any]]) -> str:
    """An agent's turns, in its `invoke_agent` span: model calls and the tools they ask for."""
    with tracer.start_as_current_span(f"invoke_agent {name}") as span:
        span.set_attributes({"gen_ai.operation.name": "invoke_agent",
                             "gen_ai.agent.name": name})
        for _ in range(12):
            answer = chat(model, history)
            history.append(answer)
            asked = [p for p in answer["parts"] if p["type"] == "tool_call"]
            if not asked:
                return str(answer["parts"][0]["content"])
            results = [(p["id"], run_tool(p["name"], p["id"], p["arguments"]))
                       for p in asked]
            history.append(responses(*results))
        return "I could not finish this request."


class BillingModel(ScriptedModel):
    """Billing's model: it refunds the one order it is given, then confirms."""

    def __init__(self, order_id: str) -> None:
        self.order_id = order_id

    def next(self, history: list[dict[str, Any]]) -> dict[str, Any]:
        if any(p["type"] == "tool_call_response" for m in history for p in m["parts"]):
            return text("assistant", f"Billing refunded {self.order_id}.")
        return calls((f"call-billing-{self.order_id}", "issue_refund",
                      {"order_id": self.order_id}))


def desk(request: dict[str, Any]) -> dict[str, Any]:
    """The system under test: one request in, the desk's reply out."""
    history = [text("user", request["message"])]
    return {"answer": agent("desk", ScriptedModel(request), history)}
