"""Cross-check the packaged examples' data against the figures of SPEC §13, without the engine.

Runs every case of `support_agent` and `triage_agents` by calling the example's `run` under a
case recorder, then counts each criterion's passed / observed / missing with the SPEC's
definitions (§7.2, §7.3, including the "on a truncated trace" columns), the quantile inputs
(§5.2) and the slice groups (§10.2), and asserts they are the figures §13 requires. Interval
bounds of pass rates follow from the counts and are not recomputed here.

    .venv/bin/python tests/examples/figures_by_hand.py
"""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import yaml

from oloproof.recording.declaration import declaration_of
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "oloproof" / "examples"
PASS, FAIL, MISSING = "passed", "failed", "missing"


# ---- loading and running -------------------------------------------------------------------


def load_cases(path: Path) -> list[dict[str, Any]]:
    cases, seen = [], {}
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        case = json.loads(line)  # every line must be valid JSON
        assert isinstance(case.get("id"), str), f"line {line_no}: no string id"
        assert isinstance(case.get("input"), dict), f"line {line_no}: no input object"
        assert case["id"] not in seen, f"{case['id']} on lines {seen[case['id']]} and {line_no}"
        seen[case["id"]] = line_no
        for key in ("tools", "route"):
            value = case.get("expected", {}).get(key)
            assert value is None or (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ), f"line {line_no}: expected.{key} is not a list of strings"
        cases.append(case)
    return cases


def run_project(name: str) -> tuple[dict[str, Any], list[tuple[dict, dict, dict]]]:
    """(the suite config, [(case, output, trajectory payload)]) for one example."""
    project = EXAMPLES / name
    config = yaml.safe_load((project / "oloproof.yaml").read_text(encoding="utf-8"))
    module_name, attr = config["system"]["callable"].split(":")
    spec = importlib.util.spec_from_file_location(
        f"{name}_{module_name}", project / f"{module_name}.py"
    )
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    target = getattr(module, attr)
    declared = declaration_of(target)
    assert (declared.name, declared.version, list(declared.records)) == (
        config["system"]["name"],
        config["system"]["version"],
        config["system"]["records"],
    ), "the @system declaration and oloproof.yaml disagree"

    rows = []
    for case in load_cases(project / config["dataset"]):
        recorder = CaseRecorder(case["id"], case.get("metadata"))
        token = set_current(recorder)
        try:
            output = target(json.loads(json.dumps(case["input"])))
        finally:
            reset_current(token)
        assert isinstance(output, dict), f"{case['id']}: output is not an object"
        traj = recorder.artifacts["agent_trajectory/v1"]
        if hasattr(traj, "model_dump"):  # the recorder may keep the model or its JSON
            traj = traj.model_dump(mode="json")
        rows.append((case, output, traj))
    return config, rows


def evaluator(config: dict[str, Any], type_: str) -> dict[str, Any]:
    return next(e for e in config["evaluators"] if e["type"] == type_)


# ---- per-case judgments, as SPEC §7 words them ---------------------------------------------


def calls(traj: dict) -> list[tuple[str, str]]:
    return [
        (s["tool_name"], json.dumps(s["arguments"], sort_keys=True))
        for s in traj["steps"]
        if s["kind"] == "tool_call"
    ]


def answer_correct(case: dict, output: dict, _traj: dict) -> str:  # `contains`, case-insensitive
    return (
        PASS if str(case["expected"]["answer"]).lower() in str(output["answer"]).lower() else FAIL
    )


def tool_called(tool: str, min_calls: int = 1):
    def judge(_case: dict, _output: dict, traj: dict) -> str:
        if sum(name == tool for name, _ in calls(traj)) >= min_calls:
            return PASS
        return MISSING if traj["truncated"] else FAIL

    return judge


def no_tool_loop(max_repeats: int):
    def judge(_case: dict, _output: dict, traj: dict) -> str:
        longest, run, previous = 0, 0, None
        for call in calls(traj):
            run = run + 1 if call == previous else 1
            previous, longest = call, max(longest, run)
        if longest > max_repeats:
            return FAIL
        return MISSING if traj["truncated"] else PASS

    return judge


