"""The data of the HTML report, read from the store in bulk (docs/cli.md#oloproof-report).

`case_view` reads one case with a handful of queries; for a 20,000-case run that is far too many
round trips. `build_report_data` reads the run's rows in batches (case bodies, executions,
artifacts, judgments, errors: one query each per batch) and serves them to the same
`case_view` from memory, so the HTML panel shows exactly what `oloproof inspect --case` shows,
including anything `case_view` learns to return later.

What it produces:

- `summary`: the run's JSON document with the terminal's display strings added (so both reports
  show the same figures), the policy's rules and the suite's criteria and slices;
- `index`: one short row per case for the case list (id, verdict codes, error kind, slice
  groups, source) — parsed when the page opens;
- `chunks`: the case details, a few hundred kilobytes of JSON per chunk, as JSON text or as
  gzip+base64 (decompressed by the browser only when a case of that chunk is opened);
- `shared`: large values (sandbox states) that several cases hold, stored once.

Served by `oloproof view` (`served=True`), the page embeds the summary and the index only: the
index is read from the run's stored outcomes, without a case view, and the page asks for a
case's details (`case_detail`, the same JSON a chunk holds for it) when the case is opened. So
a run of 20,000 cases opens as fast as its summary and index can be read.
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import json
import math
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from oloproof.analysis.outcome import CaseOutcome, judgment_keys
from oloproof.analysis.trial_rows import pass_hat_curve
from oloproof.analysis.trials import iter_case_trials
from oloproof.document import (
    Comparison,
    MetricRow,
    QuantileRow,
    RateRow,
    RunDocument,
    SliceRow,
    TransformValidity,
)
from oloproof.errors import ErrorKind, StoreError
from oloproof.report.case_view import case_view
from oloproof.report.comparison import method_note, verdict_words
from oloproof.report.numbers import (
    decision_comparison,
    difference_text,
    estimate_text,
    executions_text,
    interval_text,
    judge_check_text,
    n_text,
    p_value_text,
    threshold_text,
    usage_text,
)
from oloproof.report.what_broke import error_groups, hint, leading
from oloproof.stats import percent, percent_lower, percent_upper
from oloproof.store.store import Store
from oloproof.suite.policy import ERRORED_SUBJECT

#: Cases read from the store per batch.
BATCH = 500
#: A chunk of case details is closed once its JSON reaches this many characters ...
CHUNK_CHARS = 192_000
#: ... or holds this many cases.
CHUNK_CASES = 200
#: A value whose JSON is longer is cut to this length (the full value stays in the store).
VALUE_CAP = 256_000
#: States (initial, end) with JSON longer than this are stored once and referenced.
SHARE_OVER = 2_000
#: Below this many characters of case details, nothing is compressed (any browser reads it).
COMPRESS_OVER = 1_500_000

_VIEW_SKIP = frozenset({"run_id", "case"})
_SHARED_KEYS = frozenset({"initial_state", "end_state"})


@dataclass
class ReportData:
    """Everything the page embeds; `encoding` is `json` or `gzip` (base64) for chunks/shared."""

    summary: dict[str, Any]
    index: list[list[Any]]
    chunks: list[str] = field(default_factory=list)
    #: With a baseline (docs/compare.md#both-runs-side-by-side-the-html-report): index rows of the
    #: baseline run's cases shown side by side with the candidate's (their details are in the same
    #: chunks).
    baseline_index: list[list[Any]] = field(default_factory=list)
    shared: list[str] = field(default_factory=list)
    encoding: str = "json"
    raw_chars: int = 0


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False,
                           check_circular=False).encode


def dumps(value: Any) -> str:
    """Compact JSON; NaN and infinities (not JSON) become strings rather than breaking a page."""
    try:
        return _ENCODE(value)
    except ValueError:
        return _ENCODE(_finite(value))


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


# ---- the summary -------------------------------------------------------------------------------


def _threshold_text(rule: dict[str, Any], metric: MetricRow | None) -> str:
    if rule.get("kind") == "observed_count":
        return f"at most {rule.get('max_failures')} observed failure(s)"
    if rule.get("kind") == "non_inferiority":
        return (f"difference from the baseline ≥ -{percent(float(rule.get('margin') or 0))} "
                "(non-inferiority margin)")
    if rule.get("kind") == "max_errored":  # (docs/failures.md#the-error-budget)
        if rule.get("max_count") is not None:
            return f"at most {rule.get('max_count')} errored execution(s)"
        share = threshold_text(float(rule.get("max_share") or 0), True)
        return f"at most {share} of the executions errored"
    bound = "min" if rule.get("min") is not None else "max"
    value = rule.get(bound)
    if value is None:
        return ""
    if isinstance(metric, QuantileRow):
        shown = threshold_text(float(value), False, metric.unit)
    else:
        shown = threshold_text(float(value), True)
    return f"{bound} {shown}"


def _row_text(row: MetricRow | SliceRow) -> dict[str, str]:
    interval = interval_text(row)
    judge = row.judge if isinstance(row, RateRow) else None
    if judge is not None:  # a judged criterion: raw until people's labels check it
        interval += " uncalibrated" if judge.status == "uncalibrated" else " corrected"
    return {"estimate": estimate_text(row), "interval": interval, "n": n_text(row)}


def _transform_text(v: TransformValidity) -> str:
    lower = percent_lower(v.lower) if v.lower is not None else "—"
    state = "checked" if v.checked else "NOT checked (transform_not_checked)"
    text = (f"{v.kept} of {v.pairs} pairs labelled kept; lower bound {lower} vs "
            f"minimum_validity {percent(v.minimum_validity)} → {state}")
    if v.stale_labels:
        text += f"; {v.stale_labels} stale label(s) ignored"
    return text


def _what_broke(document: RunDocument) -> dict[str, Any]:
    """The errors grouped as the terminal shows them (`report/what_broke.py`)."""
    groups = error_groups(document.errors)
    lead = leading(document.executions, groups)
    return {"lead": lead, "cases": len({c for g in groups for c in g.cases}),
            "groups": [{"kind": str(g.kind), "message": g.message, "executions": g.executions,
                        "cases": g.cases, "hint": _unsaid(hint(g.kind, g.message), lead)}
                       for g in groups]}


def _unsaid(said: str | None, lead: str | None) -> str | None:
    """A group's hint, unless the leading sentence says it already."""
    return None if said is None or (lead is not None and said in lead) else said


