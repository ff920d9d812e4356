"""The repository explains itself: no file points outside it, and every docs reference lands.

Source files, user-facing strings (CLI help, messages, the HTML report's JS and CSS: all under
`src/`), the docs, the README, the benchmarks and the tests may cite the project's own docs —
`docs/concepts.md#clusters`, or a Markdown link `[clusters](concepts.md#clusters)` — and every
such page must exist and every `#anchor` must be a heading of that page, as GitHub makes
anchors of headings. They may not cite a document the repository does not hold: the product
brief ("SPEC §5.1", "the guide's §3"), `../shared/…`. The only `§` allowed is a section of an
issue ("issue 10 §5") or of a book the docs cite.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
THIS = Path(__file__).resolve()

#: Where references are checked: every text file under these (binary files are skipped).
SCANNED = ("src", "docs", "benchmarks", "tests", "README.md", "pyproject.toml", "Makefile")
TEXT_SUFFIXES = {".py", ".md", ".yaml", ".yml", ".js", ".css", ".html", ".toml", ".txt", ".cfg",
                 ".json", ".jsonl", ".sh", ""}

#: Mentions of documents outside the repository.
OUTSIDE = [
    (re.compile(r"\bSPEC\b"), "the product brief (SPEC), which is not in the repository"),
    (re.compile(r"(?:\.\./|/work/)shared\b"), "a file outside the repository (../shared)"),
    (re.compile(r"guide's §"), "the guide's sections, which are not in the repository"),
]
#: A `§` is allowed only as a section of an issue or of a cited book.
ALLOWED_SECTION = re.compile(
    r"[Ii]ssues? \d+ §[\d.]+(?:(?:,| and|-|–| or)\s*§[\d.]+)*"
    r"|(?:Statistics\*|Wiley|2003\)?), §[\d.]+"
)
#: `docs/PAGE.md#anchor` anywhere (prose, comments, strings), with or without `../` before it.
DOCS_REFERENCE = re.compile(r"(?<![\w.-])(?:\.\./)*docs/([\w.-]+\.md)(?:#([\w-]+))?")
#: A Markdown link's target: `](target)`.
MARKDOWN_LINK = re.compile(r"\]\(([^)\s]+)\)")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading: the text without Markdown (links keep their text),
    lowercased, every character that is not a letter, digit, `-`, `_` or space dropped, spaces
    made `-`."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())
    text = text.lower()
    kept = "".join(ch for ch in text if ch in "-_ " or unicodedata.category(ch)[0] in "LN")
    return kept.replace(" ", "-")


@cache
def anchors_of(page: Path) -> frozenset[str]:
    """Every anchor of a Markdown page: its headings' (outside code blocks; a repeated heading
    gets -1, -2, … as on GitHub) and explicit `<a id=…>` / `<a name=…>`."""
    found: set[str] = set()
    seen: dict[str, int] = {}
    fenced = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        if fenced:
            continue
        heading = re.match(r"#{1,6} (.+)", line)
        if heading:
            anchor = github_anchor(heading.group(1))
            count = seen.get(anchor, 0)
            seen[anchor] = count + 1
            found.add(anchor if count == 0 else f"{anchor}-{count}")
        found.update(re.findall(r"<a (?:id|name)=\"([^\"]+)\"", line))
    return frozenset(found)


def anchor_problem(page: Path, anchor: str | None) -> str | None:
    """Why `page#anchor` lands nowhere, or None when it lands."""
    if not page.is_file():
        return f"{page.relative_to(ROOT)} does not exist"
    if anchor and page.suffix == ".md" and anchor not in anchors_of(page):
        return f"{page.relative_to(ROOT)} has no heading with the anchor #{anchor}"
    return None


def problems_in(path: Path, text: str) -> list[str]:
    """Every outside reference and every docs reference that lands nowhere in one file's text,
    each as `file:line: what`."""
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    problems = []
    for number, line in enumerate(text.splitlines(), 1):
        for pattern, what in OUTSIDE:
            if pattern.search(line):
                problems.append(f"{where}:{number}: cites {what}")
        allowed = [m.span() for m in ALLOWED_SECTION.finditer(line)]
        for at in (m.start() for m in re.finditer("§", line)):
            if not any(start <= at < end for start, end in allowed):
                problems.append(f"{where}:{number}: cites a section (§) of a document the "
                                "repository does not hold")
        for match in DOCS_REFERENCE.finditer(line):
            problem = anchor_problem(DOCS / match.group(1), match.group(2))
            if problem:
                problems.append(f"{where}:{number}: {match.group(0)}: {problem}")
        if path.suffix == ".md":
            for target in MARKDOWN_LINK.findall(line):
                if re.match(r"[a-z][\w+.-]*:", target):  # https:, mailto:
                    continue
                file_part, _, anchor = target.partition("#")
                page = (path.parent / file_part).resolve() if file_part else path
                if "docs/" in file_part and DOCS_REFERENCE.search(target):
                    continue  # checked above
                problem = anchor_problem(page, anchor or None)
                if problem:
                    problems.append(f"{where}:{number}: ]({target}): {problem}")
    return problems


def scanned_files() -> list[Path]:
    files = []
    for name in SCANNED:
        top = ROOT / name
        candidates = [top] if top.is_file() else sorted(top.rglob("*"))
        for path in candidates:
            if not path.is_file() or path.resolve() == THIS or path.suffix not in TEXT_SUFFIXES:
                continue
            if any(part in {"__pycache__", ".pytest_cache", "artifacts"} or part.endswith(
                    ".egg-info") for part in path.relative_to(ROOT).parts):
                continue
            files.append(path)
    return files


def test_no_file_cites_a_document_outside_the_repository_or_a_missing_docs_anchor() -> None:
    problems = []
    read = 0
    for path in scanned_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        read += 1
        problems += problems_in(path, text)
    assert read > 300, "the scan must read the repository's files"
    assert problems == []


def test_the_cli_help_cites_no_document_outside_the_repository() -> None:
    """The help texts as a user reads them, every command's."""
    import click

    from oloproof.cli.main import cli

    def helps(command: click.Command, ctx: click.Context) -> list[str]:
        texts = [command.get_help(ctx)]
        if isinstance(command, click.Group):
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                assert sub is not None
                texts += helps(sub, click.Context(sub, info_name=name, parent=ctx))
        return texts

    texts = helps(cli, click.Context(cli, info_name="oloproof"))
    assert len(texts) > 15
    problems = [p for text in texts for p in problems_in(THIS, text)]
    assert problems == []


