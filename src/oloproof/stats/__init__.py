"""Pure statistics for Oloproof (SPEC §5, §9, §10.2, §15, §17, §18): numbers in, small frozen
results out."""

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
)
from oloproof.stats.binomial import RATE_METHOD, RateInterval, clopper_pearson, rate_interval
from oloproof.stats.display import percent, percent_lower, percent_upper
from oloproof.stats.melded import MELDED_METHOD, melded_bounds, melded_lower_bound
from oloproof.stats.multiplicity import benjamini_yekutieli, fisher_two_sided
from oloproof.stats.paired import (
    MCNEMAR_METHOD,
    McNemarTest,
    binary_difference_interval,
    cluster_means,
    difference_bounds,
    mcnemar_exact,
    paired_difference_interval,
)
from oloproof.stats.plan import (
    BENTKUS_PROJECTION_METHOD,
    EXACT_CHANCE_METHOD,
    LIKELY_CHANCE,
    PROJECTION_LIMIT,
    PROJECTION_METHOD,
    SIMULATED_CHANCE_METHOD,
    LikelyProjection,
    RateProjection,
    decision_chance,
    exact_interval_at_rate,
    likely_projection,
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

__all__ = [
    "BENTKUS_METHOD",
    "BENTKUS_PROJECTION_METHOD",
    "BETTING_METHOD",
    "EXACT_CHANCE_METHOD",
    "LIKELY_CHANCE",
    "MCNEMAR_METHOD",
    "MELDED_METHOD",
    "PROJECTION_LIMIT",
    "PROJECTION_METHOD",
    "QUANTILE_METHOD",
    "RATE_METHOD",
    "SIMULATED_CHANCE_METHOD",
    "LikelyProjection",
    "McNemarTest",
    "MeanInterval",
    "QuantileInterval",
    "RateInterval",
    "RateProjection",
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
    "cluster_means",
    "decision_chance",
    "difference_bounds",
    "estimate_rank",
    "exact_interval_at_rate",
    "fisher_two_sided",
    "likely_projection",
    "mcnemar_exact",
    "mean_projection",
    "melded_bounds",
    "melded_lower_bound",
    "order_statistic_ranks",
    "paired_difference_interval",
    "percent",
    "percent_lower",
    "percent_upper",
    "quantile_interval",
    "rate_interval",
    "rate_projection",
]
