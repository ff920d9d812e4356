"""Rules, states, the gate and exit codes."""

from oloproof.decisions.rules import Decision, Gate, decide, decide_rule, gate

__all__ = ["Decision", "Gate", "decide", "decide_rule", "gate"]
