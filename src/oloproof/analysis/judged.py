"""A judge criterion's row (docs/judges.md#what-a-judged-criterion-reports): the judge checked
against people's labels, and the rate as people would judge it.

While a run's cases come in, `JudgedCases` keeps, of the cases the labels' sample drew, what
the judge said and the digest of what it was shown (a label counts only where the run showed
the same text). `calibrate` then turns the criterion's row — the judge's raw pass rate — into:

- with no labels yet, or fewer than `MIN_LABELLED` labelled sampled cases: the raw rate,
  marked `uncalibrated` (every rule on it is INSUFFICIENT_EVIDENCE, `judge_not_checked`);
- otherwise the judge-vs-people counts, the agreement with its exact interval, κ, and the
  prediction-powered rate (`stats.prediction_powered`) in place of the raw one; when the
  agreement's exact lower bound is below `minimum_agreement`, `disagrees` (rules are
  MANUAL_REVIEW, `judge_disagrees_with_people`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oloproof.analysis.ordering import digest_order
from oloproof.analysis.outcome import CaseOutcome

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from oloproof.document import RateRow

#: The least number of labelled sampled cases before a judge's verdicts decide anything.
MIN_LABELLED = 10


@dataclass
class JudgeSpec:
    """A judge criterion as the analysis reads it: its position, its judge and bar, and the
    labels the run took (None: the criterion names no labels file)."""

    criterion: int
    judge: str
    minimum_agreement: float
    sampled: list[str] | None = None
    labels: dict[tuple[str, str], bool] = field(default_factory=dict)
    # Why the labels file does not count (it does not exist yet, or was drawn from another
    # set of cases), in words; None when it counts or there is none.
    unusable: str | None = None


@dataclass
class _Seen:
    digest: str | None
    trials: list[tuple[str, str | None]] = field(default_factory=list)  # (code, shown digest)


class JudgedCases:
    """What the judge said on each sampled case of one judge criterion, trial by trial."""

    def __init__(self, spec: JudgeSpec) -> None:
        self.spec = spec
        self.sampled = frozenset(spec.sampled or ())
        self.seen: dict[str, _Seen] = {}

    def add(self, outcome: CaseOutcome) -> None:
        if outcome.case_id not in self.sampled or outcome.source is not None:
            return
        i = self.spec.criterion
        shown = outcome.shown[i] if outcome.shown is not None and i < len(outcome.shown) \
            else None
        seen = self.seen.get(outcome.case_id)
        if seen is None:
            seen = self.seen[outcome.case_id] = _Seen(outcome.digest)
        seen.trials.append((outcome.codes[i], shown))


def _sampled_values(judged: JudgedCases) -> tuple[list[float], list[float], list[tuple[bool, bool]],
                                                  list[tuple[float, float]], int]:
    """Per sampled case (in digest order): the rectifier's lowest and highest value (the mean
    over its trials), the (judge, person) pairs, each case's agreement share's bounds, and how
    many sampled trials lack a label or a verdict."""
    labels = judged.spec.labels
    low: list[float] = []
    high: list[float] = []
    pairs: list[tuple[bool, bool]] = []
    shares: list[tuple[float, float]] = []
    unknown = 0
    ids = [case_id for case_id in judged.spec.sampled or () if case_id in judged.seen]
    for case_id in digest_order(ids):
        trials = [(code, shown) for code, shown in judged.seen[case_id].trials if code != "X"]
        if not trials:
            continue
        lows, highs, agreed, open_ = 0.0, 0.0, 0, 0
        for code, shown in trials:
            person = labels.get((case_id, shown)) if shown is not None else None
            judge = None if code not in ("P", "F") else code == "P"
            if person is not None and judge is not None:
                pairs.append((judge, person))
                delta = float(person) - float(judge)
                lows += delta
                highs += delta
                agreed += judge == person
                continue
            unknown += 1
            open_ += 1
            # A side not known is resolved the worst way on each side of the rectifier.
            lows += (float(person) if person is not None else 0.0) - \
                (float(judge) if judge is not None else 1.0)
            highs += (float(person) if person is not None else 1.0) - \
                (float(judge) if judge is not None else 0.0)
        k = len(trials)
        low.append(lows / k)
        high.append(highs / k)
        shares.append((agreed / k, (agreed + open_) / k))
    return low, high, pairs, shares, unknown


def calibrate(row: RateRow, judged: JudgedCases, judge_low: npt.NDArray[np.float64],
              judge_high: npt.NDArray[np.float64], level: float, trials: int) -> None:
    """Turn a judge criterion's raw row into what it reports (see the module docstring).
    `judge_low` / `judge_high` are each counted case's lowest and highest judge value."""
    import numpy as np

    from oloproof.document import JudgeCalibration
    from oloproof.stats import (
        agreement,
        bentkus_interval,
        prediction_powered_interval,
        rate_interval,
    )

    spec = judged.spec
    low, high, pairs, shares, unknown = _sampled_values(judged)
    counts = agreement(pairs, 0, level)
    calibration = JudgeCalibration(
        judge=spec.judge, status="uncalibrated", minimum_agreement=spec.minimum_agreement,
        sampled=len(low), labelled=counts.labelled, both_pass=counts.both_pass,
        judge_only=counts.judge_only, person_only=counts.person_only,
        both_fail=counts.both_fail, kappa=counts.kappa,
        raw_estimate=row.estimate, raw_lower=row.lower, raw_upper=row.upper,
        raw_method=row.method)
    row.judge = calibration
    if spec.sampled is None:
        calibration.why = "no labels file: the criterion names none (labels:)"
        return
    if spec.unusable is not None:
        calibration.why = spec.unusable
        return
    labelled_cases = sum(1 for a, b in zip(low, high, strict=True) if a == b)
    if labelled_cases < MIN_LABELLED:
        calibration.why = (f"{labelled_cases} labelled sampled case(s) for this run's text; "
                           f"at least {MIN_LABELLED} are needed")
        return
    binary = all(a in (0.0, 1.0) and b in (0.0, 1.0) for a, b in shares)
    if trials > 1 and not binary:  # cases' shares of agreeing trials: over cases
        share = bentkus_interval([s[0] for s in shares], [s[1] for s in shares], level)
        agree = (share.estimate, share.lower, share.upper, share.method)
    elif trials > 1:  # every case's trials all agree or all disagree: exact over cases
        rate = rate_interval(sum(1 for a, b in shares if a == b == 1.0),
                             sum(1 for a, b in shares if a == b),
                             sum(1 for a, b in shares if a != b), level)
        agree = (rate.estimate, rate.lower, rate.upper, rate.method)
    else:
        rate = agreement(pairs, unknown, level).rate
        agree = (rate.estimate, rate.lower, rate.upper, rate.method)
    calibration.agreement, calibration.agreement_lower, calibration.agreement_upper = agree[:3]
    calibration.agreement_method = agree[3]
    ppi = prediction_powered_interval(judge_low, judge_high, np.asarray(low),
                                      np.asarray(high), level)
    calibration.judge_lower, calibration.judge_upper = ppi.judge_lower, ppi.judge_upper
    calibration.rectifier = ppi.rectifier_estimate
    calibration.rectifier_lower = ppi.rectifier_lower
    calibration.rectifier_upper = ppi.rectifier_upper
    lower = calibration.agreement_lower
    calibration.status = "checked" if lower is not None and lower >= spec.minimum_agreement \
        else "disagrees"
    row.estimate, row.lower, row.upper, row.method = (ppi.estimate, ppi.lower, ppi.upper,
                                                      ppi.method)


