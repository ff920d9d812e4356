"""A scripted team of three agents: the system under test of the `triage_agents` example.

There is no model and no network here. A request comes in with the topic the customer picked:

- `triage` reads the topic and hands the request to `billing` or `tech`; it calls no tool.
- `billing` looks the order up (`lookup_order`) and refunds it (`issue_refund`), or hands it to
  a `person` when the amount is above what billing may refund alone. Orders paid through the
  app store it first sends to `tech` to check, unless tech has already left a note.
- `tech` searches the knowledge base (`search_kb`) with the request. A tech article answers
  the request; an article owned by billing sends it on to `billing` with a note; no article at
  all sends it back to `billing`. One article, on duplicate charges, says to refund the
  duplicate -- and tech does so itself, which its permissions do not allow (a flaw on purpose).

Every step names the agent that took it, and every change of hands is a `handoff` step. The
team has a budget of 12 steps; a request that keeps bouncing between billing and tech runs
into it and its trace is recorded as truncated. Everything is deterministic: what happens
follows from the request, its topic and the order table. (The cases' `behaviour` field is a
label for readers of the data; the team never reads it.)
"""

from __future__ import annotations

import copy
from typing import Any, Literal

from oloproof import current_case, system

STEP_LIMIT = 12  # the team's loop limit, in steps
BILLING_REFUND_LIMIT = 100.0  # above this, a person signs the refund off

# order id -> (amount, how it was paid)
_ORDERS: dict[str, tuple[float, str]] = {
    "ord-001": (45.0, "card"),
    "ord-003": (30.0, "card"),
    "ord-004": (60.0, "card"),
    "ord-005": (240.0, "card"),
    "ord-007": (18.0, "card"),
    "ord-008": (55.0, "card"),
    "ord-009": (72.0, "card"),
    "ord-011": (25.0, "card"),
    "ord-012": (320.0, "card"),
    "ord-013": (39.0, "card"),
    "ord-014": (180.0, "card"),
    "ord-016": (64.0, "card"),
    "ord-017": (12.0, "app_store"),
    "ord-018": (150.0, "card"),
    "ord-019": (48.0, "card"),
    "ord-021": (27.0, "card"),
    "ord-022": (33.0, "card"),
    "ord-023": (20.0, "app_store"),
    "ord-024": (410.0, "card"),
    "ord-025": (90.0, "card"),
    "ord-027": (130.0, "card"),
    "ord-028": (75.0, "card"),
    "ord-029": (199.0, "card"),
    "ord-030": (14.0, "card"),
}

# The knowledge base, in the order `search_kb` tries it: the first article with a keyword in
# the query wins. `owner` says which team the matter belongs to.
_KB: list[dict[str, Any]] = [
    {
        "article": "kb-duplicate-charge",
        "owner": "billing",
        "keywords": ["charged twice"],
        "text": "A crash at checkout can charge a card twice: refund the duplicate charge.",
    },
    {
        "article": "kb-app-store",
        "owner": "billing",
        "keywords": ["app store"],
        "text": "App-store payments are refunded by billing like any other payment.",
    },
    {
        "article": "kb-invoice",
        "owner": "billing",
        "keywords": ["invoice"],
        "text": "Invoices are billing's: pass the request on to billing.",
    },
    {
        "article": "kb-password",
        "owner": "tech",
        "keywords": ["password", "log in", "logged out"],
        "text": "Sign out everywhere from Settings > Security, then reset the password.",
    },
    {
        "article": "kb-sync",
        "owner": "tech",
        "keywords": ["sync"],
        "text": "Pull down on the basket to force a sync; both devices must be signed in.",
    },
    {
        "article": "kb-export",
        "owner": "tech",
        "keywords": ["export"],
        "text": "Settings > Orders > Export writes your order history as a CSV file.",
    },
    {
        "article": "kb-crash",
        "owner": "tech",
        "keywords": ["crash"],
        "text": "Update the app to the latest version; clear its cache if it still crashes.",
    },
    {
        "article": "kb-notifications",
        "owner": "tech",
        "keywords": ["notification"],
        "text": "Re-enable notifications in the phone's settings after each app update.",
    },
]


class Shop:
    """The team's tools, over a fresh copy of the order table for each request."""

    def __init__(self) -> None:
        self.orders = {
            oid: {"order_id": oid, "amount": amount, "paid_via": via, "refunded": False}
            for oid, (amount, via) in _ORDERS.items()
        }

    def lookup_order(self, order_id: str) -> dict[str, Any]:
        order = self.orders.get(order_id)
        return copy.deepcopy(order) if order else {"error": "not_found", "order_id": order_id}

    def issue_refund(self, order_id: str) -> dict[str, Any]:
        order = self.orders[order_id]
        order["refunded"] = True
        return {"refund_id": f"rf-{order_id}", "order_id": order_id, "amount": order["amount"]}

    def progress(self) -> dict[str, Any]:
        """What a replay needs to pick up from here: the refunds made so far."""
        return {"refunded": sorted(o for o, r in self.orders.items() if r["refunded"])}

    def search_kb(self, query: str) -> dict[str, Any]:
        text = query.lower()
        for entry in _KB:
            if any(keyword in text for keyword in entry["keywords"]):
                return {k: v for k, v in entry.items() if k != "keywords"}
        return {"article": None}


