"""A mistake in a suite or a policy is an error, never a silently different gate
(docs/configuration.md#how-oloproof-fails-closed).

Each project below is the starter `oloproof init` makes, broken in one way that used to be read
as something else: a key given twice (YAML keeps the last one), an empty policy (which allowed
everything), a labels file that is not there (read as "nobody labelled yet"), a schema or a
custom evaluator that does not load (a 40-line traceback and exit 1). Each must make
`oloproof run` exit 2 before any system call, with one paragraph naming the file and line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import pytest

MARK_CALLS = '''

# --- added by the test: every call of the system leaves a line in calls.log ---
import functools as _functools

_unmarked_run = run


@_functools.wraps(_unmarked_run)
def run(case_input):
    with open(__file__.replace("app.py", "calls.log"), "a") as log:
        log.write("called\\n")
    return _unmarked_run(case_input)
'''


@pytest.fixture
def project(starter_project: Path) -> Path:
    app = starter_project / "app.py"
    app.write_text(app.read_text(encoding="utf-8") + MARK_CALLS, encoding="utf-8")
    return starter_project


@dataclass
class Breakage:
    file: str
    line: int | None
    words: list[str] = field(default_factory=list)


def _lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def _line_of(path: Path, text: str) -> int:
    """The (1-based) line of the one line of `path` that starts with `text`."""
    found = [i for i, line in enumerate(_lines(path), 1) if line.startswith(text)]
    assert len(found) == 1, (text, found)
    return found[0]


def _insert_after(path: Path, anchor: str, new_lines: list[str]) -> int:
    """Insert `new_lines` after the line starting with `anchor`; the line of the first one."""
    lines = _lines(path)
    at = _line_of(path, anchor)
    path.write_text("\n".join(lines[:at] + new_lines + lines[at:]) + "\n", encoding="utf-8")
    return at + 1


def _append(path: Path, new_lines: list[str]) -> int:
    lines = _lines(path)
    path.write_text("\n".join(lines + new_lines) + "\n", encoding="utf-8")
    return len(lines) + 1


def _add_evaluator(project: Path, entry: str) -> int:
    return _insert_after(project / "oloproof.yaml", "evaluators:", [f"  - {entry}"])


# ---- keys given twice ---------------------------------------------------------------------------

def second_rules_key(project: Path) -> Breakage:
    policy = project / "release.yaml"
    first = _line_of(policy, "rules:")
    second = _append(policy, ["rules:", "  - {id: trivial, metric: answer_correct, min: 0.0}"])
    return Breakage("release.yaml", second, ["'rules'", f"line {first}", f"line {second}"])


def second_evaluators_key(project: Path) -> Breakage:
    suite = project / "oloproof.yaml"
    first = _line_of(suite, "evaluators:")
    second = _append(suite, ["evaluators:", "  - {type: agent_tool_sequence}"])
    return Breakage("oloproof.yaml", second, ["'evaluators'", f"line {first}", f"line {second}"])


def evaluator_field_twice(project: Path) -> Breakage:
    line = _add_evaluator(project, "{type: agent_tool_called, criterion: looked, "
                                   "tool_name: lookup_order, tool_name: issue_refund}")
    return Breakage("oloproof.yaml", line, ["'tool_name'", f"line {line}"])


def system_field_twice_in_a_block(project: Path) -> Breakage:
    suite = project / "oloproof.yaml"
    first = _line_of(suite, "  concurrency:")
    second = _insert_after(suite, "  concurrency:", ["  concurrency: 1"])
    return Breakage("oloproof.yaml", second, ["'concurrency'", f"line {first}",
                                              f"line {second}"])


def policy_key_twice(project: Path) -> Breakage:
    policy = project / "release.yaml"
    first = _line_of(policy, "confidence_level:")
    second = _insert_after(policy, "confidence_level:", ["confidence_level: 0.6"])
    return Breakage("release.yaml", second, ["'confidence_level'", f"line {first}",
                                             f"line {second}"])


def rule_field_twice(project: Path) -> Breakage:
    policy = project / "release.yaml"
    line = _insert_after(policy, "rules:", ["  - {id: floor, metric: answer_correct, min: 0.9, "
                                            "min: 0.1}"])
    return Breakage("release.yaml", line, ["'min'", f"line {line}"])


def suite_key_tagged_as_a_number(project: Path) -> Breakage:
    suite = project / "oloproof.yaml"
    line = _line_of(suite, "version:")
    lines = _lines(suite)
    lines[line - 1] = "!!int " + lines[line - 1]  # PyYAML's int('version') raised ValueError
    suite.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return Breakage("oloproof.yaml", line, ["does not fit the tag", "'version'"])


def rule_value_tagged_as_a_number(project: Path) -> Breakage:
    policy = project / "release.yaml"
    line = _insert_after(policy, "rules:", ["  - {id: floor, metric: answer_correct, "
                                            "min: !!float most}"])
    return Breakage("release.yaml", line, ["does not fit the tag", "'most'"])


# ---- empty policies -----------------------------------------------------------------------------

def empty_policy(project: Path) -> Breakage:
    (project / "release.yaml").write_text("", encoding="utf-8")
    return Breakage("release.yaml", 1, ["empty", "rules: []"])


def policy_of_comments_only(project: Path) -> Breakage:
    (project / "release.yaml").write_text("# to do\n", encoding="utf-8")
    return Breakage("release.yaml", 1, ["empty", "rules: []"])


def policy_without_rules(project: Path) -> Breakage:
    (project / "release.yaml").write_text("version: 1\nconfidence_level: 0.95\n",
                                          encoding="utf-8")
    return Breakage("release.yaml", 1, ["no `rules:`", "rules: []"])


def policy_with_an_empty_rules_key(project: Path) -> Breakage:
    (project / "release.yaml").write_text("version: 1\nrules:\n", encoding="utf-8")
    return Breakage("release.yaml", 2, ["without any rule", "rules: []"])


# ---- files an evaluator or a transform names ----------------------------------------------------

TRANSFORM = ("  transforms:\n    - {name: polite, field: message, template: \"Please: {value}\", "
             "validity_labels: labels/polite.jsonl}")


def missing_validity_labels(project: Path) -> Breakage:
    lines = _append(project / "oloproof.yaml", ["metamorphic:", *TRANSFORM.splitlines()])
    return Breakage("oloproof.yaml", lines + 2,
                    ["labels/polite.jsonl", "does not exist", "oloproof labels export"])


def unreadable_validity_labels(project: Path) -> Breakage:
    _append(project / "oloproof.yaml", ["metamorphic:", *TRANSFORM.splitlines()])
    (project / "labels").mkdir()
    (project / "labels" / "polite.jsonl").write_text(
        '{"case": "req-001~polite", "digest": "sha256:00", "kept": true}\n{"case": \n',
        encoding="utf-8")
    return Breakage("polite.jsonl", 2, ["JSON"])


def missing_schema_file(project: Path) -> Breakage:
    line = _add_evaluator(project, "{type: json_schema, schema_file: schemas/answer.json}")
    return Breakage("oloproof.yaml", line, ["schemas/answer.json", "does not exist"])


def schema_file_that_is_not_json(project: Path) -> Breakage:
    (project / "answer.json").write_text("{'type': 'object'}", encoding="utf-8")
    line = _add_evaluator(project, "{type: json_schema, schema_file: answer.json}")
    return Breakage("oloproof.yaml", line, ["answer.json", "not JSON"])


def invalid_inline_schema(project: Path) -> Breakage:
    line = _add_evaluator(project, "{type: json_schema, schema: {type: objekt}}")
    return Breakage("oloproof.yaml", line, ["not a valid JSON Schema", "objekt", "type"])


def invalid_schema_in_a_file(project: Path) -> Breakage:
    (project / "answer.json").write_text('{"properties": {"answer": {"minLength": -1}}}',
                                         encoding="utf-8")
    line = _add_evaluator(project, "{type: json_schema, schema_file: answer.json}")
    return Breakage("oloproof.yaml", line, ["answer.json", "not a valid JSON Schema",
                                            "properties/answer/minLength"])


def custom_evaluator_module_missing(project: Path) -> Breakage:
    line = _add_evaluator(project, "{type: custom, name: polite, callable: checks:polite}")
    return Breakage("oloproof.yaml", line, ["checks:polite", "no module 'checks'"])


def custom_evaluator_callable_missing(project: Path) -> Breakage:
    (project / "checks.py").write_text("def courteous(case, output, artifacts):\n"
                                       "    return True\n", encoding="utf-8")
    line = _add_evaluator(project, "{type: custom, name: polite, callable: checks:polite}")
    return Breakage("oloproof.yaml", line, ["checks:polite", "checks.py", "has no 'polite'"])


def custom_evaluator_module_that_raises(project: Path) -> Breakage:
    (project / "checks.py").write_text("import json\nTHRESHOLD = json.loads('{')\n",
                                       encoding="utf-8")
    line = _add_evaluator(project, "{type: custom, name: polite, callable: checks:polite}")
    return Breakage("oloproof.yaml", line, ["checks:polite", "raised JSONDecodeError"])


def custom_evaluator_callable_not_a_function(project: Path) -> Breakage:
    (project / "checks.py").write_text("polite = 3\n", encoding="utf-8")
    line = _add_evaluator(project, "{type: custom, name: polite, callable: checks:polite}")
    return Breakage("oloproof.yaml", line, ["checks:polite", "not a function"])


BREAKAGES = [
    second_rules_key, second_evaluators_key, evaluator_field_twice,
    system_field_twice_in_a_block, policy_key_twice, rule_field_twice,
    suite_key_tagged_as_a_number, rule_value_tagged_as_a_number,
    empty_policy, policy_of_comments_only, policy_without_rules, policy_with_an_empty_rules_key,
    missing_validity_labels, unreadable_validity_labels, missing_schema_file,
    schema_file_that_is_not_json, invalid_inline_schema, invalid_schema_in_a_file,
    custom_evaluator_module_missing, custom_evaluator_callable_missing,
    custom_evaluator_module_that_raises, custom_evaluator_callable_not_a_function,
]


@pytest.mark.parametrize("breakage", BREAKAGES, ids=lambda f: f.__name__)
def test_a_mistake_exits_2_before_any_system_call(cli, project, breakage):
    expected = breakage(project)

    code, out, err = cli("run", cwd=project)

    assert code == 2, (out, err)
    assert not (project / "calls.log").exists(), "the system was called"
    assert "Traceback" not in err and "Traceback" not in out
    message = err.strip()
    assert message.startswith("Configuration error:")
    assert "\n" not in message, "one paragraph"
    where = f"{expected.file}:{expected.line}" if expected.line else expected.file
    assert where in message, f"the message names {where}: {message}"
    for word in expected.words:
        assert word in message, f"the message mentions {word!r}: {message}"


@pytest.mark.parametrize("breakage", [second_rules_key, empty_policy, invalid_inline_schema],
                         ids=lambda f: f.__name__)
def test_json_mode_gives_the_same_error_as_a_document(cli, project, breakage):
    expected = breakage(project)

    code, out, err = cli("run", "--json", cwd=project)

    assert code == 2
    error = json.loads(out)["error"]
    assert error["kind"] == "configuration"
    assert Path(error["file"]).name == expected.file
    assert error["line"] == expected.line
    assert err == ""


def test_a_second_rules_key_no_longer_turns_a_block_into_an_allow(cli, project):
    """The issue's reproduction: appending one trivial rule used to replace all the others."""
    policy = project / "release.yaml"
    policy.write_text("version: 1\nrules:\n"
                      "  - {id: rarely-right, metric: answer_correct, max: 0.5}\n"
                      "  - {id: short-traces, metric: steps_p50, max: 8}\n", encoding="utf-8")
    code, out, _ = cli("run", cwd=project)
    assert code == 1, out  # the starter answers well above 50%: BLOCK on a FAIL

    second_rules_key(project)

    assert cli("run", cwd=project).code == 2


