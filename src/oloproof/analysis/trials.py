"""Repeated trials (docs/reliability.md): each case's trials folded into per-case values, rows over
cases.

With `trials: k` every case runs k times and every criterion judges every trial. Trials of one
case are not independent, cases are; so a case's trials are folded, as they complete, into
counts per criterion — `c` passed, `f` failed, `m` missing (or errored), `x` excluded — and
every interval is taken over cases:

- the criterion itself: the case's value is ``c / n`` (``n = c + f + m``, excluded trials do
  not count), its share of passing trials;
- `pass_hat_k` with ``k: j``: ``C(c, j) / C(n, j)``, the unbiased estimate of the chance that
  j fresh trials all pass (τ-bench's pass^j);
- `pass_at_k` with ``k: j``: ``1 − C(n − c, j) / C(n, j)``, that at least one of j passes.

Missing trials are resolved the worst way for the case's lower value (``c``) and the best way
for its upper value (``c + m``); a case is *observed* for a metric when the two agree (pass^4
with one trial failed is 0 whatever the missing trials did) and *missing* otherwise. A case
with every trial excluded is excluded. A case with fewer counted trials than ``j`` has no
pass^j estimate: it is missing (`too_few_trials`), never dropped. Where every value is 0 or 1
(pass^k / pass@k with j = k) the interval is the exact one over cases
(docs/concepts.md#pass-rates-exact-intervals-with-missing-cases); where values are
fractions it is the Bentkus interval (`oloproof.stats.bentkus_interval`), which reads the
values only through their sum: the same suite always gives the same interval whatever order
its trials finished in. (Rows are still taken in the order of their cases' digests, so that
every floating-point sum is added up in one order.) With declared clusters, a case outside any
is a cluster of its own named by its id — never by its row, which fills in finishing order.

Memory stays flat in the number of trials: a case's trials are dispatched one after another
and folded as soon as the last one is in, so only the cases in flight are held trial by trial;
the suite keeps three small counts per case and criterion.

Slices: a trial joins the group its own trajectory puts it in (two trials of one case may land
in different `first_tool` groups). A group's row is over the cases with a trial in it, each
case's value its share among *those* trials — again one value per case, cases independent, so
the Bentkus interval over cases applies. Rows are never tested against the rest of the suite
(the Fisher test of docs/concepts.md#slices-are-exploratory-and-never-gate assumes independent
cases; a group's trials are not).

Quantile metrics count each trial's value and are clustered by case:
`oloproof.stats.clustered_quantile_interval`, valid for every number of cases (not
approximate).
"""

from __future__ import annotations

import math
from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oloproof.analysis.outcome import CaseOutcome

if TYPE_CHECKING:  # NumPy and the statistics are imported when a run is analysed, not before
    import numpy as np
    import numpy.typing as npt

    from oloproof.stats.quantile import QuantileInterval

    FloatArray = npt.NDArray[np.float64]
    IntArray = npt.NDArray[np.int64]

#: The reason a trial that never ran (a stopped or incomplete run) is missing.
TRIAL_NOT_RUN = "trial_not_run"
#: The reason a case with fewer counted trials than a pass^j / pass@j's j is missing.
TOO_FEW_TRIALS = "too_few_trials"
PASS_HAT_K = "pass_hat_k"
PASS_AT_K = "pass_at_k"


@dataclass(frozen=True)
class TrialMetricSpec:
    """A declared `pass_hat_k` / `pass_at_k` metric: its id, type, criterion (by position in
    the suite's criteria) and its k (called j in docs/reliability.md#what-passk-means)."""

    id: str
    type: str
    criterion: int
    k: int


@dataclass(frozen=True)
class TrialCounts:
    """One criterion over one case's trials: passed, failed, missing (errored or not run) and
    excluded trials. `counted` trials are the ones that are not excluded."""

    passed: int
    failed: int
    missing: int
    excluded: int

    @property
    def counted(self) -> int:
        return self.passed + self.failed + self.missing

    @property
    def divided(self) -> bool:
        """Whether the trials disagree: some passed and some failed."""
        return self.passed > 0 and self.failed > 0


@dataclass(frozen=True)
class CaseTrials:
    """One case of a run, its trials folded: counts per criterion (in the suite's order)."""

    case_id: str
    digest: str | None
    trials: int
    counts: tuple[TrialCounts, ...]
    source: str | None = None
    cluster: str | None = None
    errors: tuple[str, ...] = ()  # error kinds of its errored trials


