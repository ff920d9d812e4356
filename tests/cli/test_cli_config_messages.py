"""Configuration messages in the user's words (issue 10 §2, "small things seen").

Each test breaks a fresh copy of a packaged project in one way and runs the command line: exit 2
before any system call, one paragraph naming the file and line, saying what the value must be —
in the words of a YAML or JSON file, never pydantic's ("Tuple should have at least 1 item",
"Input should be a valid integer", "Value error, ...").
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

import oloproof

EXAMPLES = Path(oloproof.__file__).parent / "examples"
PYDANTIC_WORDS = re.compile(r"should (be|have)|Input should|Value error|Tuple|validation|"
                            r"pydantic|dictionary|type=|\[type")

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


def _copy(name: str, tmp_path: Path, *, mark_calls: bool = True) -> Path:
    project = tmp_path / name
    shutil.copytree(EXAMPLES / name, project,
                    ignore=shutil.ignore_patterns("__pycache__", ".oloproof"))
    if mark_calls:
        app = project / "app.py"
        app.write_text(app.read_text(encoding="utf-8") + MARK_CALLS, encoding="utf-8")
    return project


@pytest.fixture
def starter(tmp_path: Path) -> Path:
    return _copy("starter", tmp_path)


@pytest.fixture
def stateful(tmp_path: Path) -> Path:
    return _copy("stateful-agent", tmp_path, mark_calls=False)


def _replace(path: Path, old: str, new: str) -> int:
    """Replace the one occurrence of `old` in `path`; the (1-based) line it is on."""
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new), encoding="utf-8")
    return text[: text.index(old)].count("\n") + 1


def _set_line(path: Path, number: int, line: str) -> None:
    lines = path.read_text(encoding="utf-8").splitlines()
    lines[number - 1] = line
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def _config_error(cli, project: Path, *args: str) -> str:
    code, out, err = cli("run", *args, cwd=project)
    assert code == 2, (out, err)
    assert not (project / "calls.log").exists(), "the system was called"
    assert not (project / ".oloproof").exists(), "the store was opened"
    message = err.strip()
    assert message.startswith("Configuration error: ") and "\n" not in message, message
    assert "Traceback" not in message
    assert not PYDANTIC_WORDS.search(message), f"pydantic's words leaked: {message}"
    return message


# ---- case ids ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("written", "expected"), [
    ('"id": 2', 'the case id must be a string, not 2 (write "id": "2")'),
    ('"id": null', "the case id must be a string, not null"),
    ('"id": ["a"]', 'the case id must be a string, not ["a"]'),
    ('"id": ""', "the case id is empty"),
])
def test_a_case_id_that_is_not_a_string_says_it_must_be_one(cli, starter, written, expected):
    cases = starter / "data" / "cases.jsonl"
    line = _replace(cases, '"id": "req-003"', written)

    message = _config_error(cli, starter)

    assert f"cases.jsonl:{line}: " in message and expected in message
    assert "has no id" not in message


def test_a_case_without_an_id_says_so(cli, starter):
    cases = starter / "data" / "cases.jsonl"
    line = _replace(cases, '"id": "req-004", ', "")

    message = _config_error(cli, starter)

    assert f"cases.jsonl:{line}: " in message and 'the case has no "id"' in message


# ---- booleans are true or false -----------------------------------------------------------------

@pytest.mark.parametrize("value", ['"no"', '"false"', "0", '"off"', "1", '"yes"'])
def test_a_quoted_or_numeric_boolean_is_refused(cli, starter, value):
    line = _replace(starter / "oloproof.yaml", "{type: agent_tool_sequence}",
                    f"{{type: agent_tool_sequence, ordered: {value}}}")

    message = _config_error(cli, starter)

    assert f"oloproof.yaml:{line}: evaluators[2].ordered: must be true or false, unquoted" \
        in message


def test_a_real_boolean_is_still_accepted(cli, starter):
    _replace(starter / "oloproof.yaml", "{type: agent_tool_sequence}",
             "{type: agent_tool_sequence, ordered: true}")

    code, _, err = cli("run", cwd=starter)

    assert code == 0, err


def test_case_sensitive_takes_only_true_or_false(cli, starter):
    line = _replace(starter / "oloproof.yaml", "expected_field: answer}",
                    'expected_field: answer, case_sensitive: "yes"}')

    message = _config_error(cli, starter)

    assert f"oloproof.yaml:{line}: evaluators[0].case_sensitive: must be true or false" \
        in message and "(got 'yes')" in message


def test_a_policy_boolean_is_strict_too(cli, starter):
    line = _replace(starter / "release.yaml", "confidence_level: 0.95",
                    'confidence_level: 0.95\nallow_approximate_methods: "no"') + 1

    message = _config_error(cli, starter)

    assert f"release.yaml:{line}: allow_approximate_methods: must be true or false" in message


# ---- plain words instead of pydantic's ------------------------------------------------------

@pytest.mark.parametrize(("old", "new", "expected"), [
    ("{type: agent_constraints_satisfied}", "{type: agent_constraints_satisfied, constraints: []}",
     "evaluators[3].constraints: needs at least 1 item"),
    ("concurrency: 8", "concurrency: many", "system.concurrency: must be a whole number "
     "(got 'many')"),
    ("concurrency: 8", "concurrency: 0", "system.concurrency: must be at least 1 (got 0)"),
    ("quantile: 0.5}", "quantile: 1.5}", "metrics[0].quantile: must be less than 1"),
    ("quantile: 0.5}", "quantile: [1]}", "metrics[0].quantile: must be a number"),
    ("name: starter-desk", "name: ''", "system.name: must not be empty"),
    ("min_slice_support: 5", "min_slice_support: 2.5", "min_slice_support: must be a whole "
     "number"),
    ("{type: agent_tool_sequence}", "{type: agent_tool_sequence, mode: sideways}",
     "evaluators[2].mode: must be 'exact', 'unordered', 'subset' or 'superset' "
     "(got 'sideways')"),
])
def test_suite_errors_say_what_the_value_must_be(cli, starter, old, new, expected):
    line = _replace(starter / "oloproof.yaml", old, new)

    message = _config_error(cli, starter)

    assert f"oloproof.yaml:{line}: {expected}" in message


def test_policy_errors_say_what_the_value_must_be(cli, starter):
    line = _replace(starter / "release.yaml", "answer_correct, min: 0.85}",
                    "answer_correct, min: high}")

    message = _config_error(cli, starter)

    assert f"release.yaml:{line}: rules[0].min: must be a number (got 'high')" in message


# ---- errors that teach: the shape to write, the name meant, the file given ------------------

@pytest.mark.parametrize(("old", "new", "expected"), [
    ("callable: app:run", "callable: app.run",
     "system.callable: write module:attribute, e.g. app:run (got 'app.run': did you mean "
     "'app:run'?)"),
    ("callable: app:run", "callable: run",
     "system.callable: write module:attribute, e.g. app:run (got 'run')"),
    ("{type: agent_tool_sequence}", "{type: agent_tool_sequence, mdoe: subset}",
     "unknown key 'mdoe' in evaluators[2] (did you mean 'mode'?); accepted keys: type, "
     "criterion, mode, ordered, arguments"),
    ("{type: agent_tool_sequence}", "{type: agent_tool_sequence, xyzzy: 1}",
     "unknown key 'xyzzy' in evaluators[2]; accepted keys: type,"),
    ("dataset: data/cases.jsonl", "datset: data/cases.jsonl",
     "unknown top-level key 'datset' (did you mean 'dataset'?); accepted keys: version,"),
    ("{type: agent_tool_sequence}", "{type: agent_tool_sequenc}",
     "unknown evaluator type 'agent_tool_sequenc' (did you mean 'agent_tool_sequence'?); "
     "accepted types:"),
    ("concurrency: 8", "concurency: 8",
     "unknown key 'concurency' in system (did you mean 'concurrency'?)"),
])
def test_errors_say_what_to_write_and_the_name_meant(cli, starter, old, new, expected):
    line = _replace(starter / "oloproof.yaml", old, new)

    message = _config_error(cli, starter)

    assert f"oloproof.yaml:{line}: {expected}" in message
    assert "must match the pattern" not in message


def test_a_custom_checks_callable_says_what_to_write(cli, starter):
    _replace(starter / "oloproof.yaml", "  - {type: agent_constraints_satisfied}\n",
             "  - {type: agent_constraints_satisfied}\n"
             "  - {type: custom, name: polite, callable: checks.polite}\n")

    message = _config_error(cli, starter)

    assert "callable: write module:attribute, e.g. app:run (got 'checks.polite': did you mean " \
           "'checks:polite'?)" in message


def test_a_policy_key_misspelt_names_the_one_meant(cli, starter):
    line = _replace(starter / "release.yaml", "confidence_level:", "confidence_levl:")

    message = _config_error(cli, starter)

    assert f"release.yaml:{line}: unknown top-level key 'confidence_levl' (did you mean " \
           "'confidence_level'?)" in message


@pytest.mark.parametrize("command", [("run",), ("gate", "latest")])
def test_a_missing_policy_is_named_as_given(cli, starter, command):
    if command[0] == "gate":
        assert cli("run", cwd=starter).code in (0, 1)
    code, _, err = cli(*command, "--policy", "release-v1.yaml", cwd=starter)

    assert code == 2
    assert "release-v1.yaml: policy file release-v1.yaml not found; check the path given " \
           "(--policy" in err
    assert "(release.yaml)" not in err


def test_a_missing_suite_is_named_as_given(cli, starter):
    code, _, err = cli("run", "--config", "suite-v2.yaml", cwd=starter)

    assert code == 2 and "suite file suite-v2.yaml not found; check the path given" in err


# ---- validity labels ----------------------------------------------------------------------------

@pytest.mark.parametrize(("line_text", "expected"), [
    ('{"case": "req-101~polite", ', "not valid JSON at column 28"),
    ("[1, 2]", "a label is a JSON object, not a list"),
    ('{"case": 3, "digest": "sha256:x", "kept": true}', "the label's 'case' is the number 3"),
    ('{"case": "req-101~polite", "kept": true}', "the label's 'digest' is missing"),
    ('{"case": "req-101~polite", "digest": "sha256:x", "kept": "yes"}',
     'kept must be true, false or null (got "yes")'),
])
def test_a_malformed_labels_line_names_the_file_and_line(cli, stateful, line_text, expected):
    labels = stateful / "labels" / "polite.jsonl"
    _set_line(labels, 3, line_text)

    message = _config_error(cli, stateful)

    assert f"{labels}:3" in message and expected in message
    assert "oloproof labels export" in message or "kept must be" in message
    assert "line 2" not in message, "no second line number from the JSON parser"


# ---- run references -----------------------------------------------------------------------------

@pytest.fixture
def two_runs(cli, starter) -> Path:
    assert cli("run", cwd=starter).code == 0
    assert cli("run", cwd=starter).code == 0
    return starter


@pytest.mark.parametrize("command", ["inspect", "gate", "cases"])
def test_latest_with_a_negative_count_says_how_to_count(cli, two_runs, command):
    code, out, err = cli(command, "latest~-1", cwd=two_runs)

    assert code == 2 and out == ""
    assert err.startswith("Usage error: 'latest~-1': latest~N counts back from the newest run")
    assert "0 or more" in err and "run(s)" not in err


def test_latest_past_the_oldest_run_names_what_exists(cli, two_runs):
    code, _, err = cli("inspect", "latest~5", "--json", cwd=two_runs)

    error = json.loads(_)["error"] if _ else {}
    assert code == 2 and err == ""
    assert error["kind"] == "usage"
    assert error["message"] == ("'latest~5' names the run 5 before the newest, and only 2 runs "
                                "are stored: use latest to latest~1; `oloproof runs` lists them")
