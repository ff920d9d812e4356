"""Judgments → metrics and slices, with intervals (docs/concepts.md).

`Analysis` takes case outcomes one at a time and keeps only tallies; `finish` turns the tallies
into metric and slice rows using `oloproof.stats`. The same code serves a run in progress and
`gate` re-reading a stored run.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from oloproof.analysis.clusters import ClusterCounts
from oloproof.analysis.conversations import ConversationCounts, simulator_reason
from oloproof.analysis.examples import FirstCases
from oloproof.analysis.facts import empty_trace, has_trajectory, quantile_value
from oloproof.analysis.judged import JudgedCases, JudgeSpec, binary_values, calibrate
from oloproof.analysis.ordering import group_order
from oloproof.analysis.outcome import CaseOutcome
from oloproof.analysis.rows import plain_number, quantile_slice_row, rate_slice_row, sorted_counts
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
        MetricRow,
        QuantileRow,
        RateRow,
        RateSliceRow,
        SliceRow,
        UsageTotals,
    )

    FloatArray = npt.NDArray[np.float64]

UNITS = {"agent_steps": "steps", "agent_tool_calls": "calls", "latency_ms": "ms",
         "tokens": "tokens", "cost": "cost", "turns": "turns", "agent_turns": "turns"}
MARK_LEVEL = 0.05

# What cases are counted by: verdict codes, reasons, and the group of each declared slice.
_Shared = tuple[str, tuple[str | None, ...], tuple[str | None, ...]]


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
    # Conversations (docs/conversations.md): the simulator's fidelity criterion's position, if
    # the suite has one (a conversation it fails is `unfaithful`).
    fidelity: int | None = None


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
        # Cases counted per cluster (analysis/clusters.py); by id those outside any named
        # cluster, when the plan says some cases name one.
        self.clusters = ClusterCounts(len(plan.criteria))
        self.cases = 0
        # Cases with a failed criterion or an error, and the first case missing for each
        # reason: the examples the run document names (analysis/examples.py).
        self.first_cases = FirstCases(plan.criteria)
        # Usage totals (docs/traces.md#tokens-and-cost): executions that recorded any, and per-field
        # sums.
        self.usage_cases = 0
        self.usage_sums: dict[str, float] = {}
        # What the judges' verdicts cost (docs/conversations.md#cost-accounting), apart.
        self.judge_usage: dict[str, float] = {}
        # The run's conversations and their simulators' failures (analysis/conversations.py).
        self.conversations = ConversationCounts(plan.fidelity)
        # Trajectories read from traces: cases with items the reader did not understand.
        self.unread_cases = 0
        self.unread_items = 0
        self.unread_by: set[str] = set()  # the adapters that read those traces
        # The executions (docs/failures.md#accounting): every outcome is one.
        self.executions = 0
        self.cached_executions = 0
        self.errored: Counter[str] = Counter()
        self.retried = 0
        self.attempts = 0
        # With trials > 1 every outcome is one trial: folded per case (analysis/trials.py).
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
        if outcome.judge_usage is not None:
            for key, value in zip(("input_tokens", "output_tokens"), outcome.judge_usage,
                                  strict=False):
                if value is not None:
                    self.judge_usage[key] = self.judge_usage.get(key, 0) + value
        if facts is not None:
            if "usage" in facts:
                self._add_usage(facts["usage"])
            if "conversation" in facts:
                self.conversations.add(outcome)
            if "unread" in facts:
                self.unread_cases += 1
                self.unread_items += int(facts["unread"])
                self.unread_by.add(str(facts.get("reader") or "trace"))
        if self.trials is not None:
            self._counts[(codes, tuple(outcome.reasons), ())] += 1
            if "M" in codes:
                self.first_cases.note_missing(outcome)
            self.trials.add(outcome)
            return
        groups = tuple(outcome.groups)
        self._counts[(codes, tuple(outcome.reasons), groups)] += 1
        self.cases += 1
        if "F" in codes or "M" in codes or outcome.error is not None:
            self.first_cases.note(outcome)
        if self.plan.quantiles:
            values = self._quantile_values(outcome)
            # The common case, every value observed, is appended straight to the tallies.
            numbers = [value for value, why, _ in values if why is None and value is not None]
            tallies = self._quantiles_by_groups.get(groups)
            if tallies is None:
                tallies = self._quantiles_by_groups[groups] = [
                    QuantileTally() for _ in self.plan.quantiles]
            _add_values(tallies, values, numbers if len(numbers) == len(values) else None)
        if outcome.cluster is not None or self.plan.case_clusters:
            self.clusters.add(outcome)

    def _add_usage(self, usage: dict[str, Any]) -> None:
        self.usage_cases += 1
        for key, value in usage.items():
            self.usage_sums[key] = self.usage_sums.get(key, 0) + value

    def usage_totals(self) -> UsageTotals | None:
        """What the run's executions recorded of tokens and cost, or None if none did; with
        what its simulated users' turns and its judges' verdicts cost, apart
        (docs/conversations.md#cost-accounting)."""
        simulator = self.conversations.usage
        if not self.usage_cases and not simulator and not self.judge_usage:
            return None
        from oloproof.document import UsageSum, UsageTotals
        sums = self.usage_sums
        return UsageTotals(
            cases=self.usage_cases,
            input_tokens=int(sums["input_tokens"]) if "input_tokens" in sums else None,
            output_tokens=int(sums["output_tokens"]) if "output_tokens" in sums else None,
            cost=float(sums["cost"]) if "cost" in sums else None,
            simulator=UsageSum(**_sums(simulator)) if simulator else None,
            judge=UsageSum(**_sums(self.judge_usage)) if self.judge_usage else None,
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

    def _case_folded(self, case: CaseTrials) -> None:
        """A case whose trials are all in: counted once, failing if any trial failed a
        criterion or errored (missing where no trial failed but one is missing)."""
        self.cases += 1
        codes = "".join("F" if c.failed else "M" if c.missing else "P" if c.passed else "X"
                        for c in case.counts)
        error = case.errors[0] if case.errors else None
        if "F" in codes or error is not None:
            self.first_cases.note_failing(case.case_id, codes, error, case)

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
        simulator = None if "conversation" not in (outcome.facts or ()) else \
            simulator_reason(outcome.facts, outcome.codes, self.plan.fidelity)
        for spec in self.plan.quantiles:
            if outcome.source is not None:
                out.append((None, "metamorphic_copy", None))
            elif outcome.error is not None:
                out.append((None, None, "case_errored"))
            elif simulator is not None:  # (the simulator's failure: the agent's are missing)
                out.append((None, None, simulator))
            else:
                value = quantile_value(spec.source, outcome.facts, outcome.latency_ms)
                out.append((value, None, None if value is not None else _gap(spec, outcome)))
        return out

    # ---- results -------------------------------------------------------------------------

    def finish(self, level: float, approximate: bool = False
               ) -> tuple[list[MetricRow], list[SliceRow]]:
        """(metric rows, slice rows), with unrounded bounds. `approximate`: the policy allows
        approximate methods (a judged criterion's PPI++, docs/judges.md)."""
        if self.trials is not None:
            self.trials.finish_pending()
            self._materialize()
            from oloproof.analysis.trial_rows import trial_rows
            rows = trial_rows(self, self.trials, level)
            self._calibrate(rows[0], level, approximate)
            return rows
        self._materialize()
        metrics: list[MetricRow] = [self._rate_metric(i, level) for i in range(len(self.rates))]
        self._calibrate(metrics, level, approximate)
        # With one trial pass^1 and pass@1 are the criterion itself (C(c, 1) / C(1, 1) = c).
        if self.plan.trial_metrics:
            from oloproof.analysis.trial_rows import single_trial_row
        metrics += [single_trial_row(spec, metrics[spec.criterion])
                    for spec in self.plan.trial_metrics]
        metrics += [
            _quantile_row(spec, tally, level)
            for spec, tally in zip(self.plan.quantiles, self.quantiles, strict=True)
        ]
        return metrics, self._slice_rows(level)

    def _calibrate(self, metrics: list[MetricRow], level: float, approximate: bool) -> None:
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
            else:
                low = binary_values(row.passed, row.observed, row.missing)
            if low.size:
                calibrate(row, judged, low, level, self.plan.trials, approximate)
            for other in metrics:
                if isinstance(other, RateRow) and other.criterion == row.id:
                    other.judge = row.judge

    def _rate_metric(self, i: int, level: float) -> RateRow:
        from oloproof.document import RateRow
        from oloproof.stats import cluster_ratio_interval, rate_interval
        name, tally = self.plan.criteria[i], self.rates[i]
        interval = rate_interval(tally.passed, tally.observed, tally.missing, level)
        row = RateRow(
            id=name, estimate=interval.estimate, lower=interval.lower, upper=interval.upper,
            passed=tally.passed, observed=tally.observed, missing=tally.missing,
            excluded=tally.excluded, excluded_by_reason=sorted_counts(tally.excluded_by_reason),
            missing_by_reason=sorted_counts(tally.missing_by_reason), method=interval.method,
        )
        if self.clusters.clustered(i):
            # Cases of one cluster are not independent: the rate is still the cases' rate,
            # its interval over clusters, each one draw of its cases (docs/concepts.md#clusters).
            lower, upper, sizes = self.clusters.sums(i, tally.support)
            clustered = cluster_ratio_interval(lower, upper, sizes, level,
                                               observed_sum=float(tally.passed),
                                               observed_cases=tally.observed)
            row.estimate, row.lower, row.upper = (clustered.estimate, clustered.lower,
                                                  clustered.upper)
            row.method = clustered.method
            row.approximate = True
            row.clusters = len(sizes)
        if name in self.plan.relation_transforms:
            row.transform = self.plan.relation_transforms[name]
        return row

    def _slice_rows(self, level: float) -> list[SliceRow]:
        from oloproof.stats import benjamini_yekutieli, fisher_two_sided
        rows: list[SliceRow] = []
        tests: list[tuple[RateSliceRow, float]] = []
        for (s, group) in sorted(self.groups, key=group_order):
            rate_tallies, quantile_tallies = self.groups[(s, group)]
            slice_name = self.plan.slices[s]
            for i, tally in enumerate(rate_tallies):
                if tally.support >= self.plan.min_slice_support:
                    row = rate_slice_row(slice_name, group, self.plan.criteria[i], tally, level)
                    rest = self.rates[i]
                    if tally.observed and rest.observed - tally.observed:
                        p = fisher_two_sided(tally.passed, tally.failed,
                                             rest.passed - tally.passed,
                                             rest.failed - tally.failed)
                        tests.append((row, p))
                else:
                    row = rate_slice_row(slice_name, group, self.plan.criteria[i], tally, None)
                rows.append(row)
            for spec, qtally in zip(self.plan.quantiles, quantile_tallies, strict=True):
                shown = qtally.support >= self.plan.min_slice_support
                rows.append(quantile_slice_row(slice_name, group, spec.id, spec.quantile,
                                               UNITS[spec.source], qtally,
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
        from oloproof.stats.pass_k import case_values
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



def _sums(sums: dict[str, float]) -> dict[str, Any]:
    """Summed tokens (whole numbers) and cost, as a `UsageSum` takes them."""
    return {key: (float(value) if key == "cost" else int(value)) for key, value in sums.items()
            if key in ("input_tokens", "output_tokens", "cost")}


def _gap(spec: QuantileSpec, outcome: CaseOutcome) -> str:
    """Why a case has no value for a quantile metric."""
    if spec.source == "latency_ms":
        return "no_latency"
    if spec.source in ("tokens", "cost"):
        return "no_usage" if spec.source == "tokens" else "no_cost"
    if spec.source in ("turns", "agent_turns"):
        held = (outcome.facts or {}).get("conversation")
        return "no_conversation" if held is None else "truncated"
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
        estimate=plain_number(interval.estimate), lower=plain_number(interval.lower),
        upper=plain_number(interval.upper), observed=len(tally.values), missing=tally.missing,
        excluded=tally.excluded, excluded_by_reason=sorted_counts(tally.excluded_by_reason),
        missing_by_reason=sorted_counts(tally.missing_by_reason), method=interval.method,
    )
