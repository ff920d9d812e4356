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
            # `from oloproof import api` imports oloproof.api, `from oloproof.cli import crash`
            # oloproof.cli.crash: a name that is a module counts as that module.
            folder = SRC.joinpath(*node.module.split(".")[1:])
            found += [
                (node.lineno, f"{node.module}.{a.name}")
                if (folder / a.name).is_dir() or (folder / f"{a.name}.py").is_file()
                else (node.lineno, node.module)
                for a in node.names
            ]
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


def documented_inner_layers() -> dict[str, list[set[str]]]:
    """The second block of the `Import order` section: per package (`api/`, `cli/`), its
    modules' layers, lowest first (`a < b, c < d`)."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = re.search(r"^## Import order\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "docs/architecture.md needs an `## Import order` section"
    blocks = re.findall(r"^```\n(.*?)^```", section.group(1), re.S | re.M)
    assert len(blocks) >= 2, "the Import order section needs a second block: inside packages"
    packages = {}
    for line in blocks[1].splitlines():
        if not line.strip():
            continue
        package, _, order = line.partition("/")
        packages[package.strip()] = [
            {name.strip() for name in layer.split(",") if name.strip()}
            for layer in order.split("<")
        ]
    return packages


def inner_import_problems(package: str, layers: list[set[str]]) -> list[str]:
    """Each import inside `package` that goes to its own layer or above, and each module of the
    package the layers do not place (or place twice)."""
    level = {module: i for i, layer in enumerate(layers) for module in layer}
    modules = {p.stem for p in (SRC / package).glob("*.py")} - {"__init__"}
    wrong = [f"{package}/{m}.py is in no layer" for m in sorted(modules - set(level))]
    wrong += [f"{package}/ has no module {m}" for m in sorted(set(level) - modules)]
    if sum(len(layer) for layer in layers) != len(level):
        wrong.append(f"a module of {package}/ is in two layers")
    for name in sorted(modules & set(level)):
        path = SRC / package / f"{name}.py"
        for line, imported in imports_of(path):
            parts = imported.split(".")
            if parts[:2] != ["oloproof", package]:
                continue
            if len(parts) == 2:
                wrong.append(f"{package}/{name}.py:{line} imports the package {imported}")
                continue
            theirs = parts[2]
            if theirs not in level:
                continue  # named above as in no layer
            if level[theirs] >= level[name]:
                where = "above" if level[theirs] > level[name] else "beside"
                wrong.append(f"{package}/{name}.py:{line} imports {imported} "
                             f"({theirs} is {where} {name})")
    return wrong


def test_imports_inside_api_and_cli_run_one_way() -> None:
    inner = documented_inner_layers()
    assert set(inner) == {"api", "cli"}
    wrong = [problem for package, layers in inner.items()
             for problem in inner_import_problems(package, layers)]
    assert wrong == []


def test_the_inner_checker_sees_a_wrong_import() -> None:
    """The inner check can fail: with `reports` placed below `stored` (which it imports) and
    `result` left out, both are reported, with the line of the import."""
    wrong = inner_import_problems("api", [{"deciding"}, {"reports"}, {"stored", "running"}])
    assert "api/result.py is in no layer" in wrong
    assert any(problem.startswith("api/reports.py:") and problem.endswith(
        "imports oloproof.api.stored (stored is above reports)") for problem in wrong), wrong
