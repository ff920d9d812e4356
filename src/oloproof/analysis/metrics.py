"""Judgments → metrics and slices, with intervals (docs/concepts.md).

`Analysis` takes case outcomes one at a time and keeps only tallies; `finish` turns the tallies
into metric and slice rows using `oloproof.stats`. The same code serves a run in progress and
`gate` re-reading a stored run.
"""

from __future__ import annotations

import bisect
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oloproof.analysis.facts import empty_trace, has_trajectory, quantile_value
from oloproof.analysis.judged import JudgedCases, JudgeSpec, binary_values, calibrate
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.tally import QuantileTally, RateTally, merge_into
from oloproof.traces import EMPTY_TRAJECTORY

if TYPE_CHECKING:  # NumPy, the statistics and the document's row models are imported when
    # a run is analysed (the document when the first failing case is noted), not before its
    # first case: a run's start-up does not pay for building the pydantic models.
    import numpy as np
    import numpy.typing as npt

    from oloproof.analysis.trials import CaseTrials, TrialAnalysis, TrialMetricSpec
    from oloproof.document import (
        Executions,
        FailingCase,
        FailingCases,
        MetricRow,
        QuantileRow,
        QuantileSliceRow,
        RateRow,
        RateSliceRow,
        SliceRow,
        UsageTotals,
    )

    FloatArray = npt.NDArray[np.float64]

UNITS = {"agent_steps": "steps", "agent_tool_calls": "calls", "latency_ms": "ms",
         "tokens": "tokens", "cost": "cost"}
MARK_LEVEL = 0.05
#: How many failing cases the run document names (the rest: `oloproof inspect --failures`).
FAILING_SHOWN = 10

_DIGITS = re.compile(r"(\d+)")
# What cases are counted by: verdict codes, reasons, and the group of each declared slice.
_Shared = tuple[str, tuple[str | None, ...], tuple[str | None, ...]]


def case_order(case_id: str) -> tuple[tuple[int, int | str], ...]:
    """Case ids in natural order (`c2` before `c10`), the order reports list cases in."""
    return tuple((0, int(part)) if part.isdigit() else (1, part)
                 for part in _DIGITS.split(case_id) if part)


@dataclass(frozen=True)
class QuantileSpec:
    id: str
    source: str
    quantile: float


@dataclass
class MetricPlan:
    """What to compute: criteria (pass rates, in order), quantile metrics, declared slices."""

    criteria: list[str]
    quantiles: list[QuantileSpec]
    slices: list[str]
    min_slice_support: int
    # criterion -> transform name, for metamorphic relations (validity is checked per transform)
    relation_transforms: dict[str, str] = field(default_factory=dict)
    # Some dataset cases name a `cluster`: the others are clusters of one named by their id
    # (a case id that names a cluster joins it), so their codes are kept by id.
    case_clusters: bool = False
    # Repeated trials (docs/reliability.md): how many times each case ran, and the declared
    # pass_hat_k / pass_at_k metrics.
    trials: int = 1
    trial_metrics: list[TrialMetricSpec] = field(default_factory=list)
    # Judge criteria (docs/judges.md), by criterion position: checked against people's labels.
    judges: dict[int, JudgeSpec] = field(default_factory=dict)


def _add_values(tallies: list[QuantileTally],
                values: list[tuple[float | None, str | None, str | None]],
                numbers: list[float] | None) -> None:
    """A case's quantile values into `tallies`; `numbers`: the values, when all observed."""
    if numbers is not None:
        for tally, number in zip(tallies, numbers, strict=True):
            tally.values.append(number)
    else:
        for tally, (value, why, gap) in zip(tallies, values, strict=True):
            tally.add(value, why, gap)


