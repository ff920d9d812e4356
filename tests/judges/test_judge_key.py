"""The judge cache answers for every execution, cached or not (docs/judges.md#the-judge-cache):
a verdict is looked up by its verdict key — the judge's definition and the digest of what it
was shown — so text a judge was shown once is never sent to it again: not under a new system
version, not in another trial, not in a `--no-cache` run. Judge calls are counted where they
arrive, at the scripted OpenAI-compatible server, through the real `openai` SDK."""

from __future__ import annotations

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)
from scripted_openai import ScriptedServer

import oloproof


def new_version(project: JudgedProject, version: str) -> None:
    """The desk under another version, in its `@system` declaration and in the suite: the
    same code, so the same replies."""
    module = project.root / f"{project.module}.py"
    module.write_text(module.read_text(encoding="utf-8").replace(
        f'version="{project.suite["system"]["version"]}"', f'version="{version}"'),
        encoding="utf-8")
    project.suite["system"]["version"] = version
    project.write()


@pytest.fixture
def model_judged(judged: JudgedProject, server: ScriptedServer,
                 monkeypatch: pytest.MonkeyPatch) -> JudgedProject:
    monkeypatch.setenv("JUDGE_TEST_KEY", "sk-judge-key")
    judged.model_judge(server)
    judged.write_cases(desk_cases(6, lies={2, 5}))
    return judged


def test_identical_text_under_a_new_system_version_is_not_judged_again(
        model_judged: JudgedProject, server: ScriptedServer) -> None:
    first = oloproof.run(model_judged.config)
    assert server.calls == 6
    new_version(model_judged, "v2")
    second = oloproof.run(model_judged.config)
    cache = second.to_json()["cache"]
    assert cache["execution"] == {"hit": 0, "miss": 6}  # the new version ran every case
    assert cache["judge"] == {"hit": 6, "miss": 0}
    assert server.calls == 6  # and its replies, word for word the old ones, were not re-sent
    assert second.metric("reply_truthful").passed == first.metric("reply_truthful").passed == 4


def test_a_changed_reply_is_judged_and_the_unchanged_ones_are_not(
        model_judged: JudgedProject, server: ScriptedServer) -> None:
    oloproof.run(model_judged.config)
    cases = desk_cases(6, lies={2, 5})
    cases[0]["input"]["tail"] = " Have a good day."  # r001's reply changes, and only its
    model_judged.write_cases(cases)
    new_version(model_judged, "v2")
    second = oloproof.run(model_judged.config)
    assert second.to_json()["cache"]["judge"] == {"hit": 5, "miss": 1}
    assert server.calls == 7


def test_trials_with_identical_text_ask_the_judge_once_per_text(
        model_judged: JudgedProject, server: ScriptedServer) -> None:
    result = oloproof.run(model_judged.config, trials=4)
    # 24 executions, 6 distinct texts: each asked once, the other trials' verdicts the same
    # (their calls run side by side: the later asks wait for the first)
    assert server.calls == 6
    assert result.to_json()["cache"]["judge"] == {"hit": 18, "miss": 6}
    again = oloproof.run(model_judged.config, trials=5)  # trial 5 runs; its text is known
    assert again.to_json()["cache"]["execution"] == {"hit": 24, "miss": 6}
    assert server.calls == 6


def test_a_no_cache_run_runs_the_system_and_asks_no_judge_for_known_text(
        model_judged: JudgedProject, server: ScriptedServer) -> None:
    first = oloproof.run(model_judged.config)
    forced = oloproof.run(model_judged.config, no_cache=True)
    cache = forced.to_json()["cache"]
    assert cache["execution"] == {"hit": 0, "miss": 6}
    assert cache["judge"] == {"hit": 6, "miss": 0}
    assert server.calls == 6
    assert forced.metric("reply_truthful").passed == first.metric("reply_truthful").passed


def test_samples_is_a_key_of_its_own(model_judged: JudgedProject,
                                     server: ScriptedServer) -> None:
    oloproof.run(model_judged.config)
    assert server.calls == 6
    model_judged.suite["judges"][0]["temperature"] = 0.7
    model_judged.write()
    oloproof.run(model_judged.config)  # a new definition: every text judged again
    assert server.calls == 12
    model_judged.suite["evaluators"][0]["samples"] = 3
    model_judged.write()
    third = oloproof.run(model_judged.config)  # three samples are not one: asked three times
    assert third.to_json()["cache"]["judge"] == {"hit": 0, "miss": 6}
    assert server.calls == 12 + 18
    new_version(model_judged, "v2")
    oloproof.run(model_judged.config)  # the same three-sample key, the same text: no call
    assert server.calls == 30


def test_a_callable_judge_is_not_called_again_for_known_text(judged: JudgedProject) -> None:
    """The same with a `callable:` judge in this process (its calls counted in its module)."""
    import sys

    judged.write_cases(desk_cases(5, lies={3}))
    oloproof.run(judged.config, trials=2)
    calls = sys.modules[judged.judges_module].CALLS
    assert sorted(calls) == ["r001", "r002", "r003", "r004", "r005"]
    new_version(judged, "v2")
    oloproof.run(judged.config, no_cache=True)
    # (the edited desk module made the run import the project's modules afresh: the judge
    # module in use now is the one the second run imported, and it was not called)
    assert sys.modules[judged.judges_module].CALLS == []
