"""One registry for evaluator types and custom checks, with one rule for duplicates
(docs/configuration.md#evaluators).

Custom checks are written as a user writes them — `@oloproof.evaluator(name=...)` in the system's
module or in a checks module named by `callable:` — and judged through `oloproof.run`. Names are
unique per test: the registry lives as long as the process.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import oloproof
from oloproof.document import RateRow
from oloproof.evaluators.registry import REGISTRY

SYSTEM = '''
from oloproof import evaluator

def run(case_input):
    return {"reply": case_input["reply"]}
'''


def project(root: Path, evaluators: list[str], app_extra: str = "",
            modules: dict[str, str] | None = None) -> Path:
    """A project of four cases (two polite replies) with these evaluator entries."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "app.py").write_text(SYSTEM + textwrap.dedent(app_extra))
    for name, source in (modules or {}).items():
        (root / f"{name}.py").write_text(textwrap.dedent(source))
    replies = ["please wait", "no", "Please hold", "go away"]
    (root / "cases.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "input": {"reply": r}}) + "\n" for i, r in enumerate(replies)))
    (root / "oloproof.yaml").write_text(
        "version: 1\nproject: registry\ndataset: cases.jsonl\n"
        "system: {name: desk, version: v1, callable: app:run}\n"
        "evaluators:\n" + "".join(f"  - {e}\n" for e in evaluators))
    (root / "release.yaml").write_text("version: 1\nrules: []\n")
    return root / "oloproof.yaml"


def counts(result: oloproof.RunResult, metric: str) -> tuple[int, int]:
    """(passed, failed) of a criterion."""
    row = next(m for m in result.metrics if m.id == metric)
    assert isinstance(row, RateRow)
    return row.passed, row.observed - row.passed


POLITE = '''
@evaluator(name="{name}")
def polite(case, output, artifacts):
    return "please" in output["reply"].lower()
'''


def test_a_check_decorated_in_the_system_module_needs_no_callable(tmp_path: Path) -> None:
    config = project(tmp_path, ["{type: custom, name: polite_in_app}"],
                     POLITE.format(name="polite_in_app"))
    result = oloproof.run(config, store=tmp_path / "s.sqlite")
    assert counts(result, "polite_in_app") == (2, 2)


def test_a_callable_may_name_a_function_nobody_decorated(tmp_path: Path) -> None:
    checks = "def polite(case, output, artifacts):\n    return 'please' in output['reply']\n"
    config = project(tmp_path, ["{type: custom, name: plain_polite, "
                                "callable: 'plain_checks:polite'}"],
                     modules={"plain_checks": checks})
    result = oloproof.run(config, store=tmp_path / "s.sqlite")
    assert counts(result, "plain_polite") == (1, 3)  # "Please hold" has a capital P
    assert REGISTRY.check("plain_polite") is sys.modules["plain_checks"].polite


def test_one_name_from_two_places_is_an_error_naming_both(tmp_path: Path) -> None:
    other = "from oloproof import evaluator\n" + POLITE.format(name="twice_named")
    config = project(tmp_path, ["{type: custom, name: twice_named, "
                                "callable: 'other_checks:polite'}"],
                     POLITE.format(name="twice_named"), {"other_checks": other})
    with pytest.raises(oloproof.ConfigError) as caught:
        oloproof.run(config, store=tmp_path / "s.sqlite")
    message = str(caught.value)
    assert "'twice_named' is registered twice" in message
    assert f"app.polite ({tmp_path / 'app.py'}:" in message
    assert f"other_checks.polite ({tmp_path / 'other_checks.py'}:" in message
    assert not (tmp_path / "s.sqlite").exists()  # found before anything ran or was stored


def test_a_custom_check_cannot_take_an_evaluator_types_name(tmp_path: Path) -> None:
    config = project(tmp_path, ["{type: exact_match, field: reply, expected_field: reply}"],
                     POLITE.format(name="contains"))
    with pytest.raises(oloproof.ConfigError) as caught:
        oloproof.run(config, store=tmp_path / "s.sqlite")
    message = str(caught.value)
    assert "'contains' is registered twice" in message
    assert "the evaluator type oloproof.evaluators.output.Contains (" in message
    assert "evaluators/output.py:" in message and "app.py:" in message
    assert REGISTRY.evaluator_type("contains") is not None  # the built-in type is kept


FRESH_PROCESS = """
from oloproof.evaluators.registry import REGISTRY
assert REGISTRY.evaluator_type("contains") is not None, "a built-in type not found"
"""

EARLY_CHECK = """
from oloproof import evaluator
from oloproof.errors import ConfigError
try:
    evaluator(name="regex")(lambda case, output, artifacts: True)
except ConfigError as exc:
    print(exc.message)
else:
    print("registered")
"""


@pytest.mark.parametrize("script", [FRESH_PROCESS, EARLY_CHECK], ids=["lookup", "check"])
def test_the_built_in_types_are_there_whatever_was_imported_first(script: str) -> None:
    """In a fresh interpreter, before any evaluator module is imported: a lookup finds the
    built-in types, and a check cannot take a built-in type's name."""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    if script is EARLY_CHECK:
        assert "'regex' is registered twice" in done.stdout
        assert "the evaluator type oloproof.evaluators.output.Regex" in done.stdout


def test_importing_a_module_again_replaces_its_own_checks(tmp_path: Path) -> None:
    """A notebook cell run twice, or a project's module imported afresh: the same place."""
    (tmp_path / "reloaded_checks.py").write_text(
        "from oloproof import evaluator\n" + POLITE.format(name="reloaded"))
    sys.path.insert(0, str(tmp_path))
    try:
        first = importlib.import_module("reloaded_checks").polite
        second = importlib.reload(sys.modules["reloaded_checks"]).polite
    finally:
        sys.path.remove(str(tmp_path))
    assert first is not second
    assert REGISTRY.check("reloaded") is second


def test_a_custom_check_written_as_a_type_gets_the_right_spelling(tmp_path: Path) -> None:
    config = project(tmp_path, ["{type: hinted_polite}"], POLITE.format(name="hinted_polite"))
    with pytest.raises(oloproof.ConfigError,
                       match="write type: custom, name: hinted_polite") as caught:
        oloproof.run(config, store=tmp_path / "s.sqlite")
    assert caught.value.line == 6


def test_an_evaluator_type_written_as_a_custom_check_is_an_error(tmp_path: Path) -> None:
    config = project(tmp_path, ["{type: custom, name: regex}"])
    with pytest.raises(oloproof.ConfigError, match=r"'regex' is an evaluator type, not a "
                       r"custom check: write \{type: regex\}"):
        oloproof.run(config, store=tmp_path / "s.sqlite")


@pytest.mark.parametrize(("callable_", "says"), [
    ("absent_checks:polite", "there is no module 'absent_checks'"),
    ("broken_checks:polite", "importing 'broken_checks' raised ZeroDivisionError"),
    ("plain_module:nope", r"plain_module\.py has no 'nope'"),
    ("plain_module:VALUE", r"is not a function \(it is a int\)"),
])
def test_a_callable_that_does_not_load_is_a_configuration_error(
    tmp_path: Path, callable_: str, says: str
) -> None:
    modules = {"broken_checks": "1 / 0\n", "plain_module": "VALUE = 3\n"}
    config = project(tmp_path, [f"{{type: custom, name: unloadable, callable: '{callable_}'}}"],
                     modules=modules)
    with pytest.raises(oloproof.ConfigError, match=says) as caught:
        oloproof.run(config, store=tmp_path / "s.sqlite")
    assert caught.value.file == str(config) and caught.value.line == 6


def test_two_checks_of_one_name_in_one_module_stop_the_command_before_any_call(
    tmp_path: Path, cli: Callable[..., Any]
) -> None:
    second = POLITE.format(name="named_twice_in_app").replace("def polite", "def polite_too")
    project(tmp_path, ["{type: custom, name: named_twice_in_app}"],
            POLITE.format(name="named_twice_in_app") + second)
    code, out, err = cli("run", cwd=tmp_path)
    assert code == 2, (out, err)
    assert "'named_twice_in_app' is registered twice" in err
    assert "app.polite (" in err and "app.polite_too (" in err
    assert not (tmp_path / ".oloproof").exists()
