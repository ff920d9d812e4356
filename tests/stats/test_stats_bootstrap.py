"""Cluster bootstrap for a rate (SPEC §5.4)."""

from __future__ import annotations

import pytest

from oloproof.stats import (
    DEFAULT_RESAMPLES,
    RateInterval,
    clopper_pearson,
    cluster_bootstrap_rate,
)
from oloproof.stats import bootstrap as bootstrap_module

# 30 clusters: a source case and two copies each, a few with missing copies.
PASSED = [3, 2, 3, 3, 1, 3, 3, 2, 3, 3] * 3
OBSERVED = [3, 3, 3, 3, 2, 3, 3, 3, 3, 3] * 3
MISSING = [0, 0, 0, 0, 1, 0, 0, 0, 0, 0] * 3


def test_reproducible_for_a_seed() -> None:
    first = cluster_bootstrap_rate(PASSED, OBSERVED, MISSING, 0.95, resamples=2000, seed=11)
    again = cluster_bootstrap_rate(PASSED, OBSERVED, MISSING, 0.95, resamples=2000, seed=11)
    other = cluster_bootstrap_rate(PASSED, OBSERVED, MISSING, 0.95, resamples=2000, seed=12)
    assert first == again
    assert (first.lower, first.upper) != (other.lower, other.upper)
    assert first.method == "cluster bootstrap (percentile, 2000 resamples, seed 11)"


def test_default_resamples_and_estimate() -> None:
    assert DEFAULT_RESAMPLES >= 10_000
    result = cluster_bootstrap_rate(PASSED, OBSERVED, MISSING, 0.95)
    assert result.method == "cluster bootstrap (percentile, 10000 resamples, seed 0)"
    assert result.estimate == sum(PASSED) / sum(OBSERVED)
    assert result.lower is not None and result.upper is not None
    assert 0.0 <= result.lower <= result.estimate <= result.upper <= 1.0


def test_result_does_not_depend_on_chunk_size(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = cluster_bootstrap_rate(PASSED, OBSERVED, MISSING, 0.9, resamples=3000, seed=5)
    monkeypatch.setattr(bootstrap_module, "_CHUNK_CELLS", 97)
    chunked = cluster_bootstrap_rate(PASSED, OBSERVED, MISSING, 0.9, resamples=3000, seed=5)
    assert whole == chunked


def test_missing_widens_each_side() -> None:
    complete = cluster_bootstrap_rate([1, 0] * 30, [1, 1] * 30, [0, 0] * 30, 0.95, seed=3)
    with_missing = cluster_bootstrap_rate(
        [1, 0] * 30 + [0] * 5, [1, 1] * 30 + [0] * 5, [0, 0] * 30 + [1] * 5, 0.95, seed=3
    )
    assert complete.estimate == with_missing.estimate == 0.5
    assert complete.lower is not None and with_missing.lower is not None
    assert complete.upper is not None and with_missing.upper is not None
    assert with_missing.lower < complete.lower
    assert with_missing.upper > complete.upper


def test_one_case_per_cluster_is_close_to_clopper_pearson() -> None:
    clusters = 400
    passes = 300
    result = cluster_bootstrap_rate(
        [1] * passes + [0] * (clusters - passes), [1] * clusters, [0] * clusters, 0.95, seed=1
    )
    exact_low, exact_high = clopper_pearson(passes, clusters, 0.95)
    assert result.lower == pytest.approx(exact_low, abs=0.015)
    assert result.upper == pytest.approx(exact_high, abs=0.015)


def test_empty_and_bad_input() -> None:
    method = "cluster bootstrap (percentile, 10000 resamples, seed 0)"
    assert cluster_bootstrap_rate([], [], [], 0.95) == RateInterval(None, None, None, method)
    # Clusters with no case for the metric are ignored.
    assert cluster_bootstrap_rate([0, 0], [0, 0], [0, 0], 0.95).lower is None
    only_missing = cluster_bootstrap_rate([0], [0], [2], 0.95, resamples=10)
    assert only_missing.estimate is None
    assert (only_missing.lower, only_missing.upper) == (0.0, 1.0)
    with pytest.raises(ValueError):
        cluster_bootstrap_rate([2], [1], [0], 0.95)
    with pytest.raises(ValueError):
        cluster_bootstrap_rate([1, 1], [1], [0], 0.95)
    with pytest.raises(ValueError):
        cluster_bootstrap_rate([1], [1], [0], 0.95, resamples=0)
