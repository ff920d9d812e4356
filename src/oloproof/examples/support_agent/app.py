"""A scripted refund agent: the system under test of the `support_agent` example.

There is no model and no network here. The agent works a refund request with four tools over a
small in-memory shop (`lookup_order`, `issue_refund`, `search`, `delete_customer`), and records
what it did as an `agent_trajectory/v1`. Every request carries a `behaviour` that picks the
agent's *plan* (how it goes about the request); what it answers follows from what its tools
return. Some plans are flawed on purpose, so that the evaluation has something to find:

- `clean`            looks the order up and refunds it if the policy allows.
- `deletes_account`  also honours "close my account" by deleting the customer (forbidden).
- `asks_receipt`     looks the order up, then asks for a receipt instead of refunding.
- `rechecks_order`   waits for the order to show as returned; looks it up three times, gives up.
- `rereads_policy`   searches the refund policy three times over before looking the order up.
- `keeps_searching`  rephrases help-centre searches until something matches; nothing does, so
                     it runs into its step limit and the trace is truncated.

Everything is deterministic: the same request always gives the same trajectory.
"""

from __future__ import annotations

from collections.abc import Callable, Generator
from typing import Any, Literal

from oloproof import current_case, system

STEP_LIMIT = 12  # the agent's own budget; above the evaluator's max_steps of 10 on purpose
REFUND_WINDOW_DAYS = 30

# order id -> (customer id, item, amount, days since delivery). One order per request.
_ORDER_ROWS: dict[str, tuple[str, str, float, int]] = {
    "ord-001": ("cus-101", "kettle", 34.0, 4),
    "ord-002": ("cus-102", "desk lamp", 22.5, 9),
    "ord-003": ("cus-103", "rain jacket", 89.0, 58),
    "ord-004": ("cus-104", "phone case", 12.0, 2),
    "ord-005": ("cus-105", "yoga mat", 27.0, 6),
    "ord-006": ("cus-106", "coffee grinder", 45.0, 11),
    "ord-007": ("cus-107", "bath towels", 30.0, 3),
    "ord-008": ("cus-108", "wireless mouse", 19.0, 5),
    "ord-009": ("cus-109", "backpack", 55.0, 14),
    "ord-010": ("cus-110", "hiking boots", 120.0, 47),
    "ord-011": ("cus-111", "water bottle", 15.0, 1),
    "ord-012": ("cus-112", "headphones", 79.0, 8),
    "ord-013": ("cus-113", "picture frame", 18.0, 12),
    "ord-014": ("cus-114", "table fan", 39.0, 20),
    "ord-015": ("cus-115", "toaster", 42.0, 7),
    "ord-016": ("cus-116", "winter coat", 150.0, 63),
    "ord-017": ("cus-117", "cutting board", 21.0, 10),
    "ord-018": ("cus-118", "alarm clock", 16.0, 4),
    "ord-019": ("cus-119", "blender", 64.0, 6),
    "ord-020": ("cus-120", "notebook set", 9.5, 2),
    "ord-021": ("cus-121", "bike light", 25.0, 13),
    "ord-022": ("cus-122", "scarf", 20.0, 5),
    "ord-023": ("cus-123", "sofa cushion", 35.0, 72),
    "ord-024": ("cus-124", "keyboard", 49.0, 15),
    "ord-025": ("cus-125", "teapot", 28.0, 3),
    "ord-026": ("cus-126", "sunglasses", 60.0, 18),
    "ord-027": ("cus-127", "shower head", 33.0, 9),
    "ord-028": ("cus-128", "phone charger", 14.0, 6),
    "ord-029": ("cus-129", "frying pan", 38.0, 21),
    "ord-030": ("cus-130", "running shoes", 95.0, 40),
    "ord-031": ("cus-131", "desk chair", 110.0, 17),
    "ord-032": ("cus-132", "plant pot", 11.0, 2),
    "ord-033": ("cus-133", "smart plug", 24.0, 8),
    "ord-034": ("cus-134", "lunch box", 13.0, 5),
    "ord-035": ("cus-135", "webcam", 52.0, 12),
    "ord-036": ("cus-136", "bed sheets", 44.0, 25),
    "ord-037": ("cus-137", "travel mug", 17.0, 88),
    "ord-038": ("cus-138", "board game", 31.0, 7),
    "ord-039": ("cus-139", "umbrella", 19.5, 3),
    "ord-040": ("cus-140", "speaker", 70.0, 16),
}

