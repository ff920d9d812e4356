"""`samples: 3` (docs/judges.md#a-judge-criterion): a judge at a temperature above 0 is asked
three times per case, the majority is the verdict, and the split is stored and shown in the
case panel — through the real `openai` SDK against the scripted server, and with a
`callable:` judge."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)
from scripted_openai import ScriptedServer

import oloproof


def _details(project: JudgedProject, run_id: str) -> dict[str, dict[str, Any]]:
    """case id → the judge criterion's stored details."""
    from oloproof.report.case_view import iter_case_views
    from oloproof.store.store import Store

    with Store(project.store, read_only=True) as db:
        return {v["case"]: v["criteria"][0] for v in iter_case_views(db, run_id)}


def _panel(cli: Callable[..., Any], project: JudgedProject, case: str) -> str:
    code, out, err = cli("inspect", "latest", "--case", case, cwd=project.root)
    assert code == 0, err
    return " ".join(out.split())


def test_three_samples_of_a_model_take_the_majority(
        judged: JudgedProject, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch,
        cli: Callable[..., Any]) -> None:
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-samples")
    judged.model_judge(server, temperature=0.7)
    judged.suite["evaluators"][0]["samples"] = 3
    judged.write()
    # r001 tells the truth and r002 lies; the server turns every second answer on their text
    # the other way, so each is judged 2 to 1. r003 and r004 are judged alike three times.
    judged.write_cases(desk_cases(4, lies={2}, split={1, 2}))
    result = oloproof.run(judged.config)
    assert server.calls == 4 * 3
    assert all(r["body"]["temperature"] == 0.7 for r in server.requests)
    row = result.metric("reply_truthful")
    assert (row.passed, row.observed, row.missing) == (3, 4, 0)
    found = _details(judged, result.run_id)
    assert found["r001"]["verdict"] == "passed"
    assert found["r001"]["details"]["split"] == {"pass": 2, "fail": 1}
    assert found["r002"]["verdict"] == "failed"
    assert found["r002"]["details"]["split"] == {"pass": 1, "fail": 2}
    assert found["r003"]["details"]["split"] == {"pass": 3, "fail": 0}
    # the reason is one of the majority's, and tokens add up over the three calls
    assert found["r002"]["details"]["reason"] == "scripted: fail"
    assert found["r002"]["details"]["output_tokens"] == 3 * 12
    assert "samples 2 pass / 1 fail" in _panel(cli, judged, "r001")
    assert "samples 1 pass / 2 fail" in _panel(cli, judged, "r002")
    # cached as one verdict: an unchanged re-run asks nothing
    again = oloproof.run(judged.config)
    assert server.calls == 12 and again.metric("reply_truthful").passed == 3
    assert not any("samples: 3" in w for w in again.document.warnings)


def test_three_samples_of_a_function(judged: JudgedProject, cli: Callable[..., Any]) -> None:
    (judged.root / "moody.py").write_text(
        "from pathlib import Path\n\n"
        "def grade(request):\n"
        "    with open(Path(__file__).with_name('calls.txt'), 'a') as calls:\n"
        "        calls.write(f'{request.case_id} {request.sample}\\n')\n"
        "    # the second sample of every case says fail\n"
        "    verdict = 'fail' if request.sample == 2 else 'pass'\n"
        "    return {'verdict': verdict, 'reason': f'sample {request.sample}'}\n",
        encoding="utf-8")
    judged.suite["judges"] = [{"name": "house", "callable": "moody:grade",
                               "temperature": 1.0}]
    judged.suite["evaluators"][0]["samples"] = 3
    judged.write()
    judged.write_cases(desk_cases(3))
    result = oloproof.run(judged.config)
    calls = (judged.root / "calls.txt").read_text(encoding="utf-8").splitlines()
    assert sorted(calls) == [f"r00{i} {s}" for i in (1, 2, 3) for s in (1, 2, 3)]
    row = result.metric("reply_truthful")
    assert (row.passed, row.observed) == (3, 3)
    details = _details(judged, result.run_id)["r002"]["details"]
    assert details["split"] == {"pass": 2, "fail": 1}
    assert details["reason"] in ("sample 1", "sample 3")  # a passing sample's reason
    assert "samples 2 pass / 1 fail" in _panel(cli, judged, "r002")


def test_samples_at_temperature_zero_are_warned_of(
        judged: JudgedProject, server: ScriptedServer,
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Three calls at temperature 0 ask a model the same question three times: the run says
    so (the majority of three equal answers is one answer, at three times the cost)."""
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-samples")
    judged.model_judge(server)
    judged.suite["evaluators"][0]["samples"] = 3
    judged.write()
    judged.write_cases(desk_cases(2))
    result = oloproof.run(judged.config)
    assert server.calls == 6
    assert any("samples: 3" in w and "temperature 0" in w for w in result.document.warnings)
