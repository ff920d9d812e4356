"""`oloproof board`: many candidate runs against one baseline, with intervals that hold
simultaneously, `can_ship` and the cost–success front (docs/board.md). Reads the store only.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from oloproof.api.stored import decide_stored, stored_metric_kinds
from oloproof.comparison.board import Board, BoardInput, build_board
from oloproof.errors import UsageError
from oloproof.store.location import open_existing_store
from oloproof.store.reruns import IMPORTED
from oloproof.suite.policy import Policy, load_policy
from oloproof.suite.policy_checks import check_rule_metrics, stored_policy


def board(
    runs: Sequence[str] = (), baseline: str | None = None, policy: str | Path | None = None,
    criterion: str | None = None, cost_cap: float | None = None,
    config: str | Path = "oloproof.yaml", store: str | Path | None = None,
) -> Board:
    """The board of stored runs, as `oloproof board` shows it (docs/board.md).

    `runs`: the candidates (run references: `variant:k=v,…`, ids, tags…); none: the newest
    complete run of every variant stored. `baseline`: the run every candidate is paired with
    (default the policy's `baseline:`); it is on the board as well. `policy`: a policy file
    (default: the policy the newest candidate ran with). `criterion`: the success rate of the
    front (default the metric of the policy's first non_inferiority rule, else of its first
    interval rule). `cost_cap`: the most one case can cost (default the policy's `cost_cap`);
    without one, cost has no interval and the front is not drawn.

    Raises:
        StoreError: no store, or no run stored yet.
        UsageError: a reference that names no run; no variant's run stored and no run named;
            no baseline; a candidate not run on the baseline's cases; a case above the cap.
        ConfigError: `policy` is not valid, or names a metric the runs do not have.
    """
    if cost_cap is not None and not cost_cap > 0:
        raise UsageError(f"--cost-cap {cost_cap:g}: a cost cap is a positive number, the most "
                         "one case can cost")
    with open_existing_store(config, store) as db:
        if runs:
            chosen = list(dict.fromkeys(db.resolve_run(ref) for ref in runs))
        else:
            chosen = [run_id for run_id, _ in db.latest_variant_runs()]
            if not chosen:
                raise UsageError(
                    "no complete run of a variant is stored, so the board has no candidate: "
                    "run each combination of system.variants (`oloproof run --variant "
                    "model=large,prompt=v2`), or name the runs to put on the board "
                    "(`oloproof board RUN RUN …`; `oloproof runs` lists them)")
        records = {run_id: db.run_record(run_id) for run_id in chosen}
        newest = max(chosen, key=lambda r: (records[r]["started_at"] or 0, r))
        if policy is not None:
            rules, doc = load_policy(Path(policy))
            check_rule_metrics(rules, doc, stored_metric_kinds(records[newest]["suite"]))
        else:
            rules = stored_policy(records[newest]["policy"], newest)
        reference = baseline if baseline is not None else rules.baseline_reference
        if reference is None:
            raise UsageError(
                "the board needs a baseline, the run every candidate is paired with: give "
                "--baseline REF (a run id, tag:NAME, version:V, variant:k=v,…), or write "
                "`baseline:` in the policy")
        baseline_id = db.resolve_run(reference, records[newest]["project"])
        if baseline_id not in records:
            records[baseline_id] = db.run_record(baseline_id)
            chosen.insert(0, baseline_id)
        success = criterion if criterion is not None else _success(rules)
        inputs = []
        for run_id in chosen:
            record = records[run_id]
            if run_id == baseline_id:
                own = rules.model_copy(update={"rules": tuple(
                    r for r in rules.rules if r.kind != "non_inferiority")})
                document, _ = decide_stored(db, record, own, None, None)
            else:
                document, _ = decide_stored(db, record, rules, baseline_id, reference)
            variant, kind = db.run_marks(run_id)
            inputs.append(BoardInput(run_id, variant, document, imported=kind == IMPORTED))
        return build_board(db, inputs, baseline_id, rules, success,
                           cost_cap if cost_cap is not None else rules.cost_cap)


def _success(policy: Policy) -> str:
    """The criterion the front's success is by default: the first non_inferiority rule's, else
    the first interval rule's."""
    for kind in ("non_inferiority", "interval"):
        found = next((r.metric for r in policy.rules if r.kind == kind and r.metric), None)
        if found is not None:
            return found
    raise UsageError("the policy has no non_inferiority or interval rule to take the board's "
                     "success criterion from: give --criterion NAME (a criterion of the runs)")


__all__ = ["board"]