@pytest.mark.parametrize(("line", "expected"), [
    ("see SPEC §5.1", "cites the product brief"),
    ("(the guide's §3)", "cites the guide's sections"),
    ("read ../shared/SPEC.md", "a file outside the repository"),
    ("as §8 says", "cites a section (§)"),
    ("see docs/concepts.md#no-such-heading", "has no heading with the anchor #no-such-heading"),
    ("see docs/no-such-page.md", "docs/no-such-page.md does not exist"),
])
def test_the_check_finds_a_bad_reference(line: str, expected: str) -> None:
    """The check can fail: each kind of bad reference is reported, naming the line."""
    problems = problems_in(ROOT / "src" / "example.py", f"ok\n{line}\n")
    assert problems, line
    assert all(p.startswith("src/example.py:2: ") for p in problems), problems
    assert any(expected in p for p in problems), problems


def test_the_check_lets_good_references_through() -> None:
    text = ("docs/concepts.md#clusters, docs/traces.md#openai-chat-completions--steps, "
            "docs/agents-and-tools.md#the-support_agent-example, issue 10 §3 and §5, "
            "David & Nagaraja (2003), §7.1")
    assert problems_in(ROOT / "src" / "example.py", text) == []
    assert problems_in(DOCS / "index.md", "[clusters](concepts.md#clusters) [up](#oloproof)") == []
    assert problems_in(DOCS / "index.md", "[gone](concepts.md#gone)") != []


def test_anchors_are_made_as_github_makes_them() -> None:
    assert github_anchor("`oloproof inspect latest --flaky`") == "oloproof-inspect-latest---flaky"
    assert github_anchor("OpenAI chat completions → steps") == "openai-chat-completions--steps"
    assert github_anchor("What pass^k means") == "what-passk-means"
    assert github_anchor("The `support_agent` example") == "the-support_agent-example"
    assert github_anchor("`oloproof.yaml`") == "oloproofyaml"
