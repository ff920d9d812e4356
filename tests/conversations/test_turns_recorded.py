"""The conversation is recorded without recording code
(docs/conversations.md#where-the-turns-go): each user turn a `user_message` step, each reply a
`message` step unless the system recorded it, in their places whether the system records as
it goes or hands a trajectory over at the end; never counted as the agent's steps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from conversation_project import ConversationProject, customers

import oloproof

SCRIPT = ["Hi, I want a refund", "It's ord-001", "thanks"]


def _scripted(project: ConversationProject, turns: list[str] = SCRIPT, **input: Any) -> None:
    project.write_cases([{"id": "s1", "input": {"channel": "chat", **input},
                          "user": {"turns": turns}, "expected": {"answer": "refunded"}}])


def _steps(project: ConversationProject, case: str = "s1") -> list[tuple[str, Any]]:
    view = oloproof.case_view(case, config=project.config)
    return [(s["kind"], (s.get("arguments") or {}).get("text") or s.get("tool_name")
             or (s.get("arguments") or {}).get("content")) for s in view["trajectory"]["steps"]]


EXPECTED = [("user_message", "Hi, I want a refund"), ("message", "Which order is it?"),
            ("user_message", "It's ord-001"), ("tool_call", "issue_refund"),
            ("tool_result", "issue_refund"), ("message", "Order ord-001 has been refunded."),
            ("user_message", "thanks"), ("message", "Which order is it?")]


@pytest.mark.parametrize("record", ["live", "quiet"])
def test_turns_take_their_place_among_steps_recorded_as_they_go(tmp_path: Path,
                                                                 record: str) -> None:
    """`live` records each reply itself, `quiet` leaves them to Oloproof: the same steps."""
    project = ConversationProject(tmp_path / record, record=record)
    _scripted(project)
    result = oloproof.run(project.config)
    assert _steps(project) == EXPECTED
    view = oloproof.case_view("s1", config=project.config)
    conversation = view["conversation"]
    assert conversation["user"] == "scripted" and conversation["ended"] == "script_done"
    assert [t["text"] for t in conversation["turns"] if t["role"] == "agent"] == [
        "Which order is it?", "Order ord-001 has been refunded.", "Which order is it?"]
    # The agent's steps: the user's turns are not among them.
    assert view["facts"]["steps"] == len(EXPECTED) - 3
    assert view["facts"]["conversation"] == {"user": "scripted", "turns": 3, "agent_turns": 3,
                                             "ended": "script_done", "truncated": False}
    assert result.metric("refunded").passed == 1


def test_a_trajectory_handed_over_at_the_end_gets_the_turns_by_their_text(
        tmp_path: Path) -> None:
    """The desk hands over its messages as the message adapters read them (role and content)
    and its tool calls after them: each user message becomes its turn's step in place, each
    reply is found, and nothing is added."""
    project = ConversationProject(tmp_path / "whole", record="whole")
    _scripted(project)
    oloproof.run(project.config)
    assert _steps(project) == [
        ("user_message", "Hi, I want a refund"), ("message", "Which order is it?"),
        ("user_message", "It's ord-001"), ("message", "Order ord-001 has been refunded."),
        ("user_message", "thanks"), ("message", "Which order is it?"),
        ("tool_call", "issue_refund")]


def test_a_trajectory_without_the_replies_gets_them_after_its_steps(tmp_path: Path) -> None:
    """A handed-over trajectory that holds neither the turns nor the replies (only a tool
    call): the first turn goes before step 1; the first reply is found nowhere, so it and
    everything after it follow the last step."""
    project = ConversationProject(tmp_path / "bare", record="whole")
    desk = project.root / f"{project.module}.py"
    text = desk.read_text(encoding="utf-8")
    desk.write_text(text.replace("for role, text in said:", "for role, text in []:"),
                    encoding="utf-8")
    _scripted(project)
    oloproof.run(project.config)
    assert _steps(project) == [
        ("user_message", "Hi, I want a refund"), ("tool_call", "issue_refund"),
        ("message", "Which order is it?"), ("user_message", "It's ord-001"),
        ("message", "Order ord-001 has been refunded."), ("user_message", "thanks"),
        ("message", "Which order is it?")]


NAMED_DESK = '''
from oloproof import current_case, system


@system(name="desk", version="v1", records=("agent_trajectory/v1",))
def run(case_input):
    user = current_case().user
    steps = current_case().steps()
    message = user.first_message()
    while message is not None:
        steps.decision({"read": message}, agent="triage")
        steps.handoff("refunds", agent="triage")
        message = user.respond("On it.")
    steps.finish("success")
    return {"answer": "refunded"}
'''


def test_an_added_reply_names_the_agent_holding_control(tmp_path: Path) -> None:
    project = ConversationProject(tmp_path / "named")
    (project.root / "named_desk.py").write_text(NAMED_DESK, encoding="utf-8")
    project.suite["system"]["callable"] = "named_desk:run"
    project.write()
    _scripted(project, turns=["refund please"])
    result = oloproof.run(project.config)
    assert result.to_json()["executions"]["errored"] == {}
    steps = oloproof.case_view("s1", config=project.config)["trajectory"]["steps"]
    assert [(s["kind"], s.get("agent")) for s in steps] == [
        ("user_message", None), ("decision", "triage"), ("handoff", "triage"),
        ("message", "refunds")]


MISUSED = '''
import asyncio

from oloproof import current_case, system


@system(name="desk", version="v1")
async def sync_in_async(case_input):
    current_case().user.first_message()
    return {"answer": "x"}


@system(name="desk", version="v1")
def respond_first(case_input):
    current_case().user.respond("hello")
    return {"answer": "x"}


@system(name="desk", version="v1")
def not_text(case_input):
    user = current_case().user
    user.first_message()
    user.respond({"text": "hello"})
    return {"answer": "x"}


@system(name="desk", version="v1")
def no_user(case_input):
    current_case().user
    return {"answer": "x"}


@system(name="desk", version="v1")
def records_it(case_input):
    current_case().record("conversation/v1", {"turns": []})
    return {"answer": "x"}
'''


@pytest.mark.parametrize(("system", "said"), [
    ("sync_in_async", "called on the event loop: an async system awaits user.arespond(reply)"),
    ("respond_first", "respond() was called before first_message()"),
    ("not_text", "respond() takes the agent's reply as text (a str), not dict"),
    ("no_user", "this case has no user"),
    ("records_it", "conversation/v1 is recorded by Oloproof from the case's user"),
])
def test_a_conversation_misused_errors_its_case_saying_what_to_do(
        tmp_path: Path, system: str, said: str) -> None:
    project = ConversationProject(tmp_path / system)
    (project.root / "misused.py").write_text(MISUSED, encoding="utf-8")
    project.suite["system"] = {"name": "desk", "version": "v1",
                               "callable": f"misused:{system}"}
    project.suite["evaluators"] = project.suite["evaluators"][:1]
    project.write()
    cases = customers(1)
    if system == "no_user":
        del cases[0]["user"]
    project.write_cases(cases)
    result = oloproof.run(project.config)
    errors = result.to_json()["errors"]
    assert len(errors) == 1 and errors[0]["kind"] == "system_error", errors
    assert said in errors[0]["message"]


JUDGE = '''
from oloproof import JudgeVerdict

SEEN = []

def grade(request):
    turns = request.shown["conversation.user_turns"]
    said = request.shown["conversation"]
    ok = turns[-1] == "thanks" and said.splitlines()[1].startswith("agent: ")
    return JudgeVerdict(verdict="pass" if ok else "fail", reason=" | ".join(turns))
'''


def test_a_judge_is_shown_the_conversation(tmp_path: Path) -> None:
    project = ConversationProject(tmp_path / "judged")
    (project.root / "grader.py").write_text(JUDGE, encoding="utf-8")
    project.suite["judges"] = [{"name": "reader", "callable": "grader:grade"}]
    project.suite["evaluators"].append({
        "type": "judge", "criterion": "polite_close", "judge": "reader",
        "rubric": "The user leaves satisfied.",
        "shows": ["conversation", "conversation.user_turns"]})
    project.write()
    _scripted(project)
    result = oloproof.run(project.config)
    assert result.metric("polite_close").passed == 1
    judged = oloproof.case_view("s1", config=project.config)["judges"][0]
    assert judged["shown"]["conversation.user_turns"] == SCRIPT
    assert judged["reason"] == " | ".join(SCRIPT)


def test_a_shown_conversation_of_a_case_without_one_is_missing(tmp_path: Path) -> None:
    project = ConversationProject(tmp_path / "without")
    (project.root / "grader.py").write_text(JUDGE, encoding="utf-8")
    (project.root / "plain.py").write_text(
        "from oloproof import system\n\n@system(name='desk', version='v1')\n"
        "def run(case_input):\n    return {'answer': 'refunded'}\n", encoding="utf-8")
    project.suite["system"] = {"name": "desk", "version": "v1", "callable": "plain:run"}
    project.suite["judges"] = [{"name": "reader", "callable": "grader:grade"}]
    project.suite["evaluators"] = [{
        "type": "judge", "criterion": "polite_close", "judge": "reader",
        "rubric": "The user leaves satisfied.", "shows": ["conversation.user_turns"]}]
    project.policy["rules"] = []
    project.write()
    project.write_cases([{"id": "p1", "input": {"message": "hi"}}])
    result = oloproof.run(project.config)
    assert result.metric("polite_close").missing_by_reason == {"shown_field_absent": 1}
