"""A name another module imports is not underscore-private (docs/architecture.md#import-order).

A leading underscore says "only this module uses it"; a function, class or constant that a second
module imports is part of what its module offers, and is named so. This reads every `from X import
_name` in the source, the tests and the benchmarks. A private *module* (`oloproof.stats._checks`,
`benchmarks._record`) is its package's own, imported by its neighbours: that is allowed.
"""

from __future__ import annotations

import ast
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ROOTS = (REPO / "src", REPO / "tests", REPO / "benchmarks")


def is_module(module: str, name: str, near: Path) -> bool:
    """`module.name` is a module or package (looked for under src/, the repo and `near`)."""
    for base in (REPO / "src", REPO, near):
        folder = base.joinpath(*module.split(".")) if module else base
        if (folder / f"{name}.py").is_file() or (folder / name).is_dir():
            return True
    return False


def private_imports(path: Path, base: Path = REPO) -> list[str]:
    """Each `from X import _name` of a file where `_name` is not a module, as `file:line: ...`
    (the file named from `base`)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, ast.ImportFrom):
            continue
        near = path.parent
        for _ in range(max(0, node.level - 1)):
            near = near.parent
        module = node.module or ""
        for alias in node.names:
            name = alias.name
            if name.startswith("_") and not name.startswith("__") \
                    and not is_module(module, name, near):
                found.append(f"{path.relative_to(base)}:{node.lineno}: from "
                             f"{'.' * node.level}{module} import {name}")
    return found


def test_no_module_imports_another_modules_private_name() -> None:
    found = [line for root in ROOTS for path in sorted(root.rglob("*.py"))
             for line in private_imports(path)]
    assert found == [], "give these names a plain name that says what they do:\n" + \
        "\n".join(found)


def test_the_checker_sees_a_private_import(tmp_path: Path) -> None:
    source = tmp_path / "caller.py"
    source.write_text("from oloproof.api.deciding import analysis_plan, _hidden\n"
                      "from benchmarks import _record\n"
                      "from oloproof.stats import _checks\n"
                      "from .neighbour import _helper\n", encoding="utf-8")
    assert private_imports(source, tmp_path) == [
        "caller.py:1: from oloproof.api.deciding import _hidden",
        "caller.py:4: from .neighbour import _helper"]
