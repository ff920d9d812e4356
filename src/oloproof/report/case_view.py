"""One case whole, as the case panel shows it (docs/cli.md#oloproof-inspect), read from the store
only."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from oloproof.analysis.outcome import judgment_keys
from oloproof.errors import UsageError
from oloproof.evaluators.conversation_audit import CHECKS, UNFAITHFUL, audit
from oloproof.evaluators.judgment import CODE_VERDICTS
from oloproof.evaluators.simulator_fidelity import FIDELITY_CRITERION
from oloproof.recording.protocols import STATE_KIND
from oloproof.recording.trajectory import TRAJECTORY_KIND
from oloproof.recording.users import CONVERSATION_KIND
from oloproof.report.differences import pair_rows, replay_step_rows
from oloproof.report.escape import unescape_shown
from oloproof.store.store import Store

_Found = TypeVar("_Found")


def case_view(store: Store, run_id: str, case_id: str,
              trial: int | None = None) -> dict[str, Any]:
    """Everything about one case of a run: input, expected, states, trajectory, verdicts.

    With repeated trials the view is trial 1, with every trial side by side (`trials`); with
    `trial`, it is that trial whole (`trial`, of `trials_in_run`), alone.
    """
    if trial is not None:
        return _trial_view(store, run_id, case_id, trial)
    case_id, found = _find(case_id, lambda given: store.run_case(run_id, given), run_id)
    case_digest, exec_key, outcome = found
    record = store.run_record(run_id)
    view = _assemble(store, record, case_id, case_digest, exec_key, outcome)
    add_trials(store, record, view)
    return view


def _trial_view(store: Store, run_id: str, case_id: str, trial: int) -> dict[str, Any]:
    record = store.run_record(run_id)
    trials = int((record.get("suite") or {}).get("trials", 1))
    case_id, rows = _find(case_id, lambda given: store.run_case_trials(run_id, given), run_id)
    chosen = [row for row in rows if int(row[2].get("tr", 1)) == trial]
    if not chosen:
        hint = (f"it ran {trials} trials of each case: give --trial 1 to {trials}"
                if trials > 1 else "it ran each case once: leave out --trial")
        raise UsageError(f"run {run_id} has no trial {trial} of case {case_id!r}; {hint}")
    view = _assemble(store, record, case_id, *chosen[0])
    view["trial"] = trial
    view["trials_in_run"] = trials
    return view


def _find(case_id: str, look: Callable[[str], _Found | None], run_id: str) -> tuple[str, _Found]:
    """The case `case_id` names, by `look`: the id as given, else as the terminal shows it
    (`a\\u2028b` for an id holding U+2028: report/escape.py)."""
    for given in dict.fromkeys((case_id, unescape_shown(case_id))):
        found = look(given)
        if found:
            return given, found
    raise UsageError(f"run {run_id} has no case {case_id!r}; `oloproof cases "
                     f"{run_id}` lists its case ids")


def iter_case_views(store: Store, run_id: str, only_failures: bool = False,
                    cases: Sequence[str] | None = None) -> list[dict[str, Any]]:
    """Case views for every case (or every failed / errored / missing one) of a run; with
    `cases`, those cases, in that order."""
    record = store.run_record(run_id)
    wanted = set(cases) if cases is not None else None
    rows: dict[str, tuple[str, str | None, dict[str, Any]]] = {}
    failing: set[str] = set()
    for case_id, case_digest, exec_key, outcome in store.iter_run_cases(run_id):
        codes = outcome["c"]
        if "F" in codes or "M" in codes or outcome.get("e"):
            failing.add(case_id)
        if (wanted is None or case_id in wanted) and case_id not in rows:
            rows[case_id] = (case_digest, exec_key, outcome)  # its first trial
    if only_failures:
        rows = {case_id: row for case_id, row in rows.items() if case_id in failing}
    order = list(cases) if cases is not None else list(rows)
    views = []
    for case_id in order:
        if case_id in rows:
            view = _assemble(store, record, case_id, *rows[case_id])
            add_trials(store, record, view)
            views.append(view)
    return views


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
    trial = int(outcome.get("tr", 1))
    errors = [e for e in store.run_errors(record["run_id"])
              if e["case"] == case_id and int(e.get("trial") or 1) == trial]
    attempts = int(outcome.get("a", 1))
    attempt_errors = [{k: e[k] for k in ("attempt", "kind", "message", "traceback")}
                      for e in store.attempt_errors(record["run_id"], case_id)
                      if e["trial"] == trial and e["retried"]] if attempts > 1 else []
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
                            if k not in (TRAJECTORY_KIND, STATE_KIND, CONVERSATION_KIND)},
        "facts": outcome.get("f"),
        "slices": dict(zip(suite["slices"], outcome.get("s") or [], strict=False)),
        "criteria": criteria,
        "errors": errors,
        # system.retries (docs/failures.md#retries): the attempts, each earlier one's error
        "attempts": attempts,
        "attempt_errors": attempt_errors,
        "replays": replays,
        "cached": bool(outcome.get("h")),
    }
    if isinstance(artifacts.get(CONVERSATION_KIND), dict):
        view["conversation"] = conversation_view(artifacts[CONVERSATION_KIND], criteria,
                                                 outcome.get("f"))
    if suite.get("judges"):
        view["judges"] = _judges(store, suite["judges"], criteria)
    if body.get("source"):
        view["source_case"] = _source_side(store, record["run_id"], body["source"])
        if view["source_case"] is not None:
            view["pair"] = pair_rows(view["source_case"], view)
    for replay in replays:
        checkpoint = replay.get("checkpoint")
        after = checkpoint.get("step_index") if isinstance(checkpoint, dict) else None
        replay["steps_differ"] = replay_step_rows(
            view["trajectory"], replay.get("fault_trajectory"),
            after if isinstance(after, int) else 0)
    return view


def conversation_view(conversation: dict[str, Any], criteria: list[dict[str, Any]],
                      facts: dict[str, Any] | None) -> dict[str, Any]:
    """A case's conversation as the case panels show it (docs/conversations.md): who played the
    user, its turns in order, how it ended, and what the simulator's audit found — each check
    failed with what shows it, `unfaithful` when the fidelity judge failed it — and whether the
    agent's criteria are therefore missing."""
    checks = dict(audit(conversation))
    fidelity = next((c for c in criteria if c["criterion"] == FIDELITY_CRITERION), None)
    if fidelity is not None and fidelity["verdict"] == "failed":
        details = fidelity.get("details") or {}
        checks[UNFAITHFUL] = str(details.get("reason") or "the fidelity judge failed it")
    held = (facts or {}).get("conversation") or {}
    return {
        "user": conversation.get("user"), "simulator": conversation.get("simulator"),
        "seed": conversation.get("seed"), "ended": conversation.get("ended"),
        "max_turns": conversation.get("max_turns"), "error": conversation.get("error"),
        "turns": [{"role": t.get("role"), "text": t.get("text"), "done": t.get("done")}
                  for t in conversation.get("turns") or []],
        "instructions": conversation.get("instructions"), "usage": conversation.get("usage"),
        "calls": held.get("calls"),
        "checks": [{"check": check, "why": checks[check]} for check in CHECKS
                   if check in checks],
    }


