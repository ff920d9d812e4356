"""Pure statistics for Oloproof (SPEC §5, §9, §10.2, §15, §17, §18): numbers in, small frozen
results out."""

from oloproof.stats.agreement import Agreement, agreement, cohen_kappa
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
from oloproof.stats.multiplicity import benjamini_yekutieli, fisher_two_sided
from oloproof.stats.paired import (
    MCNEMAR_METHOD,
    McNemarTest,
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
from oloproof.stats.prediction_powered import (
    PREDICTION_POWERED_METHOD,
    PredictionPowered,
    half_level,
    prediction_powered_bounds,
    prediction_powered_interval,
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
    "PREDICTION_POWERED_METHOD",
    "PROJECTION_LIMIT",
    "PROJECTION_METHOD",
    "QUANTILE_METHOD",
    "RATE_METHOD",
    "SIMULATED_CHANCE_METHOD",
    "Agreement",
    "LikelyProjection",
    "McNemarTest",
    "MeanInterval",
    "PredictionPowered",
    "QuantileInterval",
    "RateInterval",
    "RateProjection",
    "agreement",
    "benjamini_yekutieli",
    "bentkus_bounds",
    "bentkus_critical_sum",
    "bentkus_interval",
    "bentkus_lower_bounds",
    "bentkus_tail_bound",
    "betting_bounds",
    "betting_lower_bounds",
    "bounded_mean_interval",
    "clopper_pearson",
    "cohen_kappa",
    "decision_chance",
    "difference_bounds",
    "estimate_rank",
    "exact_interval_at_rate",
    "fisher_two_sided",
    "half_level",
    "likely_projection",
    "mcnemar_exact",
    "mean_projection",
    "order_statistic_ranks",
    "paired_difference_interval",
    "percent",
    "percent_lower",
    "percent_upper",
    "prediction_powered_bounds",
    "prediction_powered_interval",
    "quantile_interval",
    "rate_interval",
    "rate_projection",
]
