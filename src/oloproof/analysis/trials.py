"""Repeated trials (docs/reliability.md): each case's trials folded, as they complete, into
counts per criterion.

With `trials: k` every case runs k times and every criterion judges every trial. Trials of one
case are not independent, cases are; so a case's trials are folded, as they complete, into
counts per criterion — `c` passed, `f` failed, `m` missing (or errored), `x` excluded — from
which each case's value is computed (`oloproof.stats.pass_k`: its share of passing trials,
pass^j, pass@j) and every interval is taken over cases (analysis/trial_rows.py).

Memory stays flat in the number of trials: a case's trials are dispatched one after another
and folded as soon as the last one is in, so only the cases in flight are held trial by trial;
the suite keeps three small counts per case and criterion.

Slices: a trial joins the group its own trajectory puts it in (two trials of one case may land
in different `first_tool` groups); a group keeps, for each case with a trial in it, the counts
of *those* trials. Quantile metrics keep each trial's value, case by case.
"""

from __future__ import annotations

from array import array
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from oloproof.analysis.ordering import case_digest_order
from oloproof.analysis.outcome import CaseOutcome

if TYPE_CHECKING:  # NumPy is imported when a run is analysed, not before
    import numpy as np
    import numpy.typing as npt

    IntArray = npt.NDArray[np.int64]

#: The reason a trial that never ran (a stopped or incomplete run) is missing.
TRIAL_NOT_RUN = "trial_not_run"


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
        return sorted(chosen, key=lambda r: case_digest_order(self.digests[r], self.ids[r]))


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