class Analysis:
    """Accumulates case outcomes; `finish` computes metrics and slice rows."""

    def __init__(self, plan: MetricPlan) -> None:
        self.plan = plan
        self.rates: list[RateTally] = []
        self.quantiles = [QuantileTally() for _ in plan.quantiles]
        self.groups: dict[tuple[int, str], tuple[list[RateTally], list[QuantileTally]]] = {}
        # Cases counted by what they share: their verdicts and the group they joined in each
        # declared slice (None: none). A case costs one dictionary update however many slices
        # it joins; `_materialize` spreads the counts over the run and each group.
        self._counts: Counter[_Shared] = Counter()
        # The quantile tallies of the cases that joined the same groups (one per combination
        # of groups met); `_materialize` merges them into the run's and each group's.
        self._quantiles_by_groups: dict[tuple[str | None, ...], list[QuantileTally]] = {}
        # Per cluster, per criterion: [passed, observed, missing] (cases with a cluster only).
        self.clusters: dict[str, list[list[int]]] = {}
        # Cases outside any named cluster, by id (only when the plan says some have one).
        self.singles: dict[str, str] = {}
        self._table: tuple[tuple[int, int, int], npt.NDArray[np.int64]] | None = None
        self.cases = 0
        # Cases with a failed criterion or an error: how many, and the first few in case order
        # (cases finish in any order; the report must not depend on it).
        self.failing = 0
        self._first_failing: list[tuple[tuple[tuple[int, int | str], ...], FailingCase]] = []
        # (criterion index, missing reason) -> (order, case id, case key) of its first case.
        self._first_missing: dict[tuple[int, str], tuple[tuple[tuple[int, int | str], ...],
                                                        str, str | None]] = {}
        # With trials > 1 every outcome is one trial: folded per case (analysis/trials.py).
        # Usage totals (docs/traces.md#tokens-and-cost): executions that recorded any, and per-field
        # sums.
        self.usage_cases = 0
        self.usage_sums: dict[str, float] = {}
        # Trajectories read from traces: cases with items the reader did not understand.
        self.unread_cases = 0
        self.unread_items = 0
        # The executions (docs/failures.md#accounting): every outcome is one.
        self.executions = 0
        self.cached_executions = 0
        self.errored: Counter[str] = Counter()
        self.retried = 0
        self.attempts = 0
        self.trials: TrialAnalysis | None = None
        self.judged = {i: JudgedCases(spec) for i, spec in plan.judges.items()}
        if plan.trials > 1:  # (repeated trials' folding is imported only for such a run)
            from oloproof.analysis.trials import TrialAnalysis

            self.trials = TrialAnalysis(plan.criteria, plan.trials, len(plan.quantiles),
                                        len(plan.slices), plan.case_clusters,
                                        self._quantile_values, on_case=self._case_folded)

    def add(self, outcome: CaseOutcome) -> None:
        """Count one case (with trials: one trial of a case). Cases are counted by their
        verdicts and slice groups together (most cases of a suite share a handful of these),
        so a case costs one dictionary update."""
        codes = outcome.codes
        facts = outcome.facts
        if self.judged:
            for judged in self.judged.values():
                judged.add(outcome)
        self.executions += 1
        if outcome.cached:
            self.cached_executions += 1
        else:
            self.attempts += outcome.attempts
            if outcome.attempts > 1:
                self.retried += 1
        if outcome.error is not None:
            self.errored[outcome.error] += 1
        elif outcome.no_state:
            self.errored["snapshot_failed"] += 1
        if facts is not None:
            if "usage" in facts:
                self._add_usage(facts["usage"])
            if "unread" in facts:
                self.unread_cases += 1
                self.unread_items += int(facts["unread"])
        if self.trials is not None:
            self._counts[(codes, tuple(outcome.reasons), ())] += 1
            if "M" in codes:
                self._note_missing(outcome)
            self.trials.add(outcome)
            return
        groups = tuple(outcome.groups)
        self._counts[(codes, tuple(outcome.reasons), groups)] += 1
        self.cases += 1
        if "F" in codes or "M" in codes or outcome.error is not None:
            self._note_failing(outcome)
        if self.plan.quantiles:
            values = self._quantile_values(outcome)
            # The common case, every value observed, is appended straight to the tallies.
            numbers = [value for value, why, _ in values if why is None and value is not None]
            tallies = self._quantiles_by_groups.get(groups)
            if tallies is None:
                tallies = self._quantiles_by_groups[groups] = [
                    QuantileTally() for _ in self.plan.quantiles]
            _add_values(tallies, values, numbers if len(numbers) == len(values) else None)
        if outcome.cluster is None:
            if self.plan.case_clusters:
                self.singles[outcome.case_id] = outcome.codes
        else:
            counts = self.clusters.get(outcome.cluster)
            if counts is None:
                counts = [[0, 0, 0] for _ in self.plan.criteria]
                self.clusters[outcome.cluster] = counts
            for i, code in enumerate(outcome.codes):
                if code == "P":
                    counts[i][0] += 1
                    counts[i][1] += 1
                elif code == "F":
                    counts[i][1] += 1
                elif code == "M":
                    counts[i][2] += 1

    def _add_usage(self, usage: dict[str, Any]) -> None:
        self.usage_cases += 1
        for key, value in usage.items():
            self.usage_sums[key] = self.usage_sums.get(key, 0) + value

    def usage_totals(self) -> UsageTotals | None:
        """What the run's executions recorded of tokens and cost, or None if none did."""
        if not self.usage_cases:
            return None
        from oloproof.document import UsageTotals
        sums = self.usage_sums
        return UsageTotals(
            cases=self.usage_cases,
            input_tokens=int(sums["input_tokens"]) if "input_tokens" in sums else None,
            output_tokens=int(sums["output_tokens"]) if "output_tokens" in sums else None,
            cost=float(sums["cost"]) if "cost" in sums else None,
        )

    def execution_counts(self) -> Executions:
        """The run's executions: ran, cached, errored by kind, retried (the document's
        `executions`)."""
        from oloproof.document import ErrorKind, Executions
        errored: dict[ErrorKind, int] = {}
        for kind, count in sorted(self.errored.items(), key=lambda item: (-item[1], item[0])):
            errored[ErrorKind.of(kind)] = errored.get(ErrorKind.of(kind), 0) + count
        return Executions(cases=self.executions, ran=self.executions - self.cached_executions,
                          cached=self.cached_executions, errored=errored,
                          retried=self.retried, attempts=self.attempts)

    def _note_missing(self, outcome: CaseOutcome,
                      order: tuple[tuple[int, int | str], ...] | None = None) -> None:
        """Remember the first case missing for each reason (`order`: its `case_order`, if
        known)."""
        if "M" not in outcome.codes:
            return
        if order is None:
            order = case_order(outcome.case_id)
        for i, code in enumerate(outcome.codes):
            if code == "M":
                key = (i, outcome.reasons[i] or "unknown")
                known = self._first_missing.get(key)
                if known is None or order < known[0]:
                    self._first_missing[key] = (order, outcome.case_id, outcome.case_key)

    def _note_failing(self, outcome: CaseOutcome) -> None:
        """Remember the first case missing for each reason, and the first failing cases."""
        order = case_order(outcome.case_id)
        self._note_missing(outcome, order)
        if "F" not in outcome.codes and outcome.error is None:
            return
        self._note_failing_case(outcome.case_id, outcome.codes, outcome.error, order=order)

    def _note_failing_case(self, case_id: str, codes: str, error: str | None,
                           trials: CaseTrials | None = None,
                           order: tuple[tuple[int, int | str], ...] | None = None) -> None:
        if order is None:
            order = case_order(case_id)
        criteria = self.plan.criteria
        self.failing += 1
        shown = self._first_failing
        if len(shown) >= FAILING_SHOWN and order >= shown[-1][0]:
            return
        from oloproof.document import FailingCase
        failed = [c for c, code in zip(criteria, codes, strict=True) if code == "F"]
        missing = [c for c, code in zip(criteria, codes, strict=True) if code == "M"]
        failed_trials = missing_trials = None
        if trials is not None:  # how many of its trials gave each verdict
            counts = dict(zip(criteria, trials.counts, strict=True))
            failed_trials = {c: counts[c].failed for c in failed} or None
            missing_trials = {c: counts[c].missing for c in missing} or None
        case = FailingCase(case=case_id, failed=failed, missing=missing, error=error,
                           failed_trials=failed_trials, missing_trials=missing_trials)
        bisect.insort(shown, (order, case), key=lambda item: item[0])
        del shown[FAILING_SHOWN:]

    def _case_folded(self, case: CaseTrials) -> None:
        """A case whose trials are all in: counted once, failing if any trial failed a
        criterion or errored (missing where no trial failed but one is missing)."""
        self.cases += 1
        codes = "".join("F" if c.failed else "M" if c.missing else "P" if c.passed else "X"
                        for c in case.counts)
        error = case.errors[0] if case.errors else None
        if "F" in codes or error is not None:
            self._note_failing_case(case.case_id, codes, error, case)

    def failing_cases(self) -> FailingCases:
        """How many cases failed a criterion or errored, and the first of them."""
        from oloproof.document import FailingCases
        return FailingCases(total=self.failing, first=[case for _, case in self._first_failing])

    def missing_examples(self) -> dict[tuple[str, str], tuple[str, str | None]]:
        """(criterion, missing reason) -> (first case id, its judgment key prefix)."""
        return {(self.plan.criteria[i], reason): (case_id, case_key)
                for (i, reason), (_, case_id, case_key) in self._first_missing.items()}

    def _tallies(self, combos: Counter[tuple[str, tuple[str | None, ...]]]) -> list[RateTally]:
        tallies = [RateTally() for _ in self.plan.criteria]
        for (codes, reasons), count in combos.items():
            for tally, code, reason in zip(tallies, codes, reasons, strict=True):
                tally.add(code, reason, count)
        return tallies

    def _materialize(self) -> None:
        """The run's and each slice group's tallies, from the cases counted together."""
        slices = len(self.plan.slices)
        combos: Counter[tuple[str, tuple[str | None, ...]]] = Counter()
        group_combos: list[dict[str, Counter[tuple[str, tuple[str | None, ...]]]]] = [
            {} for _ in range(slices)]
        for (codes, reasons, groups), count in self._counts.items():
            combos[(codes, reasons)] += count
            for found, group in zip(group_combos, groups[:slices], strict=False):
                if group is not None:
                    found.setdefault(group, Counter())[(codes, reasons)] += count
        quantiles = len(self.plan.quantiles)
        self.quantiles = [QuantileTally() for _ in range(quantiles)]
        group_quantiles: list[dict[str, list[QuantileTally]]] = [{} for _ in range(slices)]
        for groups, tallies in self._quantiles_by_groups.items():
            merge_into(self.quantiles, tallies)
            for by_group, group in zip(group_quantiles, groups[:slices], strict=False):
                if group is not None:
                    merge_into(by_group.setdefault(
                        group, [QuantileTally() for _ in range(quantiles)]), tallies)
        self.rates = self._tallies(combos)
        self.groups = {(s, group): (self._tallies(counts), group_quantiles[s].get(group) or
                                    [QuantileTally() for _ in range(quantiles)])
                       for s, found in enumerate(group_combos)
                       for group, counts in found.items()}

    def _quantile_values(
        self, outcome: CaseOutcome
    ) -> list[tuple[float | None, str | None, str | None]]:
        """Per quantile metric: (value, why excluded, why missing)."""
        out: list[tuple[float | None, str | None, str | None]] = []
        for spec in self.plan.quantiles:
            if outcome.source is not None:
                out.append((None, "metamorphic_copy", None))
            elif outcome.error is not None:
                out.append((None, None, "case_errored"))
            else:
                value = quantile_value(spec.source, outcome.facts, outcome.latency_ms)
                out.append((value, None, None if value is not None else _gap(spec, outcome)))
        return out

    # ---- results -------------------------------------------------------------------------

    def finish(self, level: float) -> tuple[list[MetricRow], list[SliceRow]]:
        """(metric rows, slice rows), with unrounded bounds."""
        if self.trials is not None:
            self.trials.finish_pending()
            self._materialize()
            rows = trial_rows(self, self.trials, level)
            self._calibrate(rows[0], level)
            return rows
        self._materialize()
        metrics: list[MetricRow] = [self._rate_metric(i, level) for i in range(len(self.rates))]
        self._calibrate(metrics, level)
        # With one trial pass^1 and pass@1 are the criterion itself (C(c, 1) / C(1, 1) = c).
        metrics += [_single_trial_row(spec, metrics[spec.criterion])
                    for spec in self.plan.trial_metrics]
        metrics += [
            _quantile_row(spec, tally, level)
            for spec, tally in zip(self.plan.quantiles, self.quantiles, strict=True)
        ]
        return metrics, self._slice_rows(level)

    def _calibrate(self, metrics: list[MetricRow], level: float) -> None:
        """Each judge criterion's row checked against people's labels (`analysis/judged.py`);
        a pass^k / pass@k row over it carries the same calibration, so its rules wait too."""
        from oloproof.document import RateRow
        for i, judged in self.judged.items():
            row = metrics[i]
            assert isinstance(row, RateRow)
            if self.trials is not None:
                counts = self.trials.counts()[:, i, :]
                size = counts.sum(axis=1)
                kept = size > 0
                low = counts[kept, 0] / size[kept]
                high = (counts[kept, 0] + counts[kept, 2]) / size[kept]
            else:
                low, high = binary_values(row.passed, row.observed, row.missing)
            if low.size:
                calibrate(row, judged, low, high, level, self.plan.trials)
            for other in metrics:
                if isinstance(other, RateRow) and other.criterion == row.id:
                    other.judge = row.judge

    def _rate_metric(self, i: int, level: float) -> RateRow:
        from oloproof.document import RateRow
        from oloproof.stats import bentkus_interval, rate_interval
        name, tally = self.plan.criteria[i], self.rates[i]
        interval = rate_interval(tally.passed, tally.observed, tally.missing, level)
        row = RateRow(
            id=name, estimate=interval.estimate, lower=interval.lower, upper=interval.upper,
            passed=tally.passed, observed=tally.observed, missing=tally.missing,
            excluded=tally.excluded, excluded_by_reason=_sorted(tally.excluded_by_reason),
            missing_by_reason=_sorted(tally.missing_by_reason), method=interval.method,
        )
        if any(c[i][1] + c[i][2] > 1 for c in self.clusters.values()):
            # Cases of one cluster are not independent: each cluster's share of passing cases
            # is one value, and the interval is the Bentkus interval over clusters
            # (docs/concepts.md#clusters).
            lower, upper = self._cluster_shares(i, tally)
            clustered = bentkus_interval(lower, upper, level)
            row.estimate, row.lower, row.upper = (clustered.estimate, clustered.lower,
                                                  clustered.upper)
            row.method = clustered.method
            row.approximate = True
            row.clusters = len(lower)
        if name in self.plan.relation_transforms:
            row.transform = self.plan.relation_transforms[name]
        return row

    def _cluster_shares(self, i: int, tally: RateTally) -> tuple[FloatArray, FloatArray]:
        """Each cluster's lowest and highest possible share of passing cases for criterion
        ``i`` (missing cases failed, then passed), clusters in the order of their ids.

        The interval depends only on the shares' sums, not on their order; the order is fixed
        anyway (by id, never by the order cases finished in) so that a sum is the same float
        every time.
        """
        import numpy as np
        cells = self._cluster_table()[:, i, :]
        size = cells[:, 1] + cells[:, 2]
        counted = cells[size > 0]
        size = size[size > 0].astype(np.float64)
        left = tally.support - int(size.sum())
        if left > 0:
            # Only when the plan said no case names a cluster and one did: their ids are
            # unknown, and any order made up from their counts would be chosen by outcome.
            raise RuntimeError(
                f"{left} cases outside any named cluster were not kept by id; "
                "re-run the suite to decide this clustered metric"
            )
        return counted[:, 0] / size, (counted[:, 0] + counted[:, 2]) / size

    def _cluster_table(self) -> npt.NDArray[np.int64]:
        """[passed, observed, missing] per cluster (rows, in id order) and criterion,
        cases outside a named cluster counted as clusters of one named by their id; built once
        per state of the tallies."""
        import numpy as np
        key = (self.cases, len(self.clusters), len(self.singles))
        if self._table is not None and self._table[0] == key:
            return self._table[1]
        order = sorted(self.clusters.keys() | self.singles.keys())
        position = {cid: row for row, cid in enumerate(order)}
        table = np.zeros((len(order), len(self.plan.criteria), 3), dtype=np.int64)
        if self.clusters:
            rows = np.fromiter((position[cid] for cid in self.clusters), dtype=np.int64,
                               count=len(self.clusters))
            table[rows] = np.asarray(list(self.clusters.values()), dtype=np.int64)
        if self.singles:
            rows = np.fromiter((position[cid] for cid in self.singles), dtype=np.int64,
                               count=len(self.singles))
            codes = np.frombuffer("".join(self.singles.values()).encode("ascii"), dtype="S1")
            codes = codes.reshape(len(self.singles), len(self.plan.criteria))
            # A case id that is also a named cluster's id joins that cluster, as a source
            # case joins its own when the loader names clusters after source ids. (Case ids
            # are unique, so each row is added to once.)
            table[rows, :, 0] += codes == b"P"
            table[rows, :, 1] += (codes == b"P") | (codes == b"F")
            table[rows, :, 2] += codes == b"M"
        self._table = (key, table)
        return table

    def _slice_rows(self, level: float) -> list[SliceRow]:
        from oloproof.stats import benjamini_yekutieli, fisher_two_sided
        rows: list[SliceRow] = []
        tests: list[tuple[RateSliceRow, float]] = []
        for (s, group) in sorted(self.groups, key=_group_order):
            rate_tallies, quantile_tallies = self.groups[(s, group)]
            slice_name = self.plan.slices[s]
            for i, tally in enumerate(rate_tallies):
                if tally.support >= self.plan.min_slice_support:
                    row = _rate_slice(slice_name, group, self.plan.criteria[i], tally, level)
                    rest = self.rates[i]
                    if tally.observed and rest.observed - tally.observed:
                        p = fisher_two_sided(tally.passed, tally.failed,
                                             rest.passed - tally.passed,
                                             rest.failed - tally.failed)
                        tests.append((row, p))
                else:
                    row = _rate_slice(slice_name, group, self.plan.criteria[i], tally, None)
                rows.append(row)
            for spec, qtally in zip(self.plan.quantiles, quantile_tallies, strict=True):
                shown = qtally.support >= self.plan.min_slice_support
                rows.append(_quantile_slice(slice_name, group, spec, qtally,
                                            level if shown else None))
        if tests:
            adjusted = benjamini_yekutieli([p for _, p in tests])
            for (tested, p), q_value in zip(tests, adjusted, strict=True):
                tested.p_value = p
                tested.q_value = q_value
                if q_value <= MARK_LEVEL:
                    tested.mark = "*"
        return rows

    def observed_values(self, metric_id: str) -> FloatArray | None:
        """The observed per-case values of a rate metric of a run with trials (a criterion's
        shares of passing trials, a pass^k / pass@k's values; cases with a missing trial that
        could change their value left out), in case-table order — what `oloproof plan`
        simulates suites from. None for a run without trials or a metric that is not a rate
        over cases. Call after `finish`."""
        if self.trials is None:
            return None
        from oloproof.analysis.trials import case_values
        counts = self.trials.counts()
        specs = {spec.id: spec for spec in self.plan.trial_metrics}
        if metric_id in self.plan.criteria:
            i = self.plan.criteria.index(metric_id)
            values = case_values(counts[:, i, 0], counts[:, i, 1], counts[:, i, 2], None)
        elif metric_id in specs:
            spec = specs[metric_id]
            i = spec.criterion
            values = case_values(counts[:, i, 0], counts[:, i, 1], counts[:, i, 2], spec.type,
                                 spec.k)
        else:
            return None
        kept: FloatArray = values.lower[values.counted & values.observed]
        return kept

    def attach_missing_examples(
        self, metrics: list[MetricRow], messages: dict[tuple[str, str], str | None]
    ) -> None:
        """Name, on each rate metric, the first case missing for each reason (and its error
        text, from `messages`: (criterion, reason) -> text)."""
        from oloproof.document import MissingExample, RateRow
        examples = self.missing_examples()
        for row in metrics:
            if not isinstance(row, RateRow) or not row.missing_by_reason:
                continue
            found = {reason: MissingExample(case=examples[(row.id, reason)][0],
                                            message=messages.get((row.id, reason)))
                     for reason in row.missing_by_reason if (row.id, reason) in examples}
            row.missing_examples = found or None


