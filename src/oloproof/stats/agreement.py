"""How far a judge agrees with people on the cases both judged (docs/judges.md): the counts
judge pass/fail × person pass/fail, the agreement rate with its exact interval, and Cohen's κ
as a description.

The agreement rate is the share of labelled cases where judge and person give the same verdict;
its interval is the exact (Clopper–Pearson) interval of
docs/concepts.md#pass-rates-exact-intervals-with-missing-cases, with the sampled cases that lack a
label (or a judge verdict) as missing cases, each resolved the worst way on its side — so an
unfinished review can only widen it. Cohen's κ (Cohen 1960) is `(p_o − p_e) / (1 − p_e)`, the
agreement beyond what two raters with these pass rates would reach by chance; it describes and
never decides (it has no interval here, and is undefined when both always say the same thing).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from oloproof.stats.binomial import RateInterval, rate_interval

__all__ = ["Agreement", "agreement", "cohen_kappa"]


@dataclass(frozen=True)
class Agreement:
    """`both_pass` (judge pass, person pass), `judge_only` (judge pass, person fail),
    `person_only` (judge fail, person pass), `both_fail`; `missing` sampled cases without a
    label or a judge verdict; the agreement rate's interval; κ (None when undefined)."""

    both_pass: int
    judge_only: int
    person_only: int
    both_fail: int
    missing: int
    rate: RateInterval
    kappa: float | None

    @property
    def labelled(self) -> int:
        return self.both_pass + self.judge_only + self.person_only + self.both_fail


def cohen_kappa(both_pass: int, judge_only: int, person_only: int, both_fail: int
                ) -> float | None:
    """Cohen's κ of a 2 × 2 table of verdicts, or None when it is undefined (no case, or
    chance agreement 1: both raters gave one verdict throughout).

    Example: a judge and a person agree on 27 of 30 cases.

    >>> from oloproof.stats import cohen_kappa
    >>> round(cohen_kappa(20, 2, 1, 7), 3)
    0.754
    """
    n = both_pass + judge_only + person_only + both_fail
    if n == 0:
        return None
    observed = (both_pass + both_fail) / n
    judge_pass = (both_pass + judge_only) / n
    person_pass = (both_pass + person_only) / n
    chance = judge_pass * person_pass + (1 - judge_pass) * (1 - person_pass)
    if chance >= 1.0:
        return None
    return (observed - chance) / (1 - chance)


def agreement(pairs: Iterable[tuple[bool, bool]], missing: int, level: float) -> Agreement:
    """The agreement of (judge passed, person passed) pairs, with `missing` sampled cases that
    lack one side (see the module docstring).

    Example: the same 30 cases as pairs (judge passed, person passed).

    >>> from oloproof.stats import agreement
    >>> pairs = [(True, True)] * 20 + [(True, False)] * 2 + [(False, True)] + [(False, False)] * 7
    >>> found = agreement(pairs, 0, 0.95)
    >>> found.rate.estimate, round(found.rate.lower, 3), round(found.kappa, 3)
    (0.9, 0.735, 0.754)
    """
    counts = [0, 0, 0, 0]
    for judge, person in pairs:
        counts[(0 if judge else 2) + (0 if person else 1)] += 1
    both_pass, judge_only, person_only, both_fail = counts
    agreed = both_pass + both_fail
    return Agreement(both_pass, judge_only, person_only, both_fail, missing,
                     rate_interval(agreed, sum(counts), missing, level),
                     cohen_kappa(both_pass, judge_only, person_only, both_fail))