# ---- per-case values -------------------------------------------------------------------------


def _ratio_table(j: int, n: int, complement: bool) -> FloatArray:
    """``C(a, j) / C(n, j)`` (or ``1 −`` it, with `complement`) for a = 0 … n, from exact
    integers divided once, so each value is the correctly rounded float of the fraction."""
    import numpy as np
    whole = math.comb(n, j)
    if complement:
        return np.asarray([(whole - math.comb(a, j)) / whole for a in range(n + 1)],
                          dtype=np.float64)
    return np.asarray([math.comb(a, j) / whole for a in range(n + 1)], dtype=np.float64)


@dataclass
class CaseValues:
    """A metric's per-case values over some cases: each case's lowest and highest possible
    value, and whether it counts (not excluded) and is observed (the two agree)."""

    lower: FloatArray
    upper: FloatArray
    counted: npt.NDArray[np.bool_]
    observed: npt.NDArray[np.bool_]
    too_few: npt.NDArray[np.bool_]


def case_values(c: IntArray, f: IntArray, m: IntArray, metric_type: str | None,
                j: int = 1) -> CaseValues:
    """Per-case values of docs/reliability.md#what-passk-means from per-case counts (arrays over
    cases).

    `metric_type` None is the criterion itself (``c / n``); `pass_hat_k` and `pass_at_k` take
    ``j``. Missing trials give the lower value from ``c`` and the upper from ``c + m``.
    """
    import numpy as np
    n = c + f + m
    counted = n > 0
    lower = np.zeros(n.shape, dtype=np.float64)
    upper = np.ones(n.shape, dtype=np.float64)
    too_few = np.zeros(n.shape, dtype=bool)
    if metric_type is None:
        safe = np.where(counted, n, 1)
        lower = np.where(counted, c / safe, 0.0)
        upper = np.where(counted, (c + m) / safe, 1.0)
        observed = counted & (m == 0)
        return CaseValues(lower, upper, counted, observed, too_few)
    too_few = counted & (n < j)
    able = counted & ~too_few
    for size in np.unique(n[able]):
        table = _ratio_table(j, int(size), complement=metric_type != PASS_HAT_K)
        rows = able & (n == size)
        if metric_type == PASS_HAT_K:
            lower[rows] = table[c[rows]]
            upper[rows] = table[(c + m)[rows]]
        else:  # 1 − C(n − c, j) / C(n, j), and n − c = f + m
            lower[rows] = table[(f + m)[rows]]
            upper[rows] = table[f[rows]]
    # Exactly (not by comparing floats): the two ends agree when nothing is missing, or when
    # both binomials are 0 — fewer than j trials could still pass (pass^j) or fail (pass@j).
    if metric_type == PASS_HAT_K:
        settled = (m == 0) | (c + m < j)
    else:
        settled = (m == 0) | (f + m < j)
    observed = able & settled
    return CaseValues(lower, upper, counted, observed, too_few)


# ---- folding a case's trials -----------------------------------------------------------------


QuantileValue = tuple[float | None, str | None, str | None]  # value, why excluded, why missing


class _Pending:
    """One case whose trials are still arriving."""

    __slots__ = ("cluster", "counts", "digest", "errors", "excluded_reasons", "groups",
                 "missing_reasons", "quantiles", "seen", "source")

    def __init__(self, criteria: int, quantiles: int, outcome: CaseOutcome) -> None:
        self.seen = 0
        self.counts = [0] * (4 * criteria)  # P, F, M, X per criterion
        self.missing_reasons: list[str | None] = [None] * criteria
        self.excluded_reasons: list[str | None] = [None] * criteria
        self.errors: list[str] = []
        self.groups: dict[tuple[int, str], _GroupCase] = {}
        self.quantiles = [_QuantileCase() for _ in range(quantiles)]
        self.digest = outcome.digest
        self.cluster = outcome.cluster
        self.source = outcome.source


@dataclass
class _QuantileCase:
    values: list[float] = field(default_factory=list)
    missing: int = 0
    excluded: int = 0
    excluded_reason: str | None = None
    missing_reasons: Counter[str] = field(default_factory=Counter)


@dataclass
class _GroupCase:
    counts: list[int]
    quantiles: list[_QuantileCase]


_CODE = {"P": 0, "F": 1, "M": 2, "X": 3}


def _count_codes(counts: list[int], codes: str) -> None:
    for i, code in enumerate(codes):
        counts[4 * i + _CODE.get(code, 3)] += 1


