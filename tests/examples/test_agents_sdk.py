"""The agents_sdk example: a two-agent OpenAI Agents SDK desk on a scripted `Model`, offline,
read under `system.trace: otel` from the spans OpenInference's instrumentor makes. Its figures
come out of the real engine (one trial, then `--trials 3`), they are the ones its README
prints, and the trajectories read from the spans are the ones `read_openai_agents` reads from
the same runs' items."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

pytest.importorskip("opentelemetry.sdk")
pytest.importorskip("openinference.instrumentation.openai_agents")

import fork_server
from _run_example import EXAMPLES, example_fixtures, run_cli

from oloproof.stats import percent_lower, percent_upper

# Looked up, not imported: the SDK costs 2.7 s of CPU to import, in every worker that collects
# this module; its runs import it in processes of their own (docs/architecture.md#tests).
if importlib.util.find_spec("agents") is None:
    pytest.skip("the openai-agents package is not installed", allow_module_level=True)

# (each run of the example imports the SDK and the instrumentor: 2 s of CPU a command)
project, terminal, document, every_slice = example_fixtures(
    "agents_sdk", exit_code=1,
    preload=("agents", "openinference.instrumentation.openai_agents"))

HERE = EXAMPLES / "agents_sdk"
README = (HERE / "README.md").read_text(encoding="utf-8")


def _blocks(text: str) -> list[str]:
    return re.findall(r"```\n(.*?)```", text, flags=re.S)


def _lines(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.splitlines())


@pytest.fixture(scope="module")
def three_trials(project: Path, document: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`oloproof run --trials 3` after the one-trial runs: its terminal report and document."""
    done = run_cli(project, "run", "--trials", "3")
    assert done.returncode == 1, done.stderr
    stored = run_cli(project, "inspect", "latest", "--json")  # the stored run's document
    assert stored.returncode == 0, stored.stderr
    return done.stdout, json.loads(stored.stdout)