def _single_trial_row(spec: TrialMetricSpec, row: MetricRow) -> RateRow:
    from oloproof.document import RateRow
    assert isinstance(row, RateRow)
    return row.model_copy(update={"id": spec.id, "metric_type": spec.type,
                                  "criterion": row.id, "k": spec.k, "missing_examples": None})


def _rate_slice(slice_name: str, group: str, metric: str, tally: RateTally,
                level: float | None) -> RateSliceRow:
    """A rate slice row; with `level` None (below support) its counts and no interval."""
    from oloproof.document import RateSliceRow
    from oloproof.stats import rate_interval
    interval = None if level is None else rate_interval(tally.passed, tally.observed,
                                                        tally.missing, level)
    return RateSliceRow(
        slice=slice_name, value=group, metric=metric,
        estimate=interval.estimate if interval else None,
        lower=interval.lower if interval else None, upper=interval.upper if interval else None,
        passed=tally.passed, observed=tally.observed, missing=tally.missing,
        excluded=tally.excluded, excluded_by_reason=_sorted(tally.excluded_by_reason),
        missing_by_reason=_sorted(tally.missing_by_reason),
        method=interval.method if interval else None, below_support=interval is None,
        support=tally.support,
    )


def _quantile_slice(slice_name: str, group: str, spec: QuantileSpec, tally: QuantileTally,
                    level: float | None) -> QuantileSliceRow:
    """A quantile slice row; with `level` None (below support) its counts and no interval."""
    from oloproof.document import QuantileSliceRow
    from oloproof.stats import quantile_interval
    interval = None if level is None else quantile_interval(tally.values, tally.missing,
                                                            spec.quantile, level)
    return QuantileSliceRow(
        slice=slice_name, value=group, metric=spec.id, quantile=spec.quantile,
        unit=UNITS[spec.source],
        estimate=_number(interval.estimate) if interval else None,
        lower=_number(interval.lower) if interval else None,
        upper=_number(interval.upper) if interval else None,
        observed=len(tally.values), missing=tally.missing, excluded=tally.excluded,
        excluded_by_reason=_sorted(tally.excluded_by_reason),
        missing_by_reason=_sorted(tally.missing_by_reason),
        method=interval.method if interval else None, below_support=interval is None,
        support=tally.support,
    )