def _judges(store: Store, judges: dict[str, Any], criteria: list[dict[str, Any]]
            ) -> list[dict[str, Any]]:
    """Each judge criterion's verdict on the case (docs/judges.md): the judge, the model that
    answered, its reason, tokens, latency, the split of its samples, what it was shown."""
    keys = [c["details"]["verdict_key"] for c in criteria
            if isinstance(c.get("details"), dict) and c["details"].get("verdict_key")]
    lookup = getattr(store, "lookup_judge_verdicts", None)
    stored = lookup(keys) if keys and lookup is not None else {}
    shown = []
    for c in criteria:
        if c["criterion"] not in judges:
            continue
        details: dict[str, Any] = c["details"] if isinstance(c.get("details"), dict) else {}
        record = stored.get(details.get("verdict_key") or "", {})
        shown.append({
            "criterion": c["criterion"], "verdict": c["verdict"], "why": c.get("reason"),
            "judge": details.get("judge") or judges[c["criterion"]].get("judge"),
            "model": details.get("model"), "reason": details.get("reason"),
            "input_tokens": details.get("input_tokens"),
            "output_tokens": details.get("output_tokens"),
            "latency_ms": details.get("latency_ms"), "attempts": details.get("attempts"),
            "split": details.get("split"), "error": details.get("error"),
            "shown": record.get("shown"),
        })
    return shown


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


# ---- repeated trials -------------------------------------------------------------------------

#: Characters of one step in the trials-side-by-side view.
STEP_TEXT = 120


def step_text(step: dict[str, Any], limit: int = STEP_TEXT) -> str:
    """One step in a line: `tool_call lookup_order {"order_id": "A1"}`, `tool_result … → …`."""
    text = str(step.get("kind")) + (f" {step['tool_name']}" if step.get("tool_name") else "")
    value = step.get("result") if step.get("result") is not None else step.get("arguments")
    if value is not None:
        shown = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                                sort_keys=True)
        text += (" → " if step.get("result") is not None else " ") + shown
    if step.get("kind") == "handoff":
        text += f" → {step.get('to_agent')}"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _comparable(step: dict[str, Any]) -> tuple[Any, ...]:
    return (step.get("kind"), step.get("agent"), step.get("tool_name"),
            json.dumps(step.get("arguments"), sort_keys=True),
            json.dumps(step.get("result"), sort_keys=True), step.get("to_agent"))


