"""The cache table of docs/concepts.md#caches-what-invalidates-what, checked against the store.

The table lists, for the execution, judgment and judge verdict caches, what their keys change
with and what they stay the same with, each thing named in backticks. For every name this test
changes that one thing in a small project (a sandboxed desk, a custom check importing a
project module, a judge), runs it, and compares the keys the store holds for that run with the
keys of the unchanged run: different where the table says "changes", equal where it says
"stays". A name the table gives and this test cannot change fails the test, so the table cannot
claim what is not checked. (The fault replay row is described, not checked here: replays are
keyed by `RunKeys.replay`, tested with the stateful examples.)

Beside the table, the two behaviours the keys exist for, end to end: an edited custom check
(or a module it imports) judges again without calling the system, and switching between
`records:` and `trace: otel` runs the executions again.
"""

from __future__ import annotations

import json
import re
import secrets
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

import oloproof
from oloproof.store.store import Store

DOCS = Path(__file__).resolve().parents[2] / "docs" / "concepts.md"
CHECKED_ROWS = {"execution", "judgment", "judge verdict"}

DESK = '''
import json
from pathlib import Path

from opentelemetry import trace

from oloproof import AgentStep, AgentTrajectory, current_case

tracer = trace.get_tracer("desk")
CALLS = Path(__file__).with_name("calls.txt")


class Desk:
    """A sandboxed desk: looks the order up in its state and says where it is."""

    def __init__(self):
        self.orders = {}

    def reset(self, state):
        self.orders = dict(state.get("orders", {}))

    def snapshot(self):
        return {"orders": self.orders}

    def __call__(self, request):
        with CALLS.open("a") as calls:
            calls.write(request["order"] + "\\n")
        order = request["order"]
        status = self.orders.get(order, "unknown")
        case_span = trace.get_current_span()
        if getattr(case_span, "name", None) == "oloproof case":  # system.trace: otel
            with tracer.start_as_current_span("execute_tool lookup_order") as span:
                span.set_attribute("gen_ai.operation.name", "execute_tool")
                span.set_attribute("gen_ai.tool.name", "lookup_order")
                span.set_attribute("gen_ai.tool.call.id", "c1")
                span.set_attribute("gen_ai.tool.call.arguments", json.dumps({"order": order}))
                span.set_attribute("gen_ai.tool.call.result", json.dumps({"status": status}))
        else:
            current_case().agent_trajectory(AgentTrajectory(steps=(
                AgentStep(index=1, kind="tool_call", tool_name="lookup_order",
                          arguments={"order": order}),
                AgentStep(index=2, kind="tool_result", tool_name="lookup_order",
                          result={"status": status}),
            )))
        return {"answer": f"Order {order} is {status}." + request.get("tail", "")}


desk = Desk()
'''

CHECKS = '''
import oloproof

from {helpers} import longest


@oloproof.evaluator(name="short_reply_{tag}")
def short_reply(case, output, artifacts):
    return len(output["answer"]) <= longest()
'''

HELPERS = '''
def longest():
    return 60
'''

HOUSE = '''
from oloproof import JudgeVerdict


def grade(request):
    return JudgeVerdict(verdict="pass", reason="fine")


def grade_strictly(request):
    return JudgeVerdict(verdict="fail", reason="strict")
'''