def tool_sequence(case: dict, _output: dict, traj: dict) -> str:
    expected, called = case["expected"]["tools"], [name for name, _ in calls(traj)]
    if not traj["truncated"]:
        return PASS if called == expected else FAIL
    return FAIL if called != expected[: len(called)] else MISSING  # already departs?


def constraints_satisfied(names: list[str]):
    def judge(_case: dict, _output: dict, traj: dict) -> str:
        recorded = [c for c in traj["constraints"] if c["name"] in names]
        if any(not c["passed"] for c in recorded):
            return FAIL
        if {c["name"] for c in recorded} != set(names):
            return MISSING
        return PASS

    return judge


def max_steps(limit: int):
    def judge(_case: dict, _output: dict, traj: dict) -> str:
        count = len(traj["steps"])
        if traj["truncated"]:
            return FAIL if count >= limit else MISSING  # the true count is larger
        return PASS if count <= limit else FAIL

    return judge


def route_of(traj: dict) -> list[str]:
    """Agents that held control, repeats collapsed; a hand-off's to_agent holds control."""
    route: list[str] = []
    for step in traj["steps"]:
        for agent in (step["agent"], step["to_agent"] if step["kind"] == "handoff" else None):
            if agent and (not route or route[-1] != agent):
                route.append(agent)
    return route


def agent_route(case: dict, _output: dict, traj: dict) -> str:
    route, expected = route_of(traj), case["expected"]["route"]
    if not traj["truncated"]:
        return PASS if route == expected else FAIL
    return FAIL if route != expected[: len(route)] else MISSING  # departs, or already longer


def tool_permissions(permissions: dict[str, list[str]]):
    def judge(_case: dict, _output: dict, traj: dict) -> str:
        if any(
            s["kind"] == "tool_call" and s["tool_name"] not in permissions.get(s["agent"], [])
            for s in traj["steps"]
        ):
            return FAIL
        return MISSING if traj["truncated"] else PASS

    return judge


def max_handoffs(limit: int):
    def judge(_case: dict, _output: dict, traj: dict) -> str:
        if len(route_of(traj)) - 1 > limit:
            return FAIL
        return MISSING if traj["truncated"] else PASS

    return judge


# ---- slices (§10.2): a truncated trace joins a group only when its recorded part settles it --


def first_tool(traj: dict) -> str | None:
    called = calls(traj)
    if called:
        return called[0][0]
    return None if traj["truncated"] else "none"


def repeated_action(traj: dict) -> str | None:
    if max(Counter(calls(traj)).values(), default=0) >= 2:
        return "true"
    return None if traj["truncated"] else "false"


def trajectory_length(bounds: list[int]):
    def group(traj: dict) -> str | None:
        count = len(traj["steps"])
        if traj["truncated"]:  # the true count is larger than the recorded one
            return f"gt_{bounds[-1]}" if count >= bounds[-1] else None
        return next((f"le_{b}" for b in bounds if count <= b), f"gt_{bounds[-1]}")

    return group


def route_group(traj: dict) -> str | None:
    return None if traj["truncated"] else ">".join(route_of(traj))


# ---- quantiles (§5.2) ----------------------------------------------------------------------


def quantile(values: list[int], missing: int, q: float, alpha: float = 0.05):
    """(estimate, lower, upper); None is `no bound`. Missing sit at -inf (lower), +inf (upper)."""
    values = sorted(values)
    n_total = len(values) + missing
    estimate = next(v for v in values if sum(x <= v for x in values) >= q * len(values))

    def cdf(k: int) -> float:  # P(B <= k), B ~ Binomial(n_total, q)
        return sum(math.comb(n_total, i) * q**i * (1 - q) ** (n_total - i) for i in range(k + 1))

    low_ranks = [r for r in range(1, n_total + 1) if cdf(r - 1) <= alpha / 2]
    high_ranks = [r for r in range(1, n_total + 1) if 1 - cdf(r - 1) <= alpha / 2]
    below = [None] * missing + values  # rank r is below[r - 1]
    above = values + [None] * missing
    lower = below[max(low_ranks) - 1] if low_ranks else None
    upper = above[min(high_ranks) - 1] if high_ranks else None
    return estimate, lower, upper


