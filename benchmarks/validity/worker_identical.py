"""Whether this checkout's worker gives exactly what another revision's does: every judgment and
every kept execution, line for line (issue 10 §5).

Not a timing: a check to run beside `worker_case` when the worker's per-case path changes.
A child process under each revision (`--against REF`, default main; see
`benchmarks/_versions.py`) writes one line per
judgment and per kept execution, as canonical JSON:

- random cases (`--random`, seeded) judged by every evaluator type that needs no file, no
  replay and no pair (the agent, multi-agent, output and state families, tool_sequence in
  every mode and argument rule), through `judge_case`, with errored cases, cases without a
  trajectory or without `expected.tools`, truncated traces, named agents and hand-offs;
- the desk of `benchmarks/_desk.py` (`--desk` cases) run through `Worker.run_unit`: each case's
  judgments (code, reason, details) and its execution (output, artifact references, every
  stored text with its hash, kind and base, the facts; the latency is left out).

The lines of each revision are compared: `differing_lines` (the target: 0) counts the lines
that differ (and those one side has and the other not); the first difference is printed and
kept in the saved JSON's details.

Arguments: [--against main] [--random 4000] [--desk 3000]
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
from pathlib import Path

from benchmarks._desk import make_desk
from benchmarks._versions import revision, versions

TARGETS = {"differing_lines": ("==", 0)}

CHILD = r'''
import json, random, sys
from pathlib import Path
from oloproof.digest import canonical_json
from oloproof.evaluators.base import judge_case
from oloproof.evaluators.evidence import Evidence
from oloproof.evaluators.registry import REGISTRY
from oloproof.execution.units import CaseJob, UnitJob
from oloproof.execution.worker import Worker
from oloproof.project import load_suite
from oloproof.recording.trajectory import (
    AgentConstraintCheck, AgentStep, AgentTrajectory, TRAJECTORY_KIND)
from oloproof.suite.case import Case

suite_path, random_cases, out_path = sys.argv[1], int(sys.argv[2]), sys.argv[3]
out = open(out_path, "w")

def line(*parts):
    out.write(canonical_json(list(parts)) + "\n")

TOOLS = ["lookup", "refund", "search", "escalate"]
AGENTS = ["triage", "billing", "person"]
CONFIGS = [{"type": "agent_tool_sequence", "mode": m, "arguments": a}
           for m in ("exact", "unordered", "subset", "superset")
           for a in ("ignore", "exact", "subset")]
CONFIGS += [
    {"type": "agent_tool_sequence"}, {"type": "agent_tool_sequence", "ordered": False},
    {"type": "agent_tool_called", "tool_name": "lookup"},
    {"type": "agent_tool_called", "tool_name": "refund", "min_calls": 2},
    {"type": "agent_no_tool_loop"}, {"type": "agent_no_tool_loop", "max_repeats": 1},
    {"type": "agent_no_undeclared_tool"},
    {"type": "agent_constraints_satisfied"},
    {"type": "agent_constraints_satisfied", "constraints": ["a", "b"]},
    {"type": "agent_max_steps", "max_steps": 4}, {"type": "agent_max_steps", "max_steps": 10},
    {"type": "agent_max_handoffs", "max_handoffs": 1}, {"type": "agent_route"},
    {"type": "agent_tool_permissions",
     "permissions": {"triage": ["lookup", "search"], "billing": ["refund"]}},
    {"type": "contains", "field": "answer"},
    {"type": "contains", "field": "answer", "case_sensitive": True},
    {"type": "exact_match", "field": "answer"},
    {"type": "exact_match", "field": "answer", "case_sensitive": False},
    {"type": "regex", "field": "answer", "pattern": "^re"},
    {"type": "json_schema", "schema": {"type": "object", "required": ["answer"]}},
    {"type": "state_matches"}, {"type": "state_matches", "mode": "subset"},
    {"type": "state_unchanged", "paths": ["orders"]},
]
evaluators = []
for i, config in enumerate(CONFIGS):
    cls = REGISTRY.evaluator_type(config["type"])
    evaluators.append(cls(cls.Config.model_validate({**config, "criterion": f"c{i}"}), None))
line("evaluators", len(evaluators), sorted({c["type"] for c in CONFIGS}))

rng = random.Random(20261204)

def arguments():
    roll = rng.random()
    if roll < 0.15:
        return None
    return {k: rng.choice([1, 2, "x", [1, 2], {"n": rng.randint(0, 2)}])
            for k in rng.sample(["id", "amount", "note"], rng.randint(0, 2))}

def trajectory():
    named = rng.random() < 0.3
    steps = []
    for index in range(1, rng.randint(0, 9) + 1):
        kind = rng.choice(["message", "tool_call", "tool_call", "tool_result", "handoff",
                           "final"])
        if kind == "handoff" and not named:
            kind = "decision"
        tool = rng.choice(TOOLS) if kind in ("tool_call", "tool_result") else None
        if kind == "tool_call" and steps and rng.random() < 0.3 and steps[-1].kind == "tool_call":
            tool = steps[-1].tool_name  # a repeat, with the same or other arguments
        steps.append(AgentStep(
            index=index, kind=kind, tool_name=tool,
            agent=rng.choice(AGENTS[:2]) if named else None,
            to_agent=rng.choice(AGENTS) if kind == "handoff" else None,
            arguments=arguments() if kind == "tool_call" else None,
            result={"ok": rng.random() < 0.5} if kind == "tool_result" else None))
    constraints = tuple(AgentConstraintCheck(name=rng.choice("abc"), passed=rng.random() < 0.8,
                                             step_index=rng.randint(1, 5))
                        for _ in range(rng.randint(0, 3)))
    return AgentTrajectory(steps=tuple(steps), truncated=rng.random() < 0.15,
                           terminal_status=rng.choice(["success", "failure", "unknown"]),
                           constraints=constraints)

def expected_tools():
    entries = []
    for _ in range(rng.randint(0, 4)):
        name = rng.choice(TOOLS)
        entries.append(name if rng.random() < 0.6 else {"name": name, "arguments": arguments()})
    return entries

for n in range(random_cases):
    expected = {}
    if rng.random() < 0.85:
        expected["tools"] = expected_tools()
    if rng.random() < 0.7:
        expected["answer"] = rng.choice(["refunded", "Refunded", "declined", 3])
    if rng.random() < 0.4:
        expected["route"] = rng.sample(AGENTS, rng.randint(1, 3))
    initial = {"orders": {"a": rng.randint(0, 2)}, "n": 1} if rng.random() < 0.5 else None
    if initial is not None and rng.random() < 0.6:
        expected["state"] = {"orders": {"a": rng.randint(0, 2)}, "n": 1}
    case = Case(f"r{n}", n + 1, {"q": n}, expected, initial, None, {"k": n % 3}, None,
                f"d{n}", f"e{n}")
    artifacts = {}
    if rng.random() < 0.9:
        artifacts[TRAJECTORY_KIND] = trajectory()
    if initial is not None:
        artifacts["environment_state/v1"] = {"orders": {"a": rng.randint(0, 2)},
                                             "n": rng.choice([1, 2])}
    output = {"answer": rng.choice(["refunded", "REFUNDED now", "declined", 3, None])}
    if rng.random() < 0.1:
        output = {}
    errored = "exception: boom" if rng.random() < 0.05 else None
    evidence = Evidence(case, None if errored else output, {} if errored else artifacts,
                        errored=errored, initial_state=initial)
    for evaluator in evaluators:
        judgment = judge_case(evaluator, evidence)
        line("random", n, evaluator.criterion, judgment.code, judgment.reason, judgment.details)

suite = load_suite(Path(suite_path))
judge = tuple(range(len(suite.evaluators)))
worker = Worker(suite.target, suite.evaluators, None)
for i, unit in enumerate(suite.iter_units()):
    result = worker.run_unit(UnitJob(i, [CaseJob(unit[0], judge)], []))
    assert result.failure is None, result.failure
    for case in result.cases:
        for j in case.judgments:
            line("desk", i, j.code, j.reason, j.details)
        e = case.execution
        # (the output as stored text since the store keeps it so; `output` before)
        output = e.output_text if hasattr(e, "output_text") else e.output
        line("desk-execution", i, output, e.artifacts, e.facts,
             [[t.hash, t.kind, t.base, t.text] for t in e.texts],
             None if e.error is None else [e.error.kind, e.error.message],
             None if e.snapshot_error is None else e.snapshot_error.message)
out.close()
'''


def run(argv: list[str]) -> dict:
    parser = argparse.ArgumentParser(prog="python -m benchmarks worker_identical")
    parser.add_argument("--against", default="main")
    parser.add_argument("--random", type=int, default=4000)
    parser.add_argument("--desk", type=int, default=3000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="oloproof-identical-") as tmp:
        root = make_desk(Path(tmp) / "desk", args.desk)
        found: dict[str, list[str]] = {}
        for label, env in versions([args.against]):
            out = Path(tmp) / f"{label}.jsonl"
            subprocess.run([sys.executable, "-c", CHILD, str(root / "oloproof.yaml"),
                            str(args.random), str(out)], env=env, check=True)
            found[label] = out.read_text().splitlines()
    (this, mine), (ref, theirs) = found.items()
    print(f"{this} ({revision()}): {len(mine)} lines; {ref} ({revision(args.against)}): "
          f"{len(theirs)} lines")
    differing = sum(a != b for a, b in zip(mine, theirs, strict=False))
    differing += abs(len(mine) - len(theirs))
    first = next(([a, b] for a, b in zip(mine, theirs, strict=False) if a != b), None)
    if first is not None:
        print(f"first difference:\n  {this}: {first[0]}\n  {ref}: {first[1]}")
    elif len(mine) != len(theirs):
        print("the numbers of lines differ")
    else:
        print("identical: every judgment (code, reason, details) and every kept execution")
    return {"figures": {"lines": len(mine), "differing_lines": differing},
            "params": {"against": args.against, "against_revision": revision(args.against),
                       "random": args.random, "desk": args.desk},
            "details": {"first_difference": first}}