class Desk:
    """The project on disk: each module named with a suffix of its own, so projects of other
    tests in this process never share one."""

    def __init__(self, root: Path) -> None:
        self.root = root
        tag = secrets.token_hex(3)
        self.app, self.checks, self.helpers, self.house = (
            f"{name}_{tag}" for name in ("desk", "checks", "helpers", "house"))
        root.mkdir(parents=True)
        self.write_module(self.app, DESK)
        self.write_module(self.checks, CHECKS.format(helpers=self.helpers, tag=tag))
        self.write_module(self.helpers, HELPERS)
        self.write_module(self.house, HOUSE)
        self.cases = [
            {"id": f"c{i}", "input": {"order": f"o{i}"},
             "initial_state": {"orders": {f"o{i}": "delivered" if i % 2 else "lost"}},
             "expected": {"tools": ["lookup_order"]}, "metadata": {"tier": "gold"}}
            for i in range(1, 4)]
        self.suite: dict[str, Any] = {
            "version": 1, "project": "keys", "dataset": "cases.jsonl",
            "system": {"name": "desk", "version": "v1", "callable": f"{self.app}:desk",
                       "records": ["agent_trajectory/v1"], "concurrency": 1},
            "judges": [{"name": "house", "callable": f"{self.house}:grade"}],
            "evaluators": [
                {"type": "custom", "name": f"short_reply_{tag}", "criterion": "short_reply",
                 "callable": f"{self.checks}:short_reply"},
                {"type": "agent_tool_sequence"},
                {"type": "judge", "criterion": "reply_ok", "judge": "house",
                 "rubric": "The reply says where the order is.", "shows": ["output.answer"]},
            ],
        }
        self.write()

    def write_module(self, name: str, text: str) -> None:
        (self.root / f"{name}.py").write_text(text, encoding="utf-8")

    def write(self) -> None:
        (self.root / "oloproof.yaml").write_text(yaml.safe_dump(self.suite, sort_keys=False),
                                                 encoding="utf-8")
        (self.root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
        (self.root / "cases.jsonl").write_text(
            "".join(json.dumps(c) + "\n" for c in self.cases), encoding="utf-8")

    @property
    def config(self) -> Path:
        return self.root / "oloproof.yaml"

    def system_calls(self) -> int:
        calls = self.root / "calls.txt"
        return len(calls.read_text().split()) if calls.exists() else 0


def stored_keys(desk: Desk, run_id: str) -> dict[str, set[str]]:
    """The keys of one run, as the store holds them: its executions' keys, its judgments' keys
    (each case's key followed by each evaluator's key) and the judge verdicts' keys."""
    with Store(desk.root / ".oloproof" / "store.sqlite", read_only=True) as db:
        suite = db.run_record(run_id)["suite"]
        evaluator_keys = suite["evaluator_keys"]
        rows = db.conn.execute("SELECT exec_key, outcome FROM run_cases WHERE run_id = ?",
                               (run_id,)).fetchall()
        case_keys = [json.loads(outcome)["k"] for _, outcome in rows]
        judge_key = evaluator_keys[suite["criteria"].index("reply_ok")]
        verdicts = set()
        for case_key in case_keys:
            (body,) = db.conn.execute("SELECT body FROM judgments WHERE key = ?",
                                      (case_key,)).fetchone()
            details = json.loads(body)[judge_key][2]
            assert "verdict_key" in details, (run_id, details)
            verdicts.add(details["verdict_key"])
    return {"execution": {exec_key for exec_key, _ in rows},
            "judgment": {k + e for k in case_keys for e in evaluator_keys},
            "judge verdict": verdicts}


# ---- one change per name the table gives -----------------------------------------------------

Change = Callable[[Desk], dict[str, Any]]  # changes the project; returns oloproof.run's options


def _system(**fields: Any) -> Change:
    def change(desk: Desk) -> dict[str, Any]:
        desk.suite["system"].update(fields)
        desk.write()
        return {}
    return change


def _case(part: str, value: Any) -> Change:
    def change(desk: Desk) -> dict[str, Any]:
        desk.cases[0][part] = value
        desk.write()
        return {}
    return change


def _judge(**fields: Any) -> Change:
    def change(desk: Desk) -> dict[str, Any]:
        desk.suite["judges"][0].update(fields)
        desk.write()
        return {}
    return change


def _criterion(at: int, **fields: Any) -> Change:
    def change(desk: Desk) -> dict[str, Any]:
        desk.suite["evaluators"][at].update(fields)
        desk.write()
        return {}
    return change


def _options(**options: Any) -> Change:
    return lambda desk: options


def _edit_check(desk: Desk) -> dict[str, Any]:
    path = desk.root / f"{desk.checks}.py"
    path.write_text(path.read_text() + "\n# reviewed\n", encoding="utf-8")
    return {}


def _edit_import(desk: Desk) -> dict[str, Any]:
    desk.write_module(desk.helpers, HELPERS.replace("60", "20"))
    return {}


def _add_evaluator(desk: Desk) -> dict[str, Any]:
    desk.suite["evaluators"].insert(2, {"type": "agent_tool_called", "tool_name": "lookup_order"})
    desk.write()
    return {}


def _shown_text(desk: Desk) -> dict[str, Any]:
    desk.cases[0]["input"]["tail"] = " Thanks for waiting."
    desk.write()
    return {}


CHANGES: dict[str, Change] = {
    "system.name": _system(name="desk-two"),
    "system.version": _system(version="v2"),
    "system.records": _system(records=["agent_trajectory/v1", "usage/v1"]),
    "system.trace": _system(trace="otel", records=[]),
    "input": _case("input", {"order": "o1", "channel": "email"}),
    "initial_state": _case("initial_state", {"orders": {"o1": "returned"}}),
    "expected": _case("expected", {"tools": ["lookup_order", "issue_refund"]}),
    "metadata": _case("metadata", {"tier": "silver"}),
    "evaluators": _add_evaluator,
    "judges": _judge(temperature=0.5),
    "--no-cache": _options(no_cache=True),
    "check module": _edit_check,
    "check import": _edit_import,
    "check version": _criterion(0, version="2"),
    "minimum_agreement": _criterion(2, minimum_agreement=0.9),
    "judge callable": lambda desk: _judge(callable=f"{desk.house}:grade_strictly")(desk),
    "judge temperature": _judge(temperature=0.5),
    "judge version": _judge(version="2"),
    "rubric": _criterion(2, rubric="The reply names the order and its status."),
    "shows": _criterion(2, shows=["input.order", "output.answer"]),
    "samples": _criterion(2, samples=3),
    "shown text": _shown_text,
    "trials": _options(trials=2),
}


def table_rows() -> dict[str, tuple[list[str], list[str]]]:
    """cache → (the names its key changes with, the names it stays the same with)."""
    text = DOCS.read_text(encoding="utf-8")
    section = text.split("## Caches: what invalidates what", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, tuple[list[str], list[str]]] = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 3 or cells[0] in ("cache", "---"):
            continue
        cache = re.sub(r"\s*\(.*\)$", "", cells[0])
        rows[cache] = (re.findall(r"`([^`]+)`", cells[1]), re.findall(r"`([^`]+)`", cells[2]))
    return rows


def test_the_table_lists_the_caches_and_names_only_what_this_test_changes() -> None:
    rows = table_rows()
    assert set(rows) == CHECKED_ROWS | {"fault replay"}
    named = {name for cache in CHECKED_ROWS for side in rows[cache] for name in side}
    assert named <= set(CHANGES), f"the table names what no change here makes: " \
        f"{named - set(CHANGES)}"
    assert set(CHANGES) <= named, f"changes the table does not name: {set(CHANGES) - named}"


def _checks() -> list[tuple[str, str, bool]]:
    """(name, cache, whether its key changes) for every name of every checked row."""
    return [(name, cache, changes) for cache in sorted(CHECKED_ROWS)
            for changes, names in zip((True, False), table_rows()[cache], strict=True)
            for name in names]


def test_the_store_keys_as_the_table_says(tmp_path: Path) -> None:
    """One run per name (the project put back between them), its keys against the first's."""
    desk = Desk(tmp_path / "desk")
    pristine = tmp_path / "pristine"
    shutil.copytree(desk.root, pristine)
    base = stored_keys(desk, oloproof.run(desk.config).run_id)
    wrong = []
    checks = _checks()
    by_name: dict[str, list[tuple[str, bool]]] = {}
    for name, cache, changes in checks:
        by_name.setdefault(name, []).append((cache, changes))
    for name, expectations in by_name.items():
        for item in pristine.iterdir():  # the unchanged project (the store kept)
            shutil.copy2(item, desk.root / item.name)
        desk.suite = yaml.safe_load((pristine / "oloproof.yaml").read_text())
        desk.cases = [json.loads(line) for line in (pristine / "cases.jsonl").read_text()
                      .splitlines()]
        options = CHANGES[name](desk)
        keys = stored_keys(desk, oloproof.run(desk.config, **options).run_id)
        for cache, changes in expectations:
            if name == "trials":  # trial 2 adds keys of its own; trial 1's are the same
                changed = not base[cache] <= keys[cache]
            else:
                changed = keys[cache] != base[cache]
            if changed != changes:
                wrong.append(f"{name}: the {cache} key {'stayed' if changes else 'changed'}")
    assert wrong == [], wrong
    assert len(checks) >= 25


# ---- the behaviours behind the keys ----------------------------------------------------------


def test_an_edited_check_judges_again_without_calling_the_system(tmp_path: Path) -> None:
    desk = Desk(tmp_path / "desk")
    first = oloproof.run(desk.config)
    assert desk.system_calls() == 3
    assert first.metric("short_reply").passed == 3
    # A project module the check imports: the limit drops below every reply's length.
    desk.write_module(desk.helpers, HELPERS.replace("60", "10"))
    second = oloproof.run(desk.config)
    assert second.to_json()["cache"]["execution"] == {"hit": 3, "miss": 0}
    assert desk.system_calls() == 3  # the system was not called
    assert second.metric("short_reply").passed == 0
    # The check's own module, now broken: every case is missing for it, with the error.
    path = desk.root / f"{desk.checks}.py"
    path.write_text(path.read_text().replace('output["answer"]', 'output["reply"]'),
                    encoding="utf-8")
    third = oloproof.run(desk.config)
    row = third.metric("short_reply")
    assert (row.passed, row.missing) == (0, 3)
    assert desk.system_calls() == 3
    # Unchanged since: every judgment is served from the cache.
    fourth = oloproof.run(desk.config)
    assert fourth.to_json()["cache"]["judgment"]["miss"] == 0
    # A version on the check re-judges too (what its source does not show): that criterion's
    # judgment of each case, and no other.
    desk.suite["evaluators"][0]["version"] = "2"
    desk.write()
    fifth = oloproof.run(desk.config).to_json()["cache"]
    assert fifth["judgment"]["miss"] == 3
    assert fifth["judge"]["miss"] == 0  # (the judge criterion's judgments still cached)
    assert desk.system_calls() == 3


def test_switching_records_and_trace_otel_runs_the_executions_again(tmp_path: Path) -> None:
    pytest.importorskip("opentelemetry.sdk")
    desk = Desk(tmp_path / "desk")
    recorded = oloproof.run(desk.config)
    desk.suite["system"].update(trace="otel", records=[])
    desk.write()
    traced = oloproof.run(desk.config)
    assert traced.to_json()["cache"]["execution"] == {"hit": 0, "miss": 3}
    assert desk.system_calls() == 6
    assert traced.metric("agent_tool_sequence").passed == \
        recorded.metric("agent_tool_sequence").passed == 3
    desk.suite["system"].update(trace=None, records=["agent_trajectory/v1"])
    desk.write()
    again = oloproof.run(desk.config)  # back to recording: the recorded executions serve
    assert again.to_json()["cache"]["execution"] == {"hit": 3, "miss": 0}
    assert desk.system_calls() == 6


def test_a_new_span_reader_runs_traced_executions_again(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("opentelemetry.sdk")
    desk = Desk(tmp_path / "desk")
    desk.suite["system"].update(trace="otel", records=[])
    desk.write()
    oloproof.run(desk.config)
    assert oloproof.run(desk.config).to_json()["cache"]["execution"] == {"hit": 3, "miss": 0}
    monkeypatch.setattr("oloproof.execution.keys.OTEL_READER", "otel/next")
    assert oloproof.run(desk.config).to_json()["cache"]["execution"] == {"hit": 0, "miss": 3}
