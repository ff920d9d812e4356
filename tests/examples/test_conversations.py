"""The conversations example (docs/conversations.md): 20 simulated customers served offline by
a `callable:` simulator; the desk fails every customer whose order the carrier still shows
in transit, and the one customer whose simulator repeats its instructions is reported as the
simulator's failure, missing for the desk's criteria, not failed."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from typing import Any

from _run_example import EXAMPLES, example_fixtures, run_cli

from oloproof.stats import rate_interval

project, terminal, document, every_slice = example_fixtures("conversations", exit_code=3)

HERE = EXAMPLES / "conversations"
README = (HERE / "README.md").read_text(encoding="utf-8")


def _module(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(f"conversations_{name}", HERE / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _cases() -> list[dict[str, Any]]:
    return [json.loads(line) for line in (HERE / "data" / "cases.jsonl").read_text(
        encoding="utf-8").splitlines()]


def test_the_readme_prints_what_the_run_prints(terminal: str) -> None:
    printed = next(b for b in re.findall(r"```\n(.*?)```", README, flags=re.S)
                   if b.startswith("Decisions"))
    assert printed in terminal, "the README pastes the real output"


def test_the_figures_follow_from_the_shop_and_the_broken_customer(
        document: dict[str, Any]) -> None:
    orders = _module("app").ORDERS
    broken = _module("users").BREAKS_DOWN
    cases = _cases()
    in_transit = {c["id"] for c in cases
                  if orders[c["user"]["facts"]["order_id"]]["carrier"] == "in transit"}
    assert broken not in in_transit and len(in_transit) == 5
    observed = len(cases) - 1
    passed = observed - len(in_transit)
    metric = next(m for m in document["metrics"] if m["id"] == "refunded")
    assert (metric["passed"], metric["observed"], metric["missing"]) == (passed, observed, 1)
    assert metric["missing_by_reason"] == {"simulator:leaked_instructions": 1}
    interval = rate_interval(passed, observed, 1, 0.95)
    assert (metric["lower"], metric["upper"]) == (interval.lower, interval.upper)
    assert {c["case"] for c in document["failing_cases"]["first"]} == in_transit
    conversations = document["conversations"]
    assert (conversations["conversations"], conversations["simulated"]) == (20, 20)
    assert conversations["failed_cases"] == {"leaked_instructions": [broken]}
    decisions = {d["rule"]: d for d in document["decisions"]}
    assert decisions["simulator-budget"]["state"] == "PASS"
    assert (decisions["simulator-budget"]["simulator_failures"],
            decisions["simulator-budget"]["conversations"]) == (1, 20)


def test_the_broken_customer_reads_as_the_simulators_failure(project: Path,
                                                             terminal: str) -> None:
    said = " ".join(terminal.split())
    assert "What broke: the simulator failed a check in 1 of 20 simulated conversation(s)" \
        in said
    assert "leaked_instructions × 1 cases: c14" in said
    assert "What real users would do: a simulated user is a model (or a function)" in said
    shown = run_cli(project, "inspect", "latest", "--case", "c14")
    assert shown.returncode == 0, shown.stderr
    panel = " ".join(shown.stdout.split())
    assert "Conversation: simulated by customer" in panel
    assert "user You are playing the part of a user" in panel
    assert "every criterion of the agent is missing (simulator:leaked_instructions)" in panel


def test_each_trial_meets_another_customer(project: Path, terminal: str) -> None:
    done = run_cli(project, "run", "--trials", "3", "--json")
    assert done.returncode == 3, done.stderr
    met = []
    for trial in (1, 2, 3):
        shown = run_cli(project, "inspect", "latest", "--case", "c01", "--trial", str(trial),
                        "--json")
        assert shown.returncode == 0, shown.stderr
        met.append(json.loads(shown.stdout)["conversation"])
    assert len({m["seed"] for m in met}) == 3
    assert len({m["turns"][0]["text"] for m in met}) > 1
    # c14 breaks down in each of its three trials: one case, three conversations
    shown = run_cli(project, "inspect", "latest")
    said = " ".join(shown.stdout.split())
    assert "failed a check in 3 of 60 simulated conversation(s)" in said
    assert "leaked_instructions × 3 cases: c14 · 3 conversations over their trials" in said