def _add_quantile(case: _QuantileCase, value: QuantileValue) -> None:
    number, why_excluded, why_missing = value
    if why_excluded is not None:
        case.excluded += 1
        case.excluded_reason = case.excluded_reason or why_excluded
    elif number is None:
        case.missing += 1
        case.missing_reasons[why_missing or "unknown"] += 1
    else:
        case.values.append(number)


# ---- the suite's table of cases --------------------------------------------------------------


def _order_key(digest: str | None, case_id: str) -> tuple[str, str]:
    return (digest or "", case_id)


class _CaseTable:
    """Per-case counts (P, F, M per criterion; excluded = trials − the rest), compactly."""

    def __init__(self, criteria: int, trials: int, keep_clusters: bool) -> None:
        self.criteria = criteria
        self.trials = trials
        self.counts = array("i")
        self.ids: list[str] = []
        self.digests: list[str | None] = []
        self.clusters: list[str | None] | None = [] if keep_clusters else None
        self.sources = 0  # how many cases are metamorphic copies (never counted here by id)
        self.missing_reasons: dict[tuple[int, int], str] = {}
        self.excluded_reasons: dict[tuple[int, int], str] = {}

    def __len__(self) -> int:
        return len(self.ids)

    def add(self, case_id: str, pending: _Pending) -> int:
        row = len(self.ids)
        self.ids.append(case_id)
        self.digests.append(pending.digest)
        if self.clusters is not None:
            self.clusters.append(pending.cluster)
        for i in range(self.criteria):
            base = 4 * i
            self.counts.extend(pending.counts[base:base + 3])
            if pending.missing_reasons[i] is not None:
                self.missing_reasons[(row, i)] = pending.missing_reasons[i] or "unknown"
            if pending.excluded_reasons[i] is not None:
                self.excluded_reasons[(row, i)] = pending.excluded_reasons[i] or "unknown"
        return row

    def matrix(self) -> IntArray:
        """cases × criteria × (passed, failed, missing)."""
        import numpy as np
        table = np.frombuffer(self.counts, dtype=np.int32) if len(self.counts) else \
            np.zeros(0, dtype=np.int32)
        return table.reshape(len(self.ids), self.criteria, 3).astype(np.int64)

    def order(self, rows: Sequence[int] | None = None) -> list[int]:
        """Rows (all, or those given) in the order of their cases' digests (then ids)."""
        chosen = range(len(self.ids)) if rows is None else rows
        return sorted(chosen, key=lambda r: _order_key(self.digests[r], self.ids[r]))


@dataclass
class _Group:
    """The cases with a trial in one slice group: their rows in the case table, their counts
    of the group's trials (P, F, M, X per criterion) and quantile values."""

    rows: list[int] = field(default_factory=list)
    counts: array[int] = field(default_factory=lambda: array("i"))
    quantiles: list[list[_QuantileCase]] = field(default_factory=list)

    def matrix(self, criteria: int) -> IntArray:
        """cases × criteria × (passed, failed, missing, excluded)."""
        import numpy as np
        table = np.frombuffer(self.counts, dtype=np.int32)
        return table.reshape(len(self.rows), criteria, 4).astype(np.int64)


