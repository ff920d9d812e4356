"""A simulator's failures made missing, and the run's conversations counted
(docs/conversations.md#the-simulator-is-audited-never-trusted).

The audit's checks are pure functions over a recorded conversation
(`evaluators/conversation_audit.py`, computed into the case's facts where it ran), and the
fidelity judge is a criterion of its own (`simulator_fidelity`). Their outcome is applied here,
to the verdicts of a case before it is stored and counted (`audited`): a case whose simulator
failed a check is **missing** for every criterion of the agent, with reason
`simulator:<check>` (the first failed, in the audit's order) — not the agent's failure, and not
excluded: a simulator that breaks down more often when the agent struggles widens the interval,
it never shrinks the denominator. A criterion that never applied to the case (excluded) stays
excluded, and the fidelity criterion, the simulator's own, is left as judged.

`ConversationCounts` is the run's accounting of them: conversations, turns, simulator calls,
failures by check, conversations cut at max_turns, and what the simulators' turns cost.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from oloproof.analysis.ordering import case_order
from oloproof.evaluators.conversation_audit import CHECKS, REASON_PREFIX, UNFAITHFUL, first_failed

if TYPE_CHECKING:
    from oloproof.analysis.outcome import CaseOutcome
    from oloproof.document import Conversations

#: How many case ids the accounting names per failed check (the first, in case order).
NAMED_CASES = 20


def failed_checks(facts: dict[str, Any] | None, codes: str, fidelity: int | None) -> list[str]:
    """The checks a case's simulated user failed: its audit's (in the facts) and `unfaithful`
    when the fidelity judge (the criterion at `fidelity`) failed it."""
    held = (facts or {}).get("conversation")
    if held is None or held.get("user") != "simulated":
        return []
    failed = list(held.get("failed") or ())
    if fidelity is not None and codes[fidelity] == "F":
        failed.append(UNFAITHFUL)
    return [check for check in CHECKS if check in failed]


def audited(codes: str, reasons: Sequence[str | None], facts: dict[str, Any] | None,
            fidelity: int | None) -> tuple[str, tuple[str | None, ...]]:
    """A case's verdicts with its simulator's failure applied (see the module docstring)."""
    check = first_failed(failed_checks(facts, codes, fidelity))
    if check is None:
        return codes, tuple(reasons)
    reason = REASON_PREFIX + check
    new_codes = []
    new_reasons = []
    for at, (code, why) in enumerate(zip(codes, reasons, strict=True)):
        if at == fidelity or code == "X":
            new_codes.append(code)
            new_reasons.append(why)
        else:
            new_codes.append("M")
            new_reasons.append(reason)
    return "".join(new_codes), tuple(new_reasons)


def simulator_reason(facts: dict[str, Any] | None, codes: str,
                     fidelity: int | None) -> str | None:
    """`simulator:<check>` when the case's simulator failed a check (its quantile values are
    then missing for that reason too), else None."""
    check = first_failed(failed_checks(facts, codes, fidelity))
    return None if check is None else REASON_PREFIX + check


class ConversationCounts:
    """The run's conversations, counted as their outcomes come in (one execution each)."""

    def __init__(self, fidelity: int | None) -> None:
        self.fidelity = fidelity
        self.conversations = 0
        self.simulated = 0
        self.turns = 0
        self.agent_turns = 0
        self.calls = 0
        self.truncated = 0
        self.failed: Counter[str] = Counter()
        self.cases: dict[str, list[str]] = {}
        self.usage: dict[str, float] = {}

    def add(self, outcome: CaseOutcome) -> None:
        held = (outcome.facts or {}).get("conversation")
        if held is None:
            return
        self.conversations += 1
        self.turns += int(held.get("turns") or 0)
        self.agent_turns += int(held.get("agent_turns") or 0)
        self.truncated += bool(held.get("truncated"))
        if held.get("user") != "simulated":
            return
        self.simulated += 1
        if not outcome.cached:  # (a cached execution's calls were another run's)
            self.calls += int(held.get("calls") or 0)
        for key, value in (held.get("usage") or {}).items():
            self.usage[key] = self.usage.get(key, 0) + value
        check = first_failed(failed_checks(outcome.facts, outcome.codes, self.fidelity))
        if check is not None:
            self.failed[check] += 1
            # the first cases in case order, whatever order they finished in
            named = self.cases.setdefault(check, [])
            if outcome.case_id not in named:
                named.append(outcome.case_id)
                named.sort(key=case_order)
                del named[NAMED_CASES:]

    def document(self) -> Conversations | None:
        """The run document's `conversations`, or None for a run without any."""
        if not self.conversations:
            return None
        from oloproof.document import Conversations

        return Conversations(
            conversations=self.conversations, simulated=self.simulated, turns=self.turns,
            agent_turns=self.agent_turns, simulator_calls=self.calls,
            truncated=self.truncated,
            failures={check: self.failed[check] for check in CHECKS if self.failed[check]},
            failed_cases={check: self.cases[check] for check in CHECKS if check in self.cases})


__all__ = ["NAMED_CASES", "ConversationCounts", "audited", "failed_checks", "simulator_reason"]