def _action(step: dict[str, Any]) -> tuple[Any, ...]:
    """A step as an action: tool calls with their arguments, tool results, hand-offs; what a
    message or a final answer says is left out."""
    kind = step.get("kind")
    if kind in ("tool_call", "tool_result", "handoff"):
        return _comparable(step)
    return (kind, step.get("agent"))


def step_brief(step: dict[str, Any], limit: int = 40) -> str:
    """A step in a few words, for a column of its own: `call lookup_order`, `result
    lookup_order`, `message: Thanks for…`, `final: refunded`."""
    kind = step.get("kind")
    if kind == "tool_call":
        text = f"call {step.get('tool_name')}"
    elif kind == "tool_result":
        text = f"result {step.get('tool_name')}"
    elif kind == "handoff":
        text = f"handoff → {step.get('to_agent')}"
    else:
        content = step.get("arguments")
        words = ""
        if isinstance(content, dict):
            first = next((v for k, v in content.items() if k in ("answer", "text")), None)
            words = first if isinstance(first, str) else ""
        text = f"{kind}: {words}" if words else str(kind)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def parting_step(trajectories: Sequence[dict[str, Any] | None], *,
                 actions: bool = False) -> dict[str, Any] | None:
    """Where the trials' trajectories part: the first step at which two of them differ (a
    trial that has already ended differs from one that goes on), with the trials grouped by
    what they did there. None when every trial took the same steps (or none recorded any).
    With `actions`, steps are compared as actions only (`_action`): what a message says
    does not part them."""
    steps = [list((t or {}).get("steps") or []) for t in trajectories]
    if not any(steps):
        return None
    longest = max(len(s) for s in steps)
    same = _action if actions else _comparable
    for i in range(longest):
        keys = [same(s[i]) if i < len(s) else None for s in steps]
        if len(set(keys)) > 1:
            groups: dict[Any, list[int]] = {}
            texts: dict[Any, str] = {}
            for trial, (key, trial_steps) in enumerate(zip(keys, steps, strict=True), start=1):
                groups.setdefault(key, []).append(trial)
                texts[key] = step_text(trial_steps[i]) if key is not None else "(ended)"
            return {"step": i + 1,
                    "groups": [{"trials": trials, "step": texts[key]}
                               for key, trials in groups.items()]}
    return None


def add_trials(store: Store, record: dict[str, Any], view: dict[str, Any]) -> None:
    """With repeated trials, add each trial side by side to a case view
    (docs/reliability.md#what-passk-means): `view["trials"]` (per trial: verdicts, output, steps,
    errors) and `view["parting"]` (the first step at which two trials differ). The rest of the view
    is trial 1."""
    suite = record["suite"]
    trials = int(suite.get("trials", 1))
    if trials < 2:
        return
    rows = store.run_case_trials(record["run_id"], view["case"])
    keys = [key for _, key, _ in rows if key]
    executions = store.load_executions(keys) if keys else {}
    errors = [e for e in store.run_errors(record["run_id"]) if e["case"] == view["case"]]
    side = []
    trajectories = []
    for _digest, key, outcome in rows:
        trial = int(outcome.get("tr", 1))
        execution = executions.get(key) if key else None
        artifacts = (execution or {}).get("artifacts") or {}
        trajectory = artifacts.get(TRAJECTORY_KIND)
        trajectories.append(trajectory)
        side.append({
            "trial": trial,
            "codes": outcome["c"],
            "verdicts": [CODE_VERDICTS[code] for code in outcome["c"]],
            "reasons": outcome["r"],
            "output": (execution or {}).get("output"),
            "terminal_status": (trajectory or {}).get("terminal_status"),
            "steps": [step_text(step) for step in (trajectory or {}).get("steps") or []],
            "brief": [step_brief(step) for step in (trajectory or {}).get("steps") or []],
            "errors": [e for e in errors if int(e.get("trial") or 1) == trial],
        })
    view["trials"] = side
    view["parting"] = parting_step(trajectories)
    # A sampled agent rarely words two replies alike; where its *actions* part says more.
    acting = parting_step(trajectories, actions=True)
    parted = view["parting"]
    view["parting_actions"] = (acting if acting is not None and parted is not None
                               and acting["step"] != parted["step"] else None)
