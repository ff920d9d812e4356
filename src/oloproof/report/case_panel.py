"""The case panel in the terminal (`oloproof inspect RUN --case ID`).

Everything shown comes from a case or a system: it is printed as Rich `Text` (never as markup),
with invisible and direction-changing characters escaped (`escape.safe`).
"""

from __future__ import annotations

import json
from typing import Any, TypeGuard

from rich.console import Console
from rich.table import Table
from rich.text import Text

from oloproof.recording.trajectory import trajectory_from_payload
from oloproof.report.escape import safe
from oloproof.report.layout import Column, print_wrapped, render_table

_VERDICT_STYLE = {"passed": "green", "failed": "bold red", "missing": "yellow",
                  "excluded": "dim"}


def T(value: object, style: str = "") -> Text:
    """Untrusted text as Rich text: no markup, invisible characters escaped."""
    return Text(safe(value), style=style)


def _short(value: Any, limit: int = 160) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False,
                                                          sort_keys=True)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _block(console: Console, title: str, value: Any, limit: int = 4000) -> None:
    if value is None or value == {}:
        return
    text = json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)
    if len(text) > limit:
        text = text[:limit] + f"\n… ({len(text) - limit} more characters)"
    console.print(T(title, "bold"))
    console.print(T(text))


def render_attempts(view: dict[str, Any], console: Console) -> None:
    """Under system.retries: how many attempts the case took, and each earlier one's error
    (the last one's, if it failed too, is the case's error above)."""
    attempts = int(view.get("attempts") or 1)
    if attempts < 2:
        return
    errored = bool(view.get("errors"))
    console.print(T(f"Attempts: {attempts} (system.retries); the last "
                    + ("failed too, as above" if errored else "succeeded"), "bold"))
    for error in view.get("attempt_errors") or []:
        console.print(T(f"  attempt {error['attempt']}: {error['kind']}: {error['message']}",
                        "yellow"))


def render_case(view: dict[str, Any], console: Console) -> None:
    """Print one case whole."""
    title = f"Case {view['case']}"
    if view.get("trial") is not None:
        title += f" · trial {view['trial']} of {view['trials_in_run']}"
    title += f" · run {view['run_id']}"
    if view.get("transform"):
        title += f" · copy of {view['source']} under transform {view['transform']}"
    console.print(T(title, "bold"))
    if view.get("trials"):
        render_trials(view, console)
    for error in view.get("errors") or []:
        console.print(T(f"errored ({error['kind']}): {error['message']}", "bold red"))
        if error.get("traceback"):
            console.print(T(error["traceback"].rstrip(), "dim"))
    render_attempts(view, console)
    _block(console, "Input", view.get("input"))
    _block(console, "Expected", view.get("expected"))
    _block(console, "Metadata", view.get("metadata"))
    if view.get("source_case"):
        render_pair(view, console)
    _block(console, "Initial state", view.get("initial_state"))
    _block(console, "Output", view.get("output"))
    if view.get("conversation"):
        render_conversation(view["conversation"], console)
    if view.get("trajectory"):
        render_trajectory(view["trajectory"], console)
    _block(console, "End state", view.get("end_state"))
    for replay in view.get("replays") or []:
        render_replay(replay, view.get("trajectory"), console)
    for kind, payload in (view.get("other_artifacts") or {}).items():
        _block(console, f"Artifact {kind}", payload)
    render_verdicts(view["criteria"], console)
    render_judges(view.get("judges") or [], console)


def conversation_head(conversation: dict[str, Any]) -> str:
    """`Conversation: simulated by customer (seed 1234) · 3 user turns · ended user_done`."""
    turns = [t for t in conversation.get("turns") or [] if t.get("role") == "user"
             and str(t.get("text") or "").strip()]
    who = (f"simulated by {conversation.get('simulator')} (seed {conversation.get('seed')})"
           if conversation.get("user") == "simulated" else "scripted")
    head = (f"Conversation: {who} · {len(turns)} user turn{'' if len(turns) == 1 else 's'} "
            f"· ended {conversation.get('ended')}")
    if conversation.get("ended") == "max_turns":
        head += f" (cut at max_turns {conversation.get('max_turns')}: truncated)"
    if conversation.get("calls"):
        head += f" · {conversation['calls']} simulator call(s) when it ran"
    return head