def _sorted(counts: Counter[str]) -> dict[str, int]:
    return dict(sorted(counts.items()))


def _gap(spec: QuantileSpec, outcome: CaseOutcome) -> str:
    """Why a case has no value for a quantile metric."""
    if spec.source == "latency_ms":
        return "no_latency"
    if spec.source in ("tokens", "cost"):
        return "no_usage" if spec.source == "tokens" else "no_cost"
    if empty_trace(outcome.facts):
        return EMPTY_TRAJECTORY
    if not has_trajectory(outcome.facts):
        return "no_trajectory"
    return "truncated"


def _quantile_row(spec: QuantileSpec, tally: QuantileTally, level: float) -> QuantileRow:
    from oloproof.document import QuantileRow
    from oloproof.stats import quantile_interval
    interval = quantile_interval(tally.values, tally.missing, spec.quantile, level)
    return QuantileRow(
        id=spec.id, quantile=spec.quantile, unit=UNITS[spec.source],
        estimate=_number(interval.estimate), lower=_number(interval.lower),
        upper=_number(interval.upper), observed=len(tally.values), missing=tally.missing,
        excluded=tally.excluded, excluded_by_reason=_sorted(tally.excluded_by_reason),
        missing_by_reason=_sorted(tally.missing_by_reason), method=interval.method,
    )


