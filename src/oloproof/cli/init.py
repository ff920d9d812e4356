"""`oloproof init`: a starter project, or a packaged example, copied into a directory
(the copying is `scaffold`'s)."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import click

from oloproof.cli.exits import EXIT_CONFIG, guard
from oloproof.cli.group import cli


@cli.command()
@click.argument("directory", required=False, default=".")
@click.option("--example", "example", default=None,
              help="Copy a packaged example instead of the starter project; `list` names them.")
@click.option("--force", is_flag=True,
              help="Replace files the project would write that DIRECTORY already holds.")
def init(directory: str, example: str | None, force: bool) -> None:
    """Scaffold a small working project (or copy a packaged example) into DIRECTORY.

    Never overwrites a file: if DIRECTORY holds any file the project would write, nothing is
    written and the files are named (exit 2); --force replaces them and lists what it replaced.
    A .gitignore holding `.oloproof/` keeps the store out of Git (an existing .gitignore gets
    the line appended, with --force).
    """
    from oloproof.cli import scaffold

    examples = scaffold.packaged_examples()
    if example == "list":
        for name in examples:
            if name == "starter":
                continue
            readme = examples[name] / "README.md"
            lines = readme.read_text(encoding="utf-8").splitlines() if readme.is_file() else []
            # The first sentence of prose (headings name the example, already shown).
            prose = " ".join(ln.strip() for ln in lines if not ln.startswith("#"))
            summary = prose.strip().split(". ")[0].rstrip(".") + "."
            # Wrapped to the terminal (COLUMNS, else 80), under the name's column.
            width = max(40, shutil.get_terminal_size((80, 24)).columns)
            click.echo(textwrap.fill(f"{name:16} {summary}", width=width,
                                     subsequent_indent=" " * 17, break_on_hyphens=False))
        return
    name = example or "starter"
    if name not in examples:
        click.echo(f"Usage error: no example named {name!r}; examples: "
                   + ", ".join(n for n in examples if n != "starter"), err=True)
        sys.exit(EXIT_CONFIG)
    replaced = guard(False, lambda: scaffold.write(
        scaffold.plan(examples[name], Path(directory)), force=force))
    shown = directory if directory != "." else "this directory"
    click.echo(f"Created {'example ' + name if example else 'a starter project'} in {shown}.")
    if replaced:
        click.echo("Replaced (--force): " + ", ".join(replaced))
    click.echo(("  cd " + directory + " && " if directory != "." else "  ") + "oloproof run")
