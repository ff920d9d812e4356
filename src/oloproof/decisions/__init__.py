"""Rules, states, the gate and exit codes."""

from oloproof.decisions.rules import Decision, decide, decide_rule, gate
from oloproof.document import Gate

__all__ = ["Decision", "Gate", "decide", "decide_rule", "gate"]
