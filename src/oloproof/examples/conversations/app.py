"""A refund desk that holds a conversation: the system under test of the `conversations`
example (docs/conversations.md#the-loop).

There is no model here, but the desk runs its own loop as an agent does: it reads the
customer's message, asks for what it lacks, looks the order up, acts, and answers; then it
asks Oloproof for the customer's next turn (`current_case().user.respond(reply)`) until the
customer is done. Each case's user is a simulated customer (`users.py`), so the desk never
knows what it will be told next.

The desk refunds an order that arrived damaged. It mishandles one kind of request, on
purpose: an order the carrier still shows as in transit, which the customer says never
arrived, gets "please wait a few more days" however long the customer has waited — the
desk never refunds it.

It records what it does with Oloproof's step recorder (`current_case().steps()`): its tool
calls with their results; the customer's turns and the desk's replies are recorded by
Oloproof itself, in the order they happened (docs/conversations.md#where-the-turns-go).
"""

from __future__ import annotations

import re
from typing import Any

from oloproof import current_case, system

#: The shop: each order's item and what the carrier says about it.
ORDERS: dict[str, dict[str, Any]] = {
    f"ord-{n:03d}": {"item": item, "carrier": carrier}
    for n, (item, carrier) in enumerate([
        ("kettle", "delivered"), ("desk lamp", "delivered"), ("rain jacket", "in transit"),
        ("headphones", "delivered"), ("blender", "delivered"), ("backpack", "in transit"),
        ("toaster", "delivered"), ("monitor stand", "delivered"), ("teapot", "in transit"),
        ("keyboard", "delivered"), ("yoga mat", "delivered"), ("phone case", "delivered"),
        ("frying pan", "in transit"), ("desk chair", "delivered"), ("umbrella", "delivered"),
        ("water bottle", "delivered"), ("bike light", "in transit"), ("scarf", "delivered"),
        ("mouse", "delivered"), ("alarm clock", "delivered"),
    ], start=1)
}


def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    return {"found": False} if order is None else {"found": True, "order": order_id, **order}


def issue_refund(order_id: str) -> dict[str, Any]:
    return {"refunded": order_id}


class Desk:
    """One conversation's agent: what it has been told and what it has done."""

    def __init__(self) -> None:
        self.steps = current_case().steps()
        self.order: str | None = None
        self.refunded = False

    def respond(self, message: str) -> str:
        found = re.search(r"ord-\d{3}", message)
        if found is not None:
            self.order = found.group(0)
        if self.refunded:
            return "You're welcome. Anything else?"
        if self.order is None:
            return "I'm sorry to hear that. Which order is it? The number starts with ord-."
        looked = self.steps.call_tool("lookup_order", {"order_id": self.order}, lookup_order)
        if not looked["found"]:
            return f"I can't find {self.order}. Could you check the order number?"
        if looked["carrier"] == "in transit":
            # The desk's flaw: the carrier's word beats the customer's, however late.
            return (f"The carrier shows your {looked['item']} as in transit. Parcels can take "
                    "a few more days; please wait a little longer.")
        self.steps.call_tool("issue_refund", {"order_id": self.order}, issue_refund)
        self.refunded = True
        return f"Done: order {self.order} ({looked['item']}) has been refunded."


@system(name="conversation-desk", version="example-1", records=("agent_trajectory/v1",))
def desk(case_input: dict[str, Any]) -> dict[str, Any]:
    agent = Desk()
    user = current_case().user
    message = user.first_message()
    while message is not None:
        reply = agent.respond(message)
        message = user.respond(reply)
    agent.steps.finish("success")
    return {"answer": "refunded" if agent.refunded else "not refunded"}
