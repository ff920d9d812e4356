"""A run whose executions come from a stored run instead of the system
(docs/architecture.md#a-run-from-a-stored-runs-executions): what `oloproof rescore` makes.

The engine plans such a run as any other — units, the cache lookups, the judgments the cache
holds, the jobs — with one difference: every execution (and fault replay) must be the one the
stored run used, read from the store, and nothing is sent to the system. `StoredExecutions`
is what the engine reads of that run: for each case and trial, the execution key it stored,
its case digest, and the error it had. A unit is taken from it when, for each of its cases
and trials, the stored run has it, with the same case digest (input, expected, metadata,
initial state) and the same execution key (the same system name and version, the same way of
obtaining its trajectory, the same input and state), and the store holds that execution and
the unit's replays. Otherwise the unit is not run: its source case is listed with the reason
(`Refusal`), and the run goes on without it. Judgments are made with the suite's current
evaluators (a judgment the cache holds under its key is the same judgment), judges asked only
for verdicts their cache does not hold.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from oloproof.execution.intake import UNCACHED_PREFIX
from oloproof.store.store import Store

#: Why a case was not taken from the stored run, by code (docs/cli.md#oloproof-rescore).
REASONS = {
    "not_in_run": "the stored run does not hold it",
    "case_changed": "the case changed since (its input, expected, metadata or initial state)",
    "system_changed": "the system changed since (its name or version, or how its trajectory "
                      "is obtained)",
    "errored": "it errored in the stored run: there is no output to score",
    "not_stored": "its execution is no longer in the store",
    "replay_not_stored": "a fault replay it needs is not in the store (replays run the system)",
    "not_in_dataset": "the dataset no longer holds it",
}


@dataclass(frozen=True)
class Refusal:
    """A case not taken from the stored run, and why (a code of `REASONS`, and `detail`)."""

    case: str
    reason: str
    detail: str = ""

    def words(self) -> str:
        return REASONS.get(self.reason, self.reason) + (f" ({self.detail})" if self.detail
                                                        else "")


@dataclass
class StoredExecutions:
    """What the engine reads of the stored run it takes executions from (see the module)."""

    run_id: str
    system: str  # `name version`, for the words
    trials: int = 1
    # What the stored run chose, if it ran part of the suite (its `subset` description).
    subset: dict[str, Any] | None = None
    # (case id, trial) -> (execution key, case digest, error kind or None)
    cases: dict[tuple[str, int], tuple[str | None, str, str | None]] = field(
        default_factory=dict)
    # The combination of system.variants the stored run is of (`k=v,…`), or None.
    variant: str | None = None

    @classmethod
    def read(cls, store: Store, run_id: str) -> StoredExecutions:
        """The executions run `run_id` stored (its record must exist)."""
        record = store.run_record(run_id)
        suite = record.get("suite") or {}
        found = cls(run_id, f"{record['system_name']} {record['system_version']}",
                    int(suite.get("trials", 1)), suite.get("subset"),
                    variant=suite.get("variant"))
        for case_id, digest, exec_key, outcome in store.iter_run_cases(run_id):
            trial = int(outcome.get("tr") or 1)
            found.cases[(case_id, trial)] = (exec_key, digest, outcome.get("e"))
        return found

    @property
    def source_ids(self) -> list[str]:
        """The ids of the stored run's source cases (not metamorphic copies), in order."""
        return list(dict.fromkeys(case_id for case_id, _ in self.cases if "~" not in case_id))

    def refusal(self, case_id: str, trial: int, digest: str, exec_key: str) -> Refusal | None:
        """Why this case's trial cannot be taken from the stored run, or None."""
        stored = self.cases.get((case_id, trial))
        if stored is None:
            return Refusal(case_id, "not_in_run", f"{self.run_id} has no trial {trial}"
                           if any(c == case_id for c, _ in self.cases) else "")
        key, stored_digest, error = stored
        if stored_digest != digest:
            return Refusal(case_id, "case_changed")
        if error is not None:
            return Refusal(case_id, "errored", str(error))
        if key is not None and key.startswith(UNCACHED_PREFIX):
            return Refusal(case_id, "errored", "snapshot_failed: its state was not kept")
        if key != exec_key:
            return Refusal(case_id, "system_changed", f"the stored run is {self.system}")
        return None


def first_refusals(refusals: Iterable[Refusal]) -> list[Refusal]:
    """One refusal per source case (its first), in the order given: a metamorphic copy's is
    its source's."""
    seen: dict[str, Refusal] = {}
    for refusal in refusals:
        source = refusal.case.split("~", 1)[0]
        if source not in seen:
            seen[source] = Refusal(source, refusal.reason, refusal.detail)
    return list(seen.values())


__all__ = ["REASONS", "Refusal", "StoredExecutions", "first_refusals"]
