"""Multi-agent evaluators (SPEC §7.3) — being written."""
