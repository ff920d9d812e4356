"""ATIF read (`from_atif`) and written (`to_atif`), against files Harbor's own code made and
validated (tests/data/harnesses: `atif/`, `harbor-job/*/agent/trajectory.json`, and
`atif-written/`, Oloproof's output that Harbor's validator passed)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

import oloproof.traces as traces
from oloproof.errors import TraceError
from oloproof.recording.trajectory import AgentStep, AgentTrajectory
from oloproof.traces.atif import ATIF_VERSION, AtifTrajectory, read_atif, to_atif
from oloproof.traces.reading import TraceWarning

FILES = Path(__file__).parent.parent / "data" / "harnesses"
JOB_TRAJECTORIES = sorted((FILES / "harbor-job").glob("*/agent/trajectory.json"))


def test_the_public_names() -> None:
    assert traces.from_atif is not None and traces.to_atif is to_atif
    assert traces.read_atif is read_atif


def test_tool_calls_results_and_observations() -> None:
    reading = read_atif(FILES / "atif" / "tools_and_observation.json")
    assert [(s.kind, s.tool_name) for s in reading.trajectory.steps] == [
        ("message", None), ("tool_call", "find_order"), ("tool_call", "find_customer"),
        ("tool_result", "find_order"), ("tool_result", "find_customer"),
        ("observation", None), ("observation", None), ("final", None)]
    steps = reading.trajectory.steps
    assert steps[3].result == {"status": "delivered", "total": 42.5}  # JSON text, parsed
    assert steps[5].result == "note: customer is a VIP"  # a result naming no call
    assert steps[6].result == "the refund service is slow today"  # a system observation
    assert steps[7].arguments == {"role": "assistant", "content": "Refunded 42.5 to Ada."}
    assert reading.ignored == {"instructions": 1, "reasoning": 1}
    assert reading.skipped == {}
    # the steps' metrics summed (this file has no final_metrics)
    assert reading.usage is not None
    assert (reading.usage.input_tokens, reading.usage.output_tokens) == (300 + 400, 20 + 12)
    assert reading.usage.cost == pytest.approx(0.001 + 0.0015)
    assert reading.trajectory.terminal_status == "success"


def test_every_version_and_multimodal_content() -> None:
    minimal = traces.from_atif(FILES / "atif" / "v1_0_minimal.json")
    assert [s.kind for s in minimal.steps] == ["message", "final"]
    reading = read_atif(FILES / "atif" / "multimodal_copied_context.json")
    assert reading.ignored == {"copied_context": 1}
    user, answer = reading.trajectory.steps
    assert isinstance(user.arguments, dict) and isinstance(user.arguments["content"], list)
    assert user.arguments["content"][1]["type"] == "image"  # kept as data, not dropped
    assert answer.arguments == {"role": "assistant",
                                "content": "The form has no submit button."}


def test_what_cannot_be_followed_is_said() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trajectory = traces.from_atif(FILES / "atif" / "subagent.json")
    assert [w.category for w in caught] == [TraceWarning]
    assert "subagent_trajectory" in str(caught[0].message)
    assert [s.kind for s in trajectory.steps] == ["message", "tool_call", "tool_result",
                                                  "final"]
    usage = read_atif(FILES / "atif" / "subagent.json").usage
    assert usage is not None and (usage.input_tokens, usage.output_tokens) == (50, 9)


def test_a_harbor_agents_trajectory() -> None:
    for path in JOB_TRAJECTORIES:
        reading = read_atif(path)
        document = json.loads(path.read_text())
        assert reading.usage is not None
        assert reading.usage.input_tokens == document["final_metrics"]["total_prompt_tokens"]
        assert reading.usage.cost == document["final_metrics"]["total_cost_usd"]
        calls = [c for s in document["steps"] for c in s.get("tool_calls") or ()]
        assert [s.tool_name for s in reading.trajectory.tool_calls()] == [
            c["function_name"] for c in calls]
        assert reading.trace_id == document["session_id"]


def test_what_is_not_atif_is_refused_with_the_place(tmp_path: Path) -> None:
    document = json.loads((FILES / "atif" / "tools_and_observation.json").read_text())
    bad = json.loads(json.dumps(document))
    bad["steps"][2]["observation"]["results"][0]["source_call_id"] = "nope"
    with pytest.raises(TraceError, match="answers call 'nope'"):
        read_atif(bad)
    bad = json.loads(json.dumps(document))
    bad["steps"][1]["tool_calls"] = []  # a user step with calls
    with pytest.raises(TraceError, match="only on an agent step"):
        read_atif(bad)
    bad = json.loads(json.dumps(document))
    bad["schema_version"] = "ATIF-v2.0"
    with pytest.raises(TraceError, match="schema_version"):
        read_atif(bad)
    path = tmp_path / "t.json"
    path.write_text("[1")
    with pytest.raises(TraceError, match="not JSON") as refused:
        read_atif(path)
    assert refused.value.file == str(path)


@pytest.mark.parametrize("path", JOB_TRAJECTORIES, ids=lambda p: p.parent.parent.name)
def test_the_writer_writes_what_harbors_validator_passed(path: Path) -> None:
    """`atif-written/` is `to_atif`'s output that Harbor's own validator passed when the files
    were made: the writer still writes exactly that, and reading it gives the trajectory back."""
    reading = read_atif(path)
    assert reading.usage is not None
    written = to_atif(reading.trajectory, agent_name="terminus-2", agent_version="2.0.0",
                      model_name="acme/desk-1", usage=reading.usage.payload(),
                      session_id=reading.trace_id)
    validated = json.loads((FILES / "atif-written" / f"{path.parent.parent.name}.json")
                           .read_text())
    assert written == validated
    back = read_atif(written)
    assert back.trajectory == reading.trajectory
    assert back.usage == reading.usage


def test_the_writers_fields_are_harbors() -> None:
    """Every field the writer uses is one Harbor's own files use, at the same place."""
    def keys(documents: list[dict]) -> tuple[set[str], set[str]]:  # type: ignore[type-arg]
        top = {k for d in documents for k in d}
        step = {k for d in documents for s in d["steps"] for k in s}
        return top, step

    harbor = keys([json.loads(p.read_text()) for p in JOB_TRAJECTORIES]
                  + [json.loads(p.read_text()) for p in (FILES / "atif").glob("*.json")])
    ours = keys([json.loads(p.read_text()) for p in (FILES / "atif-written").glob("*.json")])
    assert ours[0] <= harbor[0] and ours[1] <= harbor[1] | {"extra"}


