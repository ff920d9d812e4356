"""Agent evaluators (SPEC §7.2) — being written."""