class TrialAnalysis:
    """Folds trials into cases as they arrive and computes rows over cases.

    `quantile_values` gives a trial's value for each quantile metric (the analysis's own
    rule: copies excluded, errored trials missing, ...).
    """

    def __init__(self, criteria: Sequence[str], trials: int, quantiles: int, slices: int,
                 keep_clusters: bool,
                 quantile_values: Callable[[CaseOutcome], list[QuantileValue]],
                 on_case: Callable[[CaseTrials], None] | None = None) -> None:
        self.criteria = list(criteria)
        self.trials = trials
        self.n_quantiles = quantiles
        self.n_slices = slices
        self.quantile_values = quantile_values
        self.on_case = on_case
        self.pending: dict[str, _Pending] = {}
        self.table = _CaseTable(len(self.criteria), trials, keep_clusters)
        self.quantiles: list[list[_QuantileCase]] = [[] for _ in range(quantiles)]
        self.groups: dict[tuple[int, str], _Group] = {}
        self.executions = 0
        self.not_run = 0

    @property
    def cases(self) -> int:
        return len(self.table) + len(self.pending)

    def add(self, outcome: CaseOutcome) -> None:
        """Count one trial; fold its case once its last trial is in."""
        self.executions += 1
        n = len(self.criteria)
        pending = self.pending.get(outcome.case_id)
        if pending is None:
            pending = self.pending[outcome.case_id] = _Pending(n, self.n_quantiles, outcome)
        pending.seen += 1
        _count_codes(pending.counts, outcome.codes)
        for i, code in enumerate(outcome.codes):
            if code == "M" and pending.missing_reasons[i] is None:
                pending.missing_reasons[i] = outcome.reasons[i] or "unknown"
            elif code == "X" and pending.excluded_reasons[i] is None:
                pending.excluded_reasons[i] = outcome.reasons[i] or "unknown"
        if outcome.error is not None:
            pending.errors.append(outcome.error)
        values = self.quantile_values(outcome) if self.n_quantiles else []
        for case, value in zip(pending.quantiles, values, strict=True):
            _add_quantile(case, value)
        for s, group in enumerate(outcome.groups):
            if group is None:
                continue
            member = pending.groups.get((s, group))
            if member is None:
                member = pending.groups[(s, group)] = _GroupCase(
                    [0] * (4 * n), [_QuantileCase() for _ in range(self.n_quantiles)])
            _count_codes(member.counts, outcome.codes)
            for case, value in zip(member.quantiles, values, strict=True):
                _add_quantile(case, value)
        if pending.seen >= self.trials:
            self._fold(outcome.case_id)

    def finish_pending(self) -> None:
        """Fold the cases whose trials did not all arrive (a stopped or incomplete run): the
        trials that never ran are missing (`trial_not_run`)."""
        for case_id in list(self.pending):
            pending = self.pending[case_id]
            gap = self.trials - pending.seen
            self.not_run += gap * len(self.criteria)
            for i in range(len(self.criteria)):
                pending.counts[4 * i + 2] += gap
                if pending.missing_reasons[i] is None:
                    pending.missing_reasons[i] = TRIAL_NOT_RUN
            for case in pending.quantiles:
                case.missing += gap
                case.missing_reasons[TRIAL_NOT_RUN] += gap
            self._fold(case_id)

    def _fold(self, case_id: str) -> None:
        pending = self.pending.pop(case_id)
        row = self.table.add(case_id, pending)
        for spec, case in enumerate(pending.quantiles):
            self.quantiles[spec].append(case)
        for key, member in pending.groups.items():
            group = self.groups.get(key)
            if group is None:
                group = self.groups[key] = _Group()
            group.rows.append(row)
            group.counts.extend(member.counts)
            group.quantiles.append(member.quantiles)
        if self.on_case is not None:
            self.on_case(_case_trials(case_id, pending, self.trials))

    # ---- rows --------------------------------------------------------------------------------

    def counts(self) -> IntArray:
        """cases × criteria × (passed, failed, missing), in the order cases were folded."""
        return self.table.matrix()


