"""A simulated user's turn (docs/conversations.md#simulators): what a simulator is asked —
the prompt template filled from the case's user, then the conversation so far
(`SimulatorRequest`) — and what it answers (`SimulatorTurn`, a reply read as one).

A `callable:` simulator is a function `SimulatorRequest -> SimulatorTurn` (sync or async; a
mapping `{"message": ..., "done": ...}` is taken too); a `model:` simulator is sent
`request.messages` and its reply is read as a turn: one JSON object `{"message": "...",
"done": true|false}`, the whole reply or in prose around it or in a fenced block. Both models
are public (`from oloproof import SimulatorRequest, SimulatorTurn`).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from oloproof.placeholders import filled
from oloproof.replies import json_object_in, token_count

#: The prompt a simulator's model is given, when its `simulators:` entry has no `prompt:`
#: (docs/conversations.md#the-prompt-template shows it). `{persona}`, `{goal}` and `{facts}`
#: are filled from the case's user; nothing else in it is a placeholder.
DEFAULT_PROMPT = """\
You are playing the part of a user who is talking to an AI assistant, so that the assistant \
can be tested. Stay in character for the whole conversation, and never say that you are \
playing a part.

Who you are: {persona}

What you want: {goal}

What you know (say it when the assistant asks for it or when you need it; never make up \
anything else):
{facts}

Answer each message of the assistant with one JSON object and nothing else: \
{"message": "what you say next", "done": false}. Keep each message short, as a person typing \
in a chat would. Set "done" to true when you have what you wanted, when it is clear that you \
will not get it, or when the assistant ends the conversation: the message that says done is \
your last."""

#: What stands for the user's persona when its case gives none, and for facts when it has none.
NO_PERSONA = "an ordinary customer"
NO_FACTS = "- (nothing in particular)"
#: The message the simulator's first turn answers (no agent has spoken yet).
OPENING = "(The conversation begins: write your first message to the assistant.)"

#: The JSON schema of a turn, sent as structured output where the endpoint takes it.
TURN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"message": {"type": "string"}, "done": {"type": "boolean"}},
    "required": ["message", "done"],
    "additionalProperties": False,
}


def facts_text(facts: dict[str, Any] | None) -> str:
    """A user's facts as the prompt lists them: `- name: value` a line (a value that is not
    text as compact JSON)."""
    if not facts:
        return NO_FACTS
    lines = []
    for name, value in facts.items():
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                sort_keys=True)
        lines.append(f"- {name}: {shown}")
    return "\n".join(lines)


def instructions(template: str, user: dict[str, Any]) -> str:
    """The simulator's instructions for one case's user: `template` with `{persona}`, `{goal}`
    and `{facts}` filled in (each once, in that order: a value holding a placeholder's name
    stays as it is)."""
    values = {"{persona}": str(user.get("persona") or NO_PERSONA),
              "{goal}": str(user.get("goal") or ""),
              "{facts}": facts_text(user.get("facts"))}
    return filled(template, values)


def simulator_messages(instructions_text: str, conversation: list[dict[str, Any]]
                       ) -> tuple[dict[str, str], ...]:
    """The chat a simulator's model is sent: its instructions, then the conversation from its
    side — the agent's replies as the `user`, its own turns as the `assistant` — opening with
    `OPENING` (the agent has not spoken before the user's first turn)."""
    messages = [{"role": "system", "content": instructions_text},
                {"role": "user", "content": OPENING}]
    for turn in conversation:
        role = "assistant" if turn["role"] == "user" else "user"
        messages.append({"role": role, "content": str(turn["text"])})
    return tuple(messages)


class SimulatorRequest(BaseModel):
    """What a simulator is asked for one turn of one case's user (docs/conversations.md).

    `turn` is the number of the user's turn asked for (1: the first message); `conversation`
    holds the turns so far, `{"role": "user" | "agent", "text": ...}` each; `seed` is the
    case's and trial's (each trial meets a different user, a re-run the same one);
    `instructions` is the prompt template filled from the case, `messages` the chat a model
    simulator is sent.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    simulator: str
    case_id: str
    trial: int = 1
    seed: int
    turn: int
    persona: str | None = None
    goal: str
    facts: dict[str, Any] = Field(default_factory=dict)
    max_turns: int
    conversation: tuple[dict[str, Any], ...] = ()
    instructions: str
    messages: tuple[dict[str, str], ...]
    model: str | None = None
    temperature: float = 0.7


class SimulatorTurn(BaseModel):
    """A simulator's answer: what the user says next, and whether it is the user's last
    (`done`), with (optionally) what the call cost. A token count that is no count is dropped,
    not refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    message: str
    done: bool = False
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    model: str | None = None

    @field_validator("input_tokens", "output_tokens", mode="before")
    @classmethod
    def _count_or_nothing(cls, value: object) -> int | None:
        return token_count(value)


def turn_from_value(value: Any) -> SimulatorTurn | None:
    """A callable's return value (a `SimulatorTurn`, or a mapping shaped like one: `message`
    text, `done` true or false) as a turn, or None when it is not one."""
    if isinstance(value, SimulatorTurn):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("message"), str):
        return None
    if not isinstance(value.get("done", False), bool):
        return None
    try:
        return SimulatorTurn.model_validate(value)
    except ValidationError:
        return None


def turn_from_text(text: str | None) -> SimulatorTurn | None:
    """A model's reply read as a turn: one JSON object `{"message": "...", "done": ...}`
    (prose around it, or a fenced block, tolerated; keys other than those two ignored, as a
    model may add some), or None when it holds none."""
    value = json_object_in(text)
    if not isinstance(value, dict):
        return None
    return turn_from_value({key: value[key] for key in ("message", "done") if key in value})


__all__ = ["DEFAULT_PROMPT", "NO_FACTS", "NO_PERSONA", "OPENING", "TURN_SCHEMA",
           "SimulatorRequest", "SimulatorTurn", "facts_text", "instructions",
           "simulator_messages", "turn_from_text", "turn_from_value"]
