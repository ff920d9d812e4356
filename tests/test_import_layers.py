"""Imports run one way (docs/architecture.md, "Import order").

The order is read from the architecture page itself, so the page and the code cannot drift apart:
each line of its `Import order` block is one layer, lowest first; a module may import from lower
layers and from its own package, never from its own layer's other packages or from above. The
public API (`oloproof/__init__.py`) sits on top, and the packaged examples use only that API.
Imports inside functions and under `TYPE_CHECKING` count: they are dependencies all the same.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import oloproof

SRC = Path(oloproof.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def documented_layers() -> list[set[str]]:
    """The layers of the `Import order` block in docs/architecture.md, lowest first."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    found = re.search(r"^## Import order\n.*?^```\n(.*?)^```", text, re.S | re.M)
    assert found, "docs/architecture.md needs an `## Import order` section with a ``` block"
    layers = []
    for line in found.group(1).splitlines():
        names = line.split("#", 1)[0].replace("←", " ").replace(",", " ").split()
        if names:
            layers.append(set(names))
    return layers


def unit_of(dotted: str) -> str:
    """The package (or top-level module) a dotted module name belongs to: `suite`, `api`, ..."""
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else "oloproof"


def imports_of(path: Path) -> list[tuple[int, str]]:
    """Every `oloproof...` module that a source file imports, with its line."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("oloproof")]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module and (
            node.module == "oloproof" or node.module.startswith("oloproof.")
        ):
            if node.module == "oloproof":  # `from oloproof import api` imports oloproof.api
                found += [
                    (node.lineno, f"oloproof.{a.name}")
                    if (SRC / a.name).is_dir() or (SRC / f"{a.name}.py").is_file()
                    else (node.lineno, "oloproof")
                    for a in node.names
                ]
            else:
                found.append((node.lineno, node.module))
    return found


def source_files() -> list[tuple[Path, str]]:
    """Each engine source file (examples aside) with its dotted module name."""
    files = []
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC.parent).with_suffix("")
        if relative.parts[1] == "examples":
            continue
        files.append((path, ".".join(relative.parts).removesuffix(".__init__")))
    return files


def test_every_package_has_a_documented_layer() -> None:
    layers = documented_layers()
    placed = set().union(*layers)
    units = {unit_of(module) for _, module in source_files()} - {"oloproof"}
    assert units - placed == set(), (
        "place these packages in the Import order block of docs/architecture.md"
    )
    assert placed - units == set(), "the Import order block names packages that do not exist"
    assert sum(len(layer) for layer in layers) == len(placed), "a package is in two layers"


def test_imports_run_one_way() -> None:
    level = {unit: i for i, layer in enumerate(documented_layers()) for unit in layer}
    level["oloproof"] = len(level) + 1  # the public API is on top of everything
    wrong = []
    for path, module in source_files():
        mine = unit_of(module)
        for line, imported in imports_of(path):
            theirs = unit_of(imported)
            if theirs != mine and level[theirs] >= level[mine]:
                where = "above" if level[theirs] > level[mine] else "beside"
                wrong.append(f"{path.relative_to(SRC.parent)}:{line} imports {imported} "
                             f"({theirs} is {where} {mine})")
    assert wrong == []


def test_the_examples_use_only_the_public_api() -> None:
    wrong = [
        f"{path.relative_to(SRC.parent)}:{line} imports {imported}"
        for path in sorted((SRC / "examples").rglob("*.py"))
        for line, imported in imports_of(path)
        if imported != "oloproof"
    ]
    assert wrong == []


def test_the_checker_sees_a_wrong_import(tmp_path: Path) -> None:
    """The check itself can fail: an upward import in a file is reported with its line."""
    source = tmp_path / "loader.py"
    source.write_text("import os\n\ndef f():\n    from oloproof.execution.target import x\n")
    assert imports_of(source) == [(4, "oloproof.execution.target")]
    assert unit_of("oloproof.execution.target") == "execution"
