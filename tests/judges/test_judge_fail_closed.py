"""A mistake in a judged suite or its labels is a configuration error (exit 2) naming the file
and line, found before any call (docs/judges.md): hand-picked labels, a labels file without
its sample line, a label that is not pass or fail, a field no judge can be shown, a judge no
entry declares, an API key's variable that is not set."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from judged_project import (  # noqa: F401 - the fixtures `judged` and `server`
    JudgedProject,
    desk_cases,
    judged_fixture,
    server_fixture,
)
from scripted_openai import ScriptedServer

from oloproof.suite.judge_labels import draw_sample, suite_digest


def _labels(project: JudgedProject, rows: list[dict[str, Any]], *, sample: bool = True,
            seed: int = 4, n: int = 5) -> Path:
    ids = [c["id"] for c in desk_cases(12)]
    lines = []
    if sample:
        lines.append({"sample": {"criterion": "reply_truthful", "seed": seed, "n": n,
                                 "suite": suite_digest(ids)}})
    lines.extend(rows)
    path = project.root / "labels.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    project.suite["evaluators"][0]["labels"] = "labels.jsonl"
    project.write()
    return path


def _fails(cli: Callable[..., Any], project: JudgedProject, *words: str,
           line: int | None = None, file: str = "oloproof.yaml") -> dict[str, Any]:
    code, out, _ = cli("run", "--json", cwd=project.root)
    assert code == 2, out
    error = json.loads(out)["error"]
    for word in words:
        assert word in error["message"], error
    assert Path(error["file"]).name == file
    assert isinstance(error["line"], int) and error["line"] >= 1, error  # every one names its line
    if line is not None:
        assert error["line"] == line, error
    assert not project.store.exists()  # nothing ran, nothing was stored
    return error  # type: ignore[no-any-return]


@pytest.fixture
def project(judged: JudgedProject) -> JudgedProject:
    judged.write_cases(desk_cases(12))
    return judged


def test_labels_for_cases_the_sample_did_not_draw(cli: Callable[..., Any],
                                                  project: JudgedProject) -> None:
    drawn = draw_sample([c["id"] for c in desk_cases(12)], 4, 5)
    outside = next(c["id"] for c in desk_cases(12) if c["id"] not in drawn)
    _labels(project, [{"case": drawn[0], "digest": "sha256:x", "label": "pass"},
                      {"case": outside, "digest": "sha256:y", "label": "fail"}])
    _fails(cli, project, f"case {outside!r} is not one the sample drew", line=3,
           file="labels.jsonl")


def test_a_labels_file_without_its_sample_line(cli: Callable[..., Any],
                                               project: JudgedProject) -> None:
    _labels(project, [{"case": "r001", "digest": "sha256:x", "label": "pass"}], sample=False)
    _fails(cli, project, "not the sample line", "hand-picked", line=1, file="labels.jsonl")


def test_a_label_other_than_pass_or_fail(cli: Callable[..., Any],
                                         project: JudgedProject) -> None:
    drawn = draw_sample([c["id"] for c in desk_cases(12)], 4, 5)
    _labels(project, [{"case": drawn[0], "digest": "sha256:x", "label": "pass"},
                      {"case": drawn[1], "digest": "sha256:y", "label": "yes"}])
    _fails(cli, project, 'label "yes" is not a label', line=3, file="labels.jsonl")


def test_a_shows_field_that_does_not_exist(cli: Callable[..., Any],
                                           project: JudgedProject) -> None:
    project.suite["evaluators"][0]["shows"] = ["input.message", "trajectory.tool_result"]
    project.write()
    _fails(cli, project, "'trajectory.tool_result' is not a trajectory field")
    project.suite["evaluators"][0]["shows"] = ["input.mesage", "output.answer"]  # a typo
    project.write()
    error = _fails(cli, project, "shows 'input.mesage', which no case of the dataset has")
    text = (project.root / "oloproof.yaml").read_text(encoding="utf-8").splitlines()
    assert text[error["line"] - 1].strip().startswith("shows:")


def test_a_judge_no_entry_declares(cli: Callable[..., Any], project: JudgedProject) -> None:
    project.suite["evaluators"][0]["judge"] = "grader"
    project.write()
    error = _fails(cli, project, "names judge 'grader', which no `judges:` entry declares",
                   "declared: house")
    text = (project.root / "oloproof.yaml").read_text(encoding="utf-8").splitlines()
    assert text[error["line"] - 1].strip() == "judge: grader"


def test_an_unset_api_key_variable(cli: Callable[..., Any], project: JudgedProject) -> None:
    with ScriptedServer() as server:
        project.model_judge(server, api_key_env="NO_SUCH_JUDGE_KEY")
        error = _fails(cli, project, "NO_SUCH_JUDGE_KEY, which is not set")
        assert server.calls == 0
    text = (project.root / "oloproof.yaml").read_text(encoding="utf-8").splitlines()
    assert "api_key_env" in text[error["line"] - 1]
    # a judge nobody uses needs no key
    project.suite["judges"].append({"name": "house", "callable":
                                    f"{project.judges_module}:grade"})
    project.suite["judges"][0]["name"] = "unused"
    project.write()
    code, out, _ = cli("run", "--json", cwd=project.root)
    assert code in (0, 3), out


def test_other_mistakes_of_a_judge_entry(cli: Callable[..., Any],
                                         project: JudgedProject) -> None:
    project.suite["judges"] = [{"name": "house", "callable": "nowhere:grade"}]
    project.write()
    _fails(cli, project, "there is no module 'nowhere'")
    project.suite["judges"] = [{"name": "house", "model": "m", "callable": "x:y"}]
    project.write()
    _fails(cli, project, "exactly one of model")
    project.suite["judges"] = [{"name": "house", "callable": f"{project.judges_module}:grade"}]
    project.suite["evaluators"][0]["samples"] = 2
    project.write()
    _fails(cli, project, "samples: 2 can tie")
    del project.suite["evaluators"][0]["samples"]
    del project.suite["evaluators"][0]["criterion"]
    project.write()
    _fails(cli, project, "needs `criterion:`")