def build_summary(document: RunDocument, record: dict[str, Any]) -> dict[str, Any]:
    """The run document plus display strings, rules with their thresholds, criteria, slices."""
    summary = document.to_json()
    by_id = {m.id: m for m in document.metrics}
    summary["metrics"] = [dict(m.to_json(), text=_row_text(m)) for m in document.metrics]
    paired = {r.criterion: r for r in (document.baseline.criteria
                                       if document.baseline is not None else ())}
    # Each decision with the comparison it made, as the terminal prints it.
    summary["decisions"] = [dict(d.to_json(), text=decision_comparison(
        d, by_id.get(d.metric), paired.get(d.metric))) for d in document.decisions]
    summary["slices"] = [dict(r.to_json(), text=_row_text(r)) for r in document.slices]
    summary["transforms"] = [dict(v.to_json(), text=_transform_text(v))
                             for v in document.transforms]
    summary["judge_checks"] = [{"criterion": m.id, "judge": m.judge.judge,
                                "status": m.judge.status, "text": judge_check_text(m)}
                               for m in document.metrics if isinstance(m, RateRow)
                               and m.judge is not None and m.metric_type is None]
    policy = record.get("policy") or {}
    rules = []
    for rule in policy.get("rules") or []:
        shown = dict(rule, text=_threshold_text(rule, by_id.get(rule.get("metric"))))
        if rule.get("kind") == "max_errored":  # it decides on the run's executions
            shown["metric"] = ERRORED_SUBJECT
        rules.append(shown)
    summary["policy"] = {
        "rules": rules,
        "block_on": list(policy.get("block_on") or []),
        "warn_on": list(policy.get("warn_on") or []),
        "confidence_level": policy.get("confidence_level"),
    }
    suite = record.get("suite") or {}
    summary["criteria"] = list(suite.get("criteria") or [])
    if document.usage is not None:
        summary["usage_text"] = usage_text(document.usage)
    if document.executions is not None:
        summary["executions_text"] = executions_text(document.executions, document.trials)
    summary["what_broke"] = _what_broke(document)
    summary["slice_names"] = list(suite.get("slices") or [])
    summary["started_at"] = record.get("started_at")
    summary["finished_at"] = record.get("finished_at")
    return summary