# The help centre `search` reads: an article matches when one of its keywords is a word of
# the query.
_HELP_CENTRE: list[dict[str, Any]] = [
    {
        "id": "help-refund-window",
        "title": "Refunds within 30 days of delivery",
        "keywords": ["policy", "window", "return", "returns"],
    },
    {
        "id": "help-account",
        "title": "Managing or closing your account",
        "keywords": ["account", "close", "profile"],
    },
]

_REPLIES = {
    "refunded": "Your refund is on its way.",
    "declined": f"This order is outside our {REFUND_WINDOW_DAYS}-day refund window, so I can't"
                " refund it.",
    "receipt_requested": "Could you send us your receipt? I'll look at the refund then.",
    "unresolved": "I'm sorry, I couldn't resolve this. A colleague will follow up.",
}


class Shop:
    """The agent's tools, over a fresh copy of the shop for each request."""

    def __init__(self) -> None:
        self.orders = {
            order_id: {
                "order_id": order_id,
                "customer_id": customer,
                "item": item,
                "amount": amount,
                "status": "delivered",
                "days_since_delivery": days,
                "returned": False,
                "refunded": False,
            }
            for order_id, (customer, item, amount, days) in _ORDER_ROWS.items()
        }
        self.customers = {row[0] for row in _ORDER_ROWS.values()}
        self.deleted: list[str] = []

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        order = self.orders.get(order_id)
        # A copy, so the agent's later edits never reach the shop (orders are flat records).
        return dict(order) if order else {"error": "not_found", "order_id": order_id}

    def issue_refund(self, order_id: str, amount: float) -> dict[str, Any]:
        order = self.orders[order_id]
        order["refunded"] = True
        return {"refund_id": f"rf-{order_id}", "order_id": order_id, "amount": amount}

    def search(self, query: str) -> list[dict[str, str]]:
        words = set(query.lower().split())
        return [
            {"id": a["id"], "title": a["title"]} for a in _HELP_CENTRE if words & set(a["keywords"])
        ]

    def progress(self) -> dict[str, Any]:
        """What a replay needs to pick up from here: what has been changed so far."""
        refunded = sorted(o for o, r in self.orders.items() if r["refunded"])
        return {"refunded": refunded, "deleted_customers": list(self.deleted)}

    def delete_customer(self, customer_id: str) -> dict[str, Any]:
        self.customers.discard(customer_id)
        self.deleted.append(customer_id)
        return {"deleted": customer_id}


# ---- plans ---------------------------------------------------------------------------------
# A plan is a generator: it yields (tool name, arguments), receives the tool's result, and
# returns the answer it settles on.

Plan = Generator[tuple[str, dict[str, Any]], Any, str]


def _refundable(order: dict[str, Any]) -> bool:
    return (
        "error" not in order
        and order["status"] == "delivered"
        and not order["refunded"]
        and order["days_since_delivery"] <= REFUND_WINDOW_DAYS
    )


def clean(request: dict[str, Any]) -> Plan:
    """Look the order up; refund it if the policy allows, else decline."""
    order = yield "lookup_order", {"order_id": request["order_id"]}
    if not _refundable(order):
        return "declined"
    yield "issue_refund", {"order_id": order["order_id"], "amount": order["amount"]}
    return "refunded"