def test_a_multi_agent_trajectory_round_trips() -> None:
    steps = [
        AgentStep(index=1, kind="message", agent="triage",
                  arguments={"role": "user", "content": "my card was charged twice"}),
        AgentStep(index=2, kind="decision", agent="triage", arguments={"route": "billing"}),
        AgentStep(index=3, kind="handoff", agent="triage", to_agent="billing"),
        AgentStep(index=4, kind="tool_call", agent="billing", tool_name="find_charges",
                  arguments={"card": "…4242"}),
        AgentStep(index=5, kind="tool_result", agent="billing", tool_name="find_charges",
                  result=[{"amount": 12}, {"amount": 12}]),
        AgentStep(index=6, kind="observation", agent="billing", result="duplicate found"),
        AgentStep(index=7, kind="tool_call", agent="billing", tool_name="refund",
                  arguments={"amount": 12}),
        AgentStep(index=8, kind="tool_result", agent="billing", tool_name="refund",
                  result={"ok": True}),
        AgentStep(index=9, kind="final", agent="billing",
                  arguments={"role": "assistant", "content": "Refunded the duplicate."}),
    ]
    trajectory = AgentTrajectory(steps=tuple(steps), terminal_status="success")
    document = to_atif(trajectory, agent_name="desk", agent_version="3",
                       usage={"input_tokens": 10, "output_tokens": 2, "cost": 0.5})
    assert document["schema_version"] == ATIF_VERSION
    AtifTrajectory.model_validate(document)
    reading = read_atif(document)
    assert reading.trajectory == trajectory
    assert reading.usage is not None and reading.usage.payload() == {
        "input_tokens": 10, "output_tokens": 2, "cost": 0.5}


def test_an_empty_trajectory_cannot_be_written() -> None:
    with pytest.raises(TraceError, match="at least one step"):
        to_atif(AgentTrajectory(), agent_name="a", agent_version="1")