def _number(value: float | None) -> float | int | None:
    if value is None:
        return None
    return int(value) if float(value).is_integer() else float(value)


# ---- rows with repeated trials (docs/reliability.md; the per-case values are in
# analysis/trials.py) ----


def trial_rows(analysis: Analysis, folding: TrialAnalysis, level: float
               ) -> tuple[list[MetricRow], list[SliceRow]]:
    """Metric and slice rows of a run with trials: every interval over cases."""
    import numpy as np

    from oloproof.analysis.trials import (
        TOO_FEW_TRIALS,
        TRIAL_NOT_RUN,
        case_values,
        cluster_names,
        rate_over_cases,
    )
    from oloproof.document import RateRow
    plan = analysis.plan
    k = plan.trials
    counts = folding.counts()
    table = folding.table
    order = table.order()
    clusters = None if table.clusters is None else cluster_names(table.clusters, table.ids)
    metrics: list[MetricRow] = []
    for i, name in enumerate(plan.criteria):
        c, f, m = counts[:, i, 0], counts[:, i, 1], counts[:, i, 2]
        figures = rate_over_cases(case_values(c, f, m, None), order, level, binary=False,
                                  clusters=clusters)
        tally = analysis.rates[i]  # the trials that ran, with their reasons
        trials_missing = Counter(tally.missing_by_reason)
        not_run = int(m.sum()) - tally.missing
        if not_run > 0:
            trials_missing[TRIAL_NOT_RUN] += not_run
        passed, failed, missing = int(c.sum()), int(f.sum()), int(m.sum())
        metrics.append(RateRow(
            id=name, estimate=figures.estimate, lower=figures.lower, upper=figures.upper,
            passed=passed, observed=passed + failed, missing=missing,
            excluded=len(table) * k - passed - failed - missing,
            excluded_by_reason=_sorted(tally.excluded_by_reason),
            missing_by_reason=_sorted(trials_missing), method=figures.method,
            approximate=figures.clusters is not None, clusters=figures.clusters,
            transform=plan.relation_transforms.get(name), trials=k, cases=figures.cases,
            excluded_cases=figures.excluded,
        ))
    for spec in plan.trial_metrics:
        i = spec.criterion
        c, f, m = counts[:, i, 0], counts[:, i, 1], counts[:, i, 2]
        values = case_values(c, f, m, spec.type, spec.k)
        figures = rate_over_cases(values, order, level, binary=spec.k == k, clusters=clusters)
        missing_by_reason: Counter[str] = Counter()
        excluded_by_reason: Counter[str] = Counter()
        for row in np.flatnonzero(values.counted & ~values.observed).tolist():
            missing_by_reason[TOO_FEW_TRIALS if values.too_few[row] else
                              table.missing_reasons.get((row, i), "unknown")] += 1
        for row in np.flatnonzero(~values.counted).tolist():
            excluded_by_reason[table.excluded_reasons.get((row, i), "unknown")] += 1
        criterion = plan.criteria[i]
        metrics.append(RateRow(
            id=spec.id, estimate=figures.estimate, lower=figures.lower, upper=figures.upper,
            passed=figures.passed, observed=figures.observed, missing=figures.missing,
            excluded=figures.excluded, excluded_by_reason=_sorted(excluded_by_reason),
            missing_by_reason=_sorted(missing_by_reason), method=figures.method,
            approximate=figures.clusters is not None, clusters=figures.clusters,
            transform=plan.relation_transforms.get(criterion), trials=k, cases=figures.cases,
            metric_type="pass_hat_k" if spec.type == "pass_hat_k" else "pass_at_k",
            criterion=criterion, k=spec.k,
        ))
    for s, quantile in enumerate(plan.quantiles):
        cases = [folding.quantiles[s][row] for row in order]
        metrics.append(_trial_quantile_row(quantile, cases, k, level))
    return metrics, _trial_slice_rows(analysis, folding, level)


