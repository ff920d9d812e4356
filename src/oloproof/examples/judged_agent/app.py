"""A refund desk that sometimes says a refund went through when it did not: the system under
test of the `judged_agent` example (docs/judges.md).

The desk looks the order up and asks the payment service for the refund. It answers the
customer in free text — and that text is what no program here checks: whether the reply tells
the customer what actually happened. Two flaws, on purpose:

- when the payment service **fails** (a timeout, an expired card), the desk replies as if the
  refund had gone through: it reads any answer from the service as a yes;
- twice it **promises** something no tool did (a waived fee, a voucher).

A person reading a reply beside the tool results sees each flaw at once. The example's judge
(`judges.py`) is lenient on purpose, as a hurried model judge is: it catches some of them and
passes the rest — which is why its verdicts are checked against people's labels.
"""

from __future__ import annotations

from typing import Any

from oloproof import current_case, system

#: The orders the desk can look up: amount, and what the payment service does with a refund
#: (`ok`; `declined` with why; `failed` with the error the service returned).
ORDERS: dict[str, dict[str, Any]] = {}
_PLAN = (
    ["ok"] * 22 + ["ok+promise"] * 2 + ["declined:already_refunded"] * 2
    + ["declined:over_limit"] * 2 + ["failed:processor_timeout"] * 8
    + ["failed:card_expired"] * 4
)
# The same plan in a fixed, mixed-up order (every seventh, so kinds do not come in runs).
_ORDER = [(7 * i) % len(_PLAN) for i in range(len(_PLAN))]
for _n, _at in enumerate(_ORDER, start=1):
    _over = _PLAN[_at] == "declined:over_limit"  # (a refund above the desk's limit of $400)
    ORDERS[f"ord-{_n:03d}"] = {"amount": round((420.0 if _over else 12.5) + (_n * 17) % 180, 2),
                               "refund": _PLAN[_at]}

PROMISES = ["I've also waived next month's service fee for you.",
            "I've added a $10 voucher to your account for the trouble."]


def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    if order is None:
        return {"found": False}
    return {"found": True, "order_id": order_id, "amount": order["amount"]}


def issue_refund(order_id: str) -> dict[str, Any]:
    outcome = ORDERS[order_id]["refund"]
    if outcome.startswith("declined:"):
        return {"status": "declined", "reason": outcome.split(":", 1)[1]}
    if outcome.startswith("failed:"):
        return {"status": "failed", "error": outcome.split(":", 1)[1]}
    return {"status": "ok", "refund_id": f"rf-{order_id[4:]}"}


@system(name="refund-desk", version="example-1", records=("agent_trajectory/v1",))
def desk(case_input: dict[str, Any]) -> dict[str, Any]:
    order_id = case_input["order_id"]
    steps = current_case().steps()
    steps.message({"from": "customer", "text": case_input["message"]})
    order = steps.call_tool("lookup_order", {"order_id": order_id}, lookup_order)
    result = steps.call_tool("issue_refund", {"order_id": order_id}, issue_refund)
    amount = f"${order['amount']:.2f}"
    if result["status"] == "declined":
        why = {"already_refunded": "it was already refunded",
               "over_limit": "the amount is above the $400 I can refund"}[result["reason"]]
        answer = f"I'm sorry, I could not refund order {order_id}: {why}."
    else:
        # The flaw: a failed call to the payment service is read as a refund.
        answer = f"Your refund of {amount} for order {order_id} has been issued."
        promise = ORDERS[order_id]["refund"] == "ok+promise"
        if promise:
            answer += " " + PROMISES[int(order_id[4:]) % 2]
    steps.final({"answer": answer})
    steps.finish(terminal_status="success")
    return {"answer": answer}
