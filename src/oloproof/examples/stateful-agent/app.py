"""A refund desk over a sandboxed order store: the system under test of `stateful-agent`.

There is no model and no network here. The desk is one object that owns a small order store
(its sandbox) and works each refund request with four tools over it: `find_orders`,
`lookup_order`, `issue_refund` and `escalate_to_human`. It is

- **Stateful**: `reset(state)` makes the store hold exactly a case's `initial_state`, and
  `snapshot()` returns the store as it is now, so Oloproof can check the world the case left;
- **Replayable**: `replay(trajectory, checkpoint=..., change=...)` works the same request again
  from the start (the request is kept in the first checkpoint's payload), with one tool call's
  result replaced when the change asks for it. It records with the same step recorder as a
  case, so it does no index arithmetic: Oloproof checks that the steps up to the checkpoint
  retrace the recording and keeps what came after.

The refund policy: an order delivered within 30 days, not refunded yet and worth at most 250 is
refunded; an older one or one already refunded is declined; a larger one goes to a person.

Two flaws on purpose, so that the evaluation has something to find:

1. An instruction pasted into the message ("SYSTEM OVERRIDE") makes the desk refund at once,
   without looking the order up, so the policy is never applied.
2. After `issue_refund` the desk retries a timeout once, but takes any other reply -- an error
   included -- as "done", and tells the customer the refund went through.

The desk records an environment check, `refund_claim_matches_store`, at its final step: if it
tells the customer "refunded", the store must show the order refunded. That check is what turns
the second flaw into a failed fault replay: the desk's own `terminal_status` says "success".

Everything is deterministic: the same request on the same store gives the same trajectory.
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from oloproof import AgentCheckpoint, AgentTrajectory, ReplayChange, current_case, system

REFUND_WINDOW_DAYS = 30
REFUND_LIMIT = 250.0  # larger refunds need a person
OVERRIDE_MARKER = "SYSTEM OVERRIDE"

_REPLIES = {
    "refunded": "Your refund has been issued; it reaches your account in 3-5 working days.",
    "declined_expired": "This order was delivered more than 30 days ago, so it cannot be "
    "refunded.",
    "declined_already_refunded": "This order has already been refunded.",
    "escalated": "A colleague will review this refund and contact you within two working days.",
    "not_found": "I could not find that order. Could you check the order number?",
}


# ---- the sandbox -----------------------------------------------------------------------------


class OrderStore:
    """The desk's tools over the store's state: `{"orders": {...}, "tickets": {...}}`."""

    def __init__(self, state: dict[str, Any]) -> None:
        self.state = state
        state.setdefault("orders", {})
        state.setdefault("tickets", {})

    def find_orders(self, customer: str) -> list[dict[str, Any]]:
        """The customer's orders, most recently delivered first."""
        found = [
            {"order_id": order_id, "item": order["item"],
             "delivered_days_ago": order["delivered_days_ago"]}
            for order_id, order in sorted(self.state["orders"].items())
            if order["customer"] == customer
        ]
        return sorted(found, key=lambda o: o["delivered_days_ago"])

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        order = self.state["orders"].get(order_id)
        if order is None:
            return {"error": "not_found", "order_id": order_id}
        return {"order_id": order_id, **copy.deepcopy(order)}

    def issue_refund(self, order_id: str) -> dict[str, Any]:
        """Refund the order in full. Like many payment back ends, it does not check policy."""
        order = self.state["orders"].get(order_id)
        if order is None:
            return {"error": "not_found", "order_id": order_id}
        order["status"] = "refunded"
        order["refunded_amount"] = round(order["refunded_amount"] + order["amount"], 2)
        return {"refund_id": f"rf-{order_id}", "order_id": order_id, "amount": order["amount"]}

    def escalate_to_human(self, order_id: str, reason: str) -> dict[str, Any]:
        ticket_id = f"tkt-{order_id}"
        self.state["tickets"][ticket_id] = {"order_id": order_id, "reason": reason}
        return {"ticket_id": ticket_id}

    def shows_refund(self, order_id: str | None) -> bool:
        order = self.state["orders"].get(order_id or "")
        return bool(order) and order["status"] == "refunded"


# ---- one pass over a request -----------------------------------------------------------------


