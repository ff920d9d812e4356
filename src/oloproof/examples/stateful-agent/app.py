"""A refund desk over a sandboxed order store: the system under test of `stateful-agent`.

There is no model and no network here. The desk is one object that owns a small order store
(its sandbox) and works each refund request with four tools over it: `find_orders`,
`lookup_order`, `issue_refund` and `escalate_to_human`. It is

- **Stateful**: `reset(state)` makes the store hold exactly a case's `initial_state`, and
  `snapshot()` returns the store as it is now, so Oloproof can check the world the case left;
- **Replayable**: `replay(trajectory, checkpoint=..., change=...)` works the same request again
  from the start (the request is kept in the first checkpoint's payload), with one tool call's
  result replaced when the change asks for it, and returns what happened after the checkpoint.

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

from oloproof import (
    AgentCheckpoint,
    AgentConstraintCheck,
    AgentStep,
    AgentTrajectory,
    ReplayChange,
    current_case,
    system,
)

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


class ReplayMismatch(RuntimeError):
    """Working the request again did not retrace the recording up to the checkpoint."""


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
    """Steps, checkpoints and tool calls of one pass, with at most one result replaced."""

    def __init__(self, store: OrderStore, request: dict[str, Any],
                 fault: ReplayChange | None) -> None:
        self.store = store
        self.fault = fault
        self.steps: list[AgentStep] = []
        self.checkpoints = [
            AgentCheckpoint(checkpoint_id="start", kind="checkpoint", step_index=None,
                            description="before the first step", payload={"request": request})
        ]

    def add(self, **fields: Any) -> AgentStep:
        step = AgentStep(index=len(self.steps) + 1, **fields)
        self.steps.append(step)
        return step

    def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        call = self.add(kind="tool_call", tool_name=tool, arguments=arguments)
        if self.fault is not None and self.fault.step_index == call.index:
            result = copy.deepcopy(self.fault.fault_result)  # the tool failed: nothing ran
        else:
            result = getattr(self.store, tool)(**arguments)
        self.add(kind="tool_result", tool_name=tool, result=result)
        self.checkpoints.append(
            AgentCheckpoint(
                checkpoint_id=f"after-step-{len(self.steps)}", kind="tool_result",
                step_index=len(self.steps), description=f"after {tool} returned",
                payload={"refunded": sorted(
                    o for o, row in self.store.state["orders"].items()
                    if row["status"] == "refunded")},
            )
        )
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
    work.add(kind="message", arguments={"from": "customer", "text": message})
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


def work_request(store: OrderStore, request: dict[str, Any],
                 fault: ReplayChange | None = None) -> tuple[AgentTrajectory, dict[str, Any]]:
    """Work one request on the store: (the trajectory, the desk's reply)."""
    work = _Pass(store, request, fault)
    outcome, order_id = _work(work, request)
    answer = _answer(outcome)
    final = work.add(kind="final", arguments={"answer": answer, "reply": _REPLIES[outcome]})
    # The environment's check of the desk's claim: a refund it reports must be in the store.
    claim_holds = answer != "refunded" or store.shows_refund(order_id)
    status: Literal["success", "failure"] = "failure" if outcome == "not_found" else "success"
    trajectory = AgentTrajectory(
        steps=tuple(work.steps),
        terminal_status=status,
        constraints=(AgentConstraintCheck(name="refund_claim_matches_store", passed=claim_holds,
                                          step_index=final.index),),
        checkpoints=tuple(work.checkpoints),
    )
    return trajectory, {"answer": answer, "reply": _REPLIES[outcome], "order_id": order_id}


def _comparable(step: AgentStep) -> tuple[Any, ...]:
    return step.kind, step.tool_name, step.arguments, step.result


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
        trajectory, reply = work_request(self.store, case_input)
        current_case().agent_trajectory(trajectory)
        return reply

    # Replayable
    def replay(self, trajectory: AgentTrajectory, *, checkpoint: AgentCheckpoint,
               change: ReplayChange) -> AgentTrajectory:
        """Work the recorded request again on the reset store, then cut at the checkpoint.

        Working it again from the start brings the store to the checkpoint the same way the
        recording did; the steps up to the checkpoint must come out as recorded, else the
        replay cannot be trusted and says so.
        """
        start = next(c for c in trajectory.checkpoints if c.step_index is None)
        request = start.payload["request"] if start.payload else None
        if not isinstance(request, dict):
            raise ReplayMismatch("the start checkpoint holds no request to work again")
        fault = change if change.kind == "inject_fault" else None
        again, _ = work_request(self.store, request, fault)
        at = checkpoint.step_index or 0
        recorded_head = [_comparable(s) for s in trajectory.steps if s.index <= at]
        head = [_comparable(s) for s in again.steps if s.index <= at]
        if head != recorded_head:
            raise ReplayMismatch(f"working the request again departs from the recording "
                                 f"before the checkpoint at step {at}")
        return AgentTrajectory(
            steps=tuple(s.model_copy(update={"index": s.index - at})
                        for s in again.steps if s.index > at),
            terminal_status=again.terminal_status,
            constraints=tuple(
                c.model_copy(update={"step_index": c.step_index - at})
                for c in again.constraints if c.step_index is not None and c.step_index > at
            ),
        )


desk = RefundDesk()
