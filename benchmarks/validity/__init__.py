"""Validity scenarios: coverage and power of the statistics, by simulation or exact sums
(benchmarks/README.md)."""
