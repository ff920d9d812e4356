"""A stored run's cases read in bulk, for the HTML report and `oloproof view`
(docs/cli.md#oloproof-report, docs/view.md).

`case_view` reads one case with a handful of queries; for a 20,000-case run that is far too many
round trips. `iter_views` reads the run's rows in batches (case bodies, executions, artifacts,
judgments, errors: one query each per batch) and serves them to the same `case_view` from
memory, so the HTML panel shows exactly what `oloproof inspect --case` shows, including anything
`case_view` learns to return later. `served_index` is the case list the view serves, read from
the stored outcomes alone, without a case view; `index_row` is one row of either list.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from oloproof.analysis.outcome import judgment_keys
from oloproof.document import Comparison
from oloproof.errors import ErrorKind
from oloproof.report.case_view import case_view
from oloproof.store.store import Store

#: Cases read from the store per batch.
BATCH = 500


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


def index_row(case_id: str, outcome: dict[str, Any], error_kind: str | None, chunk: int,
              position: int) -> list[Any]:
    """One row of the case list: id, verdict codes, error kind, slice groups, source, where
    its details are (chunk and position; -1 when the view serves them), and with trials
    `[trials, trials failed per criterion]`."""
    kind = ErrorKind.of(outcome["e"]) if outcome.get("e") else error_kind
    return [case_id, outcome.get("c") or "", kind, list(outcome.get("s") or []),
            outcome.get("src"), chunk, position, outcome.get("ft")]


def baseline_views(store: Store, comparison: Comparison
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


def served_index(store: Store, run_id: str, only: Sequence[str] | None = None
                  ) -> list[list[Any]]:
    """The case list of a run whose details the view serves (`only`: these cases, in this
    order), from the stored outcomes alone."""
    trials = int((store.run_record(run_id).get("suite") or {}).get("trials", 1))
    cases = _run_cases(store, run_id, trials, outlines=True)
    order = cases.order if only is None else [c for c in only if c in cases.rows]
    return [index_row(c, cases.merged[c] if only is None else cases.rows[c][2],
                      cases.error_kind(c), -1, -1) for c in order]
