"""The definitions of the docs (docs/concepts.md, docs/configuration.md), written out by hand, to
count the packaged examples' figures.

Nothing here uses Oloproof's evaluators, metrics, decisions or trajectory methods: a case is
run by calling the example's own callable under a case recorder (as the engine does: reset
the sandbox to a copy of `initial_state`, call, take the snapshot), its trajectory is read as
plain JSON, and each criterion, interval, slice, fault replay, pair and rule state is worked
out from the words of the docs. `test_figures_by_hand.py` holds the results to the figures
the examples' documentation prints (docs/agents-and-tools.md, docs/stateful-agents.md, the
examples' READMEs).
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
import sys
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from scipy.stats import beta

from oloproof import ReplayChange
from oloproof.recording.declaration import declaration_of
from oloproof.recording.protocols import FAULT_RESULTS
from oloproof.recording.recorder import CaseRecorder, reset_current, set_current
from oloproof.recording.steps import Replaying
from oloproof.recording.trajectory import TRAJECTORY_KIND, AgentCheckpoint, AgentTrajectory

EXAMPLES = Path(__file__).resolve().parents[2] / "src" / "oloproof" / "examples"
PASS, FAIL, MISSING, EXCLUDED = "passed", "failed", "missing", "excluded"

Json = dict[str, Any]
Judge = Callable[["Ran"], str]


# ---- an example, loaded and run ------------------------------------------------------------


@dataclass
class Ran:
    """One case as the system left it: its output, trajectory (JSON) and end state."""

    case: Json
    output: Json
    trajectory: Json
    model: AgentTrajectory  # the same trajectory as recorded, to hand back to `replay`
    end_state: Json | None = None


@dataclass
class Example:
    """A packaged example: its suite, policy, system and cases."""

    name: str
    config: Json
    policy: Json
    target: Any
    cases: list[Json]
    ran: list[Ran] = field(default_factory=list)

    def evaluator(self, type_: str, **where: Any) -> Json:
        """The suite's evaluator entry of this type (and these fields)."""
        return next(e for e in self.config["evaluators"]
                    if e["type"] == type_ and all(e.get(k) == v for k, v in where.items()))

    def transform(self, name: str) -> Json:
        return next(t for t in self.config["metamorphic"]["transforms"] if t["name"] == name)

    @property
    def stateful(self) -> bool:
        return hasattr(self.target, "reset") and hasattr(self.target, "snapshot")


def load_cases(path: Path) -> list[Json]:
    """The dataset, with the checks docs/configuration.md#the-dataset-one-case-per-line makes of
    every line."""
    cases: list[Json] = []
    seen: dict[str, int] = {}
    for line_no, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        case = json.loads(line)
        assert isinstance(case.get("id"), str), f"{path}:{line_no}: no string id"
        assert isinstance(case.get("input"), dict), f"{path}:{line_no}: no input object"
        assert case["id"] not in seen, f"{case['id']} on lines {seen[case['id']]} and {line_no}"
        seen[case["id"]] = line_no
        for key in ("tools", "route"):
            value = case.get("expected", {}).get(key)
            assert value is None or (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ), f"{path}:{line_no}: expected.{key} is not a list of strings"
        cases.append(case)
    return cases


