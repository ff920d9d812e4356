"""Tokens and cost of one case: the `usage/v1` artifact (docs/traces.md#tokens-and-cost).

A payload holds any of `input_tokens`, `output_tokens` (whole numbers ≥ 0) and `cost` (a
number ≥ 0, in whatever currency the system counts in); a field nobody recorded is absent,
never 0. `current_case().usage(...)` sums into it; under `system.trace: otel` the spans'
`gen_ai.usage.*` attributes give it; a trajectory read from messages that carry their usage
(`oloproof.traces.from_langchain_messages`: `usage_metadata`) brings it along
(`carry_usage`), and recording that trajectory records it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from oloproof.recording.trajectory import AgentTrajectory

USAGE_KIND = "usage/v1"
USAGE_FIELDS = ("input_tokens", "output_tokens", "cost")


def usage_problems(payload: Any) -> list[str]:
    """What makes `payload` not a `usage/v1` payload (empty when it is one)."""
    if not isinstance(payload, Mapping):
        return [f"usage/v1 is an object, not {type(payload).__name__}"]
    problems = [f"unknown field {key!r} (fields: {', '.join(USAGE_FIELDS)})"
                for key in payload if key not in USAGE_FIELDS]
    for key in USAGE_FIELDS:
        if key not in payload:
            continue
        value = payload[key]
        if key == "cost":
            ok = (isinstance(value, int | float) and not isinstance(value, bool)
                  and math.isfinite(value) and value >= 0)
            if not ok:
                problems.append(f"cost must be a number ≥ 0, not {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int) or value < 0:
            problems.append(f"{key} must be a whole number ≥ 0, not {value!r}")
    return problems


def add_usage(total: Mapping[str, Any] | None, more: Mapping[str, Any]) -> dict[str, Any]:
    """`total` with `more` added field by field (a field absent from both stays absent)."""
    out: dict[str, Any] = dict(total or {})
    for key in USAGE_FIELDS:
        if key in more and more[key] is not None:
            out[key] = out.get(key, 0) + more[key]
    return out


def usage_tokens(payload: Mapping[str, Any]) -> int | None:
    """Input plus output tokens, as far as recorded; None when neither was."""
    if "input_tokens" not in payload and "output_tokens" not in payload:
        return None
    return int(payload.get("input_tokens", 0)) + int(payload.get("output_tokens", 0))


# Where a trajectory keeps the usage its messages recorded: beside the model's fields, as its
# facts are kept (never a field: the `agent_trajectory/v1` schema holds none).
_CARRIED = "_carried_usage"


def carry_usage(trajectory: AgentTrajectory, payload: Mapping[str, Any] | None
                ) -> AgentTrajectory:
    """`trajectory`, carrying the `usage/v1` payload its messages recorded (when there is
    one): `current_case().agent_trajectory(trajectory)` records it with the trajectory."""
    if payload:
        trajectory.__dict__[_CARRIED] = dict(payload)
    return trajectory


def carried_usage(trajectory: AgentTrajectory) -> dict[str, Any] | None:
    """The `usage/v1` payload a trajectory carries from its messages, or None."""
    found = trajectory.__dict__.get(_CARRIED)
    return dict(found) if isinstance(found, dict) else None