# ---- reading cases in bulk ---------------------------------------------------------------------


class _Prefetched:
    """A read-only stand-in for `Store` that serves `case_view` from batch-loaded rows.

    Anything not prefetched falls through to the real store, so new reads in `case_view` keep
    working (only slower).
    """

    def __init__(self, store: Store, record: dict[str, Any],
                 rows: dict[str, tuple[str, str | None, dict[str, Any]]],
                 errors: dict[str, list[dict[str, Any]]]) -> None:
        self._store = store
        self._record = record
        self._rows = rows
        self._errors = errors
        self._cases: dict[str, dict[str, Any] | None] = {}
        self._executions: dict[str, dict[str, Any]] = {}
        self._judgments: dict[str, dict[str, Any]] = {}
        self._replays: dict[str, dict[str, Any]] = {}
        self.current: str | None = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    def prefetch(self, batch: Sequence[str]) -> None:
        """Load the case bodies, executions and judgments of these cases, dropping the last."""
        digests = {self._rows[c][0] for c in batch}
        keys = [k for c in batch if (k := self._rows[c][1])]
        evaluator_keys = (self._record.get("suite") or {}).get("evaluator_keys") or []
        keys_of_judgments = [k for c in batch
                             for k in judgment_keys(self._rows[c][2], evaluator_keys) if k]
        for c in batch:  # a metamorphic copy's source is shown beside it
            source = self._rows[c][2].get("src")
            if source and source in self._rows:
                digests.add(self._rows[source][0])
                if self._rows[source][1]:
                    keys.append(self._rows[source][1])  # type: ignore[arg-type]
        self._cases = dict.fromkeys(digests)
        self._cases.update(self._store.load_cases(sorted(digests)))
        self._executions = self._store.load_executions(sorted(set(keys)))
        self._judgments = self._store.load_judgments(keys_of_judgments)
        replay_keys = sorted({key for j in self._judgments.values()
                              if isinstance(j.get("details"), dict)
                              and isinstance(key := j["details"].get("replay_key"), str)})
        lookup = getattr(self._store, "lookup_replays", None)
        self._replays = lookup(replay_keys) if replay_keys and lookup else {}

    # -- the reads case_view makes --

    def run_record(self, run_id: str) -> dict[str, Any]:
        return self._record

    def run_case(self, run_id: str, case_id: str) -> tuple[str, str | None, dict[str, Any]] | None:
        return self._rows.get(case_id)

    def run_errors(self, run_id: str) -> list[dict[str, Any]]:
        # case_view keeps the errors of its own case; hand it only those.
        return self._errors.get(self.current or "", [])

    def load_case(self, case_digest: str) -> dict[str, Any] | None:
        if case_digest in self._cases:
            return self._cases[case_digest]
        return self._store.load_case(case_digest)

    def load_executions(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        wanted = list(keys)
        found = {k: self._executions[k] for k in wanted if k in self._executions}
        rest = [k for k in wanted if k not in found]
        if rest:
            found.update(self._store.load_executions(rest))
        return found

    def lookup_replays(self, keys: Sequence[str]) -> dict[str, dict[str, Any]]:
        wanted = list(keys)
        found = {k: self._replays[k] for k in wanted if k in self._replays}
        rest = [k for k in wanted if k not in found]
        if rest:
            found.update(self._store.lookup_replays(rest))
        return found

    def load_judgments(self, keys: Iterable[str]) -> dict[str, dict[str, Any]]:
        wanted = [k for k in keys if k]
        found = {k: self._judgments[k] for k in wanted if k in self._judgments}
        rest = [k for k in wanted if k not in found]
        if rest:
            found.update(self._store.load_judgments(rest))
        return found


def _worst_codes(a: str, b: str) -> str:
    """Two trials' verdict codes as the case list shows a case: F if either failed, else M if
    either is missing, else P (X: both excluded)."""
    out = []
    for x, y in zip(a, b, strict=False):
        out.append(next((code for code in "FMP" if code in (x, y)), "X"))
    return "".join(out)


@dataclass
class _RunCases:
    """A run's cases as the case list shows them: in run order, each case's first stored row
    (trial 1: what its panel shows), its outcome over its trials, and its errors."""

    order: list[str]
    rows: dict[str, tuple[str, str | None, dict[str, Any]]]
    merged: dict[str, dict[str, Any]]
    errors: dict[str, list[dict[str, Any]]]

    def error_kind(self, case_id: str) -> str | None:
        """The kind the case list shows: the outcome's, else the first error of the trial its
        panel shows (the one `case_view` keeps)."""
        kind = self.merged[case_id].get("e")
        if kind:
            return str(kind)
        if case_id not in self.errors:
            return None
        trial = int(self.rows[case_id][2].get("tr", 1))
        return next((str(e["kind"]) for e in self.errors.get(case_id, ())
                     if int(e.get("trial") or 1) == trial), None)


def _run_cases(store: Store, run_id: str, trials: int, outlines: bool = False) -> _RunCases:
    """The run's cases (with `trials` a case: how many of them failed each criterion, `ft`);
    `outlines`: with only the outcome fields the case list shows."""
    rows: dict[str, tuple[str, str | None, dict[str, Any]]] = {}
    order: list[str] = []
    merged: dict[str, dict[str, Any]] = {}
    read = store.iter_run_outlines if outlines else store.iter_run_cases
    for case_id, digest, key, outcome in read(run_id):
        failed = [int(code == "F") for code in outcome.get("c") or ""]
        if case_id not in rows:
            order.append(case_id)
            rows[case_id] = (digest, key, outcome)
            merged[case_id] = dict(outcome, ft=[trials, failed]) if trials > 1 else outcome
        else:  # another trial: the view shows trial 1 (and each trial side by side), the
            # case list the worst of its trials, and how many of them failed each criterion
            first = merged[case_id]
            counts = [a + b for a, b in zip(first["ft"][1], failed, strict=False)]
            merged[case_id] = dict(first, c=_worst_codes(first["c"], outcome["c"]),
                                   e=first.get("e") or outcome.get("e"), ft=[trials, counts])
    errors: dict[str, list[dict[str, Any]]] = {}
    for error in store.run_errors(run_id):
        errors.setdefault(error["case"], []).append(error)
    return _RunCases(order, rows, merged, errors)


def iter_views(store: Store, run_id: str) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """(case id, outcome, case view) for every case of a run, in run order, read in batches."""
    record = store.run_record(run_id)
    cases = _run_cases(store, run_id, int((record.get("suite") or {}).get("trials", 1)))
    order, rows, merged = cases.order, cases.rows, cases.merged
    reader = _Prefetched(store, record, rows, cases.errors)
    for start in range(0, len(order), BATCH):
        batch = order[start : start + BATCH]
        reader.prefetch(batch)
        for case_id in batch:
            reader.current = case_id
            view = case_view(reader, run_id, case_id)  # type: ignore[arg-type]
            yield case_id, merged[case_id], view


# ---- the page's data ---------------------------------------------------------------------------


def _route(view: dict[str, Any]) -> list[str] | None:
    """The case's route as the engine computed it once (`AgentTrajectory.route()`, stored with
    the case's facts): the page shows it, never works it out again."""
    facts = view.get("facts")
    route = facts.get("route") if isinstance(facts, dict) else None
    return route if isinstance(route, list) else None


def index_row(case_id: str, outcome: dict[str, Any], error_kind: str | None, chunk: int,
              position: int) -> list[Any]:
    """One row of the case list: id, verdict codes, error kind, slice groups, source, where
    its details are (chunk and position; -1 when the view serves them), and with trials
    `[trials, trials failed per criterion]`."""
    kind = ErrorKind.of(outcome["e"]) if outcome.get("e") else error_kind
    return [case_id, outcome.get("c") or "", kind, list(outcome.get("s") or []),
            outcome.get("src"), chunk, position, outcome.get("ft")]


class _Builder:
    """Turns case views into index rows and size-capped, chunked detail JSON.

    `share=False` keeps every value in its case's detail (a case served on its own has no
    shared table to point into)."""

    def __init__(self, share: bool = True) -> None:
        self.share = share
        self.index: list[list[Any]] = []
        self.chunks: list[list[str]] = [[]]
        self._chunk_chars = 0
        self.shared: list[str] = []
        self._shared_at: dict[str, int] = {}
        self.raw_chars = 0

    def _value(self, key: str, value: Any, refs: dict[str, int], cut: dict[str, int]) -> str:
        """The value's JSON as embedded: itself; or its JSON text cut to VALUE_CAP characters
        (noted in `cut`); or null, with its position in the shared table noted in `refs`."""
        text = dumps(value)
        if len(text) > VALUE_CAP:
            cut[key] = len(text)
            return dumps(text[:VALUE_CAP])
        if self.share and key.rsplit(".", 1)[-1] in _SHARED_KEYS and len(text) > SHARE_OVER:
            digest = hashlib.sha1(text.encode("utf-8")).hexdigest()
            at = self._shared_at.get(digest)
            if at is None:
                at = self._shared_at[digest] = len(self.shared)
                self.shared.append(text)
                self.raw_chars += len(text)
            refs[key] = at
            return "null"
        return text

    def detail(self, case_id: str, view: dict[str, Any]) -> str:
        """The JSON of one case's details as the page reads them."""
        refs: dict[str, int] = {}
        cut: dict[str, int] = {}
        parts = ['"case":' + dumps(case_id)]
        for key, value in view.items():
            if key in _VIEW_SKIP:
                continue
            if key == "source_case" and isinstance(value, dict):
                inner = ",".join(dumps(k) + ":" + self._value(f"source_case.{k}", v, refs, cut)
                                 for k, v in value.items())
                parts.append('"source_case":{' + inner + "}")
            else:
                parts.append(dumps(key) + ":" + self._value(key, value, refs, cut))
        route = _route(view)
        if route:
            parts.append('"route":' + dumps(route))
        if refs:
            parts.append('"$refs":' + dumps(refs))
        if cut:
            parts.append('"$cut":' + dumps(cut))
        return "{" + ",".join(parts) + "}"

    def add(self, case_id: str, outcome: dict[str, Any], view: dict[str, Any],
            index: list[list[Any]] | None = None) -> None:
        """Add one case: its index row (to `index`, by default the case list's), and its detail
        to the current chunk."""
        text = self.detail(case_id, view)
        if self._chunk_chars and (self._chunk_chars + len(text) > CHUNK_CHARS
                                  or len(self.chunks[-1]) >= CHUNK_CASES):
            self.chunks.append([])
            self._chunk_chars = 0
        errors = view.get("errors") or []
        (self.index if index is None else index).append(index_row(
            case_id, outcome, errors[0].get("kind") if errors else None,
            len(self.chunks) - 1, len(self.chunks[-1])))
        self.chunks[-1].append(text)
        self._chunk_chars += len(text)
        self.raw_chars += len(text)


def reliability_curves(store: Store, run_id: str, record: dict[str, Any], level: float
                       ) -> dict[str, Any] | None:
    """With repeated trials: pass^k against k = 1 … trials for each criterion, each point with
    its interval over cases (computed here; the page only draws them). None without trials."""
    suite = record.get("suite") or {}
    trials = int(suite.get("trials", 1))
    if trials < 2:
        return None
    criteria = list(suite.get("criteria") or [])
    outcomes = (CaseOutcome.from_json(case_id, outcome, digest)
                for case_id, digest, _key, outcome in store.iter_run_cases(run_id))
    cases = list(iter_case_trials(outcomes, len(criteria), trials))
    curves = []
    for i, name in enumerate(criteria):
        points = []
        for k, figures in enumerate(pass_hat_curve(cases, i, level), start=1):
            if not figures.cases:
                break
            points.append({
                "k": k, "estimate": figures.estimate, "lower": figures.lower,
                "upper": figures.upper, "method": figures.method,
                "observed": figures.observed, "missing": figures.missing,
                "text": {"estimate": "—" if figures.estimate is None
                         else percent(figures.estimate),
                         "interval": "—" if figures.lower is None or figures.upper is None
                         else f"[{percent_lower(figures.lower)}, "
                              f"{percent_upper(figures.upper)}]"},
            })
        if points:
            curves.append({"criterion": name, "points": points})
    return {"trials": trials, "level": level, "curves": curves}


def _encode(text: str, encoding: str) -> str:
    if encoding == "json":
        return text
    packed = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def comparison_summary(comparison: Comparison) -> dict[str, Any]:
    """The comparison as the page shows it: the document, with the terminal's display strings
    (each criterion's difference and p-value, each change in words), computed here."""
    summary = comparison.to_json()
    summary["criteria"] = [dict(row.to_json(), text={
        "difference": difference_text(row) + (f" ≈ over {row.clusters} clusters"
                                              if row.approximate else ""),
        "missing": f"{row.missing}" + (f" + {row.dropped} dropped" if row.dropped else ""),
        "p": p_value_text(row.mcnemar_p)}) for row in comparison.criteria]
    summary["method_note"] = method_note(comparison.criteria)
    changes = []
    for change in comparison.changes:
        item = change.to_json()
        item["words"] = [verdict_words(c) for c in change.criteria]
        changes.append(item)
    summary["changes"] = changes
    return summary


def _baseline_views(store: Store, comparison: Comparison
                    ) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """The baseline run's case views of the cases whose verdicts moved (those `changes`
    describes), with their stored outcomes."""
    out = []
    for change in comparison.changes:
        found = store.run_case(comparison.baseline, change.case)
        if found is not None:
            out.append((change.case, found[2], case_view(store, comparison.baseline,
                                                         change.case)))
    return out


def _served_index(store: Store, run_id: str, only: Sequence[str] | None = None
                  ) -> list[list[Any]]:
    """The case list of a run whose details the view serves (`only`: these cases, in this
    order), from the stored outcomes alone."""
    trials = int((store.run_record(run_id).get("suite") or {}).get("trials", 1))
    cases = _run_cases(store, run_id, trials, outlines=True)
    order = cases.order if only is None else [c for c in only if c in cases.rows]
    return [index_row(c, cases.merged[c] if only is None else cases.rows[c][2],
                      cases.error_kind(c), -1, -1) for c in order]


def case_detail(store: Store, run_id: str, case_id: str) -> str:
    """One case's details as JSON text, as the page reads them from a chunk (the view serves
    them one case at a time; UsageError for a case the run does not have)."""
    return _Builder(share=False).detail(case_id, case_view(store, run_id, case_id))


def build_report_data(
    store: Store, run_id: str, document: RunDocument, compress: bool | None = None,
    comparison: Comparison | None = None, *, served: bool = False,
) -> ReportData:
    """Read a run whole and shape it for the page.

    `compress=None` compresses case details only when they are large (above COMPRESS_OVER
    characters), so small reports stay readable by any browser without DecompressionStream.
    With `comparison` (this run as the candidate), the page gains the comparison and the
    baseline's panels of the cases whose verdicts moved. `served`: the case details are left
    out, for the view to serve (`case_detail`) when the page asks.
    """
    record = store.run_record(run_id)
    if record is None:  # pragma: no cover - run_record raises
        raise StoreError(f"run {run_id} is not in the store")
    builder = _Builder()
    baseline_index: list[list[Any]] = []
    if served:
        builder.index = _served_index(store, run_id)
        if comparison is not None:
            baseline_index = _served_index(store, comparison.baseline,
                                           [change.case for change in comparison.changes])
    else:
        for case_id, outcome, view in iter_views(store, run_id):
            builder.add(case_id, outcome, view)
        if comparison is not None:
            for case_id, outcome, view in _baseline_views(store, comparison):
                builder.add(case_id, outcome, view, baseline_index)
    if compress is None:
        compress = builder.raw_chars > COMPRESS_OVER
    encoding = "gzip" if compress else "json"
    chunks = [_encode("[" + ",".join(c) + "]", encoding) for c in builder.chunks if c]
    shared = [_encode(s, encoding) for s in builder.shared]
    summary = build_summary(document, record)
    if comparison is not None:
        summary["comparison"] = comparison_summary(comparison)
    reliability = reliability_curves(store, run_id, record, document.confidence_level)
    if reliability is not None:
        summary["reliability"] = reliability
    return ReportData(
        summary=summary,
        index=builder.index,
        chunks=chunks,
        shared=shared,
        encoding=encoding,
        raw_chars=builder.raw_chars,
        baseline_index=baseline_index,
    )