def test_gate_under_a_policy_with_a_key_twice_is_an_error_too(cli, project):
    assert cli("run", cwd=project).code == 0
    other = project / "other.yaml"
    other.write_text("version: 1\nrules: []\nrules:\n  - {id: a, metric: answer_correct, "
                     "min: 0.1}\n", encoding="utf-8")

    code, _, err = cli("gate", "--policy", str(other), cwd=project)

    assert code == 2
    assert "other.yaml:3" in err and "line 2" in err


def test_yaml_merge_keys_and_anchors_are_not_duplicates(cli, project):
    suite = project / "oloproof.yaml"
    text = suite.read_text(encoding="utf-8").replace(
        "  - {type: agent_tool_sequence}",
        "  - &sequence {type: agent_tool_sequence}\n"
        "  - {<<: *sequence, criterion: sequence_again}")
    suite.write_text(text, encoding="utf-8")

    code, out, err = cli("run", "--json", cwd=project)

    assert code == 0, err
    metrics = {m["id"] for m in json.loads(out)["metrics"]}
    assert {"agent_tool_sequence", "sequence_again"} <= metrics


def test_the_same_key_in_two_mappings_is_fine(cli, project):
    """`tool_name` in two evaluators, `min` in two rules: different mappings, no duplicate."""
    _add_evaluator(project, "{type: agent_tool_called, criterion: refunded, "
                            "tool_name: issue_refund}")

    code, _, err = cli("run", cwd=project)

    assert code == 0, err


