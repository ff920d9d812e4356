"""Speed scenarios: how long something takes (benchmarks/README.md)."""