def _trial_quantile_row(spec: QuantileSpec, cases: list[Any], k: int,
                        level: float | None, slice_of: tuple[str, str] | None = None
                        ) -> Any:
    """A quantile over every trial's value, clustered by case (a metric row, or with
    `slice_of` a slice row); `level` None: below support, counts only."""
    from oloproof.analysis.trials import quantile_over_cases
    from oloproof.document import QuantileRow, QuantileSliceRow
    counted = [c for c in cases if c.values or c.missing]
    observed = sum(len(c.values) for c in counted)
    missing = sum(c.missing for c in counted)
    excluded = sum(c.excluded for c in cases)
    excluded_by: Counter[str] = Counter()
    missing_by: Counter[str] = Counter()
    for c in cases:
        if c.excluded:
            excluded_by[c.excluded_reason or "unknown"] += c.excluded
        missing_by.update(c.missing_reasons)
    interval = None if level is None or not counted else \
        quantile_over_cases(counted, spec.quantile, level)
    estimate = _number(interval.estimate) if interval else None
    lower = _number(interval.lower) if interval else None
    upper = _number(interval.upper) if interval else None
    method = interval.method if interval else None
    if slice_of is not None:
        return QuantileSliceRow(
            slice=slice_of[0], value=slice_of[1], metric=spec.id, quantile=spec.quantile,
            unit=UNITS[spec.source], estimate=estimate, lower=lower, upper=upper,
            observed=observed, missing=missing, excluded=excluded,
            excluded_by_reason=_sorted(excluded_by), missing_by_reason=_sorted(missing_by),
            method=method, below_support=level is None, support=len(counted), trials=k)
    return QuantileRow(
        id=spec.id, quantile=spec.quantile, unit=UNITS[spec.source], estimate=estimate,
        lower=lower, upper=upper, observed=observed, missing=missing, excluded=excluded,
        excluded_by_reason=_sorted(excluded_by), missing_by_reason=_sorted(missing_by),
        method=method or "", trials=k, cases=len(counted))


