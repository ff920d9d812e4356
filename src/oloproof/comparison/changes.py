"""What changed in a case between two runs: its verdicts, and where its trajectories part.

A reviewer reads the broken cases first. For each, the criteria whose verdict moved (with
trials, each side's share of passing trials) and the first step at which the two recorded
trajectories (trial 1 of each run) differ — the step where what the agent did stopped being the
same. That step shows *where* the runs part, never *why*.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from oloproof.comparison.sides import MetricSpec, RunSide
from oloproof.document import CaseChange, TrajectoryParting, Verdict, VerdictChange
from oloproof.recording.trajectory import (
    TRAJECTORY_KIND,
    AgentStep,
    AgentTrajectory,
    trajectory_from_payload,
)
from oloproof.store.store import Store

#: Characters of one step's line.
STEP_TEXT = 120

_VERDICTS = {"P": Verdict.PASSED, "F": Verdict.FAILED, "M": Verdict.MISSING,
             "X": Verdict.EXCLUDED}


def step_line(step: AgentStep, limit: int = STEP_TEXT) -> str:
    """One step in a line: `tool_call lookup_order {"order_id": "A1"}`, `tool_result
    lookup_order → {...}`, `handoff → billing`, `final {"answer": "..."}`."""
    text = step.kind + (f" {step.tool_name}" if step.tool_name else "")
    if step.agent:
        text = f"[{step.agent}] {text}"
    if step.kind == "handoff" and step.to_agent:
        text += f" → {step.to_agent}"
    if step.result is not None:
        text += " → " + (step.result if isinstance(step.result, str)
                         else json.dumps(step.result, ensure_ascii=False, sort_keys=True))
    elif step.arguments is not None:
        text += " " + json.dumps(step.arguments, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parting(before: AgentTrajectory | None, after: AgentTrajectory | None
            ) -> TrajectoryParting | None:
    """The first step at which two trajectories differ (a trajectory that has ended differs
    from one that goes on), and the first tool call whose tool or arguments differ. None when
    they are the same step by step, or neither was recorded."""
    if before is None and after is None:
        return None
    left = before.steps if before is not None else ()
    right = after.steps if after is not None else ()
    step = None
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else None
        b = right[i] if i < len(right) else None
        if a != b:
            step = i
            break
    if step is None:
        return None
    calls_before = before.actions() if before is not None else []
    calls_after = after.actions() if after is not None else []
    action = next((i + 1 for i in range(max(len(calls_before), len(calls_after)))
                   if (calls_before[i] if i < len(calls_before) else None)
                   != (calls_after[i] if i < len(calls_after) else None)), None)
    return TrajectoryParting(
        step=step + 1,
        baseline=step_line(left[step]) if step < len(left) else None,
        candidate=step_line(right[step]) if step < len(right) else None,
        action=action,
    )


def _side_verdict(side: RunSide, row: int, metric: MetricSpec, shares: bool
                  ) -> tuple[Verdict | None, float | None]:
    """A case's verdict on one run, or with `shares` (either run has trials) its share of
    passing trials: a run of one trial against a run of three is compared share to share
    (1.0 against 2/3), never a verdict against a share, which always differs."""
    if not shares:
        code = side.codes[row][side.criteria.index(metric.criterion)]
        return _VERDICTS.get(code), None
    values = side.values(metric)
    settled = bool(values.observed[row])
    return None, float(values.lower[row]) if settled else None


def _trajectories(store: Store, side: RunSide, rows: Sequence[int]
                  ) -> dict[int, AgentTrajectory | None]:
    keys = [side.exec_keys[r] for r in rows]
    executions = store.load_executions(sorted({k for k in keys if k}))
    out: dict[int, AgentTrajectory | None] = {}
    for row, key in zip(rows, keys, strict=True):
        payload: Any = ((executions.get(key) or {}).get("artifacts") or {}).get(
            TRAJECTORY_KIND) if key else None
        try:
            out[row] = trajectory_from_payload(payload) if payload is not None else None
        except ValueError:  # a trajectory stored by an older version, or not valid: not shown
            out[row] = None
    return out


def case_changes(store: Store, baseline: RunSide, candidate: RunSide, case_ids: Sequence[str],
                 metrics: Sequence[tuple[MetricSpec, MetricSpec]]) -> list[CaseChange]:
    """What changed in each of these paired cases: every compared metric whose verdict (or
    share of passing trials) differs, and where the trajectories of trial 1 part."""
    base_at, cand_at = baseline.position(), candidate.position()
    b_rows = [base_at[c] for c in case_ids]
    c_rows = [cand_at[c] for c in case_ids]
    before = _trajectories(store, baseline, b_rows)
    after = _trajectories(store, candidate, c_rows)
    shares = baseline.trials > 1 or candidate.trials > 1
    changes = []
    for case_id, b_row, c_row in zip(case_ids, b_rows, c_rows, strict=True):
        moved = []
        for base_metric, cand_metric in metrics:
            b_verdict, b_value = _side_verdict(baseline, b_row, base_metric, shares)
            c_verdict, c_value = _side_verdict(candidate, c_row, cand_metric, shares)
            if (b_verdict, b_value) != (c_verdict, c_value):
                moved.append(VerdictChange(criterion=cand_metric.id, baseline=b_verdict,
                                           candidate=c_verdict, baseline_value=b_value,
                                           candidate_value=c_value))
        changes.append(CaseChange(case=case_id, criteria=moved,
                                  parting=parting(before[b_row], after[c_row])))
    return changes