# ---- reporting -----------------------------------------------------------------------------


def counts(verdicts: list[str]) -> tuple[int, int, int]:
    """(passed, observed, missing)"""
    return (
        verdicts.count(PASS),
        verdicts.count(PASS) + verdicts.count(FAIL),
        verdicts.count(MISSING),
    )


def check(label: str, got: Any, want: Any, problems: list[str]) -> None:
    ok = got == want
    print(f"  {'ok ' if ok else 'BAD'} {label:<58} got {got!s:<20} spec {want}")
    if not ok:
        problems.append(f"{label}: got {got}, SPEC says {want}")


def judge_all(rows, criteria) -> dict[str, list[str]]:
    return {name: [judge(c, o, t) for c, o, t in rows] for name, judge in criteria.items()}


def print_slices(rows, verdicts, slicers) -> dict[tuple[str, str], dict[str, tuple]]:
    table: dict[tuple[str, str], dict[str, tuple]] = {}
    for slice_name, slicer in slicers.items():
        groups: dict[str, list[int]] = defaultdict(list)
        for i, (case, _output, traj) in enumerate(rows):
            value = slicer(case, traj)
            if value is not None:
                groups[value].append(i)
        for value, members in sorted(groups.items()):
            table[slice_name, value] = {
                name: counts([v[i] for i in members]) for name, v in verdicts.items()
            }
            cells = "  ".join(
                f"{n}={p}/{o}+{m}m" for n, (p, o, m) in table[slice_name, value].items()
            )
            print(f"  {slice_name}={value} ({len(members)} cases): {cells}")
    return table


