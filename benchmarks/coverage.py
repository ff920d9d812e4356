"""Coverage of the betting interval by simulation (SPEC §15.2, §5.4, §17; issues 12 and 14).

Not a speed benchmark: the share of simulated suites whose reported interval contains the true
mean, for the settings the tests check (there with fewer repetitions), at 10,000 repetitions
each. Intervals are the ones `bounded_mean_interval` / `paired_difference_interval` report
(the paper's set widened to the sample mean where it leaves it out), computed in batches with
`betting_lower_bounds`. Usage: python benchmarks/coverage.py
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from oloproof.stats import betting_lower_bounds

FloatArray = npt.NDArray[np.float64]
REPETITIONS = 10_000


def _interval(values: FloatArray, level: float) -> tuple[FloatArray, FloatArray]:
    means = values.mean(axis=1)
    lower = np.minimum(betting_lower_bounds(values, level), means)
    upper = np.maximum(1.0 - betting_lower_bounds(1.0 - values, level), means)
    return lower, upper


def _line(label: str, lower: FloatArray, upper: FloatArray, truth: float) -> str:
    covered = np.mean((lower <= truth + 1e-12) & (truth - 1e-12 <= upper))
    return (f"| {label} | {covered:.4f} | {np.mean(lower > truth + 1e-12):.4f} | "
            f"{np.mean(upper < truth - 1e-12):.4f} | {np.mean(upper - lower):.3f} |")


def bounded_means(rng: np.random.Generator) -> None:
    print("### Bounded means (values in [0, 1])\n")
    print("| setting | coverage | lower above truth | upper below truth | mean width |")
    print("|---|---|---|---|---|")
    for level in (0.9, 0.95):
        for n in (20, 50, 200):
            shape = (REPETITIONS, n)
            draws: list[tuple[str, FloatArray, float]] = [
                ("two-point 0/1 at 0.9", (rng.uniform(size=shape) < 0.9).astype(float), 0.9),
                ("two-point 0.2/0.7", np.where(rng.uniform(size=shape) < 0.5, 0.7, 0.2), 0.45),
                ("Beta(0.5, 5)", rng.beta(0.5, 5.0, size=shape), 0.5 / 5.5),
                ("uniform", rng.uniform(size=shape), 0.5),
            ]
            for name, values, truth in draws:
                lower, upper = _interval(values, level)
                print(_line(f"{name}, n = {n}, {level:.0%}", lower, upper, truth))
    print()


def clusters(rng: np.random.Generator) -> None:
    print("### Clusters: 40 clusters of 2–4 cases, 95% (the audit's settings)\n")
    print("| setting | coverage | lower above truth | upper below truth | mean width |")
    print("|---|---|---|---|---|")
    for rate, correlation in ((0.75, 0.5), (0.97, 0.8), (0.75, 1.0), (0.97, 1.0)):
        sizes = rng.integers(2, 5, size=(REPETITIONS, 40))
        if correlation >= 1.0:
            shares = (rng.uniform(size=(REPETITIONS, 40)) < rate).astype(float)
        else:
            total = 1.0 / correlation - 1.0
            chance = rng.beta(rate * total, (1.0 - rate) * total, size=(REPETITIONS, 40))
            shares = rng.binomial(sizes, chance) / sizes
        lower, upper = _interval(shares, 0.95)
        print(_line(f"rate {rate}, intra-cluster correlation {correlation}", lower, upper,
                    rate))
    print()


def paired(rng: np.random.Generator) -> None:
    print("### Paired differences in {−1, 0, 1}, 95%\n")
    print("| setting (P(broken), P(same), P(fixed)) | coverage | lower above truth | "
          "upper below truth | mean width |")
    print("|---|---|---|---|---|")
    shapes = [(0.05, 0.90, 0.05), (0.02, 0.88, 0.10), (0.30, 0.40, 0.30), (0.0, 0.95, 0.05),
              (0.15, 0.80, 0.05)]
    for n in (30, 100, 400):
        for shape in shapes:
            d = rng.choice([-1.0, 0.0, 1.0], p=shape, size=(REPETITIONS, n))
            lower, upper = _interval((d + 1.0) / 2.0, 0.95)
            print(_line(f"{shape}, n = {n}", 2 * lower - 1, 2 * upper - 1,
                        shape[2] - shape[0]))
    print()


def main() -> None:
    rng = np.random.default_rng(2023)
    bounded_means(rng)
    clusters(rng)
    paired(rng)


if __name__ == "__main__":
    main()
