"""The data of the HTML report (docs/cli.md#oloproof-report): what the page embeds, shaped from
a stored run — its summary (`html_summary`), its case list and the case details in chunks, each
case's view read in bulk (`bulk_views`).

What it produces:

- `summary`: the run's JSON document with the terminal's display strings added (so both reports
  show the same figures), the policy's rules and the suite's criteria and slices;
- `index`: one short row per case for the case list (id, verdict codes, error kind, slice
  groups, source) — parsed when the page opens;
- `chunks`: the case details, a few hundred kilobytes of JSON per chunk, as JSON text or as
  gzip+base64 (decompressed by the browser only when a case of that chunk is opened);
- `shared`: large values (sandbox states) that several cases hold, stored once.

A run whose gate was decided against a baseline (its document's `baseline`) is shown with the
comparison against that baseline, as `report --baseline` shows one against any run
(docs/compare.md#both-runs-side-by-side-the-html-report).

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
from dataclasses import dataclass, field
from typing import Any

from oloproof.comparison.runs import compare_sides
from oloproof.comparison.sides import read_side
from oloproof.document import Comparison, RunDocument
from oloproof.errors import OloproofError, StoreError
from oloproof.report.bulk_views import baseline_views, index_row, iter_views, served_index
from oloproof.report.case_view import case_view
from oloproof.report.html_summary import build_summary, comparison_summary, reliability_curves
from oloproof.store.store import Store

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


# ---- the page's data ---------------------------------------------------------------------------


def _route(view: dict[str, Any]) -> list[str] | None:
    """The case's route as the engine computed it once (`AgentTrajectory.route()`, stored with
    the case's facts): the page shows it, never works it out again."""
    facts = view.get("facts")
    route = facts.get("route") if isinstance(facts, dict) else None
    return route if isinstance(route, list) else None


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


def _encode(text: str, encoding: str) -> str:
    if encoding == "json":
        return text
    packed = gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)
    return base64.b64encode(packed).decode("ascii")


def case_detail(store: Store, run_id: str, case_id: str) -> str:
    """One case's details as JSON text, as the page reads them from a chunk (the view serves
    them one case at a time; UsageError for a case the run does not have)."""
    return _Builder(share=False).detail(case_id, case_view(store, run_id, case_id))


def gate_comparison(store: Store, run_id: str, document: RunDocument) -> Comparison | None:
    """The comparison with the baseline the run's gate was decided against (its document's
    `baseline`), made again from the store as `oloproof compare` makes it; None for a run
    decided against none, or whose baseline this store no longer holds."""
    if document.baseline is None:
        return None
    try:
        return compare_sides(store, read_side(store, document.baseline.baseline),
                             read_side(store, run_id), document.confidence_level)
    except OloproofError:  # (the baseline is not in this store: the summary's rows remain)
        return None


def build_report_data(
    store: Store, run_id: str, document: RunDocument, compress: bool | None = None,
    comparison: Comparison | None = None, *, served: bool = False,
) -> ReportData:
    """Read a run whole and shape it for the page.

    `compress=None` compresses case details only when they are large (above COMPRESS_OVER
    characters), so small reports stay readable by any browser without DecompressionStream.
    With `comparison` (this run as the candidate), the page gains the comparison and the
    baseline's panels of the cases whose verdicts moved; without one, a run whose gate was
    decided against a baseline gains the comparison with it (`gate_comparison`). `served`: the
    case details are left out, for the view to serve (`case_detail`) when the page asks.
    """
    record = store.run_record(run_id)
    if record is None:  # pragma: no cover - run_record raises
        raise StoreError(f"run {run_id} is not in the store")
    gate_used = comparison is None and document.baseline is not None
    if comparison is None:
        comparison = gate_comparison(store, run_id, document)
    builder = _Builder()
    baseline_index: list[list[Any]] = []
    if served:
        builder.index = served_index(store, run_id)
        if comparison is not None:
            baseline_index = served_index(store, comparison.baseline,
                                          [change.case for change in comparison.changes])
    else:
        for case_id, outcome, view in iter_views(store, run_id):
            builder.add(case_id, outcome, view)
        if comparison is not None:
            for case_id, outcome, view in baseline_views(store, comparison):
                builder.add(case_id, outcome, view, baseline_index)
    if compress is None:
        compress = builder.raw_chars > COMPRESS_OVER
    encoding = "gzip" if compress else "json"
    chunks = [_encode("[" + ",".join(c) + "]", encoding) for c in builder.chunks if c]
    shared = [_encode(s, encoding) for s in builder.shared]
    summary = build_summary(document, record)
    if comparison is not None:
        summary["comparison"] = comparison_summary(comparison)
        summary["comparison"]["gate_used"] = gate_used and comparison is not None
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
