"""A session with no marked test imports nothing heavy and writes nothing
(docs/pytest.md#what-it-costs-a-session-without-marked-tests): the modules it holds are those of
the same session with `-p no:oloproof` plus the plugin's own few, and the directory it ran in is
as it was — no store, no file.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pytest_session import environment, run_pytest, write

pytestmark = pytest.mark.slow

PLAIN = '''
from counting import called


def test_plain():
    called("plain")
    assert 1 + 1 == 2
'''

# Which modules the session imported, read when pytest is done with it.
MODULES = '''

def pytest_unconfigure(config):
    import sys
    Path(__file__).with_name("modules.json").write_text(json.dumps(sorted(sys.modules)))
'''

#: What the plugin may import in a session with no marked test: itself and the package's
#: light top (lazy names; the error tree, which imports only the standard library).
PLUGIN_MODULES = {"oloproof", "oloproof.errors", "oloproof.lazy_names",
                  "oloproof.pytest_plugin", "oloproof.pytest_plugin.plugin"}
HEAVY = ("numpy", "scipy", "pydantic", "yaml", "rich", "click", "jsonschema", "sqlite3")


def _session(directory: Path, *args: str) -> tuple[set[str], set[Path]]:
    write(directory, {"test_plain.py": PLAIN})
    conftest = directory / "conftest.py"
    conftest.write_text(conftest.read_text(encoding="utf-8") + MODULES, encoding="utf-8")
    (directory / "modules.json").unlink(missing_ok=True)
    before = set(directory.rglob("*"))
    # (no bytecode written either, which the other sessions may write: the directory must be
    # as it was)
    ran = run_pytest(directory, "-q", *args, env=environment(
        OLOPROOF_STORE=str(directory / "elsewhere" / "store.sqlite"), PYTHONDONTWRITEBYTECODE="1"))
    assert ran.code == 0 and ran.calls["plain"] == 1, ran.out
    modules = set(json.loads((directory / "modules.json").read_text(encoding="utf-8")))
    written = set(directory.rglob("*")) - before - {directory / n for n in (
        "modules.json", "calls.log")}
    return modules, written


def test_a_session_without_marked_tests_imports_nothing_heavy_and_writes_nothing(
        tmp_path: Path) -> None:
    with_plugin, written = _session(tmp_path / "with")
    without, _ = _session(tmp_path / "without", "-p", "no:oloproof")
    assert written == set()  # no store (neither beside the rootdir nor $OLOPROOF_STORE), no file
    added = with_plugin - without
    assert "oloproof.pytest_plugin.plugin" in with_plugin
    assert added <= PLUGIN_MODULES, sorted(added - PLUGIN_MODULES)
    assert not [m for m in added if m.split(".")[0] in HEAVY]
    assert not [m for m in with_plugin if m.startswith("oloproof.")
                and m not in PLUGIN_MODULES]
