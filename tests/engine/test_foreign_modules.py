"""A project's system module of a name another project already imported in this process is
dropped before the project's own is imported (`execution.target.forget_foreign`), also while
another thread imports: Ray's threads and a host program's do; and a module of the project
edited since an earlier run in this process imported it is imported again."""

from __future__ import annotations

import importlib.util
import json
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

import oloproof
from oloproof.execution.target import forget_foreign, remember_imports


def _foreign(name: str, submodules: int) -> None:
    module = types.ModuleType(name)
    module.__file__ = "/another/project/" + name + ".py"
    for k in range(submodules):
        sys.modules[f"{name}.part{k}"] = types.ModuleType(f"{name}.part{k}")
    sys.modules[name] = module


def test_a_foreign_module_and_its_submodules_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "olo_app_a.py").write_text("")
    _foreign("olo_app_a", 3)

    forget_foreign("olo_app_a", tmp_path)

    assert not [n for n in sys.modules if n.split(".")[0] == "olo_app_a"]


class _Importing:
    """Another thread's imports, each made at the worst moment: while `forget_foreign` looks
    through `sys.modules`. A key of `sys.modules` whose comparison, and a module whose
    `__file__`, import a new module (add an entry), as a thread running meanwhile would
    between two steps of the scan; each time, not once in a few thousand switches."""

    def __init__(self) -> None:
        self.names: list[str] = []
        importing = self

        class Key(str):
            __hash__ = str.__hash__

            def __eq__(self, other: object) -> bool:
                importing.import_one()
                return str.__eq__(self, other)

            def startswith(self, *args: Any) -> bool:
                importing.import_one()
                return str.startswith(self, *args)

        class Module(types.ModuleType):
            @property
            def __file__(self) -> None:  # type: ignore[override]
                importing.import_one()
                return None

        self.key = Key("_olo_importing")
        sys.modules[self.key] = Module("_olo_importing")

    def import_one(self) -> None:
        name = f"_olo_churn_{len(self.names)}"
        self.names.append(name)
        sys.modules[name] = types.ModuleType(name)

    def stop(self) -> None:
        for name in [self.key, *self.names]:
            sys.modules.pop(name, None)


def test_while_another_thread_imports_every_foreign_module_is_dropped(tmp_path: Path) -> None:
    """Iterating over the live `sys.modules` while another thread adds entries skipped names
    or raised 'dictionary changed size during iteration': the foreign module stayed, and the
    project ran another project's system (seen under Ray). An import in the middle of each
    scan fails any scan over the live dict, every time."""
    (tmp_path / "olo_app_b.py").write_text("")
    importing = _Importing()
    try:
        for round_ in range(3):
            _foreign("olo_app_b", 30)
            forget_foreign("olo_app_b", tmp_path)
            left = [n for n in list(sys.modules) if n.split(".")[0] == "olo_app_b"]
            assert not left, f"round {round_}: {left[:3]} stayed"
        assert importing.names, "nothing was imported during the scans"
    finally:
        importing.stop()


def _edited_project(root: Path, answer: str, version: str) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "olo_edit_app.py").write_text(
        f"def run(case_input):\n    return {{'answer': {answer!r}}}\n", encoding="utf-8")
    suite = {"version": 1, "dataset": "data/cases.jsonl",
             "system": {"name": "edited", "version": version, "callable": "olo_edit_app:run"},
             "evaluators": [{"type": "regex", "criterion": "is_new", "field": "answer",
                             "pattern": "^new"}]}
    (root / "oloproof.yaml").write_text(json.dumps(suite), encoding="utf-8")
    (root / "release.yaml").write_text("version: 1\nrules: []\n", encoding="utf-8")
    (root / "data" / "cases.jsonl").write_text(
        "".join(json.dumps({"id": f"c{i}", "input": {}}) + "\n" for i in range(3)),
        encoding="utf-8")
    return root / "oloproof.yaml"


def test_a_run_after_the_system_module_was_edited_calls_the_edited_code(tmp_path: Path) -> None:
    """In one process (a notebook): run, edit app.py and its version, run again. The second
    run called the module the first had imported, and stored the old code's results under the
    new version."""
    first = oloproof.run(_edited_project(tmp_path, "old", "v1"))
    assert first.metric("is_new").passed == 0
    second = oloproof.run(_edited_project(tmp_path, "new answer", "v2"))
    assert second.metric("is_new").passed == 3
    third = oloproof.run(_edited_project(tmp_path, "old again", "v3"))
    assert third.metric("is_new").passed == 0


def test_an_edit_within_the_second_it_was_compiled_in_is_the_code_that_runs(
        tmp_path: Path, monkeypatch: Any) -> None:
    """Python trusts cached bytecode whose recorded source time (whole seconds) and size match
    the source: an edit to the same size within that second was imported again as the old
    code, and its results stored under the new version."""
    monkeypatch.setattr(sys, "dont_write_bytecode", False)  # (a cache is written, as usual)
    app = tmp_path / "olo_edit_app.py"
    second = (int(time.time()) - 60) * 10**9  # one whole second, the two edits inside it
    _edited_project(tmp_path, "olds", "v1")
    os.utime(app, ns=(second + 1_000, second + 1_000))
    assert oloproof.run(tmp_path / "oloproof.yaml").metric("is_new").passed == 0
    assert Path(importlib.util.cache_from_source(str(app))).exists()

    _edited_project(tmp_path, "news", "v2")  # the same size
    os.utime(app, ns=(second + 2_000, second + 2_000))
    assert oloproof.run(tmp_path / "oloproof.yaml").metric("is_new").passed == 3


def test_an_unchanged_module_is_not_imported_again(tmp_path: Path) -> None:
    oloproof.run(_edited_project(tmp_path / "p", "old", "v1"))
    loaded = sys.modules["olo_edit_app"]
    oloproof.run(tmp_path / "p" / "oloproof.yaml")
    assert sys.modules["olo_edit_app"] is loaded


def test_a_library_inside_the_project_folder_is_never_dropped(tmp_path: Path) -> None:
    """A module whose file is under the project folder but not at its top (a virtual
    environment inside the project) is not the project's: never dropped, whatever changed."""
    (tmp_path / "olo_top.py").write_text("")
    library = tmp_path / ".venv" / "olo_lib_inside.py"
    library.parent.mkdir()
    library.write_text("x = 1\n")
    module = types.ModuleType("olo_lib_inside")
    module.__file__ = str(library)
    sys.modules["olo_lib_inside"] = module
    try:
        remember_imports(tmp_path)
        library.write_text("x = 22\n")
        forget_foreign("olo_top", tmp_path)
        assert sys.modules.get("olo_lib_inside") is module
    finally:
        sys.modules.pop("olo_lib_inside", None)
