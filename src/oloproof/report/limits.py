"""What a run cannot tell you (SPEC §12), in our words: printed by every report."""

LIMITS: list[str] = [
    "Why the agent acted as it did: a failed replay or pair shows what changed, never the cause.",
    "Anything about a live system: a Stateful system resets a sandbox it owns, not production.",
    "Whether the sandbox behaves like production: the checks reach only the sandbox you wrote.",
    "Faults or transforms nobody declared: only the declared tool faults and transforms are "
    "tried; no model rewrites requests.",
    "A trend of errors with length: length and tool-call slices are descriptive, and a loop is "
    "a signal, not an explanation (only a replay without the repeated call could show it "
    "caused a failure).",
    "Which agent is to blame: a route divergence shows where two routes part, not who caused "
    "a failure.",
    "Anything about a sandbox the engine does not hold: a worker runs the system's own "
    "sandbox, and none is provided for a system that has none.",
]