# ---- `rules: []` decides nothing, and says so ---------------------------------------------------

NOTHING = "the policy decides nothing (`rules: []`)"


def test_rules_empty_on_purpose_allows_and_says_so(cli, project):
    (project / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")

    code, out, err = cli("run", cwd=project)

    assert code == 0, err
    assert NOTHING in out
    assert "(no rules)" in out

    code, out, _ = cli("run", "--json", cwd=project)
    document = json.loads(out)
    assert document["decisions"] == []
    assert any(NOTHING in w for w in document["warnings"])

    code, out, _ = cli("gate", cwd=project)
    assert code == 0
    code, out, _ = cli("gate", "--json", cwd=project)
    assert any(NOTHING in w for w in json.loads(out)["warnings"])


def test_a_policy_with_rules_does_not_say_it_decides_nothing(cli, project):
    code, out, _ = cli("run", "--json", cwd=project)

    assert code == 0
    assert not any(NOTHING in w for w in json.loads(out)["warnings"])


def test_gate_with_an_empty_policy_file_is_an_error(cli, project):
    assert cli("run", cwd=project).code == 0
    (project / "empty.yaml").write_text("", encoding="utf-8")

    code, _, err = cli("gate", "--policy", "empty.yaml", cwd=project)

    assert code == 2
    assert "empty.yaml:1" in err and "rules: []" in err


# ---- files that do load -------------------------------------------------------------------------

def test_an_empty_labels_file_is_nobody_has_labelled_yet(cli, project):
    _append(project / "oloproof.yaml", ["metamorphic:", *TRANSFORM.splitlines()])
    (project / "labels").mkdir()
    (project / "labels" / "polite.jsonl").write_text("", encoding="utf-8")

    code, out, err = cli("run", "--json", cwd=project)

    assert code in (0, 1, 3), err  # the run is decided; what it decides is the starter's
    validity = json.loads(out)["transforms"][0]
    assert (validity["transform"], validity["kept"], validity["checked"]) == ("polite", 0, False)


def test_a_valid_schema_file_and_a_custom_callable_load(cli, project):
    (project / "answer.json").write_text('{"type": "object", "required": ["answer"]}',
                                         encoding="utf-8")
    (project / "checks.py").write_text("def polite(case, output, artifacts):\n"
                                       "    return bool(output)\n", encoding="utf-8")
    _add_evaluator(project, "{type: json_schema, schema_file: answer.json}")
    _add_evaluator(project, "{type: custom, name: polite, callable: checks:polite}")

    code, out, err = cli("run", "--json", cwd=project)

    assert code == 0, err
    rows = {m["id"]: m for m in json.loads(out)["metrics"]}
    assert rows["json_schema"]["passed"] == rows["json_schema"]["observed"] > 0
    assert rows["polite"]["passed"] == rows["polite"]["observed"] > 0


def test_labels_export_never_replaces_labels_without_force(cli, project):
    _append(project / "oloproof.yaml", ["metamorphic:", *TRANSFORM.splitlines()])

    (project / "labels").mkdir()  # output folders are never made (docs/ci.md#output-files)
    code, _, err = cli("labels", "export", "--transform", "polite", "-o", "labels/polite.jsonl",
                       cwd=project)
    assert code == 0, err
    labels = project / "labels" / "polite.jsonl"
    rows = [json.loads(line) for line in labels.read_text(encoding="utf-8").splitlines()]
    labelled = "".join(json.dumps(dict(r, kept=True)) + "\n" for r in rows)
    labels.write_text(labelled, encoding="utf-8")

    code, _, err = cli("labels", "export", "--transform", "polite", "-o", "labels/polite.jsonl",
                       cwd=project)

    assert code == 2
    assert f"already holds {len(rows)} line(s)" in err and "--force" in err
    assert labels.read_text(encoding="utf-8") == labelled, "the labels are kept"

    code, _, err = cli("labels", "export", "--transform", "polite", "-o", "labels/polite.jsonl",
                       "--force", cwd=project)
    assert code == 0, err
    assert '"kept": null' in labels.read_text(encoding="utf-8")
