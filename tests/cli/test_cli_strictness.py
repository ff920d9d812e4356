"""Acceptance 2 — strictness: a wrong configuration stops `oloproof run` before any system call.

Each broken project below must make `oloproof run` exit 2 with one paragraph on stderr that
names the file and the line (or the case / field) and, where it helps, the accepted names; no
traceback; and the system is never called. The project is the starter `oloproof init` makes,
with its system wrapped so that every call appends to `calls.log`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MARK_CALLS = '''

# --- added by the test: every call of the system leaves a line in calls.log ---
import functools as _functools

_unmarked_run = run


@_functools.wraps(_unmarked_run)  # keeps the @system declaration (it lives in __dict__)
def run(case_input):
    with open(__file__.replace("app.py", "calls.log"), "a") as log:
        log.write("called\\n")
    return _unmarked_run(case_input)
'''


@pytest.fixture
def project(starter_project: Path) -> Path:
    """The starter project, with a system that leaves calls.log behind when called."""
    app = starter_project / "app.py"
    app.write_text(app.read_text(encoding="utf-8") + MARK_CALLS, encoding="utf-8")
    return starter_project


@dataclass
class Breakage:
    """What a broken project must be told: the file, its line, and words the message needs."""

    file: str
    line: int | None
    words: list[str] = field(default_factory=list)


def _replace(path: Path, old: str, new: str) -> int:
    """Replace the one occurrence of `old`; return the (1-based) line it was on."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} should occur once in {path.name}"
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def _cases(project: Path) -> list[str]:
    return (project / "data" / "cases.jsonl").read_text(encoding="utf-8").splitlines()


