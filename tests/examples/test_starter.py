"""The starter project `oloproof init` makes (what `make demo` runs).

It passes its own gate, its second run comes wholly from the cache as the README says, and its
`refund_within_policy` constraint is a check of the world — the payments made against the order
records — so it fails when the world disagrees with what the desk was told, although the desk's
own decisions stay consistent.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from _run_example import copy_example, run_cli

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_starter_allows_and_a_second_run_prints_the_readmes_cache_line(
    tmp_path: Path,
) -> None:
    project = copy_example("starter", tmp_path / "demo")

    first = run_cli(project, "run")
    second = run_cli(project, "run")

    assert first.returncode == 0 and "Gate: ALLOW (exit 0)" in first.stdout, first.stdout
    assert second.returncode == 0 and "Gate: ALLOW (exit 0)" in second.stdout
    promised = re.search(r"^Cache: .*$", README.read_text(encoding="utf-8"), re.MULTILINE)
    assert promised is not None
    assert promised.group(0) in second.stdout.splitlines()


# A stale reading: the tool reports ord-003 (45 days on the records) as delivered 10 days ago.
STALE_LOOKUP = '''

_records_lookup = lookup_order


def lookup_order(order_id):
    found = _records_lookup(order_id)
    return {**found, "days_since_delivery": 10} if order_id == "ord-003" else found
'''


def test_the_constraint_fails_when_the_world_disagrees_with_the_desk(tmp_path: Path) -> None:
    project = copy_example("starter", tmp_path / "stale")
    app = project / "app.py"
    app.write_text(app.read_text(encoding="utf-8") + STALE_LOOKUP, encoding="utf-8")

    done = run_cli(project, "run", "--json")
    document = json.loads(done.stdout)

    assert done.returncode == 1, done.stdout  # BLOCK on a FAIL
    rule = next(d for d in document["decisions"] if d["rule"] == "within-policy")
    assert (rule["state"], rule["failures"]) == ("FAIL", 2)
    constraint = next(m for m in document["metrics"]
                      if m["id"] == "agent_constraints_satisfied")
    assert (constraint["passed"], constraint["observed"]) == (31, 33)
    # The desk refunded the two ord-003 requests, as the stale reading told it to; its
    # answers are wrong, but only the world's check says that a refund broke the policy.
    failing = {c["case"]: c["failed"] for c in document["failing_cases"]["first"]}
    assert failing == {"req-005": ["answer_correct", "agent_tool_sequence",
                                   "agent_constraints_satisfied"],
                       "req-006": ["answer_correct", "agent_tool_sequence",
                                   "agent_constraints_satisfied"]}


def test_the_starter_gates_with_three_trials_as_with_one(tmp_path: Path) -> None:
    # Every trial passes, so trials add evidence and cost none: each rule decides as with one
    # trial, on the same bounds (before, the betting interval over 33 cases widened the
    # rates to [80.8%, …] and the quantile over trials needed allow_approximate_methods: BLOCK).
    project = copy_example("starter", tmp_path / "trials")

    one = json.loads(run_cli(project, "run", "--json").stdout)
    done = run_cli(project, "run", "--trials", "3", "--json")
    three = json.loads(done.stdout)

    assert done.returncode == 0, done.stdout
    assert three["gate"] == one["gate"] == {"action": "ALLOW", "exit_code": 0}
    assert three["trials"] == 3
    decided = {d["rule"]: (d["state"], d.get("bound")) for d in one["decisions"]}
    assert {d["rule"]: (d["state"], d.get("bound")) for d in three["decisions"]} == decided
    for row in three["metrics"]:
        assert not row.get("approximate"), row["id"]
