"""Oloproof's benchmarks: the scenarios of `speed/` and `validity/`, run, saved and summarised
by `python -m benchmarks` (benchmarks/README.md)."""
