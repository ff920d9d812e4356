"""docs/architecture.md names every module where it lives (its "Packages" table).

Each package's row must name each of the package's modules in backticks (`writer`, `sql`);
each top-level module has a row of its own. Private modules (`_lazy.py`) and `__init__.py` are
the package's business. With the import-order test beside it, the page cannot fall behind the
layout.
"""

from __future__ import annotations

import re
from pathlib import Path

import oloproof

SRC = Path(oloproof.__file__).parent
ARCHITECTURE = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"


def package_rows() -> dict[str, str]:
    """The Packages table: the first cell's name (`store/`, `digest.py`) → the row's text."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = re.search(r"^## Packages\n(.*?)(?=^## )", text, re.S | re.M)
    assert section, "docs/architecture.md needs a `## Packages` section with a table"
    rows = {}
    for line in section.group(1).splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        found = re.fullmatch(r"`([^`]+)`", cells[0]) if line.startswith("|") else None
        if found:
            rows[found.group(1)] = "|".join(cells[1:])
    return rows


def test_every_module_is_named_in_the_packages_table() -> None:
    rows = package_rows()
    unnamed = []
    for path in sorted(SRC.glob("*.py")):
        if path.name == "__init__.py":
            continue
        if path.name not in rows:
            unnamed.append(path.name)
    for package in sorted(p for p in SRC.iterdir() if (p / "__init__.py").is_file()):
        row = rows.get(f"{package.name}/")
        if row is None:
            unnamed.append(f"{package.name}/")
            continue
        named = set(re.findall(r"`([A-Za-z_]\w*)(?:\.py)?`", row))
        unnamed += [f"{package.name}/{m.name}" for m in sorted(package.glob("*.py"))
                    if not m.name.startswith("_") and m.stem not in named]
    assert unnamed == [], "name these in the Packages table of docs/architecture.md"


def test_the_table_names_nothing_that_is_gone() -> None:
    def exists(name: str) -> bool:
        return (SRC / name).is_dir() if name.endswith("/") else (SRC / name).is_file()

    gone = [name for name in package_rows() if name != "oloproof/__init__.py" and not exists(name)]
    assert gone == []
