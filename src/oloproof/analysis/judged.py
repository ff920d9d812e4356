"""A judge criterion's row (docs/judges.md#what-a-judged-criterion-reports): the judge checked
against people's labels, and the rate as people would judge it.

While a run's cases come in, `JudgedCases` keeps, of the cases the labels' sample drew, what
the judge said and the digest of what it was shown (a label counts only where the run showed
the same text). `calibrate` then turns the criterion's row — the judge's raw pass rate — into:

- with no labels yet, or fewer than `MIN_LABELLED` labelled sampled cases: the raw rate,
  marked `uncalibrated` (every rule on it is INSUFFICIENT_EVIDENCE, `judge_not_checked`);
- otherwise the judge-vs-people counts, the agreement with its exact interval, κ, and two
  intervals for the rate as people would judge it (`stats.judged_rate_interval`): the
  corrected one, stratified by the judge's verdicts on every case (PPI++ where the policy
  allows approximate methods and the labels are many), and the labels' own; the criterion's
  `correction` says which is the row's, the one its rules decide on. When the agreement's exact
  lower bound is below `minimum_agreement`, `disagrees` (rules are MANUAL_REVIEW,
  `judge_disagrees_with_people`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

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
    correction: str = "judge"  # which interval the rules decide on: judge | people_only
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


@dataclass
class _Sampled:
    """Per sampled case (in the sample's order): the judge's value (its share of the case's
    trials it passed; a trial without a verdict counts as not passed), the people's lowest
    and highest value (their share of the trials they passed, an unlabelled trial each way),
    the case's agreement share's bounds, and whether every trial carries both a label and a
    verdict; the (judge, person) pairs of the trials that do, and how many sampled trials
    lack one or the other."""

    judge: list[float] = field(default_factory=list)
    low: list[float] = field(default_factory=list)
    high: list[float] = field(default_factory=list)
    shares: list[tuple[float, float]] = field(default_factory=list)
    checked: int = 0
    pairs: list[tuple[bool, bool]] = field(default_factory=list)
    unknown: int = 0


def _sampled_values(judged: JudgedCases) -> _Sampled:
    labels = judged.spec.labels
    out = _Sampled()
    for case_id in judged.spec.sampled or ():
        seen = judged.seen.get(case_id)
        if seen is None:
            continue
        trials = [(code, shown) for code, shown in seen.trials if code != "X"]
        if not trials:
            continue
        passes, lows, highs, agreed, open_ = 0, 0, 0, 0, 0
        for code, shown in trials:
            person = labels.get((case_id, shown)) if shown is not None else None
            judge = None if code not in ("P", "F") else code == "P"
            passes += judge is True
            lows += person is True
            highs += person is not False
            if person is not None and judge is not None:
                out.pairs.append((judge, person))
                agreed += judge == person
            else:
                out.unknown += 1
                open_ += 1
        k = len(trials)
        out.judge.append(passes / k)
        out.low.append(lows / k)
        out.high.append(highs / k)
        out.shares.append((agreed / k, (agreed + open_) / k))
        out.checked += open_ == 0
    return out


def calibrate(row: RateRow, judged: JudgedCases, judge_low: npt.NDArray[np.float64],
              level: float, trials: int, approximate: bool = False) -> None:
    """Turn a judge criterion's raw row into what it reports (see the module docstring).
    `judge_low` is each counted case's judge value (a missing verdict as a fail);
    `approximate`: the policy allows approximate methods (PPI++ where the labels are many)."""
    from oloproof.document import JudgeCalibration
    from oloproof.stats import agreement, bentkus_interval, judged_rate_interval, rate_interval

    spec = judged.spec
    values = _sampled_values(judged)
    counts = agreement(values.pairs, 0, level)
    calibration = JudgeCalibration(
        judge=spec.judge, status="uncalibrated", minimum_agreement=spec.minimum_agreement,
        correction="people_only" if spec.correction == "people_only" else "judge",
        sampled=len(values.judge), labelled=counts.labelled, both_pass=counts.both_pass,
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
    if values.checked < MIN_LABELLED:
        calibration.why = (f"{values.checked} labelled sampled case(s) for this run's text; "
                           f"at least {MIN_LABELLED} are needed")
        return
    shares = values.shares
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
        rate = agreement(values.pairs, values.unknown, level).rate
        agree = (rate.estimate, rate.lower, rate.upper, rate.method)
    calibration.agreement, calibration.agreement_lower, calibration.agreement_upper = agree[:3]
    calibration.agreement_method = agree[3]
    judged_as = judged_rate_interval(judge_low, values.judge, values.low, values.high, level,
                                     approximate)
    calibration.corrected_estimate = judged_as.estimate
    calibration.corrected_lower, calibration.corrected_upper = (judged_as.lower,
                                                                judged_as.upper)
    calibration.corrected_method = judged_as.method
    calibration.corrected_approximate = judged_as.approximate
    calibration.people_estimate = judged_as.people_estimate
    calibration.people_lower, calibration.people_upper = (judged_as.people_lower,
                                                          judged_as.people_upper)
    calibration.people_method = judged_as.people_method
    calibration.width_saved = ((judged_as.people_upper - judged_as.people_lower)
                               - (judged_as.upper - judged_as.lower))
    if not judged_as.approximate:
        calibration.stratified_lower = judged_as.judge_lower
        calibration.stratified_upper = judged_as.judge_upper
        calibration.safeguard = judged_as.share
    lower = calibration.agreement_lower
    calibration.status = "checked" if lower is not None and lower >= spec.minimum_agreement \
        else "disagrees"
    if calibration.correction == "judge":
        row.estimate, row.lower, row.upper, row.method = (
            judged_as.estimate, judged_as.lower, judged_as.upper, judged_as.method)
        row.approximate = judged_as.approximate
    else:
        row.estimate, row.lower, row.upper, row.method = (
            judged_as.people_estimate, judged_as.people_lower, judged_as.people_upper,
            judged_as.people_method)


def binary_values(passed: int, observed: int, missing: int) -> npt.NDArray[np.float64]:
    """Each counted case's judge value from a row's counts (one trial): 1 for a pass, 0 for a
    fail or a missing verdict."""
    import numpy as np

    return np.concatenate([np.ones(passed), np.zeros(observed - passed), np.zeros(missing)])


def specs_of(criteria: Sequence[str], described: dict[str, object]) -> dict[int, JudgeSpec]:
    """The judge criteria of a stored suite description (`project.describe.describe_suite`)."""
    from oloproof.suite.judge_labels import JudgeLabels

    specs: dict[int, JudgeSpec] = {}
    for name, body in described.items():
        if name not in criteria or not isinstance(body, dict):
            continue
        spec = JudgeSpec(criteria.index(name), str(body.get("judge")),
                         float(body.get("minimum_agreement", 0.8)),
                         str(body.get("correction", "judge")))
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
