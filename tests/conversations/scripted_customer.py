"""A scripted customer: what the scripted OpenAI-compatible server (tests/judges/
scripted_openai.py) answers a simulator's request with, and what a `callable:` simulator
built on it answers — the same turn, the same token counts, so both give the same figures.

It reads what a model would: the simulator's instructions (the default prompt template,
docs/conversations.md#the-prompt-template) and the conversation so far. Markers in the goal
script what a real simulator does wrong:

- `[done-first]`: the first reply says done; `[empty-first]`: it holds no message;
- `[leak]`: the second turn repeats the first 14 words of its instructions;
- `[garbage]`: every reply is prose with no turn in it; `[fenced]`: a fenced ```json block;
  `[prose]`: the object inside a sentence; `[empty-later]`: the second turn is empty and not
  done;
- `[never-done]`: never says done (a conversation cut at max_turns);
- `[turns=N]`: says done at its Nth turn, whatever the agent says (the benchmark's);
- `[fails-when-refused]`: breaks down (an empty reply that is not done, not a turn) when the
  agent refuses it — a simulator whose failures follow the agent's;
- the server alone: `[429]`, `[500]`, `[trickle]`, `[slow]`, and the hostile replies
  `[echo-key]`, `[long-reason]`, `[surrogate]`, `[bad-usage]` (see scripted_openai.py).

Otherwise the customer opens with its goal (worded by its seed: each trial meets a different
customer), gives its order id when asked, and is done once the agent says it is refunded (or
after four turns, thanking it anyway).
"""

from __future__ import annotations

import json
import re
from typing import Any

#: The openings a customer picks from, by its seed.
OPENINGS = ("Hi, I need help: {goal}", "Hello. {goal}", "Quick one: {goal}")


def _instructions(messages: list[dict[str, Any]]) -> str:
    return str(messages[0].get("content") or "") if messages else ""


def _goal(instructions: str) -> str:
    found = re.search(r"^What you want: (.*)$", instructions, re.MULTILINE)
    return found.group(1) if found else ""


def _fact(instructions: str, name: str) -> str | None:
    found = re.search(rf"^- {re.escape(name)}: (.*)$", instructions, re.MULTILINE)
    return found.group(1) if found else None


def customer_turn(messages: list[dict[str, Any]], seed: int) -> dict[str, Any]:
    """The customer's next turn `{"message", "done"}` for a simulator's `messages` (its
    instructions, the opening, then the conversation from its side)."""
    instructions = _instructions(messages)
    goal = _goal(instructions)
    said = [m for m in messages[2:] if m.get("role") == "assistant"]
    heard = [m for m in messages[2:] if m.get("role") == "user"]
    turn = len(said) + 1
    last = str(heard[-1].get("content") or "") if heard else ""
    if turn == 1:
        if "[done-first]" in goal:
            return {"message": "Never mind, bye.", "done": True}
        if "[empty-first]" in goal:
            return {"message": "", "done": False}
        clean = re.sub(r"\s*\[[^\]]*\]", "", goal)
        return {"message": OPENINGS[seed % len(OPENINGS)].format(goal=clean), "done": False}
    if "[leak]" in goal and turn == 2:
        return {"message": " ".join(instructions.split()[:14]), "done": False}
    if "[empty-later]" in goal and turn == 2:
        return {"message": "", "done": False}
    if "[fails-when-refused]" in goal and "cannot" in last.lower():
        return {"message": "   ", "done": False}
    wanted = re.search(r"\[turns=(\d+)\]", goal)
    if wanted is not None:
        return {"message": f"turn {turn}", "done": turn >= int(wanted.group(1))}
    never = "[never-done]" in goal
    if "refunded" in last.lower() and not never:
        return {"message": "Thanks, that's all.", "done": True}
    if "order" in last.lower():
        return {"message": f"It's {_fact(instructions, 'order_id') or 'my last order'}.",
                "done": False}
    if turn >= 4 and not never:
        return {"message": "Thanks anyway.", "done": True}
    return {"message": "Can you help me with that?", "done": False}


def reply_text(messages: list[dict[str, Any]], seed: int) -> str:
    """The turn as a model writes it: JSON, or as the goal's markers ask (prose, fenced)."""
    goal = _goal(_instructions(messages))
    if "[garbage]" in goal:
        return "I am not sure what to say here, to be honest."
    body = json.dumps(customer_turn(messages, seed))
    if "[fenced]" in goal:
        return f"```json\n{body}\n```"
    if "[prose]" in goal:
        return f"Sure, here is my reply: {body} (hope that helps)"
    return body


def tokens(messages: list[dict[str, Any]]) -> tuple[int, int]:
    """What the server counts a request and its reply as (a callable says the same)."""
    text = "\n".join(str(m.get("content") or "") for m in messages)
    return len(text) // 4, 9


def is_simulator_request(body: dict[str, Any]) -> bool:
    """Whether a chat completion request is a simulator's (its system message is the default
    prompt template's)."""
    messages = body.get("messages") or []
    return bool(messages) and messages[0].get("role") == "system" and \
        "You are playing the part of a user" in str(messages[0].get("content") or "")


def simulate(request: Any) -> dict[str, Any]:
    """A `callable:` simulator answering as the server does (`SimulatorRequest` -> turn)."""
    messages = [dict(m) for m in request.messages]
    turn = customer_turn(messages, request.seed)
    if "[garbage]" in request.goal:
        return {"nothing": "to say"}
    given, said = tokens(messages)
    return {**turn, "input_tokens": given, "output_tokens": said}
