"""One case whole, as the case panel shows it (SPEC §11), read from the store only."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from oloproof.analysis.outcome import judgment_keys
from oloproof.errors import UsageError
from oloproof.evaluators.judgment import CODE_VERDICTS
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.store.store import Store


def case_view(store: Store, run_id: str, case_id: str) -> dict[str, Any]:
    """Everything about one case of a run: input, expected, states, trajectory, verdicts."""
    found = store.run_case(run_id, case_id)
    if found is None:
        raise UsageError(f"run {run_id} has no case {case_id!r}; `oloproof cases {run_id}` "
                         "lists its case ids")
    case_digest, exec_key, outcome = found
    record = store.run_record(run_id)
    return _assemble(store, record, case_id, case_digest, exec_key, outcome)


def iter_case_views(store: Store, run_id: str, only_failures: bool = False,
                    cases: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Case views for every case (or every failed / errored / missing one) of a run; with
    `cases`, those cases, in that order."""
    record = store.run_record(run_id)
    wanted = set(cases) if cases is not None else None
    rows = {}
    for case_id, case_digest, exec_key, outcome in store.iter_run_cases(run_id):
        codes = outcome["c"]
        if only_failures and not ("F" in codes or "M" in codes or outcome.get("e")):
            continue
        if wanted is None or case_id in wanted:
            rows[case_id] = (case_digest, exec_key, outcome)
    order = list(cases) if cases is not None else list(rows)
    return [_assemble(store, record, case_id, *rows[case_id]) for case_id in order
            if case_id in rows]


def _assemble(
    store: Store, record: dict[str, Any], case_id: str, case_digest: str,
    exec_key: str | None, outcome: dict[str, Any],
) -> dict[str, Any]:
    suite = record["suite"]
    body = store.load_case(case_digest) or {"id": case_id}
    initial = body.get("initial_state")
    if isinstance(initial, dict) and set(initial) == {"$state"}:
        initial = store.load_artifacts([initial["$state"]]).get(initial["$state"])
    execution = store.load_executions([exec_key]).get(exec_key) if exec_key else None
    errors = [e for e in store.run_errors(record["run_id"]) if e["case"] == case_id]
    keys = judgment_keys(outcome, suite.get("evaluator_keys") or [])
    judgments = store.load_judgments(k for k in keys if k)
    criteria = []
    for i, name in enumerate(suite["criteria"]):
        key = keys[i] if i < len(keys) else None
        stored = judgments.get(key) if key else None
        criteria.append({
            "criterion": name,
            "verdict": CODE_VERDICTS[outcome["c"][i]],
            "reason": outcome["r"][i],
            "details": stored["details"] if stored else None,
        })
    artifacts = (execution or {}).get("artifacts") or {}
    replay_keys = {c["criterion"]: c["details"]["replay_key"] for c in criteria
                   if isinstance(c.get("details"), dict) and c["details"].get("replay_key")}
    stored_replays = store.lookup_replays(list(replay_keys.values())) if replay_keys else {}
    replays = []
    for c in criteria:
        key = replay_keys.get(c["criterion"])
        replay = stored_replays.get(key) if key else None
        if replay is not None:
            replays.append({
                "criterion": c["criterion"], "verdict": c["verdict"], "reason": c["reason"],
                "status": replay.get("status"), "message": replay.get("message"),
                "checkpoint": replay.get("checkpoint"), "plan": replay.get("plan"),
                "change": replay.get("change"), "control": replay.get("control"),
                "fault_trajectory": replay.get("fault_trajectory"),
                "end_state_patch": replay.get("end_state_patch"),
            })
    view: dict[str, Any] = {
        "run_id": record["run_id"],
        "case": case_id,
        "input": body.get("input"),
        "expected": body.get("expected"),
        "metadata": body.get("metadata"),
        "initial_state": initial,
        "source": body.get("source"),
        "transform": body.get("transform"),
        "output": (execution or {}).get("output"),
        "latency_ms": outcome.get("l"),
        "trajectory": artifacts.get(TRAJECTORY_KIND),
        "end_state": artifacts.get(STATE_KIND),
        "other_artifacts": {k: v for k, v in artifacts.items()
                            if k not in (TRAJECTORY_KIND, STATE_KIND)},
        "facts": outcome.get("f"),
        "slices": dict(zip(suite["slices"], outcome.get("s") or [], strict=False)),
        "criteria": criteria,
        "errors": errors,
        "replays": replays,
        "cached": bool(outcome.get("h")),
    }
    if body.get("source"):
        view["source_case"] = _source_side(store, record["run_id"], body["source"])
    return view


def _source_side(store: Store, run_id: str, source_id: str) -> dict[str, Any] | None:
    """The source of a metamorphic copy: its input, output, actions and end state."""
    found = store.run_case(run_id, source_id)
    if found is None:
        return None
    case_digest, exec_key, _ = found
    body = store.load_case(case_digest) or {}
    execution = store.load_executions([exec_key]).get(exec_key) if exec_key else None
    artifacts = (execution or {}).get("artifacts") or {}
    return {
        "case": source_id,
        "input": body.get("input"),
        "output": (execution or {}).get("output"),
        "trajectory": artifacts.get(TRAJECTORY_KIND),
        "end_state": artifacts.get(STATE_KIND),
    }
