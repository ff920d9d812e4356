"""The docs show real output (issue 10 §2): each command a page shows is run, at 80 columns, and
what it prints must be what the page shows (`…` marks lines the page leaves out; run ids and
times are compared as placeholders).

`docs/getting-started.md` is one session from `oloproof init demo` on. From `docs/cli.md`, every
`--help` and the `oloproof init` examples are run.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from docs_session import Block, Session, console_blocks, matches

DOCS = Path(__file__).resolve().parents[1] / "docs"

pytestmark = pytest.mark.slow


def _check(block: Block, session: Session, page: str, only_help: bool = False) -> None:
    for step in block.steps:
        if only_help and not step.command.endswith("--help"):
            continue
        printed = session.run(step.command)
        assert matches(step.shown, printed), (
            f"docs/{page}:{block.line}: `$ {step.command}` printed, at 80 columns:\n"
            + printed)


def _strict_policy(page: Path) -> str:
    """The ```yaml block the page says is written to strict.yaml."""
    text = page.read_text(encoding="utf-8")
    found = re.search(r"written to `strict\.yaml`:\s*```yaml\n(.*?)```", text, re.S)
    assert found, "getting-started.md shows strict.yaml"
    return found.group(1)


def test_getting_started_shows_what_the_commands_print(tmp_path: Path) -> None:
    page = DOCS / "getting-started.md"
    session = Session(tmp_path)
    blocks = console_blocks(page)
    assert len(blocks) >= 6
    for block in blocks:
        if block.steps and block.steps[0].command.startswith(("python3 -m venv", "make demo")):
            continue  # installing: not run here
        if any(s.command.startswith("oloproof gate latest --policy strict.yaml")
               for s in block.steps):
            (session.cwd / "strict.yaml").write_text(_strict_policy(page), encoding="utf-8")
        _check(block, session, "getting-started.md")


def test_getting_started_says_what_make_demo_installs() -> None:
    text = " ".join((DOCS / "getting-started.md").read_text(encoding="utf-8").split())
    makefile = (DOCS.parent / "Makefile").read_text(encoding="utf-8")
    demo = makefile.split("\ndemo:", 1)[1].split("\n\n", 1)[0]
    test = makefile.split("\ntest:", 1)[1].split("\n\n", 1)[0]
    # make demo installs the package alone; make test is the target with the test extras.
    assert demo.split("\n", 1)[0].split() == ["install"]
    assert "-e ." in makefile.split("$(VENV)/.installed:", 1)[1].split("\n\n", 1)[0]
    assert ".installed-test" in test
    assert "(with its test extras)" not in text
    assert "the package alone: `make test` is the target that adds the test extras" in text


def test_cli_help_blocks_are_the_real_help(tmp_path: Path) -> None:
    blocks = [b for b in console_blocks(DOCS / "cli.md")
              if b.steps and b.steps[0].command.endswith("--help")]
    assert len(blocks) >= 8
    session = Session(tmp_path)
    for block in blocks:
        _check(block, session, "cli.md", only_help=True)


def test_cli_init_examples_are_real(tmp_path: Path) -> None:
    blocks = console_blocks(DOCS / "cli.md")
    first = next(b for b in blocks if b.steps[0].command == "oloproof init demo")
    assert any(s.command == "oloproof init --example list" for s in first.steps)
    _check(first, Session(tmp_path), "cli.md")
    # In a repository that already has a README.md and a .gitignore:
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "README.md").write_text("# mine\n", encoding="utf-8")
    (repo / ".gitignore").write_text("*.pyc\n", encoding="utf-8")
    second = next(b for b in blocks if b.steps[0].command == "oloproof init")
    _check(second, Session(repo), "cli.md")