def _write_cases(project: Path, lines: list[str]) -> None:
    (project / "data" / "cases.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def _edit_case(project: Path, line: int, change: Callable[[dict], None]) -> None:
    lines = _cases(project)
    case = json.loads(lines[line - 1])
    change(case)
    lines[line - 1] = json.dumps(case)
    _write_cases(project, lines)


# ---- the broken projects ----------------------------------------------------------------------

def malformed_jsonl_line(project: Path) -> Breakage:
    lines = _cases(project)
    lines[4] = '{"id": "req-005", "input": {"order_id": "ord-003"'  # line 5, cut short
    _write_cases(project, lines)
    return Breakage("cases.jsonl", 5, ["JSON"])


def duplicate_case_id(project: Path) -> Breakage:
    lines = _cases(project)
    first = json.loads(lines[2])["id"]  # the id on line 3 ...
    _edit_case(project, 7, lambda case: case.update(id=first))  # ... again on line 7
    return Breakage("cases.jsonl", 7, [first, "line 3", "line 7"])


def case_without_id(project: Path) -> Breakage:
    _edit_case(project, 4, lambda case: case.pop("id"))
    return Breakage("cases.jsonl", 4, ["id"])


def case_without_input(project: Path) -> Breakage:
    _edit_case(project, 4, lambda case: case.pop("input"))
    case_id = json.loads(_cases(project)[3])["id"]
    return Breakage("cases.jsonl", 4, ["input", case_id])


def unknown_top_level_key(project: Path) -> Breakage:
    suite = project / "oloproof.yaml"
    line = _replace(suite, "min_slice_support: 5", "min_slice_support: 5\nthreshold: 3") + 1
    return Breakage("oloproof.yaml", line, ["threshold", "dataset", "evaluators", "metrics"])


def unknown_evaluator_type(project: Path) -> Breakage:
    line = _replace(project / "oloproof.yaml", "{type: agent_tool_sequence}",
                    "{type: agent_tool_sequense}")
    return Breakage("oloproof.yaml", line,
                    ["agent_tool_sequense", "agent_tool_sequence", "exact_match", "contains"])


def unknown_evaluator_field(project: Path) -> Breakage:
    line = _replace(project / "oloproof.yaml", "tool_name: lookup_order}",
                    "tool_name: lookup_order, min_call: 2}")
    return Breakage("oloproof.yaml", line, ["min_call", "tool_name", "min_calls"])


def rule_on_a_metric_nobody_produces(project: Path) -> Breakage:
    line = _replace(project / "release.yaml", "metric: answer_correct,",
                    "metric: answer_accuracy,")
    return Breakage("release.yaml", line,
                    ["answer_accuracy", "answer_correct", "agent_tool_sequence", "steps_p50"])


def yaml_syntax_error(project: Path) -> Breakage:
    line = _replace(project / "oloproof.yaml", "dataset: data/cases.jsonl",
                    "dataset: data/cases.jsonl: data/more.jsonl")
    return Breakage("oloproof.yaml", line, ["YAML"])


def unclosed_flow_list(project: Path) -> Breakage:
    """The parser notices on the next line; the message names the line with the `[`."""
    line = _replace(project / "oloproof.yaml", "slices: [metadata.policy, first_tool]",
                    "slices: [metadata.policy, first_tool")
    return Breakage("oloproof.yaml", line, ["YAML", "flow sequence", "not closed"])


def unclosed_flow_mapping(project: Path) -> Breakage:
    line = _replace(project / "oloproof.yaml", "  - {type: agent_tool_sequence}",
                    "  - {type: agent_tool_sequence")
    return Breakage("oloproof.yaml", line, ["YAML", "flow mapping", "not closed"])


def mistake_inside_a_closed_flow_list(project: Path) -> Breakage:
    """A list spread over lines and closed: the mistake is on its own line, which is named."""
    line = _replace(project / "oloproof.yaml", "slices: [metadata.policy, first_tool]",
                    "slices: [metadata.policy,\n         first_tool {x}]")
    return Breakage("oloproof.yaml", line + 1, ["YAML", "expected ',' or ']'"])


def dataset_that_does_not_exist(project: Path) -> Breakage:
    line = _replace(project / "oloproof.yaml", "dataset: data/cases.jsonl",
                    "dataset: data/missing.jsonl")
    return Breakage("oloproof.yaml", line, ["data/missing.jsonl"])


def expected_tools_not_a_list(project: Path) -> Breakage:
    _edit_case(project, 4, lambda case: case["expected"].update(tools="lookup_order"))
    return Breakage("cases.jsonl", 4, ["expected.tools", "list of strings"])


def expected_tools_not_all_strings(project: Path) -> Breakage:
    _edit_case(project, 6, lambda case: case["expected"].update(tools=["lookup_order", 3]))
    return Breakage("cases.jsonl", 6, ["expected.tools", "list of strings"])


def expected_route_not_a_list(project: Path) -> Breakage:
    _edit_case(project, 4, lambda case: case["expected"].update(route={"triage": "billing"}))
    return Breakage("cases.jsonl", 4, ["expected.route", "list of strings"])


def unknown_case_field(project: Path) -> Breakage:
    _edit_case(project, 9, lambda case: case.update(expect=case.pop("expected")))
    return Breakage("cases.jsonl", 9, ["expect", "expected", "metadata"])


def unknown_system_field(project: Path) -> Breakage:
    line = _replace(project / "oloproof.yaml", "  concurrency: 8", "  concurency: 8")
    return Breakage("oloproof.yaml", line, ["concurency", "concurrency", "timeout_s"])


def unknown_policy_key(project: Path) -> Breakage:
    line = _replace(project / "release.yaml", "confidence_level: 0.95", "confidence: 0.95")
    return Breakage("release.yaml", line, ["confidence", "confidence_level", "rules"])


def system_declaration_disagrees(project: Path) -> Breakage:
    """app.py says @system(version="v1"); oloproof.yaml is bumped to v2 alone."""
    line = _replace(project / "oloproof.yaml", "  version: v1 ", "  version: v2 ")
    return Breakage("oloproof.yaml", line, ["@system", "version", "v1", "v2"])


BREAKAGES = [
    malformed_jsonl_line, duplicate_case_id, case_without_id, case_without_input,
    unknown_top_level_key, unknown_evaluator_type, unknown_evaluator_field,
    rule_on_a_metric_nobody_produces, yaml_syntax_error, unclosed_flow_list,
    unclosed_flow_mapping, mistake_inside_a_closed_flow_list, dataset_that_does_not_exist,
    expected_tools_not_a_list, expected_tools_not_all_strings, expected_route_not_a_list,
    unknown_case_field, unknown_system_field, unknown_policy_key, system_declaration_disagrees,
]


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda f: f.__name__)
def test_a_wrong_configuration_exits_2_before_any_system_call(cli, project, breakage):
    expected = breakage(project)

    code, out, err = cli("run", cwd=project)

    assert code == 2, (out, err)
    assert not (project / "calls.log").exists(), "the system was called"
    assert "Traceback" not in err and "Traceback" not in out
    message = err.strip()
    assert message.startswith("Configuration error:")
    assert "\n\n" not in message, "one paragraph"
    where = f"{expected.file}:{expected.line}" if expected.line else expected.file
    assert where in message, f"the message names {where}: {message}"
    for word in expected.words:
        assert word in message, f"the message mentions {word!r}: {message}"


@pytest.mark.parametrize("breakage", [duplicate_case_id, unknown_evaluator_field,
                                      dataset_that_does_not_exist],
                         ids=lambda f: f.__name__)
def test_json_mode_prints_the_configuration_error_as_a_document(cli, project, breakage):
    expected = breakage(project)

    code, out, err = cli("run", "--json", cwd=project)

    assert code == 2
    assert not (project / "calls.log").exists()
    document = json.loads(out)  # stdout is exactly one JSON document
    error = document["error"]
    assert error["kind"] == "configuration"
    assert Path(error["file"]).name == expected.file.split("/")[-1]
    assert error["line"] == expected.line
    for word in expected.words:
        assert word in error["message"]
    assert err == ""


def test_the_json_error_names_the_case_of_a_bad_line(cli, project):
    expected_route_not_a_list(project)
    case_id = json.loads(_cases(project)[3])["id"]

    code, out, _ = cli("run", "--json", cwd=project)

    assert code == 2
    assert json.loads(out)["error"]["case"] == case_id


def test_a_malformed_line_is_not_described_with_a_second_line_number(cli, project):
    malformed_jsonl_line(project)

    _, _, err = cli("run", cwd=project)

    assert "cases.jsonl:5" in err
    assert "line 2" not in err, err
