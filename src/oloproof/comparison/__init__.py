"""A candidate run against its baseline (docs/compare.md): stored runs read, paired case by case,
and compared per criterion; what changed in the cases that broke."""

from oloproof.comparison.runs import CHANGES_SHOWN, check_comparable, compare_runs, compare_sides
from oloproof.comparison.sides import RunSide, read_side
from oloproof.comparison.stored import compare

__all__ = ["CHANGES_SHOWN", "RunSide", "check_comparable", "compare", "compare_runs",
           "compare_sides", "read_side"]
