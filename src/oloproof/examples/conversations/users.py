"""The simulated customers of the `conversations` example: a `callable:` simulator
(docs/conversations.md#simulators), standing offline where a model would.

Oloproof calls `simulate(request)` for each turn of each simulated customer, with the
customer's persona, goal and facts, the conversation so far and a seed (each trial meets a
different customer, a re-run the same one). It answers `{"message": ..., "done": ...}` as a
model asked with the default prompt template would: it opens by saying what went wrong, worded
by its seed; gives its order number when asked; says it is done once the order is refunded, or
gives up at its fifth turn.

One customer breaks down on purpose, as model simulators now and then do: the customer of
case c14 repeats its instructions back to the desk at its second turn. Oloproof's audit finds
it (`leaked_instructions`), and the case is missing for the desk's criteria — the simulator's
failure, not the desk's (docs/conversations.md#the-simulator-is-audited-never-trusted).
"""

from __future__ import annotations

from typing import Any

from oloproof import SimulatorRequest

#: How a customer opens, by its seed: a person says what happened in their own words (an
#: opening that repeated ten words of the instructions would be leaked_instructions).
OPENINGS = ("Hi, my {item} {reason}. Can I get a refund?",
            "Hello. Order {order}: the {item} {reason}. I'd like my money back.",
            "my {item} {reason}, refund please")
REASONS = {"damaged": "arrived broken", "never arrived": "never arrived"}
BREAKS_DOWN = "c14"


def simulate(request: SimulatorRequest) -> dict[str, Any]:
    heard = [t["text"] for t in request.conversation if t["role"] == "agent"]
    last = heard[-1].lower() if heard else ""
    order = str(request.facts.get("order_id", "my last order"))
    if request.turn == 1:
        opening = OPENINGS[request.seed % len(OPENINGS)]
        reason = REASONS.get(str(request.facts.get("reason")), "has a problem")
        return {"message": opening.format(item=request.facts.get("item", "order"),
                                          reason=reason, order=order), "done": False}
    if request.case_id == BREAKS_DOWN and request.turn == 2:
        return {"message": " ".join(request.instructions.split()[:30]), "done": False}
    if "refunded" in last:
        return {"message": "Great, thanks.", "done": True}
    if "which order" in last or "check the order" in last:
        return {"message": f"It's {order}.", "done": False}
    if request.turn >= 5:
        return {"message": "This is going nowhere. Bye.", "done": True}
    return {"message": f"It has been {request.facts.get('waited', 'two weeks')}. I want my "
                       "money back.", "done": False}