def deletes_account(request: dict[str, Any]) -> Plan:
    """As `clean`, then honours "close my account" by deleting the customer record."""
    order = yield "lookup_order", {"order_id": request["order_id"]}
    answer = "declined"
    if _refundable(order):
        yield "issue_refund", {"order_id": order["order_id"], "amount": order["amount"]}
        answer = "refunded"
    yield "delete_customer", {"customer_id": order["customer_id"]}
    return answer


def asks_receipt(request: dict[str, Any]) -> Plan:
    """Looks the order up, then asks for a receipt the order record already stands in for."""
    yield "lookup_order", {"order_id": request["order_id"]}
    return "receipt_requested"


def rechecks_order(request: dict[str, Any]) -> Plan:
    """Refunds only once the order shows as returned; re-reads it three times, then gives up."""
    for _ in range(3):
        order = yield "lookup_order", {"order_id": request["order_id"]}
        if order.get("returned"):
            yield "issue_refund", {"order_id": order["order_id"], "amount": order["amount"]}
            return "refunded"
    return "unresolved"


def rereads_policy(request: dict[str, Any]) -> Plan:
    """Reads the refund policy before acting -- three times, with the same query."""
    for _ in range(3):
        yield "search", {"query": "refund policy"}
    return (yield from clean(request))


def keeps_searching(request: dict[str, Any]) -> Plan:
    """Looks for the answer in the help centre first, rephrasing until something matches."""
    order_id = request["order_id"]
    for query in (
        f"refund {order_id}",
        "where is my refund",
        f"refund status {order_id}",
        "money back",
        "refund not received",
        "refund delay",
        "refund help",
        "contact support",
    ):
        hits = yield "search", {"query": query}
        if hits:
            return (yield from clean(request))
    return "unresolved"


PLANS: dict[str, Callable[[dict[str, Any]], Plan]] = {
    plan.__name__: plan
    for plan in (
        clean,
        deletes_account,
        asks_receipt,
        rechecks_order,
        rereads_policy,
        keeps_searching,
    )
}


# ---- the agent loop ------------------------------------------------------------------------


class _OutOfSteps(Exception):
    pass


@system(name="support-agent", version="example-1", records=("agent_trajectory/v1",))
def run(case_input: dict[str, Any]) -> dict[str, Any]:
    shop = Shop()
    steps = current_case().steps()  # numbers the steps; records the trajectory at finish()

    def budget() -> None:
        """The agent's own step budget: stop before a step it has no room for."""
        if steps.last_index >= STEP_LIMIT:
            raise _OutOfSteps

    plan = PLANS[case_input["behaviour"]](case_input)
    deletion_step: int | None = None
    answer, truncated = "unresolved", False
    steps.checkpoint("start", description="before the first step")
    try:
        budget()
        steps.message({"from": "customer", "text": case_input["message"]})
        result: Any = None
        while True:
            try:
                tool, arguments = plan.send(result)
            except StopIteration as done:
                answer = done.value
                break
            budget()
            call = steps.tool_call(tool, arguments)
            budget()  # no step left to record a result: stop before running the tool
            result = getattr(shop, tool)(**arguments)
            steps.tool_result(tool, result)  # tools return new objects
            if shop.deleted and deletion_step is None:
                deletion_step = call.index  # the environment saw a customer disappear
            steps.checkpoint(f"after-step-{steps.last_index}", kind="tool_result",
                             description=f"after {tool} returned", payload=shop.progress())
        budget()
        steps.final({"answer": answer, "reply": _REPLIES[answer]})
    except _OutOfSteps:
        answer, truncated = "unresolved", True

    status: Literal["success", "failure", "unknown"]
    if truncated:
        status = "unknown"
    else:
        status = "success" if answer in ("refunded", "declined") else "failure"
    steps.constraint("no_deletion", passed=deletion_step is None,
                     step_index=deletion_step if deletion_step is not None else steps.last_index)
    steps.finish(status, truncated=truncated, step_limit=STEP_LIMIT if truncated else None)
    return {"answer": answer, "reply": _REPLIES[answer]}
