"""Suites drawn on the audit's grid for the judged-rate statistics (tests/stats and
benchmarks/validity/judge_interval.py): N cases whose people's verdicts pass at `RATE`, a
judge with a known kind of error, the first n cases sampled (cases are independent draws, so
the first n are a uniform sample), and some sampled cases left without a label."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

RATE = 0.8
JUDGES = ("lenient", "harsh", "case_dependent", "excellent")
MISSING = ("none", "unlabelled", "skips_disagreements")
#: (N, n): cases, and how many of them are sampled for labels
SIZES = ((40, 10), (40, 30), (40, 40), (400, 10), (400, 40), (400, 100), (400, 400),
         (2000, 10), (2000, 40), (2000, 100), (2000, 400))

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Suites:
    """`reps` suites: the people's and the judge's verdicts on every case (reps × N), and
    which of the n sampled cases carry no label (reps × n)."""

    person: BoolArray
    judge: BoolArray
    unlabelled: BoolArray
    n: int

    def one(self, i: int) -> tuple[list[float], list[float], list[float], list[float]]:
        """Suite `i` as `judged_rate_interval` reads it: the judge's value on every case, then per
        sampled case its judge value and the people's lowest and highest value."""
        judge = self.judge[i].astype(float)
        person = self.person[i, : self.n].astype(float)
        gone = self.unlabelled[i]
        return (judge.tolist(), judge[: self.n].tolist(),
                np.where(gone, 0.0, person).tolist(), np.where(gone, 1.0, person).tolist())


def draw(rng: np.random.Generator, judge: str, big_n: int, n: int, reps: int,
         missing: str) -> Suites:
    """Draw `reps` suites (module docstring). Judges: `lenient` passes 35% of what people
    fail; `harsh` fails 30% of what people pass; `case_dependent` is lenient on hard cases and
    harsh on easy ones, more so the further a case is from the middle; `excellent` agrees with
    people on 98% of the cases they pass and 98% of those they fail. Missing: `none`;
    `unlabelled`, a fifth of the sampled cases at random; `skips_disagreements`, a labeller who
    labels a case only where they agree with the judge."""
    person = rng.random((reps, big_n)) < RATE
    noise = rng.random((reps, big_n))
    if judge == "lenient":
        verdict = person | (noise < 0.35)
    elif judge == "harsh":
        verdict = person & (noise >= 0.30)
    elif judge == "case_dependent":
        hardness = rng.random((reps, big_n))
        flip = noise < 0.6 * np.abs(hardness - 0.5)
        verdict = np.where(hardness > 0.5, person | flip, person & ~flip)
    else:
        assert judge == "excellent"
        verdict = np.where(person, noise >= 0.02, noise < 0.02)
    if missing == "none":
        gone = np.zeros((reps, n), dtype=bool)
    elif missing == "unlabelled":
        gone = rng.random((reps, n)) < 0.2
    else:
        assert missing == "skips_disagreements"
        gone = person[:, :n] != verdict[:, :n]
    return Suites(person=person, judge=verdict, unlabelled=gone, n=n)
