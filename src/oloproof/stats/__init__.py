"""Pure statistics for Oloproof (docs/concepts.md#the-methods-and-their-references): numbers in,
small frozen results out.

A function's name says what it returns:

- `*_interval`: a frozen result object that records its method. `RateInterval`,
  `MeanInterval`, `QuantileInterval`, `JudgedRate`, `PPIPlus` and `PredictionPowered` share
  `estimate, lower, upper, method` (`rate_interval`, `bentkus_interval`,
  `bounded_mean_interval`, `paired_difference_interval`, `binary_difference_interval`,
  `cluster_ratio_interval`, `cluster_difference_interval`, `quantile_interval`,
  `judged_rate_interval`, `ppi_plus_interval`, `prediction_powered_interval`;
  `sequential_interval`'s `SequentialDecision` adds the decision to them).
- `*_bounds`: the bounds alone, a `(lower, upper)` tuple — of floats for one sample
  (`bentkus_bounds`, `betting_bounds`, `melded_bounds`, `exact_bounds_at_rate`,
  `sequential_bounds`, `stratified_bounds`), of arrays for many rows or pairs at once
  (`difference_bounds`, `prediction_powered_bounds`). `*_lower_bounds` gives one lower bound
  per row or sum, `*_lower_bound` one float.
- `*_projection`: a projection of `oloproof plan` (`RateProjection`, `AssuredProjection`,
  `CorrectedProjection`);
  `continued_chance` the chance beside it, with how it was computed.
- A function named for its method returns what the method gives: `clopper_pearson` the
  `(lower, upper)` tuple of the textbook interval, `mcnemar_exact` a `McNemarTest`,
  `fisher_two_sided` a p-value.

Bounds are unrounded; `percent_lower` and `percent_upper` round them outward for display.
The docstrings' examples run as tests (tests/test_doctests.py).

>>> from oloproof.stats import clopper_pearson, percent_lower, percent_upper, rate_interval
>>> rate = rate_interval(33, 40, 0, 0.95)
>>> (rate.lower, rate.upper) == clopper_pearson(33, 40, 0.95)
True
>>> f"{rate.estimate:.1%} [{percent_lower(rate.lower)}, {percent_upper(rate.upper)}]"
'82.5% [67.2%, 92.7%]'
"""

from oloproof.stats.agreement import Agreement, agreement, cohen_kappa
from oloproof.stats.assurance import (
    ASSURANCE,
    ASSURED_CHANCE,
    EXACT_ASSURANCE_METHOD,
    SIMULATED_ASSURANCE_METHOD,
    AssuredProjection,
    assured_projection,
    continued_chance,
)
from oloproof.stats.bentkus import (
    BENTKUS_METHOD,
    bentkus_bounds,
    bentkus_critical_sum,
    bentkus_interval,
    bentkus_lower_bounds,
    bentkus_tail_bound,
)
from oloproof.stats.betting import (
    BETTING_METHOD,
    MeanInterval,
    betting_bounds,
    betting_lower_bounds,
    bounded_mean_interval,
    ratio_lower_bounds,
)
from oloproof.stats.binomial import RATE_METHOD, RateInterval, clopper_pearson, rate_interval
from oloproof.stats.cluster_ratio import (
    CLUSTER_RATIO_METHOD,
    cluster_ratio_interval,
    cluster_ratio_lower_bounds,
)
from oloproof.stats.display import percent, percent_lower, percent_upper
from oloproof.stats.judged_projection import (
    JUDGED_LABELS_LIMIT,
    CorrectedProjection,
    corrected_bounds_at,
    corrected_projection,
)
from oloproof.stats.melded import MELDED_METHOD, melded_bounds, melded_lower_bound
from oloproof.stats.multiplicity import benjamini_yekutieli, fisher_two_sided
from oloproof.stats.paired import (
    MCNEMAR_METHOD,
    McNemarTest,
    binary_difference_interval,
    cluster_difference_interval,
    difference_bounds,
    mcnemar_exact,
    paired_difference_interval,
)
from oloproof.stats.ppi_plus import PPI_PLUS_METHOD, PPIPlus, ppi_plus_interval
from oloproof.stats.prediction_powered import (
    PREDICTION_POWERED_METHOD,
    PredictionPowered,
    half_level,
    prediction_powered_bounds,
    prediction_powered_interval,
)
from oloproof.stats.projection import (
    BENTKUS_PROJECTION_METHOD,
    PROJECTION_LIMIT,
    PROJECTION_METHOD,
    RateProjection,
    exact_bounds_at_rate,
    mean_projection,
    rate_projection,
)
from oloproof.stats.quantile import (
    QUANTILE_METHOD,
    QuantileInterval,
    estimate_rank,
    order_statistic_ranks,
    quantile_interval,
)
from oloproof.stats.sequential import (
    SEQUENTIAL_METHOD,
    SequentialDecision,
    SequentialDesign,
    SequentialRate,
    sequential_bounds,
    sequential_design,
    sequential_interval,
)
from oloproof.stats.verdict_strata import (
    STRATIFIED_METHOD,
    JudgedRate,
    judged_rate_interval,
    safeguard_share,
    stratified_bounds,
)

__all__ = [
    "ASSURANCE",
    "ASSURED_CHANCE",
    "BENTKUS_METHOD",
    "BENTKUS_PROJECTION_METHOD",
    "BETTING_METHOD",
    "CLUSTER_RATIO_METHOD",
    "EXACT_ASSURANCE_METHOD",
    "JUDGED_LABELS_LIMIT",
    "MCNEMAR_METHOD",
    "MELDED_METHOD",
    "PPI_PLUS_METHOD",
    "PREDICTION_POWERED_METHOD",
    "PROJECTION_LIMIT",
    "PROJECTION_METHOD",
    "QUANTILE_METHOD",
    "RATE_METHOD",
    "SEQUENTIAL_METHOD",
    "SIMULATED_ASSURANCE_METHOD",
    "STRATIFIED_METHOD",
    "Agreement",
    "AssuredProjection",
    "CorrectedProjection",
    "JudgedRate",
    "McNemarTest",
    "MeanInterval",
    "PPIPlus",
    "PredictionPowered",
    "QuantileInterval",
    "RateInterval",
    "RateProjection",
    "SequentialDecision",
    "SequentialDesign",
    "SequentialRate",
    "agreement",
    "assured_projection",
    "benjamini_yekutieli",
    "bentkus_bounds",
    "bentkus_critical_sum",
    "bentkus_interval",
    "bentkus_lower_bounds",
    "bentkus_tail_bound",
    "betting_bounds",
    "betting_lower_bounds",
    "binary_difference_interval",
    "bounded_mean_interval",
    "clopper_pearson",
    "cluster_difference_interval",
    "cluster_ratio_interval",
    "cluster_ratio_lower_bounds",
    "cohen_kappa",
    "continued_chance",
    "corrected_bounds_at",
    "corrected_projection",
    "difference_bounds",
    "estimate_rank",
    "exact_bounds_at_rate",
    "fisher_two_sided",
    "half_level",
    "judged_rate_interval",
    "mcnemar_exact",
    "mean_projection",
    "melded_bounds",
    "melded_lower_bound",
    "order_statistic_ranks",
    "paired_difference_interval",
    "percent",
    "percent_lower",
    "percent_upper",
    "ppi_plus_interval",
    "prediction_powered_bounds",
    "prediction_powered_interval",
    "quantile_interval",
    "rate_interval",
    "rate_projection",
    "ratio_lower_bounds",
    "safeguard_share",
    "sequential_bounds",
    "sequential_design",
    "sequential_interval",
    "stratified_bounds",
]
