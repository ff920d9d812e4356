"""A misspelt `expected` key is pointed out under the metrics (issue 27, "errors that teach"):
three of the starter's cases say `"tool"` where `agent_tool_sequence` reads `expected.tools`,
so it excludes them; the report names the key it looked for and the one the cases hold."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import oloproof

STARTER = Path(oloproof.__file__).parent / "examples" / "starter"
MISSPELT = ("req-002", "req-005", "req-007")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "starter"
    shutil.copytree(STARTER, root, ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
    return root


def _rename(project: Path, cases: tuple[str, ...], old: str, new: str | None) -> None:
    path = project / "data" / "cases.jsonl"
    lines = []
    for line in path.read_text(encoding="utf-8").splitlines():
        case = json.loads(line)
        if case["id"] in cases:
            value = case["expected"].pop(old)
            if new is not None:
                case["expected"][new] = value
        lines.append(json.dumps(case))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


HINT = ("3 cases excluded from agent_tool_sequence because `expected.tools` is absent: did you "
        "mean `tool`? (3 cases have `expected.tool`)")


def test_a_misspelt_expected_key_is_named_under_the_table(cli, project, tmp_path):
    _rename(project, MISSPELT, "tools", "tool")
    summary = tmp_path / "summary.md"

    done = cli("run", "--markdown", str(summary), cwd=project)

    text = " ".join(done.out.split())
    reasons = text[text.index("Missing and excluded cases, by reason"):]
    assert "agent_tool_sequence: 3 excluded: no_declared_tools 3 " + HINT in reasons
    assert HINT.replace("agent_tool_sequence", "agent\\_tool\\_sequence") in " ".join(
        summary.read_text(encoding="utf-8").split())
    document = json.loads(cli("inspect", "latest", "--json", cwd=project).out)
    assert document["expected_key_hints"] == [
        {"criterion": "agent_tool_sequence", "key": "tools", "excluded": 3, "similar": "tool",
         "similar_cases": 3}]


def test_a_key_left_out_on_purpose_gives_no_hint(cli, project):
    _rename(project, MISSPELT, "tools", None)

    done = cli("run", "--json", cwd=project)

    document = json.loads(done.out)
    row = next(m for m in document["metrics"] if m["id"] == "agent_tool_sequence")
    assert row["excluded_by_reason"] == {"no_declared_tools": 3}
    assert "expected_key_hints" not in document


def test_with_trials_the_hint_counts_cases(cli, project):
    _rename(project, MISSPELT, "tools", "tool")
    _rename(project, ("req-001",), "answer", "answers")

    done = cli("run", "--trials", "2", "--json", cwd=project)

    hints = json.loads(done.out)["expected_key_hints"]
    assert hints == [
        {"criterion": "answer_correct", "key": "answer", "excluded": 1, "similar": "answers",
         "similar_cases": 1},
        {"criterion": "agent_tool_sequence", "key": "tools", "excluded": 3, "similar": "tool",
         "similar_cases": 3}]