def _trial_slice_rows(analysis: Analysis, folding: TrialAnalysis, level: float
                      ) -> list[SliceRow]:
    """Each group over the cases with a trial in it, a case's value its share among those
    trials (see analysis/trials.py); no group is tested against the rest."""
    from oloproof.analysis.trials import case_values, rate_over_cases
    from oloproof.document import RateSliceRow
    plan = analysis.plan
    table = folding.table
    rows: list[SliceRow] = []
    for key in sorted(folding.groups, key=_group_order):
        s, group = key
        members = folding.groups[key]
        counts = members.matrix(len(plan.criteria))
        local = sorted(range(len(members.rows)),
                       key=lambda r: (table.digests[members.rows[r]] or "",
                                      table.ids[members.rows[r]]))
        slice_name = plan.slices[s]
        for i, name in enumerate(plan.criteria):
            c, f, m, x = (counts[:, i, n] for n in range(4))
            values = case_values(c, f, m, None)
            support = int(values.counted.sum())
            shown = support >= plan.min_slice_support
            figures = rate_over_cases(values, local, level, binary=False) if shown else None
            rows.append(RateSliceRow(
                slice=slice_name, value=group, metric=name,
                estimate=figures.estimate if figures else None,
                lower=figures.lower if figures else None,
                upper=figures.upper if figures else None,
                passed=int(c.sum()), observed=int(c.sum() + f.sum()), missing=int(m.sum()),
                excluded=int(x.sum()), method=figures.method if figures else None,
                below_support=not shown, support=support, trials=plan.trials,
            ))
        for q, spec in enumerate(plan.quantiles):
            cases = [members.quantiles[r][q] for r in local]
            support = sum(1 for c in cases if c.values or c.missing)
            rows.append(_trial_quantile_row(
                spec, cases, plan.trials,
                level if support >= plan.min_slice_support else None, (slice_name, group)))
    return rows


def _group_order(key: tuple[int, str]) -> tuple[int, int, str]:
    s, group = key
    # Buckets in their natural order (le_4 < le_8 < gt_8), other values alphabetically.
    if group.startswith("le_") and group[3:].isdigit():
        return (s, int(group[3:]), group)
    if group.startswith("gt_") and group[3:].isdigit():
        return (s, 1 << 40, group)
    return (s, 0, group)
