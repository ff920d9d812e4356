"""Fault replays and metamorphic pairs with repeated trials
(docs/reliability.md#fault-replays-and-pairs-with-trials).

The desk is the `stateful-agent` example's, changed to *sample* its reply text, as an LLM agent
does: each call picks one of three phrasings. A control replay then cannot repeat the
recording word for word, so the exact rule (`control: exact`) leaves many cases missing; the
`world` rule (the default with trials) asks only that every tool result up to the agent's
first different choice equals the recording's — and still catches a sandbox that was not
restored.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

import oloproof

EXAMPLE = Path(oloproof.__file__).parent / "examples" / "stateful-agent"
FAULTS = ("recovers_from_error_at_issue_refund", "recovers_from_timeout_at_issue_refund")

SAMPLED_REPLIES = '''

import random as _random

_CALLS = [0]
_PHRASINGS = {key: [text, text + " Thank you for your patience.", "Update: " + text]
              for key, text in _REPLIES.items()}


def _sampled_reply(outcome):
    """One of three phrasings, drawn afresh on every call (a replay draws again)."""
    case = current_case()
    _CALLS[0] += 1
    rng = _random.Random(f"{case.case_id}:{case.trial}:{_CALLS[0]}")
    return rng.choice(_PHRASINGS[outcome])
'''

# A payment back end whose refund ids come from a counter that reset() does not touch: the
# sandbox is not restored between the recording and the replay.
UNRESTORED = '''

_REFUNDS = [0]
_issue_refund = OrderStore.issue_refund


def _counted_refund(self, order_id):
    result = _issue_refund(self, order_id)
    if "refund_id" in result:
        _REFUNDS[0] += 1
        result["refund_id"] = f"rf-{_REFUNDS[0]}"
    return result


OrderStore.issue_refund = _counted_refund
'''


def _project(tmp_path: Path, *, trials: int, control: str | None, unrestored: bool = False
             ) -> Path:
    root = tmp_path / "desk"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".oloproof"))
    app = (root / "app.py").read_text(encoding="utf-8")
    app = app.replace('"reply": _REPLIES[outcome]}', '"reply": reply}')
    app = app.replace('"reply": _REPLIES[outcome], "order_id"', '"reply": reply, "order_id"')
    app = app.replace("    answer = _answer(outcome)\n",
                      "    answer = _answer(outcome)\n    reply = _sampled_reply(outcome)\n")
    assert app.count("reply = _sampled_reply") == 1 and "_REPLIES[outcome]" not in app
    app = app.replace("desk = RefundDesk()", SAMPLED_REPLIES + (UNRESTORED if unrestored else "")
                      + "\ndesk = RefundDesk()")
    (root / "app.py").write_text(app, encoding="utf-8")
    suite = yaml.safe_load((root / "oloproof.yaml").read_text(encoding="utf-8"))
    suite["trials"] = trials
    suite.pop("metamorphic")
    suite["evaluators"] = [e for e in suite["evaluators"]
                           if e["type"] != "metamorphic_relation"]
    for evaluator in suite["evaluators"]:
        if evaluator["type"] == "fault_recovery" and control is not None:
            evaluator["control"] = control
    (root / "oloproof.yaml").write_text(yaml.safe_dump(suite, sort_keys=False),
                                        encoding="utf-8")
    policy = yaml.safe_load((root / "release.yaml").read_text(encoding="utf-8"))
    policy["rules"] = [r for r in policy["rules"] if "_under_" not in r["metric"]]
    (root / "release.yaml").write_text(yaml.safe_dump(policy, sort_keys=False),
                                       encoding="utf-8")
    return root


def _diverged(result) -> dict[str, int]:
    return {name: result.metric(name).missing_by_reason.get("control_replay_diverged", 0)
            for name in FAULTS}


def test_exact_control_leaves_a_sampling_agent_missing_and_world_control_does_not(tmp_path):
    exact = oloproof.run(_project(tmp_path / "exact", trials=2, control="exact")
                         / "oloproof.yaml")
    world = oloproof.run(_project(tmp_path / "world", trials=2, control=None) / "oloproof.yaml")

    # The desk calls issue_refund in most requests; each trial of those is replayed. Its
    # sampled reply differs from the recording's in about two replays of three.
    for name, count in _diverged(exact).items():
        assert count >= 10, (name, count)
    assert _diverged(world) == {name: 0 for name in FAULTS}
    for name in FAULTS:
        row = world.metric(name)
        assert row.missing == 0 and row.observed > 0
        assert row.trials == 2
    # The flaw of the example is still found: a failed refund reported as done.
    assert world.metric(FAULTS[0]).passed < world.metric(FAULTS[0]).observed


def test_world_control_still_catches_a_sandbox_that_was_not_restored(tmp_path):
    result = oloproof.run(_project(tmp_path, trials=2, control=None, unrestored=True)
                          / "oloproof.yaml")

    for name in FAULTS:
        row = result.metric(name)
        # Every trial that reaches the refund: its control replay gets another refund id
        # before the agent chose anything differently.
        assert row.missing_by_reason.get("control_replay_diverged", 0) == row.missing > 0
        assert row.observed == 0


def test_control_world_on_a_single_trial_suite_and_the_default_there_is_exact(tmp_path):
    default = oloproof.run(_project(tmp_path / "one", trials=1, control=None) / "oloproof.yaml")
    world = oloproof.run(_project(tmp_path / "w", trials=1, control="world") / "oloproof.yaml")

    assert all(count > 0 for count in _diverged(default).values())
    assert _diverged(world) == {name: 0 for name in FAULTS}


def test_each_trial_is_replayed_from_its_own_recording(tmp_path):
    root = _project(tmp_path, trials=3, control=None)
    app = root / "app.py"
    app.write_text(app.read_text(encoding="utf-8").replace(
        '        start = next(c for c in trajectory.checkpoints if c.step_index is None)',
        '        with open(__file__ + ".replays", "a") as log:\n'
        '            log.write(f"{current_case().case_id} {current_case().trial} '
        '{change.kind}\\n")\n'
        '        start = next(c for c in trajectory.checkpoints if c.step_index is None)'),
        encoding="utf-8")

    result = oloproof.run(root / "oloproof.yaml")

    lines = (root / "app.py.replays").read_text().split("\n")
    replays = [tuple(line.split()) for line in lines if line]
    cases = {case for case, _, _ in replays}
    assert {(case, trial) for case, trial, _ in replays} == {
        (case, str(t)) for case in cases for t in (1, 2, 3)}
    # Two fault criteria, each a control and a fault replay, per trial of each such case.
    assert len(replays) == len(cases) * 3 * 2 * 2
    assert result.metric(FAULTS[0]).observed == len(cases) * 3

    again = oloproof.run(root / "oloproof.yaml")
    lines_after = (root / "app.py.replays").read_text().split("\n")
    assert len([x for x in lines_after if x]) == len(replays), "replays cached per trial"
    assert again.metric(FAULTS[0]).observed == result.metric(FAULTS[0]).observed


def test_a_copy_is_compared_with_its_sources_trial_of_the_same_number(tmp_path):
    root = tmp_path / "pairs"
    root.mkdir()
    (root / "app.py").write_text(
        "from oloproof import current_case, system\n"
        "@system(name='pairs', version='1')\n"
        "def run(case_input):\n"
        "    return {'answer': current_case().trial}\n", encoding="utf-8")
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"message": f"hello {i}"}}) + "\n"
        for i in range(3)))
    (root / "oloproof.yaml").write_text(yaml.safe_dump({
        "version": 1, "dataset": "cases.jsonl", "trials": 3,
        "system": {"name": "pairs", "version": "1", "callable": "app:run"},
        "evaluators": [{"type": "metamorphic_relation", "relation": "same_output",
                        "transform": "shout"}],
        "metamorphic": {"transforms": [{"name": "shout", "field": "message",
                                        "template": "{value}!"}]},
    }, sort_keys=False))
    (root / "release.yaml").write_text("version: 1\nrules: []\n")

    result = oloproof.run(root / "oloproof.yaml")

    # Each copy's trial t answers t, as its source's trial t does: every pair agrees.
    row = result.metric("same_output_under_shout")
    assert (row.passed, row.observed, row.cases) == (9, 9, 3)


@pytest.mark.parametrize("unrestored", [False, True])
def test_the_world_rule_itself(unrestored):
    from oloproof.execution.replays import world_not_restored

    call = ("tool_call", "lookup", {"id": 1}, None)
    answer = ("tool_result", "lookup", None, {"status": "open"})
    other = ("tool_result", "lookup", None, {"status": "refunded"})
    said = ("message", None, {"text": "Done."}, None)
    said_otherwise = ("message", None, {"text": "All done!"}, None)

    recorded = [call, answer, said]
    replayed = [call, other if unrestored else answer, said_otherwise]

    assert world_not_restored(recorded, replayed) == (1 if unrestored else None)
    # The agent chose another tool first: what the world said after that is not compared.
    assert world_not_restored([call, answer], [("tool_call", "search", {}, None), other]) is None
    # A replay that stops where the recording's tool still had to answer did not get it.
    assert world_not_restored([call, answer], [call]) == 1
