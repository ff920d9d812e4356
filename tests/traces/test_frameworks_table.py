"""Every row of the frameworks × paths table
(docs/traces.md#frameworks-and-the-paths-that-read-them) names at least one test, and each
test it names exists."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rows() -> list[list[str]]:
    text = (ROOT / "docs" / "traces.md").read_text(encoding="utf-8")
    section = text.split("## Frameworks and the paths that read them", 1)[1].split("\n## ", 1)[0]
    table = [line for line in section.splitlines() if line.startswith("|")]
    return [[c.strip() for c in line.strip("|").split("|")] for line in table[2:]]


def test_every_framework_row_names_tests_that_exist() -> None:
    found = rows()
    frameworks = " ".join(row[0] for row in found)
    for name in ("Agents SDK", "LangGraph", "LangChain", "GenAI", "OTLP"):
        assert name in frameworks
    defined: dict[Path, set[str]] = {}
    for row in found:
        named = re.findall(r"`(tests/[\w/]+\.py)::(\w+)`", row[-1])
        assert named, f"row {row[0]!r} names no test"
        for path, test in named:
            file = ROOT / path
            if file not in defined:
                tree = ast.parse(file.read_text(encoding="utf-8"))
                defined[file] = {n.name for n in ast.walk(tree)
                                 if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}
            assert test in defined[file], f"{path}::{test} (row {row[0]!r}) does not exist"
