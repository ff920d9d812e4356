"""A refund desk whose agent samples: the system under test of the `flaky_agent` example.

There is no model here, but the desk behaves like one: on every call it draws its choices from
a random generator, so the same request can be worked differently on two trials. The
generator is seeded from the case id and the trial number (`current_case().trial`), so a run is
reproducible — the same suite gives the same figures every time — while the trials of one case
still differ from each other, as an LLM agent's do.

The desk looks the order up and refunds it if it was delivered within 30 days, else declines.
Two things go wrong now and then, more often on requests worded vaguely (the case says how its
customer wrote, in `wording`):

- it **skips the lookup** and refunds straight away (right only when the order is eligible);
- it **misreads the delivery date** it looked up and declines an order it should refund.

Each trial records what the agent did with Oloproof's step recorder
(`current_case().steps()`): the customer's message, the tool calls with their results, and the
reply, which is phrased differently from trial to trial even when nothing goes wrong.
"""

from __future__ import annotations

import random
from typing import Any

from oloproof import current_case, system

REFUND_WINDOW_DAYS = 30

#: How often each mistake happens, by how the customer wrote.
SKIP_LOOKUP = {"plain": 0.12, "vague": 0.22}
MISREAD_DATE = {"plain": 0.12, "vague": 0.22}

ORDERS = {
    f"ord-{n:03d}": {"days_since_delivery": days, "amount": amount}
    for n, (days, amount) in enumerate([
        (3, 25.0), (12, 80.0), (45, 15.0), (29, 120.0), (31, 60.0), (1, 9.5), (90, 300.0),
        (7, 42.0), (30, 18.0), (60, 75.0), (14, 33.0), (2, 210.0), (33, 12.0), (20, 55.0),
        (5, 64.0), (40, 99.0), (9, 28.0), (18, 140.0), (52, 35.0), (26, 47.0),
    ], start=1)
}

OPENINGS = ["Let me look into that for you.", "Thanks for reaching out — checking now.",
            "Sure, one moment while I check your order."]
REPLIES = {
    "refunded": ["Your refund is on its way.", "I've issued a full refund.",
                 "Done: the refund has been issued."],
    "declined": ["I'm sorry, this order is past our 30-day refund window.",
                 "Unfortunately this order can no longer be refunded.",
                 "This order is outside the refund window, so I can't refund it."],
}


def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    return {"found": False} if order is None else {"found": True, **order}


def issue_refund(order_id: str) -> dict[str, Any]:
    return {"refunded": order_id}


@system(name="flaky-desk", version="example-1", records=("agent_trajectory/v1",))
def desk(case_input: dict[str, Any]) -> dict[str, Any]:
    """Answer one refund request, drawing the agent's choices from a seeded generator."""
    case = current_case()
    rng = random.Random(f"{case.case_id}:{case.trial}")  # reproducible, different per trial
    wording = case_input["wording"]
    steps = case.steps()
    steps.message({"from": "customer", "text": case_input["message"]})
    steps.message({"from": "agent", "text": rng.choice(OPENINGS)})
    order_id = case_input["order_id"]
    if rng.random() < SKIP_LOOKUP[wording]:
        steps.call_tool("issue_refund", {"order_id": order_id}, issue_refund)
        answer = "refunded"
    else:
        order = steps.call_tool("lookup_order", {"order_id": order_id}, lookup_order)
        days = int(order.get("days_since_delivery", 10**6))
        if rng.random() < MISREAD_DATE[wording]:
            days += REFUND_WINDOW_DAYS  # read the delivery date a month early
        if order.get("found") and days <= REFUND_WINDOW_DAYS:
            steps.call_tool("issue_refund", {"order_id": order_id}, issue_refund)
            answer = "refunded"
        else:
            answer = "declined"
    reply = rng.choice(REPLIES[answer])
    steps.final({"answer": answer, "reply": reply})
    steps.finish("success")
    return {"answer": answer, "reply": reply}