def render_conversation(conversation: dict[str, Any], console: Console) -> None:
    """A case's conversation turn by turn (docs/conversations.md), and the simulator's audit."""
    print_wrapped(console, T(conversation_head(conversation), "bold"))
    for turn in conversation.get("turns") or []:
        role = str(turn.get("role"))
        text = str(turn.get("text") or "")
        said = text if text.strip() else "(no message)"
        if turn.get("done") and role == "user":
            said += "  [done]"
        line = Text(f"{role:<6} ", style="cyan" if role == "user" else "")
        line.append(T(said))
        print_wrapped(console, line, 2, 7)
    checks = conversation.get("checks") or []
    if checks:
        print_wrapped(console, T("The simulator failed " + ", ".join(c["check"] for c in checks)
                                 + ": the simulator's failure, not the agent's; every "
                                 "criterion of the agent is missing "
                                 f"(simulator:{checks[0]['check']})", "bold red"), 2)
        for check in checks:
            print_wrapped(console, T(f"{check['check']}: {check['why']}", "yellow"), 4)
    elif conversation.get("user") == "simulated":
        print_wrapped(console, T("The simulator passed its audit (simulator_error, ended_early, "
                                 "leaked_instructions).", "dim"), 2)


def judge_line(judge: dict[str, Any]) -> str:
    """A judge criterion's verdict in one line: who judged, what it said, what it cost."""
    words = f"{judge['criterion']}: {judge['verdict']} by judge {judge.get('judge')}"
    if judge.get("model"):
        words += f" ({judge['model']})"
    if judge.get("reason"):
        words += f" — {judge['reason']}"
    if judge.get("error"):
        words += f" — {judge.get('why')}: {judge['error']}"
    costs = []
    if judge.get("input_tokens") is not None or judge.get("output_tokens") is not None:
        costs.append(f"{judge.get('input_tokens') or 0} + {judge.get('output_tokens') or 0} "
                     "tokens")
    if judge.get("latency_ms") is not None:
        costs.append(f"{round(judge['latency_ms'])} ms")
    if judge.get("split"):
        split = judge["split"]
        costs.append(f"samples {split.get('pass', 0)} pass / {split.get('fail', 0)} fail")
    if judge.get("attempts") and judge["attempts"] > 1:
        costs.append(f"{judge['attempts']} calls")
    return words + (" · " + " · ".join(costs) if costs else "")


def render_judges(judges: list[dict[str, Any]], console: Console) -> None:
    """Each judge criterion's verdict, and what its judge was shown (docs/judges.md)."""
    if not judges:
        return
    console.print(T("Judges", "bold"))
    for judge in judges:
        console.print(T("  " + judge_line(judge)))
        for field, value in (judge.get("shown") or {}).items():
            console.print(T(f"    shown {field}: {_short(value, 300)}", "dim"))


#: At most this many steps are shown side by side.
SIDE_BY_SIDE_STEPS = 40


