"""A small refund desk: the system under test of the starter project.

It runs its own loop (look the order up, then refund or decline by a 30-day policy), records
what it did as an agent trajectory, and returns its answer. Replace it with your own system:
Oloproof only needs a callable that takes the case's `input` and returns a JSON object.
"""

from __future__ import annotations

from typing import Any

from oloproof import AgentConstraintCheck, AgentStep, AgentTrajectory, current_case, system

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


def lookup_order(order_id: str) -> dict[str, Any]:
    order = ORDERS.get(order_id)
    return {"found": False} if order is None else {"found": True, **order}


def issue_refund(order_id: str) -> dict[str, Any]:
    return {"refunded": order_id}


@system(name="starter-desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input: dict[str, Any]) -> dict[str, Any]:
    """Answer one customer request."""
    steps: list[AgentStep] = []

    def call(tool: str, **arguments: Any) -> dict[str, Any]:
        steps.append(AgentStep(index=len(steps) + 1, kind="tool_call", tool_name=tool,
                               arguments=dict(arguments)))
        result = {"lookup_order": lookup_order, "issue_refund": issue_refund}[tool](**arguments)
        steps.append(AgentStep(index=len(steps) + 1, kind="tool_result", tool_name=tool,
                               result=result))
        return result

    steps.append(AgentStep(index=1, kind="message", arguments={"text": case_input["message"]}))
    order = call("lookup_order", order_id=case_input["order_id"])
    if not order["found"]:
        answer = "not_found"
    elif int(order["days_since_delivery"]) <= REFUND_WINDOW_DAYS:
        call("issue_refund", order_id=case_input["order_id"])
        answer = "refunded"
    else:
        answer = "declined"
    steps.append(AgentStep(index=len(steps) + 1, kind="final", arguments={"answer": answer}))
    current_case().agent_trajectory(AgentTrajectory(
        steps=tuple(steps),
        terminal_status="success",
        constraints=(AgentConstraintCheck(name="refund_within_policy",
                                          passed=answer != "refunded"
                                          or int(order["days_since_delivery"]) <= 30,
                                          step_index=len(steps)),),
    ))
    return {"answer": answer}
