"""A rate as people would judge it, from a judge's verdicts on every case and people's labels on
a uniform sample: stratified by the judge's verdict, and never much wider than the labels alone
(docs/judges.md#the-corrected-interval-in-a-users-words).

The estimand is the rate people would give over the population the cases are drawn from, as for
every other rate. The judge is a covariate: each case falls in the *pass* stratum when the judge
passed it (with repeated trials, at least half its trials; a case without a verdict falls in
the *fail* stratum), so with ``π`` the share of the pass stratum and ``q₁``, ``q₀`` the rate
people would give within each stratum,

    p = π q₁ + (1 − π) q₀.

Nothing here assumes the judge is right: a stratum is only a set of cases, and a poor judge
only makes the strata less useful. The estimate reads ``π`` from all ``N`` cases and ``q₁``,
``q₀`` from the labelled sampled cases of each stratum (the post-stratified estimate: for a
judge that says pass or fail it is the difference estimate ``mean(Y − λJ) + λ·mean_N(J)`` with
the best ``λ`` for the data).

**The judge-based interval** (each side at an error ``a``). Three exact one-sided tests, one per
parameter: the judge's pass count over the ``N`` cases (``Binomial(N, π)``), and within each
stratum the people's passes among its sampled cases (``Binomial(m_s, q_s)``; with repeated
trials, per-case shares and the bound of ``stats.bentkus``). Given the judge's verdicts the
strata's tests are independent of each other, and the judge's count test is a function of those
verdicts, so at the true ``θ = (π, q₁, q₀)`` the three p-values are super-uniform, the strata's
independent given the count's. For the lower bound they are combined by a weighted
inverse-normal (Stouffer–Liptak) sum in which each test counts only its evidence on the tested
side, ``S = Σ w_s max(0, Φ⁻¹(1 − P_s))``, with weights ``w_s(θ)`` proportional to each
parameter's share of the estimate's standard error at ``θ`` (unit length; fixed by ``θ``, ``N``
and the sample's size, never by the data, so the sequence of conditional bounds below holds);
``c`` is the largest ``1 − a'`` quantile of ``Σ w_s max(0, Z_s)`` for independent standard
normals over every unit weight vector (computed by quadrature, ``critical_value``). ``θ`` is kept
when ``S < c`` and the three tests' two-sided scores ``max(0, Φ⁻¹(1 − P_s⁺), Φ⁻¹(1 − P_s⁻))``
have a sum of squares at most the ``χ²₃`` quantile at a twentieth of ``a`` (so the search
below cannot trade one test's evidence against another's far from the data). The true ``θ`` is
kept with probability at least ``1 − a``: each ``max(0, Φ⁻¹(1 − P))`` of a super-uniform ``P``
is stochastically below ``max(0, Z)`` (and the two-sided score below ``|Z|``). The lower bound
is the least ``π q₁ + (1 − π) q₀`` over the ``θ`` kept, found by a branch-and-bound search
over boxes of ``θ`` on a grid of 4,097 points per parameter spanning what the two-sided scores
allow: a box is dropped only where a bound that holds over the whole box rules it out, and the
figure returned is the least value of the estimand over the boxes left — so the search never
reports a bound above the set's least value (it is below it by at most the grid's spacing,
about 2e-4 with 30 labels, 5e-5 with 400). The upper bound is the lower bound of the mirrored
labels (``1 − Y``). The result depends on the cases only through the counts (or sums) per
stratum: deterministic, and independent of the cases' order. A sampled case without a label
counts as a fail in the one-sided tests and as a pass in the two-sided scores' other side —
the least each score could be — so a box is kept if any resolution of the missing labels could
keep it.

**The safeguard.** The interval reported is the intersection of the labels' own interval (the
exact interval of the labelled sampled cases, the worst way for those unlabelled —
Clopper–Pearson, or Bentkus with repeated trials) at error ``α(1 − ε)`` and the judge-based
interval at error ``αε`` (each split evenly between its sides): by the union bound both hold
together with probability at least ``1 − α``. Where they do not meet (both cannot hold) the
labels' interval is reported. ``ε`` is fixed by the level (``safeguard_share``) so that the
labels' interval at ``α(1 − ε)`` is at most 1.05× as wide as at ``α``: the reported interval is
never more than 1.05× the width of the labels alone, in any setting
(docs/judges.md#never-much-wider-than-the-labels-alone); where the judge helps it is narrower.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from oloproof.stats._checks import check_level, tail_probabilities
from oloproof.stats._lazy import scipy_special
from oloproof.stats.bentkus import BENTKUS_METHOD, bentkus_interval
from oloproof.stats.binomial import RATE_METHOD, rate_interval
from oloproof.stats.ppi_plus import ppi_plus_applies, ppi_plus_interval
from oloproof.stats.stratified_bounds import stratified_bounds

__all__ = [
    "STRATIFIED_METHOD",
    "JudgedRate",
    "judged_rate_interval",
    "safeguard_share",
    "stratified_bounds",
]

STRATIFIED_METHOD = "stratified_by_verdict"

#: The most the reported interval may be wider than the labels' own (the safeguard's bound).
WIDTH_BOUND = 1.05
FloatArray = npt.NDArray[np.float64]


def safeguard_share(level: float) -> float:
    """``ε``: the share of the error the judge-based interval gets, ``1 − (α/2)^{1/20}`` —
    0.168 at 95% (docs/judges.md#never-much-wider-than-the-labels-alone).

    With it, each end of the labels' exact interval at error ``α(1 − ε)`` lies at most 1.05×
    as far from the labels' estimate as at ``α``: where the labels are all passes (or all
    fails) the far end is ``1 − (α/2)^{1/n}``, whose distance grows with the log of the tail,
    and ``log(α(1 − ε)/2) / log(α/2) = 1.05`` exactly; elsewhere the tails are lighter. Where
    the normal approximation holds the ratio is that of the normal quantiles, which is below
    1.05 for every level from about 80.6%: below that level ``ε`` is lowered until it holds.

    >>> round(safeguard_share(0.95), 4), round(safeguard_share(0.99), 4)
    (0.1684, 0.2327)
    """
    alpha = tail_probabilities(level)[0]
    share = 1.0 - float((alpha / 2.0) ** (1.0 / 20.0))
    return min(share, _normal_share(alpha))


@lru_cache(maxsize=64)
def _normal_share(alpha: float) -> float:
    """The largest ``ε`` with ``Φ⁻¹(1 − α(1 − ε)/2) ≤ 1.05 Φ⁻¹(1 − α/2)`` (1 when any)."""
    special = scipy_special()
    z = -float(special.ndtri(alpha / 2.0))
    if z <= 0.0:
        return 1.0
    tail = float(special.ndtr(-WIDTH_BOUND * z))
    return max(0.0, 1.0 - 2.0 * tail / alpha)


# ---- the reported rate ----------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedRate:
    """The rate as people would judge it, with the labels' own interval beside it.

    ``estimate``/``lower``/``upper``/``method`` are what the criterion reports;
    ``people_*`` the labels alone at the same level (Clopper–Pearson, or Bentkus with
    repeated trials); ``judge_lower``/``judge_upper`` the judge-based interval at the
    safeguard's share ``share`` of the error (None where it ruled out everything);
    ``passed``/``cases`` the pass stratum over all cases, and per stratum the sampled cases
    and those labelled.
    """

    estimate: float | None
    lower: float
    upper: float
    method: str
    approximate: bool
    people_estimate: float | None
    people_lower: float
    people_upper: float
    people_method: str
    judge_lower: float | None
    judge_upper: float | None
    share: float
    passed: int
    cases: int
    pass_sampled: int
    pass_labelled: int
    fail_sampled: int
    fail_labelled: int


def _array(name: str, values: Sequence[float] | npt.ArrayLike) -> FloatArray:
    array = np.asarray(values, dtype=np.float64).reshape(-1)
    if not np.all(np.isfinite(array)) or np.any(array < 0.0) or np.any(array > 1.0):
        raise ValueError(f"{name} must be numbers in [0, 1]")
    return array


def _people(low: FloatArray, high: FloatArray, binary: bool, level: float
            ) -> tuple[float | None, float, float, str]:
    if binary:
        observed = low == high
        rate = rate_interval(int(low[observed].sum()), int(observed.sum()),
                             int((~observed).sum()), level)
        assert rate.lower is not None and rate.upper is not None
        return rate.estimate, rate.lower, rate.upper, RATE_METHOD
    mean = bentkus_interval(low, high, level)
    assert mean.lower is not None and mean.upper is not None
    return mean.estimate, mean.lower, mean.upper, BENTKUS_METHOD


def _sorted_sum(values: FloatArray) -> float:
    return float(np.sort(values).sum())


def judged_rate_interval(judge_values: Sequence[float] | npt.ArrayLike,
                         sampled_judge: Sequence[float] | npt.ArrayLike,
                         person_lower: Sequence[float] | npt.ArrayLike,
                         person_upper: Sequence[float] | npt.ArrayLike,
                         level: float, approximate: bool = False) -> JudgedRate:
    """The rate as people would judge it (module docstring): exact, or with ``approximate``
    and enough labels and disagreements (``stats.ppi_plus.ppi_plus_applies``) PPI++'s
    normal-approximation interval (``approximate`` true on the result).

    ``judge_values`` holds the judge's value for every case the rate counts, the sampled ones
    included (1 pass, 0 fail or no verdict, a share of trials with repeated trials);
    ``sampled_judge`` the same for each sampled case, and ``person_lower``/``person_upper`` its
    people's value (equal when labelled; 0 and 1 when not). A case is in the pass stratum when
    its judge value is at least ½. Raises ValueError when no case was sampled, or more cases
    were sampled than counted.

    The judged_agent example: 36 of 40 replies judged pass; of 30 sampled, the 27 judged pass
    hold 20 people pass, the 3 judged fail none — 0.9 × 20/27 + 0.1 × 0/3:

    >>> judge = [1.0] * 27 + [0.0] * 3
    >>> people = [1.0] * 20 + [0.0] * 10
    >>> rate = judged_rate_interval(judge + [1.0] * 9 + [0.0], judge, people, people, 0.95)
    >>> round(rate.estimate, 3), round(rate.lower, 3), round(rate.upper, 3)
    (0.667, 0.465, 0.832)
    >>> round(rate.people_lower, 3), round(rate.people_upper, 3), rate.people_method
    (0.472, 0.827, 'clopper_pearson')
    """
    level = check_level(level)
    every = _array("judge_values", judge_values)
    judge = _array("sampled_judge", sampled_judge)
    low = _array("person_lower", person_lower)
    high = _array("person_upper", person_upper)
    if not judge.size == low.size == high.size:
        raise ValueError("each sampled case needs its judge value and its person values")
    if np.any(low > high):
        raise ValueError("a person_lower value exceeds its person_upper value")
    if judge.size == 0:
        raise ValueError("the labels need at least one sampled case")
    passed = int(np.sum(every >= 0.5))
    cases = int(every.size)
    in_pass = judge >= 0.5
    if judge.size > cases or int(in_pass.sum()) > passed or \
            int((~in_pass).sum()) > cases - passed:
        raise ValueError("the sampled cases must be among the cases counted (judge_values)")
    binary = bool(np.all((low == 0.0) | (low == 1.0)) and np.all((high == 0.0) | (high == 1.0)))
    people = _people(low, high, binary, level)
    observed = low == high
    labelled = [int((members & observed).sum()) for members in (in_pass, ~in_pass)]
    sampled = [int(in_pass.sum()), int((~in_pass).sum())]
    disagreements = int(np.sum(observed & (in_pass != (low >= 0.5))))
    if approximate and ppi_plus_applies(sum(labelled), disagreements):
        tuned = ppi_plus_interval(every, judge, low, high, level)
        return JudgedRate(
            estimate=tuned.estimate, lower=tuned.lower, upper=tuned.upper,
            method=tuned.method, approximate=True, people_estimate=people[0],
            people_lower=people[1], people_upper=people[2], people_method=people[3],
            judge_lower=None, judge_upper=None, share=0.0, passed=passed, cases=cases,
            pass_sampled=sampled[0], pass_labelled=labelled[0], fail_sampled=sampled[1],
            fail_labelled=labelled[1])
    share = safeguard_share(level)
    alpha = tail_probabilities(level)[0]
    strata = []
    for members in (in_pass, ~in_pass):
        strata.append((int(members.sum()), _sorted_sum(low[members]),
                       _sorted_sum(high[members])))
    judged = stratified_bounds(passed, cases, strata[0], strata[1], 1.0 - alpha * share,
                               binary)
    guarded = _people(low, high, binary, 1.0 - alpha * (1.0 - share))
    lower, upper = guarded[1], guarded[2]
    if judged is not None and max(lower, judged[0]) <= min(upper, judged[1]):
        lower, upper = max(lower, judged[0]), min(upper, judged[1])
    estimate = people[0]
    if all(labelled):
        share_pass = passed / cases
        means = [float(np.sort(low[members & observed]).sum()) / count
                 for members, count in zip((in_pass, ~in_pass), labelled, strict=True)]
        estimate = share_pass * means[0] + (1.0 - share_pass) * means[1]
    if estimate is not None:
        estimate = min(upper, max(lower, estimate))
    return JudgedRate(
        estimate=estimate, lower=lower, upper=upper, method=STRATIFIED_METHOD,
        approximate=False, people_estimate=people[0], people_lower=people[1],
        people_upper=people[2], people_method=people[3],
        judge_lower=None if judged is None else judged[0],
        judge_upper=None if judged is None else judged[1], share=share, passed=passed,
        cases=cases, pass_sampled=strata[0][0], pass_labelled=labelled[0],
        fail_sampled=strata[1][0], fail_labelled=labelled[1])