def test_the_suite_records_nothing_and_instruments_once_at_import() -> None:
    suite = yaml.safe_load((HERE / "oloproof.yaml").read_text(encoding="utf-8"))
    assert suite["system"]["trace"] == "otel" and "records" not in suite["system"]
    source = (HERE / "app.py").read_text(encoding="utf-8")
    assert "agent_trajectory(" not in source and ".steps(" not in source
    # The instrumentor is called at module level (column 0), once, with no provider.
    assert re.findall(r"^OpenAIAgentsInstrumentor\(\)\.instrument\(\)$", source, re.M) == [
        "OpenAIAgentsInstrumentor().instrument()"]
    assert source.count(".instrument(") == 1
    assert "current_case().trial" in source or "case.trial" in source
    # The scripted model is the SDK's own Model interface, emitting the SDK's response span.
    assert "class ScriptedModel(Model):" in source and "response_span(" in source
    cases = (HERE / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(cases) == 18


def test_the_figures(document: dict[str, Any]) -> None:
    metrics = {m["id"]: m for m in document["metrics"]}
    decisions = {d["rule"]: d["state"] for d in document["decisions"]}
    assert decisions == {"answer-floor": "PASS",
                         "looks-before-refunding": "FAIL", "no-overreach": "PASS"}
    assert document["gate"] == {"action": "BLOCK", "exit_code": 1}
    assert document["errors"] == [] and document["cases"] == 18
    counts = {m: (metrics[m]["passed"], metrics[m]["observed"]) for m in
              ("answer_correct", "agent_tool_sequence", "agent_route", "agent_tool_permissions")}
    assert counts == {"answer_correct": (15, 18), "agent_tool_sequence": (14, 18),
                      "agent_route": (15, 18), "agent_tool_permissions": (18, 18)}
    answer = metrics["answer_correct"]
    # Clopper–Pearson for 15 of 18, as printed (outward rounding).
    assert (percent_lower(answer["lower"]), percent_upper(answer["upper"])) == ("58.5%", "96.5%")
    assert metrics["steps_p95"]["estimate"] == 7
    assert metrics["tokens_p50"]["estimate"] == 291
    failing = {c["case"]: c["failed"] for c in document["failing_cases"]["first"]}
    assert failing == {
        "req-010": ["agent_tool_sequence"],
        "req-013": ["answer_correct", "agent_tool_sequence", "agent_route"],
        "req-014": ["answer_correct", "agent_tool_sequence", "agent_route"],
        "req-015": ["answer_correct", "agent_tool_sequence", "agent_route"]}
    assert document["usage"] == {"cases": 18, "input_tokens": 3370, "output_tokens": 917,
                                 "cost": None}


def test_three_trials_run_only_the_new_trials(three_trials: tuple[str, dict[str, Any]],
                                             document: dict[str, Any]) -> None:
    one_trial = {m["id"]: m for m in document["metrics"]}
    terminal, document = three_trials
    assert "Cache: execution 18 hit/36 miss" in terminal
    assert document["trials"] == 3 and document["errors"] == []
    metrics = {m["id"]: m for m in document["metrics"]}
    # Counts are trials: 18 cases × 3.
    assert {m: (metrics[m]["passed"], metrics[m]["observed"]) for m in
            ("answer_correct", "agent_tool_sequence", "agent_route")} == {
        "answer_correct": (47, 54), "agent_tool_sequence": (45, 54), "agent_route": (47, 54)}
    # Trials never cost evidence: 54 of 54 trials of agent_tool_permissions read the 18 of 18
    # of one trial, [81.4%, 100.0%] (the betting interval read [68.7%, 100.0%]).
    permissions, once = metrics["agent_tool_permissions"], one_trial["agent_tool_permissions"]
    assert (permissions["passed"], permissions["observed"]) == (54, 54)
    assert (permissions["lower"], permissions["upper"]) == (once["lower"], once["upper"])
    assert (percent_lower(permissions["lower"]), percent_upper(permissions["upper"])) == (
        "81.4%", "100.0%")
    decisions = {d["rule"]: d["state"] for d in document["decisions"]}
    assert decisions["looks-before-refunding"] == "FAIL"
    failing = {c["case"]: c["failed_trials"] for c in document["failing_cases"]["first"]}
    assert failing == {
        "req-010": {"agent_tool_sequence": 1}, "req-011": {"agent_tool_sequence": 1},
        "req-013": {"answer_correct": 3, "agent_tool_sequence": 3, "agent_route": 3},
        "req-014": {"answer_correct": 2, "agent_tool_sequence": 2, "agent_route": 2},
        "req-015": {"answer_correct": 2, "agent_tool_sequence": 2, "agent_route": 2}}


def test_the_flaky_view(project: Path, three_trials: Any) -> None:
    done = run_cli(project, "inspect", "latest", "--flaky", "--json")
    flaky = json.loads(done.stdout)["flaky"]
    assert [f["case"] for f in flaky] == ["req-014", "req-015", "req-010", "req-011"]


def test_the_readme_pastes_the_real_output(project: Path, terminal: str,
                                           three_trials: tuple[str, dict[str, Any]]) -> None:
    blocks = _blocks(README)
    one, three = (b for b in blocks if b.startswith("Decisions"))
    assert _lines(one) in _lines(terminal)
    assert _lines(three) in _lines(three_trials[0])
    failing = next(b for b in blocks if b.startswith("Failing cases"))
    assert _lines(failing) in _lines(three_trials[0])
    flaky = next(b for b in blocks if b.startswith("  req-014"))
    assert _lines(flaky) in _lines(run_cli(project, "inspect", "latest", "--flaky").stdout)
    trajectory = next(b for b in blocks if b.startswith("Trajectory"))
    shown = run_cli(project, "inspect", "latest", "--case", "req-001").stdout
    assert _lines(trajectory) in _lines(shown)
    for figure in ("Cache: execution 18 hit/36 miss",):
        assert figure in README and figure in three_trials[0]


def test_a_candidate_compared_with_the_version_shipped(project: Path, three_trials: Any,
                                                      tmp_path: Path) -> None:
    """The README's "Try a candidate": the reply reworded, the version bumped, run with three
    trials and compared with `version:example-1` — the eleven refunded requests break on
    answer_correct and nothing else moves; the README's policy lines FAIL the gate."""
    candidate = tmp_path / "candidate"
    shutil.copytree(project, candidate, ignore=shutil.ignore_patterns("__pycache__"))
    app = candidate / "app.py"
    source = app.read_text(encoding="utf-8")
    old = """return model.say(f"Order {order_id.group() if order_id else ''} is refunded \""""
    assert old in source
    app.write_text(source.replace(old, """return model.say(f"Your money for order \
{order_id.group() if order_id else ''} is on its way \""""), encoding="utf-8")
    suite = candidate / "oloproof.yaml"
    suite.write_text(suite.read_text(encoding="utf-8").replace(
        "version: example-1 ", "version: example-2 "), encoding="utf-8")
    commands = next(b for b in _blocks(README) if b.startswith("oloproof run --trials 3\n"))
    run, compare = commands.splitlines()
    assert run_cli(candidate, *run.split()[1:]).returncode == 1
    done = run_cli(candidate, *compare.split()[1:])
    assert done.returncode == 0, done.stderr
    shown = next(b for b in _blocks(README) if b.startswith("Broken cases"))
    assert _lines(shown) in _lines(done.stdout)
    assert "Fixed cases" not in done.stdout and "Warning" not in done.stdout
    printed = json.loads(run_cli(candidate, *compare.split()[1:], "--json").stdout)
    assert {c: ids for c, ids in printed["broken_cases"].items() if ids} == {
        "answer_correct": [f"req-{n:03d}" for n in range(1, 12)]}
    assert not any(printed["fixed_cases"].values())
    policy = re.search(r"```yaml\n(.*?)```", README, re.S)
    assert policy is not None
    (candidate / "ni.yaml").write_text("version: 1\n" + policy.group(1), encoding="utf-8")
    gated = run_cli(candidate, "gate", "latest", "--policy", "ni.yaml", "--json")
    assert gated.returncode == 1, gated.stderr
    decision = json.loads(gated.stdout)["decisions"][0]
    assert (decision["rule"], decision["state"]) == ("no-regression", "FAIL")
    assert decision["baseline"] == printed["baseline"]


def test_one_trial_is_shown_whole(project: Path, three_trials: Any) -> None:
    done = run_cli(project, "inspect", "latest", "--case", "req-014", "--trial", "2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("Case req-014 · trial 2 of 3 · run ")
    assert "route: triage\n" in done.stdout and "declined" in done.stdout


# The desk run outside Oloproof, trial by trial as the engine seeds it, read from the run's
# items with read_openai_agents: the same steps the engine read from the spans.
FROM_ITEMS = '''
import asyncio, json, random, sys
sys.path.insert(0, ".")
import app
from agents import Runner
from oloproof.traces import read_openai_agents

out = {}
for line in open("data/cases.jsonl", encoding="utf-8"):
    case = json.loads(line)
    for trial in (1, 2, 3):
        rng = random.Random(f"{case['id']}:{trial}")
        result = asyncio.run(Runner.run(app.team(rng), case["input"]["message"]))
        reading = read_openai_agents(result)
        out[f"{case['id']}:{trial}"] = reading.trajectory.model_dump(mode="json")
print(json.dumps(out))
'''


def _step(step: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(step.get(k) for k in ("kind", "agent", "to_agent", "tool_name", "arguments",
                                       "result"))


def test_the_spans_give_the_trajectory_the_run_items_give(project: Path,
                                                          three_trials: Any) -> None:
    # A process forked from the fork server, which imported the SDK for the example's commands
    done = subprocess.run([str(fork_server.shared().python), "-c", FROM_ITEMS], cwd=project,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    from_items = json.loads(done.stdout)
    from oloproof.report.case_view import case_view
    from oloproof.store.store import Store

    with Store(project / ".oloproof" / "store.sqlite", read_only=True) as db:
        run_id = db.resolve_run("latest")
        for key, items in from_items.items():
            case_id, trial = key.split(":")
            view = case_view(db, run_id, case_id, int(trial))
            spans = view["trajectory"]
            assert [_step(s) for s in spans["steps"]] == [_step(s) for s in items["steps"]], key
            assert spans["terminal_status"] == items["terminal_status"] == "success", key
            assert view["other_artifacts"]["trace_reading/v1"]["skipped"] == {}, key
