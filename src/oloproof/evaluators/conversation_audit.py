"""The simulator's audit (docs/conversations.md#the-simulator-is-audited-never-trusted): pure
checks over one recorded conversation (`conversation/v1`), beside the evaluators.

A simulated user is not trusted: after each conversation its turns are checked, and a case
whose simulator failed a check is missing for every criterion of the agent, with reason
`simulator:<check>` (`analysis/conversations.py` applies it) — never the agent's failure, and
never dropped from the denominator. The checks, in the order a case's reason names the first:

- `simulator_error`: a call failed after its retries, or its reply was not a turn;
- `ended_early`: its first reply says done, or holds no message — the agent never had a
  conversation;
- `leaked_instructions`: a turn repeats a run of `LEAK_WORDS` or more consecutive words of its
  own instructions (the prompt, goal and facts included);
- `unfaithful`: the `simulator_fidelity` judge failed the conversation (a judge's verdict, not a
  pattern: `analysis/conversations.py` reads it beside these).

A scripted user cannot fail: its turns are the case's own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

SIMULATOR_ERROR = "simulator_error"
ENDED_EARLY = "ended_early"
LEAKED_INSTRUCTIONS = "leaked_instructions"
UNFAITHFUL = "unfaithful"
#: Every check, in the order a case's reason names the first it failed.
CHECKS = (SIMULATOR_ERROR, ENDED_EARLY, LEAKED_INSTRUCTIONS, UNFAITHFUL)
#: The reason an agent's criterion is missing for when the simulator failed `check`.
REASON_PREFIX = "simulator:"
#: How many consecutive words of its instructions a turn must repeat to have leaked them.
LEAK_WORDS = 10

_WORD = re.compile(r"[^\W_]+(?:['’][^\W_]+)*")


def words(text: str) -> list[str]:
    """The words of a text, lowercased, punctuation and spacing aside (`it's` is one word)."""
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


def leaked_run(instructions: str, turns: Sequence[str], length: int = LEAK_WORDS) -> str | None:
    """The first run of `length` consecutive words of `instructions` that one of `turns`
    repeats (as the turn wrote it, lowercased), or None."""
    source = words(instructions)
    runs = {tuple(source[i:i + length]) for i in range(len(source) - length + 1)}
    if not runs:
        return None
    for turn in turns:
        said = words(turn)
        for i in range(len(said) - length + 1):
            run = tuple(said[i:i + length])
            if run in runs:
                return " ".join(run)
    return None


def audit(conversation: dict[str, Any] | None) -> dict[str, str]:
    """The checks a simulated user's conversation failed, each with what shows it (empty: it
    passed them all; a scripted user, or none, is never audited). `unfaithful` is a judge's,
    not here."""
    if not isinstance(conversation, dict) or conversation.get("user") != "simulated":
        return {}
    failed: dict[str, str] = {}
    if conversation.get("ended") == SIMULATOR_ERROR:
        failed[SIMULATOR_ERROR] = str(conversation.get("error") or "the simulator failed")
    turns = [t for t in conversation.get("turns") or () if t.get("role") == "user"]
    if turns:
        first = turns[0]
        if not str(first.get("text") or "").strip():
            failed[ENDED_EARLY] = "its first reply holds no message"
        elif first.get("done"):
            failed[ENDED_EARLY] = "its first reply says done"
    leaked = leaked_run(str(conversation.get("instructions") or ""),
                        [str(t.get("text") or "") for t in turns])
    if leaked is not None:
        failed[LEAKED_INSTRUCTIONS] = f"a turn repeats its instructions: {leaked!r}"
    return failed


def first_failed(failed: Sequence[str]) -> str | None:
    """The check a case's reason names: the first of `failed` in `CHECKS`' order."""
    return next((check for check in CHECKS if check in failed), None)


__all__ = ["CHECKS", "ENDED_EARLY", "LEAKED_INSTRUCTIONS", "LEAK_WORDS", "REASON_PREFIX",
           "SIMULATOR_ERROR", "UNFAITHFUL", "audit", "first_failed", "leaked_run", "words"]
