"""A small refund desk: the system under test of the starter project.

It runs its own loop (look the order up, then refund or decline by a 30-day policy), records
what it did as an agent trajectory with Oloproof's step recorder, and returns its answer.
Replace it with your own system: Oloproof only needs a callable that takes the case's `input`
and returns a JSON object.

The desk's tools act on a small world: the order records and the payments they lead to. At the
end of each request the world is checked, not the desk's own account of it:
`refund_within_policy` passes when every refund paid out is for an order the records show
delivered within the window. The desk decides from what `lookup_order` told it; if a tool ever
told it something the records do not say, the check fails.
"""

from __future__ import annotations

from typing import Any

from oloproof import current_case, system

REFUND_WINDOW_DAYS = 30

ORDERS = {
    f"ord-{n:03d}": {"days_since_delivery": days, "amount": amount}
    for n, days, amount in [
        (1, 3, 25.0), (2, 12, 80.0), (3, 45, 15.0), (4, 29, 120.0), (5, 31, 60.0),
        (6, 1, 9.5), (7, 90, 300.0), (8, 7, 42.0), (9, 30, 18.0), (10, 60, 75.0),
        (11, 14, 33.0), (12, 2, 210.0), (13, 33, 12.0), (14, 20, 55.0), (15, 5, 64.0),
        (16, 40, 99.0),
    ]
}


class Payments:
    """The refunds paid out while one request was worked (the world the desk changes)."""

    def __init__(self) -> None:
        self.refunded: list[str] = []

    def within_policy(self) -> bool:
        """The world's check: every refund is for an order delivered within the window."""
        return all(order_id in ORDERS
                   and ORDERS[order_id]["days_since_delivery"] <= REFUND_WINDOW_DAYS
                   for order_id in self.refunded)


def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    return {"found": False} if order is None else {"found": True, **order}


@system(name="starter-desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input: dict[str, Any]) -> dict[str, Any]:
    """Answer one customer request."""
    steps = current_case().steps()  # numbers the steps; records the trajectory at finish()
    payments = Payments()

    def issue_refund(order_id: str) -> dict[str, Any]:
        payments.refunded.append(order_id)
        return {"refunded": order_id}

    steps.message({"text": case_input["message"]})
    order_id = case_input["order_id"]
    order = steps.call_tool("lookup_order", {"order_id": order_id}, lookup_order)
    if not order["found"]:
        answer = "not_found"
    elif int(order["days_since_delivery"]) <= REFUND_WINDOW_DAYS:
        steps.call_tool("issue_refund", {"order_id": order_id}, issue_refund)
        answer = "refunded"
    else:
        answer = "declined"
    steps.final({"answer": answer})
    steps.constraint("refund_within_policy", passed=payments.within_policy())
    steps.finish("success")
    return {"answer": answer}
