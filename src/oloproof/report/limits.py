"""What a run cannot tell you (docs/limits.md), in our words, for the suite that ran.

Every report prints the limits that apply to its suite, and only those: a suite without
metamorphic transforms is not told about transforms nobody declared, a single-agent suite is
not told about blaming an agent.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STATE_KIND = "environment_state/v1"
MULTI_AGENT = frozenset({"agent_route", "agent_tool_permissions", "agent_max_handoffs"})
LENGTH_SLICES = ("trajectory_length", "tool_calls", "repeated_action")

WHY = ("Why the agent acted as it did: a failed case, replay or pair shows what happened or "
       "changed, never the cause.")
LIVE_STATEFUL = ("Anything about a live system: a Stateful system resets a sandbox it owns, not "
                 "production.")
LIVE = ("Anything about a live system: the run called the system as it is configured here, on "
        "these cases.")
SANDBOX = ("Whether the sandbox behaves like production: the checks reach only the sandbox you "
           "wrote.")
LENGTH = ("A trend of errors with length: length and tool-call slices are descriptive, and a "
          "loop is a signal, not an explanation (only a replay without the repeated call could "
          "show it caused a failure).")
BLAME = ("Which agent is to blame: a route divergence shows where two routes part, not who "
         "caused a failure.")
TRIALS = ("How the agent behaves beyond these trials: each case's trials estimate its chance "
          "of passing, never pass^k for k above the trials run; a second run reuses the stored "
          "trials (raise `trials`, or run with --no-cache, to draw new ones).")
JUDGED = ("What people beyond the labellers would say: a judged criterion's corrected rate is "
          "the rate people like the ones who labelled its sample would give, by its rubric as "
          "written, on cases like the suite's; it says nothing of why its judge errs.")
SIMULATED = ("What real users would do: a simulated user is a model (or a function) playing the "
             "persona, goal and facts its case gives; the rates are the agent's with these "
             "simulated users, and an audit passed shows the simulator did not visibly break "
             "down, not that it talks as your users do.")
NO_SANDBOX = ("Anything about a sandbox the engine does not hold: this system has none (it is "
              "not Stateful), so no world it changes was reset, recorded or compared.")

# Every limit, for the docs and for a run stored before limits depended on the suite.
LIMITS: list[str] = [
    WHY, LIVE_STATEFUL, SANDBOX,
    "Faults or transforms nobody declared: only the declared tool faults and transforms are "
    "tried; no model rewrites requests.",
    LENGTH, BLAME,
    "Anything about a sandbox the engine does not hold: a worker runs the system's own "
    "sandbox, and none is provided for a system that has none.",
    TRIALS, JUDGED, SIMULATED,
]


def _undeclared(faults: bool, transforms: bool) -> str | None:
    if faults and transforms:
        return ("Faults or transforms nobody declared: only the declared tool faults and "
                "transforms are tried; no model rewrites requests.")
    if faults:
        return "Faults nobody declared: only the declared tool faults are tried."
    if transforms:
        return ("Transforms nobody declared: only the declared transforms are tried; no model "
                "rewrites requests.")
    return None


def limits_for(suite: Mapping[str, Any]) -> list[str]:
    """The limits of docs/limits.md that apply to this suite (as `describe_suite` stores it)."""
    evaluators = [e.get("type") for e in suite.get("evaluators") or []]
    slices = [str(s) for s in suite.get("slices") or []]
    records = (suite.get("system") or {}).get("records") or []
    # (runs stored before the suite said whether the system is Stateful: by its records)
    stateful = bool(suite.get("stateful")) or STATE_KIND in records
    out = [WHY, LIVE_STATEFUL if stateful else LIVE]
    if stateful:
        out.append(SANDBOX)
    undeclared = _undeclared("fault_recovery" in evaluators, bool(suite.get("transforms")))
    if undeclared:
        out.append(undeclared)
    if "agent_no_tool_loop" in evaluators or any(s.split(":")[0] in LENGTH_SLICES
                                                  for s in slices):
        out.append(LENGTH)
    if MULTI_AGENT & set(evaluators) or "route" in slices:
        out.append(BLAME)
    if not stateful:
        out.append(NO_SANDBOX)
    if int(suite.get("trials", 1)) > 1:
        out.append(TRIALS)
    if suite.get("judges"):
        out.append(JUDGED)
    if suite.get("simulators"):
        out.append(SIMULATED)
    return out