def load_example(name: str) -> Example:
    """Import the example's system from its directory, as `callable: module:attr` names it."""
    project = EXAMPLES / name
    config = yaml.safe_load((project / "oloproof.yaml").read_text(encoding="utf-8"))
    policy = yaml.safe_load((project / "release.yaml").read_text(encoding="utf-8"))
    module_name, attr = config["system"]["callable"].split(":")
    spec = importlib.util.spec_from_file_location(
        f"by_hand_{name.replace('-', '_')}_{module_name}", project / f"{module_name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    target = getattr(module, attr)
    declared = declaration_of(target)
    assert declared is not None, f"{name}: the system has no @system declaration"
    assert (declared.name, declared.version, list(declared.records)) == (
        config["system"]["name"], config["system"]["version"], config["system"]["records"],
    ), f"{name}: the @system declaration and oloproof.yaml disagree"
    return Example(name, config, policy, target,
                   load_cases(project / config["dataset"]))


def _plain(trajectory: Any) -> Json:
    return json.loads(json.dumps(
        trajectory.model_dump(mode="json") if hasattr(trajectory, "model_dump") else trajectory))


def run_case(example: Example, case: Json) -> Ran:
    """Reset (a Stateful system) to a copy of `initial_state`, call, take the snapshot."""
    recorder = CaseRecorder(case["id"], case.get("metadata"))
    token = set_current(recorder)
    try:
        if example.stateful:
            example.target.reset(copy.deepcopy(case.get("initial_state") or {}))
        output = example.target(json.loads(json.dumps(case["input"])))
        end_state = (json.loads(json.dumps(example.target.snapshot()))
                     if example.stateful else None)
    finally:
        recorder.close()
        reset_current(token)
    assert isinstance(output, dict), f"{case['id']}: the output is not an object"
    model = recorder.artifacts[TRAJECTORY_KIND]
    if not isinstance(model, AgentTrajectory):
        model = AgentTrajectory.model_validate(model)
    return Ran(case, output, _plain(model), model, end_state)


def run_all(example: Example) -> Example:
    example.ran = [run_case(example, case) for case in example.cases]
    return example


# ---- trajectory facts (docs/agents-and-tools.md) -------------------------------------------


def calls(traj: Json) -> list[tuple[str, str]]:
    """(tool, arguments as sorted JSON) of every `tool_call` step, in order."""
    return [(s["tool_name"], json.dumps(s["arguments"], sort_keys=True))
            for s in traj["steps"] if s["kind"] == "tool_call"]


def route_of(traj: Json) -> list[str]:
    """Agents that held control, repeats collapsed; a hand-off's `to_agent` holds control."""
    route: list[str] = []
    for step in traj["steps"]:
        for agent in (step["agent"], step["to_agent"] if step["kind"] == "handoff" else None):
            if agent and (not route or route[-1] != agent):
                route.append(agent)
    return route


def departs(recorded: list[str], expected: list[str]) -> bool:
    """Whether a truncated trace's recorded part already departs from (or outruns) `expected`."""
    return recorded != expected[: len(recorded)] or len(recorded) > len(expected)


# ---- per-case judgments, as docs/configuration.md#evaluators words them
# ----------------------------------------------


def contains(field_: str, expected_field: str) -> Judge:
    """`contains`, case-insensitive by default."""
    def judge(r: Ran) -> str:
        return PASS if str(r.case["expected"][expected_field]).lower() in \
            str(r.output[field_]).lower() else FAIL
    return judge


def exact_match(field_: str, expected_field: str) -> Judge:
    def judge(r: Ran) -> str:
        return PASS if r.output[field_] == r.case["expected"][expected_field] else FAIL
    return judge


def tool_called(tool: str, min_calls: int = 1) -> Judge:
    def judge(r: Ran) -> str:
        if sum(name == tool for name, _ in calls(r.trajectory)) >= min_calls:
            return PASS
        return MISSING if r.trajectory["truncated"] else FAIL
    return judge


def no_tool_loop(max_repeats: int) -> Judge:
    def judge(r: Ran) -> str:
        longest, run, previous = 0, 0, None
        for call in calls(r.trajectory):
            run = run + 1 if call == previous else 1
            previous, longest = call, max(longest, run)
        if longest > max_repeats:
            return FAIL
        return MISSING if r.trajectory["truncated"] else PASS
    return judge


def tool_sequence(r: Ran) -> str:
    """In order (the examples keep `ordered: true`); no `expected.tools` → excluded."""
    expected = r.case.get("expected", {}).get("tools")
    if expected is None:
        return EXCLUDED
    called = [name for name, _ in calls(r.trajectory)]
    if not r.trajectory["truncated"]:
        return PASS if called == expected else FAIL
    return FAIL if departs(called, expected) else MISSING


def constraints_satisfied(names: list[str] | None) -> Judge:
    def judge(r: Ran) -> str:
        recorded = [c for c in r.trajectory["constraints"] if names is None or c["name"] in names]
        if any(not c["passed"] for c in recorded):
            return FAIL
        if names is not None and {c["name"] for c in recorded} != set(names):
            return MISSING
        return PASS
    return judge


def max_steps(limit: int) -> Judge:
    def judge(r: Ran) -> str:
        count = len(r.trajectory["steps"])
        if r.trajectory["truncated"]:
            return FAIL if count >= limit else MISSING
        return PASS if count <= limit else FAIL
    return judge


def agent_route(r: Ran) -> str:
    route, expected = route_of(r.trajectory), r.case["expected"]["route"]
    if not r.trajectory["truncated"]:
        return PASS if route == expected else FAIL
    return FAIL if departs(route, expected) else MISSING


def tool_permissions(permissions: dict[str, list[str]]) -> Judge:
    def judge(r: Ran) -> str:
        if any(s["kind"] == "tool_call" and s["tool_name"] not in permissions.get(s["agent"], [])
               for s in r.trajectory["steps"]):
            return FAIL
        return MISSING if r.trajectory["truncated"] else PASS
    return judge


def max_handoffs(limit: int) -> Judge:
    def judge(r: Ran) -> str:
        if len(route_of(r.trajectory)) - 1 > limit:
            return FAIL
        return MISSING if r.trajectory["truncated"] else PASS
    return judge


# ---- states (docs/stateful-agents.md#checking-what-changed)
# --------------------------------------------------------------------


_ABSENT = object()


def leaves(tree: Json, prefix: tuple[str, ...] = ()) -> Iterable[tuple[tuple[str, ...], Any]]:
    """Every leaf path of a JSON object (a list or a scalar is a leaf)."""
    for key, value in tree.items():
        if isinstance(value, dict) and value:
            yield from leaves(value, (*prefix, key))
        else:
            yield (*prefix, key), value


def at_path(tree: Any, path: Iterable[str]) -> Any:
    for key in path:
        if not isinstance(tree, dict) or key not in tree:
            return _ABSENT
        tree = tree[key]
    return tree


def state_subset(r: Ran) -> str:
    """`state_matches` mode `subset`: every leaf path of expected.state holds its value."""
    if r.end_state is None:
        return MISSING
    return PASS if all(at_path(r.end_state, path) == value
                       for path, value in leaves(r.case["expected"]["state"])) else FAIL


def state_unchanged(paths: list[str]) -> Judge:
    def judge(r: Ran) -> str:
        if r.end_state is None:
            return MISSING
        before = r.case.get("initial_state") or {}
        return PASS if all(at_path(r.end_state, p.split(".")) == at_path(before, p.split("."))
                           for p in paths) else FAIL
    return judge


# ---- metamorphic copies (docs/stateful-agents.md#the-same-request-changed-metamorphic-pairs)
# ----------------------------------------------------------


def transformed(text: str, transform: Json) -> str:
    """The derived field: the template with `{value}` as the text, or the replacements in order."""
    if "template" in transform:
        return str(transform["template"]).replace("{value}", text)
    for old, new in transform["replace"]:
        text = text.replace(old, new)
    return text


def derived_case(case: Json, transform: Json) -> Json:
    """`<id>~<name>`: the source with one input field transformed, all else the same."""
    derived = copy.deepcopy(case)
    derived["id"] = f"{case['id']}~{transform['name']}"
    field_ = transform["field"]
    derived["input"][field_] = transformed(case["input"][field_], transform)
    return derived


# ---- fault replays (docs/stateful-agents.md#a-tool-that-fails-fault-replays)
# ---------------------------------------------------------------


@dataclass
class Replayed:
    """What one fault replay came to, and the sandbox after it."""

    verdict: str
    reason: str = ""
    joined: Json | None = None
    end_state: Json | None = None
    call_index: int | None = None


def nth_call(traj: Json, tool: str, occurrence: int) -> int | None:
    indices = [s["index"] for s in traj["steps"]
               if s["kind"] == "tool_call" and s["tool_name"] == tool]
    return indices[occurrence - 1] if len(indices) >= occurrence else None


def _replay(example: Example, ran: Ran, checkpoint: AgentCheckpoint, change: ReplayChange
            ) -> tuple[Json | None, Json | None]:
    """Reset, call the example's `replay`, snapshot; (steps after the checkpoint, end state).

    The continuation comes back numbered from 1 (docs/stateful-agents.md#a-sandbox-oloproof-resets)
    unless the replay built it with its step recorder, which numbers as the recording: then its
    steps up to the checkpoint must retrace the recording, and the rest is renumbered here. None:
    the replay is unusable.
    """
    at = checkpoint.step_index or 0
    recorder = CaseRecorder(ran.case["id"], ran.case.get("metadata"),
                            Replaying(ran.model, checkpoint, change))
    token = set_current(recorder)
    try:
        example.target.reset(copy.deepcopy(ran.case.get("initial_state") or {}))
        returned = example.target.replay(ran.model, checkpoint=checkpoint, change=change)
        end_state = json.loads(json.dumps(example.target.snapshot()))
    finally:
        recorder.close()
        reset_current(token)
    if returned is None:
        returned = recorder.artifacts.get(TRAJECTORY_KIND)
    if not isinstance(returned, AgentTrajectory):
        return None, end_state
    replayed = _plain(returned)
    if not recorder.built_by_steps(returned):
        return replayed, end_state
    head = [comparable(s) for s in replayed["steps"] if s["index"] <= at]
    if head != [comparable(s) for s in ran.trajectory["steps"] if s["index"] <= at]:
        return None, end_state
    replayed["steps"] = [dict(s, index=s["index"] - at)
                         for s in replayed["steps"] if s["index"] > at]
    replayed["constraints"] = [
        c if c["step_index"] is None else dict(c, step_index=c["step_index"] - at)
        for c in replayed["constraints"] if c["step_index"] is None or c["step_index"] > at]
    return replayed, end_state


def comparable(step: Json) -> tuple[Any, ...]:
    return step["kind"], step["tool_name"], step["arguments"], step["result"]


def fault_recovery(example: Example, ran: Ran, tool: str, fault: str,
                   escalate_tools: list[str], occurrence: int = 1) -> Replayed:
    """docs/stateful-agents.md#a-tool-that-fails-fault-replays steps 1–4 for one source case,
    calling the example's own `replay`."""
    traj = ran.trajectory
    call_index = nth_call(traj, tool, occurrence)
    if call_index is None:
        return Replayed(EXCLUDED, "fault_target_not_called")
    before = [c for c in ran.model.checkpoints if (c.step_index or 0) < call_index]
    if not before:
        return Replayed(MISSING, "no_checkpoint", call_index=call_index)
    checkpoint = max(before, key=lambda c: c.step_index or 0)
    at = checkpoint.step_index or 0

    control, _ = _replay(example, ran, checkpoint, ReplayChange(kind="none"))
    if control is None or [comparable(s) for s in control["steps"]] != [
            comparable(s) for s in traj["steps"] if s["index"] > at]:
        return Replayed(MISSING, "control_replay_diverged", call_index=call_index)

    change = ReplayChange(kind="inject_fault", step_index=call_index, tool_name=tool,
                          fault=fault, fault_result=FAULT_RESULTS[fault])
    after, end_state = _replay(example, ran, checkpoint, change)
    if after is None:
        return Replayed(MISSING, "replay_failed", call_index=call_index)
    joined = {
        "steps": [s for s in traj["steps"] if s["index"] <= at]
        + [dict(s, index=s["index"] + at) for s in after["steps"]],
        "constraints": [c for c in traj["constraints"]
                        if c["step_index"] is not None and c["step_index"] <= at]
        + [dict(c, step_index=None if c["step_index"] is None else c["step_index"] + at)
           for c in after["constraints"]],
        "terminal_status": after["terminal_status"],
        "truncated": after["truncated"],
    }
    escalated = any(s["kind"] == "tool_call" and s["tool_name"] in escalate_tools
                    and s["index"] > call_index for s in joined["steps"])
    broken = any(not c["passed"] for c in joined["constraints"])
    status = joined["terminal_status"]
    if broken or (status == "failure" and not escalated):
        verdict = FAIL
    elif escalated or status == "success":
        verdict = PASS
    else:
        verdict = MISSING
    return Replayed(verdict, joined=joined, end_state=end_state, call_index=call_index)


# ---- slices (docs/concepts.md#slices-are-exploratory-and-never-gate): a truncated trace joins a
# group only when its recorded part settles it


def first_tool(r: Ran) -> str | None:
    called = calls(r.trajectory)
    if called:
        return called[0][0]
    return None if r.trajectory["truncated"] else "none"


def repeated_action(r: Ran) -> str | None:
    if max(Counter(calls(r.trajectory)).values(), default=0) >= 2:
        return "true"
    return None if r.trajectory["truncated"] else "false"


def buckets(bounds: list[int], count: Callable[[Json], int], *, truncation_adds: bool
            ) -> Callable[[Ran], str | None]:
    """`le_a`, `le_b`, …, `gt_<last>` over a count; a truncated trace only once past the last.

    `truncation_adds`: the true count of a truncated trace is larger than the recorded one
    (steps: there was a next step), rather than at least as large (tool calls).
    """
    def group(r: Ran) -> str | None:
        value = count(r.trajectory)
        if r.trajectory["truncated"]:
            past = value >= bounds[-1] if truncation_adds else value > bounds[-1]
            return f"gt_{bounds[-1]}" if past else None
        return next((f"le_{b}" for b in bounds if value <= b), f"gt_{bounds[-1]}")
    return group


def step_count(traj: Json) -> int:
    return len(traj["steps"])


def call_count(traj: Json) -> int:
    return len(calls(traj))


def route_group(r: Ran) -> str | None:
    return None if r.trajectory["truncated"] else ">".join(route_of(r.trajectory))


def metadata(key: str) -> Callable[[Ran], str | None]:
    def group(r: Ran) -> str | None:
        value = (r.case.get("metadata") or {}).get(key)
        return None if value is None else str(value)
    return group


def slice_counts(rows: list[Ran], verdicts: list[str], slicer: Callable[[Ran], str | None]
                 ) -> dict[str, Rate]:
    """Each group's counts of one criterion."""
    groups: dict[str, list[str]] = {}
    for row, verdict in zip(rows, verdicts, strict=True):
        value = slicer(row)
        if value is not None:
            groups.setdefault(value, []).append(verdict)
    return {value: Rate.of(members) for value, members in groups.items()}


# ---- statistics (docs/concepts.md) and display ---------------------------------------------


def clopper_pearson(k: int, n: int, level: float) -> tuple[float, float]:
    alpha = 1 - level
    lower = 0.0 if k == 0 else float(beta.ppf(alpha / 2, k, n - k + 1))
    upper = 1.0 if k == n else float(beta.ppf(1 - alpha / 2, k + 1, n - k))
    return lower, upper


@dataclass(frozen=True)
class Rate:
    """A criterion's counts; its interval widened for the missing cases
    (docs/concepts.md#pass-rates-exact-intervals-with-missing-cases)."""

    passed: int
    observed: int
    missing: int
    excluded: int = 0

    @classmethod
    def of(cls, verdicts: Iterable[str]) -> Rate:
        tally = Counter(verdicts)
        return cls(tally[PASS], tally[PASS] + tally[FAIL], tally[MISSING], tally[EXCLUDED])

    @property
    def failed(self) -> int:
        return self.observed - self.passed

    def interval(self, level: float = 0.95) -> tuple[float, float]:
        total = self.observed + self.missing
        return (clopper_pearson(self.passed, total, level)[0],
                clopper_pearson(self.passed + self.missing, total, level)[1])

    def shown(self, level: float = 0.95) -> tuple[str, str]:
        """(estimate, interval) as the report prints them: bounds rounded outward."""
        lower, upper = self.interval(level)
        return (f"{100 * self.passed / self.observed:.1f}%",
                f"[{math.floor(lower * 1000) / 10:.1f}%, {math.ceil(upper * 1000) / 10:.1f}%]")


def quantile(values: list[int], missing: int, q: float, level: float = 0.95
             ) -> tuple[int, int | None, int | None]:
    """(estimate, lower, upper); None is `no bound`. Missing sit at −∞ (lower), +∞ (upper)."""
    alpha = 1 - level
    values = sorted(values)
    n_total = len(values) + missing
    estimate = next(v for v in values if sum(x <= v for x in values) >= q * len(values))

    def cdf(k: int) -> float:  # P(B <= k), B ~ Binomial(n_total, q)
        return sum(math.comb(n_total, i) * q**i * (1 - q) ** (n_total - i) for i in range(k + 1))

    low_ranks = [r for r in range(1, n_total + 1) if cdf(r - 1) <= alpha / 2]
    high_ranks = [r for r in range(1, n_total + 1) if 1 - cdf(r - 1) <= alpha / 2]
    below: list[int | None] = [None] * missing + list(values)  # rank r is below[r - 1]
    above: list[int | None] = [*values, *([None] * missing)]
    lower = below[max(low_ranks) - 1] if low_ranks else None
    upper = above[min(high_ranks) - 1] if high_ranks else None
    return estimate, lower, upper


# ---- rules and the gate (docs/configuration.md#states-reasons-and-exit-codes) --------------


def interval_rule(rule: Json, lower: float | None, upper: float | None, observed: int) -> str:
    """PASS / FAIL / INSUFFICIENT_EVIDENCE of a `min:` or `max:` rule; None is `no bound`."""
    if observed == 0:
        return "INSUFFICIENT_EVIDENCE"
    if "min" in rule:
        if lower is not None and lower >= rule["min"]:
            return "PASS"
        if upper is not None and upper < rule["min"]:
            return "FAIL"
    else:
        if upper is not None and upper <= rule["max"]:
            return "PASS"
        if lower is not None and lower > rule["max"]:
            return "FAIL"
    return "INSUFFICIENT_EVIDENCE"


def count_rule(rule: Json, rate: Rate) -> str:
    if rate.failed > rule["max_failures"]:
        return "FAIL"
    if rate.failed + rate.missing <= rule["max_failures"]:
        return "PASS"
    return "INSUFFICIENT_EVIDENCE"


def rate_rule(rule: Json, rate: Rate, level: float) -> str:
    if rule.get("kind") == "observed_count":
        return count_rule(rule, rate)
    return interval_rule(rule, *rate.interval(level), rate.observed)


def gate(policy: Json, states: Iterable[str]) -> tuple[str, int]:
    """(action, exit code) of docs/configuration.md#states-reasons-and-exit-codes."""
    states = list(states)
    block_on = policy.get("block_on", ["FAIL", "INSUFFICIENT_EVIDENCE", "MANUAL_REVIEW"])
    if any(s in block_on for s in states):
        if "FAIL" in states:
            return "BLOCK", 1
        return ("BLOCK", 4) if "MANUAL_REVIEW" in states else ("BLOCK", 3)
    if any(s in policy.get("warn_on", []) for s in states):
        return "WARN", 0
    return "ALLOW", 0


# ---- the suite's criteria, from its evaluator entries (default names:
# docs/configuration.md#evaluators) ---------------


def criteria(example: Example) -> dict[str, Judge]:
    """Criterion name → hand judgment, for every per-case evaluator of the suite.

    Fault recovery and metamorphic relations need more than one run of the system and are
    worked out by `fault_recovery` and by running both sides of a pair.
    """
    judges: dict[str, Judge] = {}
    for entry in example.config["evaluators"]:
        if entry["type"] not in ("fault_recovery", "metamorphic_relation"):
            default, judge = _judgment(entry)
            judges[entry.get("criterion", default)] = judge
    return judges


def _judgment(entry: Json) -> tuple[str, Judge]:
    """(default criterion name, hand judgment) of one evaluator entry."""
    field_ = entry.get("field")
    match entry["type"]:
        case "contains":
            return "contains", contains(field_, entry.get("expected_field", field_))
        case "exact_match":
            return "exact_match", exact_match(field_, entry.get("expected_field", field_))
        case "agent_tool_called":
            tool = entry["tool_name"]
            return f"agent_tool_{tool}_called", tool_called(tool, entry.get("min_calls", 1))
        case "agent_no_tool_loop":
            return "agent_no_tool_loop", no_tool_loop(entry.get("max_repeats", 2))
        case "agent_tool_sequence":
            assert entry.get("ordered", True) is True, "only ordered sequences are hand-judged"
            return "agent_tool_sequence", tool_sequence
        case "agent_constraints_satisfied":
            return "agent_constraints_satisfied", constraints_satisfied(entry.get("constraints"))
        case "agent_max_steps":
            return f"agent_steps_le_{entry['max_steps']}", max_steps(entry["max_steps"])
        case "agent_route":
            return "agent_route", agent_route
        case "agent_tool_permissions":
            return "agent_tool_permissions", tool_permissions(entry["permissions"])
        case "agent_max_handoffs":
            limit = entry["max_handoffs"]
            return f"agent_handoffs_le_{limit}", max_handoffs(limit)
        case "state_matches":
            assert entry.get("mode") == "subset" and "tolerance" not in entry, \
                "only state_matches mode subset is hand-judged"
            return "state_matches", state_subset
        case "state_unchanged":
            return "state_unchanged", state_unchanged(entry["paths"])
    raise AssertionError(f"no hand judgment for evaluator type {entry['type']!r}")