def render_trials(view: dict[str, Any], console: Console) -> None:
    """A case's trials side by side (docs/reliability.md#what-passk-means): each criterion's verdict
    per trial, where the trajectories part, and their steps; the rest of the panel is trial 1."""
    trials = view["trials"]
    criteria = [c["criterion"] for c in view["criteria"]]
    console.print(T(f"Trials side by side: {len(trials)} trials (trial 1 is shown whole "
                    "below)", "bold"))
    if len(trials) > SIDE_BY_SIDE_TRIALS:
        _many_trials(trials, criteria, console)
    else:
        _trial_columns(trials, criteria, console)
    parting = view.get("parting")
    if parting is None:
        if any(t["steps"] for t in trials):
            console.print(T("Every trial took the same steps.", "dim"))
        return
    _parting_lines(console, f"The trials part at step {parting['step']}:", parting)
    if view.get("parting_actions"):
        acting = view["parting_actions"]
        _parting_lines(console, f"Their actions part at step {acting['step']}:", acting)
    # One line per step, each trial a column cut to fit (the step where they part is printed
    # whole above; each trial's steps whole: `--json`, or the HTML report).
    steps = Table(box=None, pad_edge=False)
    steps.add_column("#", justify="right", no_wrap=True, min_width=2)
    cell = max(8, (console.width - 4) // len(trials) - 1)
    for t in trials:
        steps.add_column(f"trial {t['trial']}", no_wrap=True, overflow="ellipsis",
                         max_width=cell)
    longest = max(len(t["steps"]) for t in trials)
    for i in range(min(longest, SIDE_BY_SIDE_STEPS)):
        full = [t["steps"][i] if i < len(t["steps"]) else "" for t in trials]
        cells = [t["brief"][i] if i < len(t.get("brief") or ()) else "" for t in trials]
        steps.add_row(str(i + 1), *[T(c) for c in cells],
                      style="yellow" if i + 1 >= parting["step"] and len(set(full)) > 1
                      else None)
    console.print(steps)
    if longest > SIDE_BY_SIDE_STEPS:
        console.print(T(f"  … {longest - SIDE_BY_SIDE_STEPS} more steps (the trajectory of "
                        "trial 1 is below whole)", "dim"))


#: More trials than this are shown a line per criterion (a pytest test's 50), not a column each.
SIDE_BY_SIDE_TRIALS = 12


def _trial_columns(trials: list[dict[str, Any]], criteria: list[str], console: Console) -> None:
    """A column per trial, then each trial's output where they differ, and its errors."""
    table = Table(box=None, pad_edge=False)
    table.add_column("criterion", overflow="fold")
    for t in trials:
        table.add_column(f"T{t['trial']}", justify="center")
    table.add_column("passed", justify="right")
    for i, name in enumerate(criteria):
        codes = [t["codes"][i] if i < len(t["codes"]) else "" for t in trials]
        counted = sum(1 for code in codes if code in "PFM" and code)
        passed = sum(1 for code in codes if code == "P")
        style = "yellow" if "P" in codes and "F" in codes else None
        table.add_row(T(name), *[Text(code, style=_CODE_STYLE.get(code, "")) for code in codes],
                      Text(f"{passed} / {counted}" if counted else "excluded"), style=style)
    console.print(table)
    outputs = [t.get("output") for t in trials]
    if any(o != outputs[0] for o in outputs):
        console.print(T("Outputs differ:", "bold"))
        for t in trials:
            console.print(T(f"  T{t['trial']}: {_short(t.get('output'), 200)}"))
    for t in trials:
        for error in t.get("errors") or []:
            console.print(T(f"  T{t['trial']} errored ({error['kind']}): {error['message']}",
                            "red"))


def _numbers(trials: list[int]) -> str:
    """`T1-T3, T7`: trial numbers, runs of three or more as a range."""
    parts: list[str] = []
    start = previous = trials[0]
    for number in [*trials[1:], None]:
        if number is not None and number == previous + 1:
            previous = number
            continue
        parts.append(f"T{start}" if previous == start else
                     f"T{start}, T{previous}" if previous == start + 1 else f"T{start}-T{previous}")
        if number is not None:
            start = previous = number
    return ", ".join(parts)


def _many_trials(trials: list[dict[str, Any]], criteria: list[str], console: Console) -> None:
    """A line per criterion — its verdict codes in trial order, in tens — then each different
    output and each different error once, with the trials that gave it."""
    width = max(len(name) for name in criteria)
    for i, name in enumerate(criteria):
        codes = [t["codes"][i] if i < len(t["codes"]) else " " for t in trials]
        counted = sum(1 for code in codes if code in "PFM" and code != " ")
        passed = codes.count("P")
        line = T(f"{name:<{width}}  ")
        for at, code in enumerate(codes):
            if at and at % 10 == 0:
                line.append(" ")
            line.append(code, style=_CODE_STYLE.get(code, ""))
        line.append(f"  {passed} / {counted} passed" if counted else "  excluded")
        console.print(line)
    console.print(T("  (P passed, F failed, M missing, X excluded; in tens from trial 1)",
                    "dim"))
    by_output: dict[str, list[int]] = {}
    for t in trials:
        by_output.setdefault(_short(t.get("output"), 200), []).append(int(t["trial"]))
    if len(by_output) > 1:
        console.print(T("Outputs differ:", "bold"))
        for shown, numbers in sorted(by_output.items(), key=lambda item: item[1][0]):
            console.print(T(f"  {_numbers(numbers)}: {shown}"))
    by_error: dict[tuple[str, str], list[int]] = {}
    for t in trials:
        for error in t.get("errors") or []:
            by_error.setdefault((error["kind"], error["message"]), []).append(int(t["trial"]))
    for (kind, message), numbers in by_error.items():
        console.print(T(f"  {_numbers(numbers)} errored ({kind}): {message}", "red"))


def _parting_lines(console: Console, head: str, parting: dict[str, Any]) -> None:
    console.print(T(head, "bold"))
    for group in parting["groups"]:
        who = ", ".join(str(n) for n in group["trials"])
        console.print(T(f"  trial{'s' if len(group['trials']) > 1 else ''} {who}: "
                        f"{group['step']}"))


_CODE_STYLE = {"P": "green", "F": "bold red", "M": "yellow", "X": "dim"}


def render_trajectory(trajectory: dict[str, Any], console: Console) -> None:
    steps = trajectory.get("steps") or []
    constraints_at: dict[int | None, list[dict[str, Any]]] = {}
    for check in trajectory.get("constraints") or []:
        constraints_at.setdefault(check.get("step_index"), []).append(check)
    checkpoints_at: dict[int | None, list[str]] = {}
    for cp in trajectory.get("checkpoints") or []:
        checkpoints_at.setdefault(cp.get("step_index"), []).append(cp["checkpoint_id"])
    head = (f"Trajectory: {len(steps)} steps · {trajectory.get('terminal_status')}"
            + (" · TRUNCATED at the agent's limit" + (
                f" ({trajectory['step_limit']})" if trajectory.get("step_limit") is not None
                else "") if trajectory.get("truncated") else ""))
    console.print(Text(head, style="bold"))
    named = any(s.get("agent") for s in steps)
    table = Table(show_header=True, box=None, pad_edge=False)
    table.add_column("#", justify="right")
    if named:
        table.add_column("agent")
    for column in ("kind", "tool", "arguments / result", "checks"):
        table.add_column(column, overflow="fold")
    for step in steps:
        index = step["index"]
        if step["kind"] == "handoff":
            detail = f"hands control to {step.get('to_agent')}"
        elif step.get("result") is not None:
            detail = "→ " + _short(step["result"])
        else:
            detail = _short(step.get("arguments")) if step.get("arguments") is not None else ""
        checks = [
            T(f"{c['name']}: {'ok' if c['passed'] else 'FAILED'}",
                 style="green" if c["passed"] else "bold red")
            for c in constraints_at.get(index, [])
        ]
        marks = Text(" ").join(checks + [T(f"⚑ {c}", "cyan")
                                         for c in checkpoints_at.get(index, [])])
        row = [T(index)] + ([T(step.get("agent") or "")] if named else [])
        row += [T(step["kind"]), T(step.get("tool_name") or ""), T(detail), marks]
        table.add_row(*row)
    console.print(table)
    for check in constraints_at.get(None, []):
        console.print(T(f"  constraint {check['name']}: "
                        f"{'ok' if check['passed'] else 'FAILED'} (whole trace)"))
    if named:
        from oloproof.recording.trajectory import AgentTrajectory

        route = AgentTrajectory.model_validate(trajectory).route()
        if route:
            console.print(T(f"  route: {'>'.join(route)}"))


def render_replay(replay: dict[str, Any], recording: dict[str, Any] | None,
                  console: Console) -> None:
    """The recording beside the replay from the checkpoint
    (docs/stateful-agents.md#a-tool-that-fails-fault-replays)."""
    plan = replay.get("plan") or {}
    checkpoint = replay.get("checkpoint") or {}
    console.print(T(
        f"Fault replay for {replay['criterion']}: {plan.get('fault')} at "
        f"{plan.get('tool')} (call #{plan.get('occurrence', 1)}) from checkpoint "
        f"{checkpoint.get('checkpoint_id')} (after step {checkpoint.get('step_index') or 0})"
        f" → {replay['verdict']}" + (f" ({replay['reason']})" if replay.get("reason") else ""),
        "bold"))
    if replay.get("status") != "ok":
        console.print(T(f"  replay {replay.get('status')}: {replay.get('message') or ''}",
                        "yellow"))
    faulted = replay.get("fault_trajectory")
    if not faulted or not recording:
        return
    at = checkpoint.get("step_index") or 0
    left = [s for s in recording.get("steps") or [] if s["index"] > at]
    right = [s for s in faulted.get("steps") or [] if s["index"] > at]
    table = Table(box=None)
    table.add_column("#", justify="right")
    table.add_column("recording", overflow="fold")
    table.add_column("replay with the fault", overflow="fold")
    for i in range(max(len(left), len(right))):
        a = _step_text(left[i]) if i < len(left) else ""
        b = _step_text(right[i]) if i < len(right) else ""
        table.add_row(str(at + i + 1), T(a), T(b),
                      style=None if a == b else "yellow")
    console.print(table)
    console.print(T(f"  replay ended: {faulted.get('terminal_status')}; constraints: " + ", ".join(
        f"{c['name']}={'ok' if c['passed'] else 'FAILED'}"
        for c in faulted.get("constraints") or [])))
    if replay.get("end_state_patch"):
        _block(console, "  Sandbox after the fault replay (changes from the initial state)",
               replay["end_state_patch"])


def _step_text(step: dict[str, Any]) -> str:
    text = str(step["kind"]) + (f" {step['tool_name']}" if step.get("tool_name") else "")
    if step.get("result") is not None:
        text += " → " + _short(step["result"], 120)
    elif step.get("arguments") is not None:
        text += " " + _short(step["arguments"], 120)
    return text


def render_pair(view: dict[str, Any], console: Console) -> None:
    source = view["source_case"]
    console.print(T(f"Source {source['case']} beside this copy:", "bold"))
    table = Table(box=None)
    table.add_column("")
    table.add_column(T(f"source {source['case']}"), overflow="fold")
    table.add_column(T(f"copy {view['case']}"), overflow="fold")
    for label, left, right in (
        ("input", source.get("input"), view.get("input")),
        ("output", source.get("output"), view.get("output")),
        ("actions", _actions(source.get("trajectory")), _actions(view.get("trajectory"))),
        ("end state", source.get("end_state"), view.get("end_state")),
    ):
        if label == "end state" and left is None and right is None:
            continue
        same = left == right
        table.add_row(label + ("" if same else " ≠"), T(_short(left, 400)), T(_short(right, 400)),
                      style=None if same else "yellow")
    console.print(table)


def _actions(trajectory: dict[str, Any] | None) -> list[Any] | None:
    """The actions `same_actions` compares (`AgentTrajectory.actions()`), from a stored one."""
    if not trajectory:
        return None
    return trajectory_from_payload(trajectory).actions()


def render_verdicts(criteria: list[dict[str, Any]], console: Console) -> None:
    rows = []
    for c in criteria:
        details = c.get("details") or {}
        shown = ({k: v for k, v in details.items() if not (k == "checks" and _compared(v))}
                 if details else None)
        rows.append((T(c["criterion"]), Text(c["verdict"], style=_VERDICT_STYLE[c["verdict"]]),
                     T(c.get("reason") or ""), T(_short(shown, 300)) if shown else Text("")))
    # Stacked (as the run report's tables) when it does not fit: names are never split.
    render_table(console, "Criteria", (Column("Criterion"), Column("Verdict"),
                                       Column("Reason", stack=True),
                                       Column("Details", stack=True)), rows)
    for c in criteria:
        details = c.get("details") or {}
        checks = details.get("checks") if isinstance(details, dict) else None
        if _compared(checks):
            render_paths(c["criterion"], checks, details, console)


def _compared(checks: Any) -> TypeGuard[list[dict[str, Any]]]:
    """Whether a judgment's `checks` are compared state paths (a list of {path, ...})."""
    return isinstance(checks, list) and bool(checks) and all(
        isinstance(c, dict) and "path" in c for c in checks)


def render_paths(criterion: str, checks: list[dict[str, Any]], details: dict[str, Any],
                 console: Console) -> None:
    rows = []
    for check in checks:
        ok = check.get("agreed")
        rows.append((T(str(check.get("path"))),
                     Text(("agrees" if ok else "differs") + (
                         f" ({check['note']})" if check.get("note") else ""),
                         style="green" if ok else "bold red"),
                     T(_short(check.get("expected"))), T(_short(check.get("recorded")))))
    render_table(console, T(f"{criterion}: compared paths"),
                 (Column("Path"), Column("Verdict"), Column("Expected", stack=True),
                  Column("Recorded", stack=True)), rows)
    more = details.get("agreed_not_shown")
    if more:
        console.print(f"  … and {more} more paths that agree")