def support_agent(problems: list[str]) -> None:
    print("support_agent")
    config, rows = run_project("support_agent")
    assert len(rows) == 40
    criteria = {
        "answer_correct": answer_correct,
        "agent_tool_lookup_order_called": tool_called(
            evaluator(config, "agent_tool_called")["tool_name"]
        ),
        "agent_no_tool_loop": no_tool_loop(evaluator(config, "agent_no_tool_loop")["max_repeats"]),
        "agent_tool_sequence": tool_sequence,
        "agent_constraints_satisfied": constraints_satisfied(
            evaluator(config, "agent_constraints_satisfied")["constraints"]
        ),
        "agent_steps_le_10": max_steps(evaluator(config, "agent_max_steps")["max_steps"]),
    }
    verdicts = judge_all(rows, criteria)
    spec = {
        "answer_correct": (33, 40, 0),
        "agent_tool_lookup_order_called": (39, 39, 1),
        "agent_no_tool_loop": (29, 39, 1),
        "agent_tool_sequence": (24, 40, 0),
        "agent_constraints_satisfied": (37, 40, 0),
        "agent_steps_le_10": (39, 40, 0),
    }
    print(" criteria (passed, observed, missing):")
    for name, want in spec.items():
        check(name, counts(verdicts[name]), want, problems)

    complete = [t for _c, _o, t in rows if not t["truncated"]]
    truncated = len(rows) - len(complete)
    steps = [len(t["steps"]) for t in complete]
    tool_calls = [len(calls(t)) for t in complete]
    print(f" quantile inputs ({len(complete)} observed, {truncated} missing):")
    print(f"  agent_steps      {sorted(Counter(steps).items())}  (value, cases)")
    print(f"  agent_tool_calls {sorted(Counter(tool_calls).items())}")
    check(
        "steps_p95 (estimate, lower, upper) / observed / missing",
        (quantile(steps, truncated, 0.95), len(steps), truncated),
        ((10, 10, None), 39, 1),
        problems,
    )
    check(
        "tool_calls_p50 (estimate, lower, upper) / observed / missing",
        (quantile(tool_calls, truncated, 0.5), len(tool_calls), truncated),
        ((2, 2, 3), 39, 1),
        problems,
    )

    bounds = [
        int(b)
        for b in next(s for s in config["slices"] if s.startswith("trajectory_length:"))
        .split(":")[1]
        .split(",")
    ]
    length = trajectory_length(bounds)
    print(" slices (passed/observed+missing):")
    table = print_slices(
        rows,
        verdicts,
        {
            "metadata.surface": lambda case, _t: case["metadata"]["surface"],
            "first_tool": lambda _c, traj: first_tool(traj),
            "repeated_action": lambda _c, traj: repeated_action(traj),
            f"trajectory_length:{','.join(map(str, bounds))}": lambda _c, traj: length(traj),
        },
    )
    check(
        "first_tool=search agent_no_tool_loop",
        table["first_tool", "search"]["agent_no_tool_loop"],
        (0, 6, 1),
        problems,
    )
    check(
        "first_tool=search agent_tool_sequence",
        table["first_tool", "search"]["agent_tool_sequence"],
        (0, 7, 0),
        problems,
    )
    check(
        "repeated_action=false answer_correct",
        table["repeated_action", "false"]["answer_correct"],
        (27, 29, 0),
        problems,
    )
    check(
        "repeated_action=true answer_correct",
        table["repeated_action", "true"]["answer_correct"],
        (6, 10, 0),
        problems,
    )
    deletions = sum(any(name == "delete_customer" for name, _ in calls(t)) for _c, _o, t in rows)
    check("cases calling delete_customer (no-deletion FAILs)", deletions, 3, problems)
    check(
        "no-deletion failures > max_failures 0",
        counts(verdicts["agent_constraints_satisfied"])[1]
        - counts(verdicts["agent_constraints_satisfied"])[0]
        > 0,
        True,
        problems,
    )


def triage_agents(problems: list[str]) -> None:
    print("triage_agents")
    config, rows = run_project("triage_agents")
    assert len(rows) == 30
    for _c, _o, traj in rows:  # every step names its agent
        assert all(s["agent"] for s in traj["steps"])
    criteria = {
        "answer_correct": answer_correct,
        "agent_route": agent_route,
        "agent_tool_permissions": tool_permissions(
            evaluator(config, "agent_tool_permissions")["permissions"]
        ),
        "agent_handoffs_le_2": max_handoffs(
            evaluator(config, "agent_max_handoffs")["max_handoffs"]
        ),
    }
    verdicts = judge_all(rows, criteria)
    spec = {
        "answer_correct": (29, 30, 0),
        "agent_route": (26, 30, 0),
        "agent_tool_permissions": (27, 29, 1),
        "agent_handoffs_le_2": (26, 30, 0),
    }
    print(" criteria (passed, observed, missing):")
    for name, want in spec.items():
        check(name, counts(verdicts[name]), want, problems)
    check("truncated cases", sum(t["truncated"] for _c, _o, t in rows), 1, problems)
    tech_refunds = sum(
        any(
            s["kind"] == "tool_call" and s["agent"] == "tech" and s["tool_name"] == "issue_refund"
            for s in t["steps"]
        )
        for _c, _o, t in rows
    )
    check("cases where tech issues a refund", tech_refunds, 2, problems)
    print(" slices (passed/observed+missing):")
    print_slices(rows, verdicts, {"route": lambda _c, traj: route_group(traj)})


def main() -> int:
    problems: list[str] = []
    support_agent(problems)
    triage_agents(problems)
    print("\nALL FIGURES MATCH" if not problems else "\nMISMATCHES:\n  " + "\n  ".join(problems))
    return 1 if problems else 0


def test_figures_by_hand() -> None:  # also runnable with pytest, if pointed at this file
    assert main() == 0


if __name__ == "__main__":
    raise SystemExit(main())
