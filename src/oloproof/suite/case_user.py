"""A case's `user` (docs/conversations.md#a-case-with-a-user): the person the system holds a
conversation with, scripted (`turns`) or simulated (`simulator` with `persona`, `goal`,
`facts`, `max_turns`), checked when the dataset is read.
"""

from __future__ import annotations

from typing import Any

#: The keys of a scripted user and of a simulated one.
SCRIPTED_KEYS = ("turns",)
SIMULATED_KEYS = ("simulator", "persona", "goal", "facts", "max_turns")
#: The most turns a conversation may be given (a user's turns; as many agent replies).
MAX_TURNS = 1000


def user_problem(user: Any) -> str | None:
    """Why `user` is not a case's user, in words that say what to write, or None."""
    if not isinstance(user, dict):
        return ('user must be an object: {"turns": [...]} (a scripted user) or {"simulator": '
                'NAME, "goal": ...} (a simulated one)')
    if "turns" in user:
        return _scripted_problem(user)
    if "simulator" in user:
        return _simulated_problem(user)
    return ('user needs "turns" (the scripted user\'s messages, in order) or "simulator" (the '
            '`simulators:` entry that plays the user)')


def _scripted_problem(user: dict[str, Any]) -> str | None:
    other = [k for k in user if k not in SCRIPTED_KEYS]
    if other:
        return (f"a scripted user has only turns, not {other[0]!r} (persona, goal and facts are "
                "for a simulated user: give \"simulator\" instead of \"turns\")")
    turns = user["turns"]
    if not isinstance(turns, list) or not turns:
        return "user.turns must be a non-empty list of the user's messages, in order"
    if len(turns) > MAX_TURNS:
        return f"user.turns has {len(turns)} turns; at most {MAX_TURNS}"
    for at, turn in enumerate(turns):
        if not isinstance(turn, str) or not turn.strip():
            return f"user.turns[{at}] must be a non-empty string (a message of the user)"
    return None


def _simulated_problem(user: dict[str, Any]) -> str | None:
    other = [k for k in user if k not in SIMULATED_KEYS]
    if other:
        return (f"unknown key {other[0]!r} in a simulated user; a simulated user takes "
                + ", ".join(SIMULATED_KEYS))
    name = user["simulator"]
    if not isinstance(name, str) or not name:
        return "user.simulator must name a `simulators:` entry of oloproof.yaml"
    goal = user.get("goal")
    if not isinstance(goal, str) or not goal.strip():
        return ("user.goal must be a non-empty string: what the simulated user wants from the "
                "conversation")
    persona = user.get("persona")
    if persona is not None and (not isinstance(persona, str) or not persona.strip()):
        return "user.persona must be a non-empty string (who the user is, in a few words)"
    facts = user.get("facts")
    if facts is not None and not isinstance(facts, dict):
        return "user.facts must be an object: what the user knows, by name"
    max_turns = user.get("max_turns")
    if max_turns is not None and (isinstance(max_turns, bool) or not isinstance(max_turns, int)
                                  or not 1 <= max_turns <= MAX_TURNS):
        return (f"user.max_turns must be a whole number from 1 to {MAX_TURNS} (the most turns "
                "the user takes before the conversation is cut)")
    return None


__all__ = ["MAX_TURNS", "SCRIPTED_KEYS", "SIMULATED_KEYS", "user_problem"]