def binary_values(passed: int, observed: int, missing: int
                  ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.float64]]:
    """Each case's lowest and highest judge value from a row's counts (one trial)."""
    import numpy as np

    low = np.concatenate([np.ones(passed), np.zeros(observed - passed), np.zeros(missing)])
    high = np.concatenate([np.ones(passed), np.zeros(observed - passed), np.ones(missing)])
    return low, high


def specs_of(criteria: Sequence[str], described: dict[str, object]) -> dict[int, JudgeSpec]:
    """The judge criteria of a stored suite description (`project.describe.describe_suite`)."""
    from oloproof.suite.judge_labels import JudgeLabels

    specs: dict[int, JudgeSpec] = {}
    for name, body in described.items():
        if name not in criteria or not isinstance(body, dict):
            continue
        spec = JudgeSpec(criteria.index(name), str(body.get("judge")),
                         float(body.get("minimum_agreement", 0.8)))
        stored = body.get("labels")
        if isinstance(stored, dict):
            labels = JudgeLabels.from_json(stored)
            if labels.missing:
                spec.sampled = []
                spec.unusable = f"the labels file {labels.path} does not exist yet"
            elif labels.stale is not None:
                spec.sampled = []
                spec.unusable = labels.stale
            else:
                spec.sampled = labels.sampled
                spec.labels = labels.labels
        specs[spec.criterion] = spec
    return specs