def _case_trials(case_id: str, pending: _Pending, trials: int) -> CaseTrials:
    counts = [TrialCounts(*pending.counts[4 * i:4 * i + 4])
              for i in range(len(pending.counts) // 4)]
    return CaseTrials(case_id, pending.digest, trials, tuple(counts), pending.source,
                      pending.cluster, tuple(pending.errors))


def iter_case_trials(outcomes: Iterable[CaseOutcome], criteria: int, trials: int
                     ) -> Iterator[CaseTrials]:
    """Each case of a run with its trials folded, from its trial outcomes in stored order (a
    case's trials are stored close together, so only the cases in flight are held)."""
    done: list[CaseTrials] = []
    folding = TrialAnalysis([""] * criteria, trials, 0, 0, False, lambda _: [],
                            on_case=done.append)
    for outcome in outcomes:
        folding.add(outcome)
        if done:
            yield from done
            done.clear()
    folding.finish_pending()
    yield from done


# ---- intervals over cases --------------------------------------------------------------------


@dataclass
class RateOverCases:
    """A metric's figures over cases: estimate, interval, method, case counts."""

    estimate: float | None
    lower: float | None
    upper: float | None
    method: str
    cases: int        # counted (not excluded)
    observed: int     # cases whose value is settled
    passed: int       # observed cases whose value is 1
    missing: int      # cases whose value missing trials could change
    excluded: int     # cases with every trial excluded
    clusters: int | None = None  # set when the interval is over clusters (approximate)


def rate_over_cases(values: CaseValues, order: Sequence[int], level: float, *, binary: bool,
                    clusters: Sequence[str] | None = None) -> RateOverCases:
    """The interval over cases given in `order` (indices into `values`;
    docs/reliability.md#why-every-interval-is-over-cases).

    `binary` (every value 0 or 1 by construction): the exact interval over cases
    (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases). Else the
    Bentkus interval over the cases' lower and upper values (`oloproof.stats.bentkus`), which
    depends only on their sums. With `clusters` (one cluster name per case: its declared
    cluster, or its own id) and some cluster counting two cases or more: the same interval over
    cluster means (docs/concepts.md#clusters). `order` only fixes the order floating-point sums
    are taken in; the figures depend on which cases are in, never on the order they finished.
    """
    import numpy as np

    from oloproof.stats import bentkus_interval, rate_interval
    idx = np.asarray(order, dtype=np.int64)
    counted = values.counted[idx] if idx.size else np.zeros(0, dtype=bool)
    idx = idx[counted]
    observed = values.observed[idx]
    lower, upper = values.lower[idx], values.upper[idx]
    n_obs = int(observed.sum())
    passed = int((observed & (lower == 1.0)).sum())
    excluded = int(len(order) - idx.size)
    base = dict(cases=int(idx.size), observed=n_obs, passed=passed,
                missing=int(idx.size - n_obs), excluded=excluded)
    if clusters is not None and idx.size:
        ids = [clusters[i] for i in idx.tolist()]
        if len(set(ids)) < len(ids):
            return _over_clusters(ids, lower, upper, level, base)
    if binary:
        interval = rate_interval(passed, n_obs, int(idx.size - n_obs), level)
        return RateOverCases(interval.estimate, interval.lower, interval.upper,
                             interval.method, **base)
    mean = bentkus_interval(lower, upper, level)
    return RateOverCases(mean.estimate, mean.lower, mean.upper, mean.method, **base)


def cluster_names(clusters: Sequence[str | None], ids: Sequence[str]) -> list[str]:
    """Each case's cluster for an interval over clusters: its declared cluster, or — outside
    any — a cluster of its own named by its id (a case id that is also a declared cluster's
    name joins it, as in a run without trials). Never a row number: rows fill in the order
    cases finish."""
    return [cluster if cluster is not None else case_id
            for cluster, case_id in zip(clusters, ids, strict=True)]


def _over_clusters(ids: list[str], lower: FloatArray, upper: FloatArray, level: float,
                   base: dict[str, int]) -> RateOverCases:
    import numpy as np

    from oloproof.stats import bentkus_interval
    names, where = np.unique(np.asarray(ids, dtype=str), return_inverse=True)
    where = where.reshape(-1)
    size = np.bincount(where, minlength=names.size).astype(np.float64)
    low = np.bincount(where, weights=lower, minlength=names.size) / size
    high = np.bincount(where, weights=upper, minlength=names.size) / size
    mean = bentkus_interval(low, high, level)
    return RateOverCases(mean.estimate, mean.lower, mean.upper, mean.method, **base,
                         clusters=int(names.size))


def quantile_over_cases(cases: Sequence[Any], q: float, level: float) -> QuantileInterval:
    """A quantile over every trial's value, clustered by case (cases in the caller's order)."""
    from oloproof.stats.clustered_quantile import clustered_quantile_interval
    return clustered_quantile_interval([c.values for c in cases], [c.missing for c in cases],
                                       q, level)


def pass_hat_curve(cases: Sequence[CaseTrials], criterion: int, level: float
                   ) -> list[RateOverCases]:
    """pass^j for j = 1 … trials of one criterion, each with its interval over cases (what the
    HTML report draws against j): exact where j = trials, Bentkus below."""
    import numpy as np
    trials = max((c.trials for c in cases), default=1)
    ordered = sorted(cases, key=lambda c: _order_key(c.digest, c.case_id))
    counts = [c.counts[criterion] for c in ordered]
    passed = np.asarray([c.passed for c in counts], dtype=np.int64)
    failed = np.asarray([c.failed for c in counts], dtype=np.int64)
    missing = np.asarray([c.missing for c in counts], dtype=np.int64)
    clusters = [c.cluster for c in ordered]
    order = list(range(len(ordered)))
    named = any(c is not None for c in clusters)
    names = cluster_names(clusters, [c.case_id for c in ordered]) if named else None
    return [rate_over_cases(case_values(passed, failed, missing, PASS_HAT_K, j), order, level,
                            binary=j == trials, clusters=names)
            for j in range(1, trials + 1)]