class _OutOfSteps(Exception):
    pass


class Ticket:
    """What the team knows about the request, passed along with it."""

    def __init__(self, topic: str, request: str, order_id: str | None) -> None:
        self.topic, self.request, self.order_id = topic, request, order_id
        self.order: dict[str, Any] | None = None  # billing's lookup, kept for the next holder
        self.tech_note: str | None = None  # the article tech found, when it sends work back
        self.answer = "unresolved"


class Team:
    """The team's steps, recorded with Oloproof's step recorder within the step budget."""

    def __init__(self, shop: Shop) -> None:
        self.shop = shop
        self.steps = current_case().steps()  # numbers the steps; records them at finish()
        self.steps.checkpoint("start", description="before the first step")

    def _budget(self) -> None:
        if self.steps.last_index >= STEP_LIMIT:
            raise _OutOfSteps

    def say(self, agent: str, **content: Any) -> None:
        self._budget()
        self.steps.message(content, agent=agent)

    def use(self, agent: str, tool: str, **arguments: Any) -> Any:
        self._budget()
        self.steps.tool_call(tool, arguments, agent=agent)
        self._budget()  # no step left to record a result: stop before running the tool
        result = getattr(self.shop, tool)(**arguments)
        self.steps.tool_result(tool, copy.deepcopy(result), agent=agent)
        self.steps.checkpoint(f"after-step-{self.steps.last_index}", kind="tool_result",
                              description=f"after {agent}'s {tool} returned",
                              payload=self.shop.progress())
        return result

    def hand_off(self, agent: str, to: str, reason: str) -> str:
        self._budget()
        self.steps.handoff(to, {"reason": reason}, agent=agent)
        return to

    def finish(self, agent: str, ticket: Ticket, answer: str, reply: str) -> None:
        ticket.answer = answer
        self._budget()
        self.steps.final({"answer": answer, "reply": reply}, agent=agent)


# ---- the agents: each takes the ticket and returns who holds it next (None when done) -----


def triage(team: Team, ticket: Ticket) -> str:
    team.say("triage", topic=ticket.topic, request=ticket.request)
    if ticket.topic == "tech":
        return team.hand_off("triage", "tech", "the customer filed it as a technical problem")
    return team.hand_off("triage", "billing", "the customer filed it as a billing matter")


def billing(team: Team, ticket: Ticket) -> str | None:
    if ticket.order is None:
        ticket.order = team.use("billing", "lookup_order", order_id=ticket.order_id)
    order = ticket.order
    if order.get("paid_via") == "app_store" and ticket.tech_note is None:
        return team.hand_off("billing", "tech", "paid through the app store: tech checks first")
    if order["amount"] > BILLING_REFUND_LIMIT:
        ticket.answer = "escalated"
        return team.hand_off("billing", "person", "above billing's refund limit")
    team.use("billing", "issue_refund", order_id=order["order_id"])
    team.finish("billing", ticket, "refunded", "Your refund is on its way.")
    return None


def tech(team: Team, ticket: Ticket) -> str | None:
    found = team.use("tech", "search_kb", query=ticket.request)
    if found["article"] is None:
        return team.hand_off("tech", "billing", "nothing in the knowledge base: not a tech issue")
    if found["owner"] == "tech":
        team.finish("tech", ticket, "answered", found["text"])
        return None
    if found["article"] == "kb-duplicate-charge" and ticket.order_id:
        # The article says what billing should do; tech does it itself.
        team.use("tech", "issue_refund", order_id=ticket.order_id)
        team.finish("tech", ticket, "refunded", "Your duplicate charge has been refunded.")
        return None
    ticket.tech_note = found["article"]
    return team.hand_off("tech", "billing", f"billing's matter ({found['article']})")


AGENTS = {"billing": billing, "tech": tech}


@system(name="triage-agents", version="example-1", records=("agent_trajectory/v1",))
def run(case_input: dict[str, Any]) -> dict[str, Any]:
    team = Team(Shop())
    ticket = Ticket(case_input["topic"], case_input["request"], case_input.get("order_id"))
    truncated = False
    try:
        holder: str | None = triage(team, ticket)
        while holder in AGENTS:
            holder = AGENTS[holder](team, ticket)
    except _OutOfSteps:
        truncated, ticket.answer = True, "unresolved"

    status: Literal["success", "failure", "unknown"]
    if truncated:
        status = "unknown"
    else:
        status = "success" if ticket.answer in ("refunded", "answered", "escalated") else "failure"
    team.steps.finish(status, truncated=truncated, step_limit=STEP_LIMIT if truncated else None)
    return {"answer": ticket.answer}