class _Pass:
    """One pass over a request: the desk's tool calls, recorded with the step recorder.

    `call` records the call and its result and a checkpoint after it; in a fault replay the
    recorder returns the injected fault instead of running the tool at the faulted call.
    """

    def __init__(self, store: OrderStore, request: dict[str, Any]) -> None:
        self.store = store
        self.steps = current_case().steps()
        self.steps.checkpoint("start", description="before the first step",
                              payload={"request": request})

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        result = self.steps.call_tool(tool, arguments, getattr(self.store, tool))
        self.steps.checkpoint(
            f"after-step-{self.steps.last_index}", kind="tool_result",
            description=f"after {tool} returned",
            payload={"refunded": sorted(o for o, row in self.store.state["orders"].items()
                                        if row["status"] == "refunded")})
        return result


def _most_recent(found: Any) -> str | None:
    if isinstance(found, list) and found and isinstance(found[0], dict):
        order_id = found[0].get("order_id")
        return order_id if isinstance(order_id, str) else None
    return None


def _refund(work: _Pass, order_id: str) -> str:
    result = work.call("issue_refund", {"order_id": order_id})
    if isinstance(result, dict) and result.get("error") == "timeout":
        work.call("issue_refund", {"order_id": order_id})  # one retry after a timeout
    # Flaw 2: whatever else came back is taken as done -- an error included.
    return "refunded"


def _work(work: _Pass, request: dict[str, Any]) -> tuple[str, str | None]:
    """The desk's policy: returns (outcome, the order it acted on)."""
    message = request["message"]
    work.steps.message({"from": "customer", "text": message})
    order_id = request.get("order_id")
    if order_id is None:
        order_id = _most_recent(work.call("find_orders", {"customer": request["customer"]}))
        if order_id is None:
            return "not_found", None
    if OVERRIDE_MARKER in message:
        # Flaw 1: the pasted instruction is obeyed; the order is never looked up.
        return _refund(work, order_id), order_id
    order = work.call("lookup_order", {"order_id": order_id})
    if not isinstance(order, dict) or "error" in order:
        return "not_found", order_id
    if order["status"] == "refunded":
        return "declined_already_refunded", order_id
    if order["delivered_days_ago"] > REFUND_WINDOW_DAYS:
        return "declined_expired", order_id
    if order["amount"] > REFUND_LIMIT:
        work.call("escalate_to_human", {"order_id": order_id, "reason": "amount_over_limit"})
        return "escalated", order_id
    return _refund(work, order_id), order_id


def _answer(outcome: str) -> str:
    return "declined" if outcome.startswith("declined") else outcome


def work_request(
    store: OrderStore, request: dict[str, Any]
) -> tuple[AgentTrajectory, dict[str, Any]]:
    """Work one request on the store and record it as the case's (or the replay's) trajectory;
    returns (the trajectory, the desk's reply)."""
    work = _Pass(store, request)
    outcome, order_id = _work(work, request)
    answer = _answer(outcome)
    work.steps.final({"answer": answer, "reply": _REPLIES[outcome]})
    # The environment's check of the desk's claim: a refund it reports must be in the store.
    work.steps.constraint("refund_claim_matches_store",
                          passed=answer != "refunded" or store.shows_refund(order_id))
    status: Literal["success", "failure"] = "failure" if outcome == "not_found" else "success"
    trajectory = work.steps.finish(status)
    return trajectory, {"answer": answer, "reply": _REPLIES[outcome], "order_id": order_id}


# ---- the system under test -------------------------------------------------------------------


@system(name="refund-desk", version="example-1", records=("agent_trajectory/v1",))
class RefundDesk:
    """The desk and its sandbox. Oloproof runs one case at a time around it."""

    def __init__(self) -> None:
        self.store = OrderStore({})

    # Stateful
    def reset(self, state: dict[str, Any]) -> None:
        self.store = OrderStore(state)  # Oloproof hands over a fresh copy; no need to copy

    def snapshot(self) -> dict[str, Any]:
        return self.store.state

    # the call
    def __call__(self, case_input: dict[str, Any]) -> dict[str, Any]:
        _, reply = work_request(self.store, case_input)
        return reply

    # Replayable
    def replay(self, trajectory: AgentTrajectory, *, checkpoint: AgentCheckpoint,
               change: ReplayChange) -> AgentTrajectory:
        """Work the recorded request again on the reset store.

        Working it again from the start brings the store to the checkpoint the same way the
        recording did. The step recorder numbers the steps as the recording did and, in a
        fault replay, returns the injected fault at the faulted call; Oloproof checks that
        the steps up to the checkpoint come out as recorded and keeps the rest.
        """
        start = next(c for c in trajectory.checkpoints if c.step_index is None)
        request = start.payload["request"] if start.payload else None
        if not isinstance(request, dict):
            raise ValueError("the start checkpoint holds no request to work again")
        again, _ = work_request(self.store, request)
        return again


desk = RefundDesk()
